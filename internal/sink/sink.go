// Package sink is where reports are delivered: a portable Bucket of
// objects over a driver (a local folder, internal/filesink, or an S3
// bucket and prefix, internal/s3sink), as go-cloud's blob.Bucket is over
// its drivers.
//
// The Bucket does what every driver would otherwise repeat: it refuses
// bad keys (CheckKey and the driver's length limits) before the driver
// sees them, refuses conditional puts too large to be atomic, hands the
// driver a body of exactly the announced size, checks that what Get reads
// is as long as the object, and names the object's URL in every error,
// wrapping the driver's error so that errors.Is finds ErrNotFound,
// ErrPrecondition and ErrBadKey.
//
// Objects are immutable once published except where the caller replaces
// one with a conditional Put: PutOptions.IfNoneMatch to create it,
// PutOptions.IfMatch with the ETag it read to replace it, so that two
// writers can never blindly overwrite each other.
package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/reportjob/reportjob/internal/fence"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

var (
	// ErrNotFound is wrapped by the errors of Get, ReadAll and Stat when
	// no object is at the key.
	ErrNotFound = driver.ErrNotFound
	// ErrPrecondition is wrapped by the error of a conditional Put whose
	// condition does not hold: an object is at the key (IfNoneMatch), or
	// the object at the key does not have the ETag (IfMatch; also when
	// there is no object).
	ErrPrecondition = driver.ErrPrecondition
	// ErrBadKey is wrapped by the error of any method given a key or
	// prefix that CheckKey or CheckPrefix refuses, or a key longer than
	// the driver can store. Such a key never reaches the driver.
	ErrBadKey = errors.New("bad object key")
	// ErrTooLarge is wrapped by the error of ReadAll for an object larger
	// than its limit, and of a conditional Put larger than
	// driver.MaxConditionalSize.
	ErrTooLarge = errors.New("object too large")
)

// Attrs describe a stored object: its key, size, ETag and modification
// time.
type Attrs = driver.Attrs

// PutOptions make a Put conditional and give the object's content type.
type PutOptions = driver.PutOptions

// Bucket is a portable bucket of objects over a driver. It is safe for
// concurrent use when its driver is (every driver of this module is).
type Bucket struct {
	d driver.Bucket
}

// New returns a Bucket over d, which must not be nil.
func New(d driver.Bucket) *Bucket {
	if d == nil {
		panic("sink.New: nil driver")
	}
	return &Bucket{d: d}
}

// String names the bucket: "file:///srv/reports", "s3://bucket/prefix".
func (b *Bucket) String() string { return b.d.String() }

// URL names the object at key, for messages: "file:///srv/reports/key",
// "s3://bucket/prefix/key". It does not check key.
func (b *Bucket) URL(key string) string { return b.d.String() + "/" + key }

// CheckKey returns nil if key is valid (the package's CheckKey) and
// within the driver's limits (MaxKeyLen, MaxSegmentLen), else an error
// wrapping ErrBadKey that names the key and the limit.
func (b *Bucket) CheckKey(key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	return checkLimits(key, b.d.MaxKeyLen(), b.d.MaxSegmentLen(), b.d.String())
}

// name returns the URL of key for an error message: the object's URL when
// key is valid, else the bucket (the error then quotes the key).
func (b *Bucket) name(key string) string {
	if CheckKey(key) != nil {
		return "in " + b.d.String()
	}
	return b.URL(key)
}

// Put stores the size bytes of body, read from its current offset, at
// key. Without conditions it replaces any object at the key; with
// opts.IfNoneMatch it stores only if no object is at the key, with
// opts.IfMatch only if the object at the key has that ETag, else it
// returns an error wrapping ErrPrecondition and changes nothing.
//
// The object is visible whole when Put returns nil. A Put that fails (a
// body that fails or ends early, a cancelled ctx) leaves any older object
// as it was and nothing new. body must hold exactly size more bytes, and
// may be read more than once (a driver may retry). A conditional Put is
// at most driver.MaxConditionalSize bytes (else ErrTooLarge).
func (b *Bucket) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, opts PutOptions) (Attrs, error) {
	a, err := b.put(ctx, key, body, size, opts)
	if err != nil {
		return Attrs{}, fmt.Errorf("put %s: %w", b.name(key), err)
	}
	return a, nil
}

