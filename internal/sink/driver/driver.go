// Package driver is the contract a storage technology implements to hold
// reports: a local folder (filesink) or an S3 bucket (s3sink). Callers use
// the portable *sink.Bucket, which validates keys once, above every driver,
// and names the object in every error (as go-cloud's blob does above its
// drivers). A driver can rely on every key and prefix it is given having
// passed sink.CheckKey / sink.CheckPrefix and its own MaxKeyLen and
// MaxSegmentLen, and on a conditional Put's body being at most
// MaxConditionalSize bytes. The conformance suite is
// internal/sink/drivertest.
package driver

import (
	"context"
	"errors"
	"io"
	"time"
)

var (
	// ErrNotFound is returned (wrapped) by Get and Stat when no object is
	// at the key.
	ErrNotFound = errors.New("object not found")
	// ErrPrecondition is returned (wrapped) by a conditional Put whose
	// condition does not hold: an object exists (IfNoneMatch), or no object
	// with that ETag is at the key (IfMatch: another ETag, or none).
	ErrPrecondition = errors.New("precondition failed")
)

// Attrs describe a stored object.
type Attrs struct {
	Key  string
	Size int64
	// ETag identifies this version of the object: a new Put of the key,
	// even with the same bytes, may change it; it is what PutOptions.IfMatch
	// compares. Opaque; never empty.
	ETag     string
	Modified time.Time
}

// PutOptions make a Put conditional. At most one of IfNoneMatch and IfMatch
// is set; a conditional Put's body is at most MaxConditionalSize bytes.
type PutOptions struct {
	ContentType string
	// IfNoneMatch: store only if no object is at the key.
	IfNoneMatch bool
	// IfMatch: store only if the object at the key has this ETag.
	IfMatch string
	// Defer lets an unconditional Put return before the object is durable:
	// it is visible, whole, as after any Put, and survives a crash of the
	// machine once a later Sync returns nil (Syncer). A driver that is not
	// a Syncer never sees it set (sink.Bucket clears it); a Syncer ignores
	// it on a conditional Put, which is always durable when it returns.
	Defer bool
}

// MaxConditionalSize bounds the body of a conditional Put (a manifest or a
// small marker), so that every driver can make it one atomic request.
const MaxConditionalSize = 5 << 20

// FilePutter is implemented by a driver that can store a local file
// without copying its bytes: a folder on the file system of the file (a
// hard link). PutFile stores the size bytes of the regular file at path at
// key, as an unconditional Put of them would, with the same visibility and
// errors. The file at path stays where it is, with its bytes; its mode and
// modification time may change, and the caller must not write to it
// afterwards (the object may share its storage). When the driver cannot
// do so for this file (another file system, links refused), PutFile
// stores nothing and returns an error wrapping errors.ErrUnsupported:
// sink.Bucket then copies the file with Put.
type FilePutter interface {
	PutFile(ctx context.Context, key, path string, size int64, opts PutOptions) (Attrs, error)
}

// Syncer is implemented by a driver that can batch the durability of its
// unconditional Puts (a folder: one round of fsyncs for many files rather
// than three or four fsyncs per file). Sync makes durable every object
// that a Put with PutOptions.Defer stored before Sync was called: once it
// returns nil they survive a crash of the machine. An object deleted or
// replaced meanwhile needs nothing. When Sync fails, those objects may be
// lost, and a later Sync does not say so (the kernel reports a failed
// write once, and drops its pages): Put them again before relying on
// them (a publication fails before its manifest, and the next run uploads
// them again). Safe for concurrent use with Puts; a Put that returns
// during a Sync may be left for the next one.
type Syncer interface {
	Sync(ctx context.Context) error
}

// AfterLister is implemented by a driver that can list from a key on
// (S3's StartAfter; a folder skips the subfolders before it). ListAfter
// returns what List(prefix) returns, less the keys that sort at or before
// after, at a cost that does not grow with those keys.
type AfterLister interface {
	ListAfter(ctx context.Context, prefix, after string) ([]Attrs, error)
}

// DeferredDeleter is implemented by a Syncer whose deletions can wait for
// its next Sync to be durable. DeleteDeferred removes the object at key as
// Delete does (no reader finds it once it returns; a missing object is not
// an error); the next Sync that returns nil makes the removal survive a
// crash of the machine, before which it may come back.
type DeferredDeleter interface {
	DeleteDeferred(ctx context.Context, key string) error
}

// Bucket is a flat namespace of immutable-until-replaced objects under
// '/'-separated keys.
//
// Visibility: an object written by Put is visible whole, or not at all,
// when Put returns nil. A failed or cancelled Put leaves no partial object
// anywhere (a driver aborts its multipart uploads and removes its
// temporary files) and, when its body failed or stopped before its end,
// any older object at the key as it was. But a Put that fails after its
// whole body was sent (a cancellation that comes too late, an answer
// lost on the network) may have stored the new object, whole: no network
// store can tell; a caller that must know reads the key back.
//
// Errors: ErrNotFound and ErrPrecondition as documented, wrapped; any other
// error is final for that call: drivers retry transient failures
// (throttling, 5xx, connection resets) themselves. All methods are safe for
// concurrent use and honour ctx.
type Bucket interface {
	// Put stores size bytes read from body at key. Without conditions it
	// replaces any object at the key. body holds exactly size bytes from
	// offset 0 (sink.Bucket hands it so) and may be read more than once (a
	// driver may seek to 0 to retry); it is an io.ReaderAt too when the
	// caller's body is one (a file). Returns the new object's Attrs.
	Put(ctx context.Context, key string, body io.ReadSeeker, size int64, opts PutOptions) (Attrs, error)
	// Get opens the object at key; ErrNotFound when there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, Attrs, error)
	// Stat returns the object's Attrs; ErrNotFound when there is none.
	Stat(ctx context.Context, key string) (Attrs, error)
	// List returns every object whose key starts with prefix ("" for
	// all), in ascending byte order of key. Objects being written are not
	// listed; objects whose key is not a valid sink key are skipped, and a
	// driver may skip keys with a segment that starts with '.' (a folder
	// keeps its own hidden files there).
	List(ctx context.Context, prefix string) ([]Attrs, error)
	// Delete removes the object at key. Deleting a missing object is not an
	// error.
	Delete(ctx context.Context, key string) error
	// MaxKeyLen is the longest key, in bytes, the driver can store (S3:
	// 1,024 less its prefix; a folder: what its file system allows).
	MaxKeyLen() int
	// MaxSegmentLen is the longest '/'-separated segment of a key, in bytes
	// (a folder: 255, a file name; S3: MaxKeyLen).
	MaxSegmentLen() int
	// String names the bucket for messages: "file:///srv/reports",
	// "s3://bucket/prefix".
	String() string
}
