// Package warm runs short tasks on goroutines that are kept between
// tasks, with the stacks the earlier tasks grew.
//
// A new goroutine starts with a small stack (a few KiB) and grows it by
// copying, doubling each time, as its calls go deeper. The job's per-file
// tasks (encode an agency's Parquet file, render a statement, Put a file)
// go deep, and a run has hundreds of thousands of them: with a goroutine
// of their own each, copying stacks was about 4 % of a run's CPU
// (`perf record`: a period of 20,000 agencies and its month's
// statements). Go hands a task to a goroutine that
// finished one before and waits for the next, so the stack is grown once
// per goroutine, not once per task.
//
// Go is a drop-in for the go statement: the caller bounds how many tasks
// run at once, as before; a goroutine left idle for IdleFor exits.
package warm

import "time"

// IdleFor is how long a goroutine waits for a next task before it exits.
const IdleFor = time.Second

// idle is where goroutines between two tasks wait for the next one
// (unbuffered: a send succeeds only when one of them is waiting).
var idle = make(chan func())

// Go runs f on a goroutine of its own, as `go f()` does: on one that is
// waiting for work if there is one, else on a new one.
func Go(f func()) {
	if !handOff(f) {
		go run(f)
	}
}

// handOff gives f to a goroutine waiting for work, if one is.
func handOff(f func()) bool {
	select {
	case idle <- f:
		return true
	default:
		return false
	}
}

// run runs f, then the tasks handed to it, until none came for IdleFor.
func run(f func()) {
	t := time.NewTimer(IdleFor)
	defer t.Stop()
	for {
		f()
		f = nil // not kept alive while waiting
		t.Reset(IdleFor)
		select {
		case f = <-idle:
		case <-t.C:
			return
		}
	}
}
