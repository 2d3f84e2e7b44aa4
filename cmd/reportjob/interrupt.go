package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
)

// signalError is the cause of main's context once SIGINT or SIGTERM came.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return e.sig.String() + " signal received" }

// name is the signal's name for people: SIGINT, SIGTERM.
func (e *signalError) name() string {
	if e.sig == syscall.SIGINT {
		return "SIGINT"
	}
	return "SIGTERM"
}

// interruptError is a command the user stopped with a signal: not a
// failure. exitCode maps it to 128 + the signal's number, the shell's
// convention (130 for SIGINT, Ctrl-C; 143 for SIGTERM).
type interruptError struct {
	sig *signalError
	msg string
	err error // the work abandoned by a second signal, if any
}

func (e *interruptError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}
func (e *interruptError) Unwrap() error { return e.err }
func (e *interruptError) code() int     { return exitSignal + int(e.sig.sig) }

type secondSignalKey struct{}

// withSecondSignal records in ctx the channel main closes at a second
// signal.
func withSecondSignal(ctx context.Context, again <-chan struct{}) context.Context {
	return context.WithValue(ctx, secondSignalKey{}, again)
}

// interruption is how a command that stops at safe points (run, ingest
// --generate) sees the signals: Stop is closed at the first one, and the
// context the work runs under is cancelled only at the second one.
type interruption struct {
	stop      chan struct{}
	sig       atomic.Pointer[signalError]
	abandoned atomic.Bool
}

// interruptible returns the context to do the work under and the
// interruption, or ctx itself and nil when ctx carries no signal handling
// (main's): then an ended ctx ends the work, as before. release stops
// watching.
func (c *cli) interruptible(ctx context.Context, what string) (context.Context, *interruption, func()) {
	again, ok := ctx.Value(secondSignalKey{}).(<-chan struct{})
	if !ok {
		return ctx, nil, func() {}
	}
	work, abandon := context.WithCancelCause(context.WithoutCancel(ctx))
	in := &interruption{stop: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		var se *signalError
		if !errors.As(context.Cause(ctx), &se) {
			abandon(context.Cause(ctx))
			return
		}
		in.sig.Store(se)
		close(in.stop)
		c.bar.clear()
		c.log.Warn(se.name()+" received: stopping at the next safe point; send it again to abandon "+what, "signal", se.name())
		select {
		case <-done:
		case <-again:
			in.abandoned.Store(true)
			c.log.Warn("second signal: abandoning " + what)
			abandon(fmt.Errorf("abandoned at the second %s", se.name()))
		}
	}()
	return work, in, func() { close(done); abandon(nil) }
}

// fired returns the signal that interrupted the command, or nil.
func (in *interruption) fired() *signalError {
	if in == nil {
		return nil
	}
	return in.sig.Load()
}

// stopCh is the channel closed at the first signal (nil: never).
func (in *interruption) stopCh() <-chan struct{} {
	if in == nil {
		return nil
	}
	return in.stop
}

// result turns how interrupted work ended into the command's error: an
// *interruptError saying what was done (done) and how to continue, when
// a signal came and the work stopped at a safe point (err nil) or was
// abandoned by a second signal; err itself otherwise.
func (in *interruption) result(err error, done, next string) error {
	se := in.fired()
	if se == nil || err != nil && !in.abandoned.Load() {
		return err
	}
	msg := fmt.Sprintf("interrupted by %s: %s; %s", se.name(), done, next)
	if err != nil {
		msg = fmt.Sprintf("interrupted by %s, the work in progress abandoned at the second signal: %s; %s", se.name(), done, next)
	}
	return &interruptError{sig: se, msg: msg, err: err}
}

// cutShort turns err, the error of work that ended because a signal
// cancelled ctx (a command with no safe point to stop at: it stops where
// it is, which its crash safety makes safe), into an *interruptError
// saying so and how to continue (next). Any other err is returned as is.
func cutShort(ctx context.Context, err error, next string) error {
	var se *signalError
	var ie *interruptError
	if err == nil || errors.As(err, &ie) || !errors.As(context.Cause(ctx), &se) {
		return err
	}
	return &interruptError{sig: se, msg: fmt.Sprintf("interrupted by %s before it finished; %s", se.name(), next), err: err}
}
