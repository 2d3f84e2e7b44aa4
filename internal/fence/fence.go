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
	"sync/atomic"

	"github.com/reportjob/reportjob/internal/crashpoint"
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
	return check(checkerOf(ctx))
}

// checkerOf returns ctx's Checker, nil when it has none.
func checkerOf(ctx context.Context) Checker {
	c, _ := ctx.Value(ctxKey{}).(Checker)
	return c
}

func check(c Checker) error {
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

// Client fences the write requests of a run: it refuses a write whose
// context's Checker fails before handing it to Inner, and binds the
// Checker to the connection the transport gives the request, which checks
// it again right before each write to the socket (see Transport, which
// Inner's transport must have applied: a fenced write on a connection that
// is not fenced fails with ErrUnfenced). Every other request passes.
//
// The guarantee: no byte of a fenced write is handed to the kernel unless
// the Checker passed just before, in the same goroutine, with only the
// write system call in between; a request is applied only once its last
// byte arrived. A write that the socket check refuses fails with *Error,
// which no retryer retries.
type Client struct {
	Inner   Doer
	IsWrite func(*http.Request) bool
}

// Do implements Doer.
func (c Client) Do(r *http.Request) (*http.Response, error) {
	var ch Checker
	if c.IsWrite(r) {
		ch = checkerOf(r.Context())
		if err := check(ch); err != nil {
			return nil, err
		}
		afterCheck(r)
	}
	var unfenced atomic.Bool
	resp, err := c.Inner.Do(r.WithContext(bindTrace(r.Context(), ch, r, &unfenced)))
	if err != nil {
		// Refused at the socket, or failed otherwise while the lease
		// went: either way the run writes nothing more.
		if ferr := check(ch); ferr != nil {
			return nil, ferr
		}
		if unfenced.Load() {
			return nil, fmt.Errorf("%w: %w", ErrUnfenced, err)
		}
	}
	return resp, err
}

// afterCheck is called after a write request passed Client.Do's check,
// before the transport has it; beforeSocket when the transport is about
// to write the first bytes of a fenced request to its connection, before
// the socket check. A stall at either (the process stopped) is what the
// socket check is for: the RJTEST_STOP_AT point fenced-write stops the
// process at the second, where a stalled request is furthest along.
var (
	afterCheck   = func(*http.Request) {}
	beforeSocket = func(r *http.Request) {
		crashpoint.Stop(crashpoint.FencedWrite, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Amz-Target"))
	}
)

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
