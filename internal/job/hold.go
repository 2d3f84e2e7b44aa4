package job

import (
	"context"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/fence"
)

// Holder is a run's lease while it is held: the lease as last granted or
// renewed, and whether it is still certainly held (nil while it is).
type Holder interface {
	Lease() checkpoint.Lease
	Check() error
}

// Hold runs fn while holding the job's lease, as a run does: renewed in the
// background, ctx fenced (package fence) and cancelled when the lease is
// lost; the lease is given back when fn returns. Deliveries (package
// delivery) write their records this way.
func (j *Job) Hold(ctx context.Context, fn func(ctx context.Context, h Holder) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	h, err := j.acquire(ctx, cancel)
	if err != nil {
		return err
	}
	kept := h.keep(ctx)
	defer func() {
		cancel(nil)
		<-kept
		h.release(ctx)
	}()
	return fn(fence.WithContext(ctx, h), h)
}

// Now is the lease's wall clock (what fenced state writes are checked
// against).
func (j *Job) Now() time.Time { return j.now() }
