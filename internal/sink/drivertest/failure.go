package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// errBody is the error of a body that fails mid-read.
var errBody = errors.New("drivertest: body fails here")

// failingBody is data that fails with errBody when a read reaches offset
// at, every time it is read (a driver that retries sees it again).
type failingBody struct {
	r  *bytes.Reader
	at int64
}

func (f *failingBody) Read(p []byte) (int, error) {
	off, _ := f.r.Seek(0, io.SeekCurrent)
	if off >= f.at {
		return 0, errBody
	}
	if int64(len(p)) > f.at-off {
		p = p[:f.at-off]
	}
	return f.r.Read(p)
}

func (f *failingBody) Seek(off int64, whence int) (int64, error) { return f.r.Seek(off, whence) }

// failingBodyAt is a failingBody that is an io.ReaderAt too, as a file is:
// a driver may read its parts concurrently.
type failingBodyAt struct{ failingBody }

func (f *failingBodyAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.at {
		n, _ := f.r.ReadAt(p[:max(0, f.at-off)], off)
		return n, errBody
	}
	return f.r.ReadAt(p, off)
}

// cancellingBody cancels a context once a read passes offset at. Then,
// if stop, it fails every read with the context's error (the data stops
// where the cancellation came); else it goes on giving data.
type cancellingBody struct {
	r      *bytes.Reader
	at     int64
	ctx    context.Context
	cancel context.CancelFunc
	stop   bool
}

func (c *cancellingBody) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil && c.stop {
		return 0, err
	}
	n, err := c.r.Read(p)
	if off, _ := c.r.Seek(0, io.SeekCurrent); off >= c.at {
		c.cancel()
	}
	return n, err
}

func (c *cancellingBody) Seek(off int64, whence int) (int64, error) { return c.r.Seek(off, whence) }

// failureSizes are a small body (one request) and one above the S3
// multipart threshold.
var failureSizes = []int{300_000, LargeSize}

// testCancelledPut: a Put cancelled mid-body fails and stores nothing.
// When the body goes on giving data after the cancellation, the driver
// may have sent it all before it noticed (over a network the request may
// then be applied, even after Put returned): the key holds the older
// object or the new one, whole. Those cases use keys of their own.
func testCancelledPut(t *testing.T, b *sink.Bucket, d driver.Bucket, h Hooks) {
	old := []byte("older object")
	MustPut(t, b, "c/old", old)
	for _, stop := range []bool{true, false} {
		for _, size := range failureSizes {
			for _, exists := range []bool{false, true} {
				key := map[bool]string{false: "c/new", true: "c/old"}[exists]
				if !stop {
					key = fmt.Sprintf("c/late-%s-%d", key[2:], size)
					if exists {
						MustPut(t, b, key, old)
					}
				}
				t.Run(fmt.Sprintf("%s/stop=%v", key, stop), func(t *testing.T) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					data := Bytes(size, 1)
					body := &cancellingBody{r: bytes.NewReader(data), at: int64(size / 2), ctx: ctx, cancel: cancel, stop: stop}
					_, err := b.Put(ctx, key, body, int64(size), sink.PutOptions{})
					if err != nil && !errors.Is(err, context.Canceled) {
						t.Errorf("Put error %v does not wrap context.Canceled", err)
					}
					if stop && err == nil {
						t.Fatal("Put whose body stopped at a cancellation succeeded, want an error")
					}
					h.NoLeftovers(t, d)
					if !stop {
						// The write may land at any moment: each read
						// sees the older object (or none), or the new one.
						got, _, rerr := b.ReadAll(context.Background(), key, 1<<30)
						switch {
						case rerr == nil && bytes.Equal(got, data):
							t.Logf("the cancellation came too late: %d bytes stored whole (Put error: %v)", size, err)
						case exists && (rerr != nil || !bytes.Equal(got, old)):
							t.Fatalf("after a cancelled Put the object holds %d bytes, %v; want the older one or the new one", len(got), rerr)
						case !exists && !errors.Is(rerr, sink.ErrNotFound):
							t.Fatalf("after a cancelled Put of a new object, ReadAll = %d bytes, %v; want ErrNotFound or the new one", len(got), rerr)
						}
						return
					}
					if exists {
						RequireContent(t, b, key, old)
					} else {
						RequireMissing(t, b, key)
					}
				})
			}
		}
	}
	// A context cancelled before Put.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.PutBytes(ctx, "c/new", []byte("x"), sink.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context = %v, want context.Canceled", err)
	}
	RequireMissing(t, b, "c/new")
	RequireContent(t, b, "c/old", old)
	h.NoLeftovers(t, d)
}

