// Package awsclient is what reportjob's AWS clients (package dynamodb and
// package s3sink) share beyond the SDK's defaults: a retryer that logs
// each retry with the endpoint it failed against, and credentials whose
// absence is reported with what to set instead of the default chain's
// last word (the EC2 instance metadata service's).
//
// Use both from a client's options function, once its endpoint is known:
//
//	dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.Retryer = awsclient.LogRetries(o.Retryer, log, "DynamoDB", endpoint)
//		o.Credentials = awsclient.HintCredentials(o.Credentials, log)
//	})
package awsclient

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// ErrNoCredentials is the default credential chain finding nothing.
var ErrNoCredentials = errors.New("no AWS credentials found")

// credentialsHint says where the SDK's default chain looks.
const credentialsHint = "set AWS_PROFILE to a profile of ~/.aws/config or ~/.aws/credentials (aws configure, aws sso login), " +
	"or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), " +
	"or run where the SDK's default chain finds a role (EC2 instance profile, ECS task role, EKS pod identity or IRSA)"

// credentialsError is ErrNoCredentials with the hint; it unwraps to the
// SDK's error too (which is logged at debug level, not printed).
type credentialsError struct{ sdk error }

func (e *credentialsError) Error() string   { return ErrNoCredentials.Error() + ": " + credentialsHint }
func (e *credentialsError) Unwrap() []error { return []error{ErrNoCredentials, e.sdk} }

// hinting is a credentials provider whose failure says what to set.
type hinting struct {
	inner aws.CredentialsProvider
	log   *slog.Logger
}

// HintCredentials wraps p (the SDK's credentials cache): when the default
// chain found nothing, which ends with the EC2 instance metadata
// service's "no EC2 IMDS role found", the error is ErrNoCredentials with
// where the SDK looks (AWS_PROFILE, the access key variables, the roles
// of the default chain); the SDK's text is logged at debug level. Other
// failures (an expired SSO session, a refused AssumeRole) are returned
// as they are: they name their cause. A nil p is returned as is.
func HintCredentials(p aws.CredentialsProvider, log *slog.Logger) aws.CredentialsProvider {
	if p == nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &hinting{inner: p, log: log}
}

func (h *hinting) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := h.inner.Retrieve(ctx)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), imdsNoRole) {
		return c, err
	}
	h.log.Debug("AWS credentials: the default chain found none", "err", err)
	return c, &credentialsError{sdk: err}
}

// imdsNoRole is how the default chain's last provider (ec2rolecreds)
// says it found nothing; the SDK has no error type for it.
const imdsNoRole = "no EC2 IMDS role found"

// Invalidate passes the SDK's invalidation (after a credentials error
// from the service) to the cache.
func (h *hinting) Invalidate() {
	if i, ok := h.inner.(interface{ Invalidate() }); ok {
		i.Invalidate()
	}
}

// retryLogger logs each retry its retryer decides on.
type retryLogger struct {
	aws.RetryerV2
	log               *slog.Logger
	service, endpoint string
}

// LogRetries wraps r so that each retry is logged: at WARN with the
// service, the endpoint, the attempt that failed, the attempts allowed,
// the wait and the error; throttling at DEBUG (it is expected under load,
// and the SDK waits it out). endpoint is what the client sends to: its
// configured endpoint, or the AWS one. A nil log returns r.
func LogRetries(r aws.Retryer, log *slog.Logger, service, endpoint string) aws.Retryer {
	if log == nil || r == nil {
		return r
	}
	v2, ok := r.(aws.RetryerV2)
	if !ok {
		v2 = wrapV1{r}
	}
	return &retryLogger{RetryerV2: v2, log: log, service: service, endpoint: endpoint}
}

func (r *retryLogger) RetryDelay(attempt int, err error) (time.Duration, error) {
	d, derr := r.RetryerV2.RetryDelay(attempt, err)
	if derr != nil {
		return d, derr
	}
	level := slog.LevelWarn
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary {
		level = slog.LevelDebug
	}
	r.log.Log(context.Background(), level, r.service+" request failed; retrying", "endpoint", r.endpoint,
		"attempt", attempt, "max_attempts", r.MaxAttempts(), "retry_in", d.Round(time.Millisecond).String(), "err", err)
	return d, nil
}

// wrapV1 is a Retryer without GetAttemptToken (the SDK adapts these the
// same way).
type wrapV1 struct{ aws.Retryer }

func (w wrapV1) GetAttemptToken(context.Context) (func(error) error, error) {
	return w.GetInitialToken(), nil
}
