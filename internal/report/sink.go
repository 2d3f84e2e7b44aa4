package report

import (
	"context"
	"errors"
	"io"
	"time"
)

var (
	// ErrNotFound is returned by Sink.Open for a key that holds no object.
	ErrNotFound = errors.New("object not found")
	// ErrBadKey is returned for a key that is empty, absolute, or has an
	// empty, "." or ".." segment: no key can name a place outside the sink.
	ErrBadKey = errors.New("bad object key")
)

// Sink is where reports are delivered: a local folder or an S3 prefix.
// Keys are relative, '/'-separated, and made only of the bytes
// [A-Za-z0-9._=%/-] (agency ids are escaped before they reach a sink);
// a sink refuses other keys with ErrBadKey.
type Sink interface {
	// NewWriter starts writing the object at key. Nothing new is visible at
	// key until Commit returns nil; then the whole object is, replacing any
	// older object (overwrite is allowed). Abort, or a Commit that fails,
	// leaves any older object as it was and no partial object anywhere.
	// Cancelling ctx aborts the write.
	NewWriter(ctx context.Context, key, contentType string) (ObjectWriter, error)
	// Open reads the object at key; ErrNotFound (wrapped) when there is none.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// List returns the committed objects whose key starts with prefix, in
	// ascending key order. Writes in progress are not listed.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// ObjectWriter is an object being written. Exactly one of Commit or Abort
// must be called; calling either again is a no-op returning nil.
type ObjectWriter interface {
	io.Writer
	// Commit makes the object visible at its key, whole.
	Commit() error
	// Abort discards what was written.
	Abort() error
}

// ObjectInfo describes a committed object.
type ObjectInfo struct {
	Key      string
	Size     int64
	Modified time.Time
}