func testFailingBody(t *testing.T, b *sink.Bucket, d driver.Bucket, h Hooks) {
	old := []byte("older object")
	MustPut(t, b, "f/old", old)
	for _, size := range failureSizes {
		for _, readerAt := range []bool{false, true} {
			for _, key := range []string{"f/new", "f/old"} {
				t.Run(fmt.Sprintf("%s/%d/readerAt=%v", key, size, readerAt), func(t *testing.T) {
					fb := failingBody{r: bytes.NewReader(Bytes(size, 2)), at: int64(size) * 2 / 3}
					var body io.ReadSeeker = &fb
					if readerAt {
						body = &failingBodyAt{fb}
					}
					_, err := b.Put(context.Background(), key, body, int64(size), sink.PutOptions{})
					if err == nil {
						t.Fatal("Put of a body that fails mid-read succeeded, want an error")
					}
					if !errors.Is(err, errBody) {
						t.Logf("Put error does not wrap the body's error: %v", err)
					}
					h.NoLeftovers(t, d)
				})
			}
		}
	}
	RequireMissing(t, b, "f/new")
	RequireContent(t, b, "f/old", old)
	// The key can still be written.
	MustPut(t, b, "f/new", []byte("whole"))
	RequireContent(t, b, "f/new", []byte("whole"))
}

// testRefusedPut: Puts the portable layer refuses never reach the driver
// and leave nothing.
func testRefusedPut(t *testing.T, b *sink.Bucket, d driver.Bucket, h Hooks) {
	ctx := context.Background()
	data := []byte("0123456789")
	tests := []struct {
		name string
		put  func() error
		is   error
	}{
		{"ShortBody", func() error {
			_, err := b.Put(ctx, "r/short", bytes.NewReader(data), 11, sink.PutOptions{})
			return err
		}, nil},
		{"LongBody", func() error {
			_, err := b.Put(ctx, "r/long", bytes.NewReader(data), 9, sink.PutOptions{})
			return err
		}, nil},
		{"NegativeSize", func() error {
			_, err := b.Put(ctx, "r/negative", bytes.NewReader(nil), -1, sink.PutOptions{})
			return err
		}, nil},
		{"BothConditions", func() error {
			_, err := b.PutBytes(ctx, "r/both", data, sink.PutOptions{IfNoneMatch: true, IfMatch: "x"})
			return err
		}, nil},
		{"ConditionalTooLarge", func() error {
			_, err := b.PutBytes(ctx, "r/large", make([]byte, driver.MaxConditionalSize+1), sink.PutOptions{IfNoneMatch: true})
			return err
		}, sink.ErrTooLarge},
	}
	for _, tt := range tests {
		err := tt.put()
		if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
			t.Errorf("%s: Put = %v, want an error (%v)", tt.name, err, tt.is)
		}
	}
	// A conditional Put of exactly the limit is fine.
	if _, err := b.PutBytes(ctx, "r/limit", make([]byte, driver.MaxConditionalSize), sink.PutOptions{IfNoneMatch: true}); err != nil {
		t.Fatalf("conditional Put of MaxConditionalSize bytes: %v", err)
	}
	// A body read from its current offset.
	r := bytes.NewReader(data)
	r.Seek(4, io.SeekStart)
	if _, err := b.Put(ctx, "r/tail", r, 6, sink.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	RequireContent(t, b, "r/tail", data[4:])
	as, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := Keys(as); len(got) != 2 || got[0] != "r/limit" || got[1] != "r/tail" {
		t.Fatalf("List = %q, want only r/limit and r/tail", got)
	}
	h.NoLeftovers(t, d)
}
