// Package fence carries a run's lease check down to the wire. A run that
// holds the job's lease puts its Checker in the context of everything it
// does (WithContext); the AWS clients' HTTP layer (Client) and the
// portable sink ask it (Check) right before each write request is sent, so
// that a run that stalled past its lease (a paused process, a long GC
// pause) sends no write when it resumes, even one that was already queued
// or being retried. A context without a Checker is not fenced (ingest,
// dry runs, tools).
package fence

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// Checker tells whether the run still holds its lease: nil while it
// certainly does.
type Checker interface {
	Check() error
}

type ctxKey struct{}

// WithContext returns ctx carrying c.
func WithContext(ctx context.Context, c Checker) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// Without returns ctx without its Checker: for requests that only discard
// data and must go out even after the lease is gone (aborting a multipart
// upload, so that its parts are not left stored).
func Without(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, nil)
}

// Check asks ctx's Checker, if any.
func Check(ctx context.Context) error {
	c, _ := ctx.Value(ctxKey{}).(Checker)
	if c == nil {
		return nil
	}
	if err := c.Check(); err != nil {
		return &Error{Err: err}
	}
	return nil
}

// Error is a write refused because the run's lease may be gone. It is not
// retryable: the AWS SDK's retryer gives up on it at once.
type Error struct{ Err error }

func (e *Error) Error() string { return fmt.Sprintf("write refused: %v", e.Err) }

// Unwrap returns the Checker's error (it wraps checkpoint.ErrLeaseLost).
func (e *Error) Unwrap() error { return e.Err }

// RetryableError tells the AWS SDK's retryer not to retry.
func (e *Error) RetryableError() bool { return false }

// Doer is the HTTP client interface of the AWS SDK (aws.HTTPClient).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Client refuses, before sending it, a write request whose context's
// Checker fails; it passes every other request to Inner.
type Client struct {
	Inner   Doer
	IsWrite func(*http.Request) bool
}

// Do implements Doer.
func (c Client) Do(r *http.Request) (*http.Response, error) {
	if c.IsWrite(r) {
		if err := Check(r.Context()); err != nil {
			return nil, err
		}
	}
	return c.Inner.Do(r)
}

// S3Write reports whether r writes to S3: every method but GET and HEAD.
func S3Write(r *http.Request) bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

// dynamoDBWrites are the DynamoDB operations that write.
var dynamoDBWrites = map[string]bool{
	"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true,
	"TransactWriteItems": true,
}

// DynamoDBWrite reports whether r is a DynamoDB write (by its X-Amz-Target,
// "DynamoDB_20120810.PutItem").
func DynamoDBWrite(r *http.Request) bool {
	target := r.Header.Get("X-Amz-Target")
	return dynamoDBWrites[target[strings.LastIndexByte(target, '.')+1:]]
}
