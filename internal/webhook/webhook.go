// Package webhook signs and sends events the Standard Webhooks way
// (https://www.standardwebhooks.com): a POST of a JSON body with the
// headers webhook-id (the event's id, the same on every attempt),
// webhook-timestamp (Unix seconds of the attempt) and webhook-signature
// ("v1," and the base64 HMAC-SHA256, keyed with the endpoint's secret, of
// "id.timestamp.body"). A secret is written "whsec_" and its key in
// base64; a secret without the prefix is used as raw bytes. Receivers can
// check what this package sends with any Standard Webhooks library.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the Standard Webhooks convention.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// ErrBadSignature is a Verify that found no matching signature.
var ErrBadSignature = errors.New("webhook: no matching signature")

// Key decodes a secret: "whsec_" + base64 gives the decoded bytes, anything
// else its own bytes.
func Key(secret string) ([]byte, error) {
	if b64, ok := strings.CutPrefix(secret, "whsec_"); ok {
		k, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("webhook secret: whsec_ prefix but not base64: %w", err)
		}
		return k, nil
	}
	if secret == "" {
		return nil, errors.New("webhook secret: empty")
	}
	return []byte(secret), nil
}

// Sign returns the webhook-signature value of body sent as id at ts:
// "v1," + base64(HMAC-SHA256(key, id + "." + ts + "." + body)).
func Sign(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, ts)
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a received event the way a receiver does: one of the
// space-separated signatures in h's webhook-signature is body's under key,
// and the timestamp is within tolerance of now (0: not checked).
func Verify(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, tsS := h.Get(HeaderID), h.Get(HeaderTimestamp)
	ts, err := strconv.ParseInt(tsS, 10, 64)
	if id == "" || err != nil {
		return fmt.Errorf("webhook: missing or bad %s/%s headers (%q, %q)", HeaderID, HeaderTimestamp, id, tsS)
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("webhook: timestamp %d is %s away from now", ts, d)
		}
	}
	want := Sign(key, id, ts, body)
	for _, s := range strings.Fields(h.Get(HeaderSignature)) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}

// StatusError is an endpoint's answer other than 2xx.
type StatusError struct {
	Code int
	Body string // its first bytes
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("endpoint answered %d %s: %q", e.Code, http.StatusText(e.Code), e.Body)
}

// Sender posts events. Its zero value uses a client with a 10 s timeout
// that does not follow redirects.
type Sender struct {
	Client *http.Client
	// Now is the clock of webhook-timestamp (default time.Now).
	Now func() time.Time
	// UserAgent is sent as User-Agent.
	UserAgent string
}

var defaultClient = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Send posts body to url as event id, signed with key. It returns nil only
// for a 2xx answer.
func (s *Sender) Send(ctx context.Context, url string, key []byte, id string, body []byte) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ts := now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(key, id, ts, body))
	if s.UserAgent != "" {
		req.Header.Set("User-Agent", s.UserAgent)
	}
	c := s.Client
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", url, err)
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook %s: %w", url, &StatusError{Code: resp.StatusCode, Body: string(head)})
	}
	return nil
}
