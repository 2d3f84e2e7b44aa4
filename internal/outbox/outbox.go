// Package outbox is the durable record of what the job must deliver (the
// e-mail of a statement, an event to an endpoint) and of what it did
// deliver: one Entry per delivery, kept in the job's state store (both
// backends implement Store), written only by the holder of the job's
// lease. An entry is written before its first attempt and marked sent
// right after the server accepted it, so that nothing is silently left
// unsent: an entry not marked sent is tried again by every later run,
// with exponential backoff (Backoff).
package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// Kinds of entries.
const (
	KindMail  = "mail"
	KindEvent = "event"
	// KindMark records progress, not a delivery: package delivery marks a
	// final month whose deliveries are all enqueued, so that later runs
	// skip it. A mark is enqueued with Sent set, and is never pending.
	KindMark = "mark"
)

// Entry is one delivery.
type Entry struct {
	// ID is unique in the job's outbox: "mail/<month>/<agency>/<rev>" or
	// "event/<event id>/<endpoint id>" (package delivery makes them). At
	// most 1024 bytes, no control characters.
	ID   string
	Kind string
	// Target is who receives it, for reports: an agency id (mail) or an
	// endpoint id (event).
	Target string
	// At is when what it announces happened (a month's close, a period's
	// publication): events replay --since selects by it.
	At time.Time
	// Payload is what the sender needs, JSON (an event's body; a mail's
	// description): at most 64 KiB.
	Payload []byte
	// Attempts counts failed attempts since the last success or enqueue;
	// NextAttempt is when the next is due (zero: at once); LastError is
	// the last failure.
	Attempts    int
	NextAttempt time.Time
	LastError   string
	// Sent is when it was delivered (zero: not yet); Resends counts
	// deliberate sends after the first (statement --resend, events
	// replay).
	Sent    time.Time
	Resends int
}

// Limits of an entry.
const (
	MaxIDLen      = 1024
	MaxPayloadLen = 64 << 10
)

// Validate reports what is wrong with e, naming the field.
func (e Entry) Validate() error {
	switch {
	case e.ID == "" || len(e.ID) > MaxIDLen || strings.ContainsFunc(e.ID, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("outbox entry id %q: want 1 to %d bytes without control characters", e.ID, MaxIDLen)
	case e.Kind != KindMail && e.Kind != KindEvent && e.Kind != KindMark:
		return fmt.Errorf("outbox entry %s: kind %q, want mail, event or mark", e.ID, e.Kind)
	case len(e.Payload) > MaxPayloadLen:
		return fmt.Errorf("outbox entry %s: payload of %d bytes, want at most %d", e.ID, len(e.Payload), MaxPayloadLen)
	case e.At.IsZero():
		return fmt.Errorf("outbox entry %s: no time (at)", e.ID)
	case e.Attempts < 0 || e.Resends < 0:
		return fmt.Errorf("outbox entry %s: attempts %d, resends %d: want no negative number", e.ID, e.Attempts, e.Resends)
	}
	return nil
}

// Due reports whether e is still to be sent and its next attempt is due at
// now.
func (e Entry) Due(now time.Time) bool { return e.Sent.IsZero() && !now.Before(e.NextAttempt) }

// ErrNotFound is a Record of an entry the outbox does not hold.
var ErrNotFound = errors.New("outbox entry not found")

// Store keeps each job's outbox durably, next to its checkpoint. Times are
// kept to the millisecond. Writes are fenced like every state write: they
// happen only while l is the job's current lease, unexpired at now (else
// an error wrapping checkpoint.ErrLeaseLost), and each is atomic.
type Store interface {
	// Enqueue adds the entries of es whose ID the outbox does not hold
	// yet, as given; an ID it holds is left as it is (sent or not), so
	// that enqueueing the same deliveries again changes nothing. It
	// returns how many were added.
	Enqueue(ctx context.Context, job string, l checkpoint.Lease, now time.Time, es []Entry) (int, error)
	// Get returns the entries of ids the outbox holds, by ID.
	Get(ctx context.Context, job string, ids []string) (map[string]Entry, error)
	// Pending returns the IDs of the entries not sent yet, in ID order
	// (Get reads them): what is pending can be a month of 100,000
	// agencies, read a page at a time.
	Pending(ctx context.Context, job string) ([]string, error)
	// Since returns every entry (sent or not) whose At is at or after t,
	// in ID order.
	Since(ctx context.Context, job string, t time.Time) ([]Entry, error)
	// Record replaces the state of the entry e.ID (Attempts, NextAttempt,
	// LastError, Sent, Resends) with e's; ErrNotFound when it is absent.
	Record(ctx context.Context, job string, l checkpoint.Lease, now time.Time, e Entry) error
}

// Backoff is the wait before attempt n+1 after n failed attempts (n >= 1):
// 1 minute doubled each time, at most 6 hours. A run retries what is due
// at its start, so across runs an endpoint that is down is tried again at
// growing intervals and never given up on.
func Backoff(n int) time.Duration {
	const base, most = time.Minute, 6 * time.Hour
	if n < 1 {
		return 0
	}
	d := base
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// Failed returns e after a failed attempt at now.
func (e Entry) Failed(now time.Time, err error) Entry {
	e.Attempts++
	e.NextAttempt = now.Add(Backoff(e.Attempts)).UTC()
	msg := err.Error()
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	e.LastError = msg
	return e
}

// Delivered returns e after a successful attempt at now.
func (e Entry) Delivered(now time.Time) Entry {
	if !e.Sent.IsZero() {
		e.Resends++
	}
	e.Sent, e.Attempts, e.NextAttempt, e.LastError = now.UTC(), 0, time.Time{}, ""
	return e
}
