package sink

import (
	"context"
	"io"
	"time"

	"github.com/reportjob/reportjob/internal/sink/driver"
)

// Discard returns a Bucket that stores nothing, for dry runs: Put reads
// nothing and succeeds (ETag "discard"), Get and Stat find nothing
// (ErrNotFound), List is empty, Delete succeeds. It checks keys as the
// real drivers do, with the strictest of their usual limits: keys of at
// most 1,024 bytes (S3) and segments of at most 255 (a file name), so a
// key a dry run accepts fits every sink.
func Discard() *Bucket { return New(discard{}) }

// discard is the driver of Discard.
type discard struct{}

var _ driver.Bucket = discard{}

// DiscardETag is the ETag of every object a Discard bucket "stores".
const DiscardETag = "discard"

func (discard) Put(ctx context.Context, key string, _ io.ReadSeeker, size int64, _ PutOptions) (Attrs, error) {
	return Attrs{Key: key, Size: size, ETag: DiscardETag, Modified: time.Now().UTC()}, nil
}

func (discard) Get(context.Context, string) (io.ReadCloser, Attrs, error) {
	return nil, Attrs{}, ErrNotFound
}

func (discard) Stat(context.Context, string) (Attrs, error) { return Attrs{}, ErrNotFound }

func (discard) List(context.Context, string) ([]Attrs, error) { return nil, nil }

func (discard) Delete(context.Context, string) error { return nil }

func (discard) MaxKeyLen() int { return 1024 }

func (discard) MaxSegmentLen() int { return 255 }

func (discard) String() string { return "discard:" }