func (b *Bucket) put(ctx context.Context, key string, body io.ReadSeeker, size int64, opts PutOptions) (Attrs, error) {
	if err := b.CheckKey(key); err != nil {
		return Attrs{}, err
	}
	if opts.IfNoneMatch && opts.IfMatch != "" {
		return Attrs{}, fmt.Errorf("both IfNoneMatch and IfMatch %q set: at most one condition", opts.IfMatch)
	}
	if size < 0 {
		return Attrs{}, fmt.Errorf("negative size %d", size)
	}
	if err := fence.Check(ctx); err != nil {
		return Attrs{}, err
	}
	if (opts.IfNoneMatch || opts.IfMatch != "") && size > driver.MaxConditionalSize {
		return Attrs{}, fmt.Errorf("%w: a conditional put is at most %d bytes, this one is %d", ErrTooLarge, driver.MaxConditionalSize, size)
	}
	if body == nil {
		if size != 0 {
			return Attrs{}, fmt.Errorf("nil body of size %d", size)
		}
		body = bytes.NewReader(nil)
	}
	sized, err := exactly(body, size)
	if err != nil {
		return Attrs{}, err
	}
	if err := ctx.Err(); err != nil {
		return Attrs{}, err
	}
	a, err := b.d.Put(ctx, key, sized, size, b.driverOpts(opts))
	if err != nil {
		return Attrs{}, err
	}
	a.Key = key
	return a, nil
}

// driverOpts is opts as the driver gets them: Defer only for a Syncer and
// an unconditional Put, so that a driver (or a wrapper of one) that does
// not say it can Sync stores every object durably.
func (b *Bucket) driverOpts(opts PutOptions) PutOptions {
	if _, ok := b.d.(driver.Syncer); !ok || opts.IfNoneMatch || opts.IfMatch != "" {
		opts.Defer = false
	}
	return opts
}

// Sync makes durable the objects stored by Puts with PutOptions.Defer
// (driver.Syncer); a no-op for a driver whose Puts are durable when they
// return (S3). It changes no object, so no fence is checked.
func (b *Bucket) Sync(ctx context.Context) error {
	s, ok := b.d.(driver.Syncer)
	if !ok {
		return nil
	}
	if err := s.Sync(ctx); err != nil {
		return fmt.Errorf("sync %s: %w", b.d.String(), err)
	}
	return nil
}

