package awsclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

type failingProvider struct{ err error }

func (p failingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, p.err
}

func TestHintCredentials(t *testing.T) {
	imds := fmt.Errorf("failed to refresh cached credentials, no EC2 IMDS role found, operation error ec2imds: GetMetadata, access disabled")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err := HintCredentials(failingProvider{imds}, log).Retrieve(context.Background())
	if !errors.Is(err, ErrNoCredentials) || !errors.Is(err, imds) {
		t.Fatalf("err %v: want ErrNoCredentials wrapping the SDK's error", err)
	}
	for _, want := range []string{"AWS_PROFILE", "AWS_ACCESS_KEY_ID", "default chain"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "IMDS") || !strings.Contains(logs.String(), "no EC2 IMDS role found") {
		t.Errorf("the IMDS text is printed (%q) or not logged (%q)", err, logs.String())
	}
	// Another failure names its own cause.
	sso := errors.New("refresh cached SSO token failed")
	if _, err := HintCredentials(failingProvider{sso}, nil).Retrieve(context.Background()); err != sso {
		t.Errorf("SSO failure: %v, want it as is", err)
	}
}

func TestLogRetries(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := LogRetries(retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = time.Millisecond }), log, "DynamoDB", "http://127.0.0.1:9")
	if _, err := r.RetryDelay(1, errors.New("connection refused")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RetryDelay(2, &throttle{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 ||
		!strings.Contains(lines[0], `"level":"WARN","msg":"DynamoDB request failed; retrying","endpoint":"http://127.0.0.1:9","attempt":1,"max_attempts":3`) ||
		!strings.Contains(lines[1], `"level":"DEBUG"`) {
		t.Errorf("logs:\n%s", logs.String())
	}
	if _, ok := r.(aws.RetryerV2); !ok {
		t.Error("not a RetryerV2")
	}
}

// throttle is a throttling error (its code is one of retry.DefaultThrottleErrorCodes).
type throttle struct{}

func (*throttle) Error() string     { return "ThrottlingException: slow down" }
func (*throttle) ErrorCode() string { return "ThrottlingException" }