// PutBytes stores data at key, as Put does.
func (b *Bucket) PutBytes(ctx context.Context, key string, data []byte, opts PutOptions) (Attrs, error) {
	return b.Put(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}

// PutFile stores the content of the regular file at path at key, as Put
// does. The file must not change while it is uploaded, nor after (reports
// are encoded to a temporary file first, then uploaded from it): a driver
// that can (driver.FilePutter: a folder on the same file system) stores
// it by a hard link, without copying its bytes.
func (b *Bucket) PutFile(ctx context.Context, key, path string, opts PutOptions) (Attrs, error) {
	if err := b.CheckKey(key); err != nil {
		return Attrs{}, fmt.Errorf("put %s: %w", b.name(key), err)
	}
	if fp, ok := b.d.(driver.FilePutter); ok && !opts.IfNoneMatch && opts.IfMatch == "" {
		// A stat, not an open: the driver opens the file it links (and
		// checks it again there).
		fi, err := os.Stat(path)
		if err != nil {
			return Attrs{}, fmt.Errorf("put %s: %w", b.name(key), err)
		}
		if !fi.Mode().IsRegular() {
			return Attrs{}, fmt.Errorf("put %s: %s is not a regular file", b.name(key), path)
		}
		a, err := b.putLinked(ctx, fp, key, path, fi.Size(), opts)
		if !errors.Is(err, errors.ErrUnsupported) {
			if err != nil {
				return Attrs{}, fmt.Errorf("put %s: %w", b.name(key), err)
			}
			return a, nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return Attrs{}, fmt.Errorf("put %s: %w", b.name(key), err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Attrs{}, fmt.Errorf("put %s: %w", b.name(key), err)
	}
	if !fi.Mode().IsRegular() {
		return Attrs{}, fmt.Errorf("put %s: %s is not a regular file", b.name(key), path)
	}
	return b.Put(ctx, key, f, fi.Size(), opts)
}

// putLinked stores the file at path through the driver's PutFile, with
// Put's checks.
func (b *Bucket) putLinked(ctx context.Context, fp driver.FilePutter, key, path string, size int64, opts PutOptions) (Attrs, error) {
	if err := fence.Check(ctx); err != nil {
		return Attrs{}, err
	}
	if err := ctx.Err(); err != nil {
		return Attrs{}, err
	}
	a, err := fp.PutFile(ctx, key, path, size, b.driverOpts(opts))
	if err != nil {
		return Attrs{}, err
	}
	a.Key = key
	return a, nil
}

// Get opens the object at key and returns it with its Attrs; the error
// wraps ErrNotFound when there is none. The caller closes the reader.
// Reading fails with io.ErrUnexpectedEOF (wrapped) if the object ends
// before Attrs.Size bytes.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, Attrs, error) {
	if err := b.CheckKey(key); err != nil {
		return nil, Attrs{}, fmt.Errorf("get %s: %w", b.name(key), err)
	}
	if err := ctx.Err(); err != nil {
		return nil, Attrs{}, fmt.Errorf("get %s: %w", b.URL(key), err)
	}
	r, a, err := b.d.Get(ctx, key)
	if err != nil {
		return nil, Attrs{}, fmt.Errorf("get %s: %w", b.URL(key), err)
	}
	a.Key = key
	return &sizedReader{r: r, url: b.URL(key), want: a.Size}, a, nil
}

// ReadAll reads the whole object at key, which must be at most max bytes
// (else an error wrapping ErrTooLarge); the error wraps ErrNotFound when
// there is none.
func (b *Bucket) ReadAll(ctx context.Context, key string, max int64) ([]byte, Attrs, error) {
	r, a, err := b.Get(ctx, key)
	if err != nil {
		return nil, Attrs{}, err
	}
	defer r.Close()
	if a.Size > max {
		return nil, Attrs{}, fmt.Errorf("read %s: %w: %d bytes, more than the %d allowed", b.URL(key), ErrTooLarge, a.Size, max)
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, Attrs{}, fmt.Errorf("read %s: %w", b.URL(key), err)
	}
	if int64(len(data)) > max {
		return nil, Attrs{}, fmt.Errorf("read %s: %w: more than the %d bytes allowed", b.URL(key), ErrTooLarge, max)
	}
	if err := r.Close(); err != nil {
		return nil, Attrs{}, fmt.Errorf("read %s: %w", b.URL(key), err)
	}
	return data, a, nil
}

// Stat returns the Attrs of the object at key; the error wraps
// ErrNotFound when there is none.
func (b *Bucket) Stat(ctx context.Context, key string) (Attrs, error) {
	if err := b.CheckKey(key); err != nil {
		return Attrs{}, fmt.Errorf("stat %s: %w", b.name(key), err)
	}
	if err := ctx.Err(); err != nil {
		return Attrs{}, fmt.Errorf("stat %s: %w", b.URL(key), err)
	}
	a, err := b.d.Stat(ctx, key)
	if err != nil {
		return Attrs{}, fmt.Errorf("stat %s: %w", b.URL(key), err)
	}
	a.Key = key
	return a, nil
}

// List returns the Attrs of every object whose key starts with prefix (""
// for all; see CheckPrefix), in ascending byte order of key. Objects
// being written are not listed.
func (b *Bucket) List(ctx context.Context, prefix string) ([]Attrs, error) {
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("list %s: %w", b.d.String(), err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", b.URL(prefix), err)
	}
	as, err := b.d.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", b.URL(prefix), err)
	}
	return as, nil
}

// ListAfter returns the Attrs of every object whose key starts with
// prefix and sorts after `after`, in ascending byte order of key: one
// listing from `after` on where the driver can (driver.AfterLister), List
// less the keys before otherwise.
func (b *Bucket) ListAfter(ctx context.Context, prefix, after string) ([]Attrs, error) {
	al, ok := b.d.(driver.AfterLister)
	if !ok {
		as, err := b.List(ctx, prefix)
		if err != nil {
			return nil, err
		}
		i := 0
		for i < len(as) && as[i].Key <= after {
			i++
		}
		return as[i:], nil
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("list %s: %w", b.d.String(), err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", b.URL(prefix), err)
	}
	as, err := al.ListAfter(ctx, prefix, after)
	if err != nil {
		return nil, fmt.Errorf("list %s after %s: %w", b.URL(prefix), after, err)
	}
	return as, nil
}

// Delete removes the object at key. Deleting a missing object is not an
// error.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := b.CheckKey(key); err != nil {
		return fmt.Errorf("delete %s: %w", b.name(key), err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", b.URL(key), err)
	}
	if err := fence.Check(ctx); err != nil {
		return fmt.Errorf("delete %s: %w", b.URL(key), err)
	}
	if err := b.d.Delete(ctx, key); err != nil {
		return fmt.Errorf("delete %s: %w", b.URL(key), err)
	}
	return nil
}

// DeleteDeferred is Delete whose durability may wait for the next Sync
// (driver.DeferredDeleter); Delete itself on a driver that cannot.
func (b *Bucket) DeleteDeferred(ctx context.Context, key string) error {
	dd, ok := b.d.(driver.DeferredDeleter)
	if !ok {
		return b.Delete(ctx, key)
	}
	if err := b.CheckKey(key); err != nil {
		return fmt.Errorf("delete %s: %w", b.name(key), err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", b.URL(key), err)
	}
	if err := fence.Check(ctx); err != nil {
		return fmt.Errorf("delete %s: %w", b.URL(key), err)
	}
	if err := dd.DeleteDeferred(ctx, key); err != nil {
		return fmt.Errorf("delete %s: %w", b.URL(key), err)
	}
	return nil
}
