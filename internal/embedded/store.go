// Package embedded is the store backend that needs no server: one bbolt
// file holds the data table (collect.Source, ingest.Writer) and every job's
// state: checkpoint, lease, rechecks and restatements (checkpoint.Store),
// and the dedupe index (collect.Index), which is package dedupeindex:
// Store embeds a *dedupeindex.Index over the same file.
//
// Layout of the file:
//
//	meta                     format -> "reportjob/3"
//	items / <partition key>  <sort key> -> encoded attributes (see codec.go)
//	jobs                     <job name> -> JSON job state (see jobRecord in checkpoint.go)
//	claims, periods          the dedupe index (collect.Index): package dedupeindex
//
// Items are kept in one nested bucket per partition key, so a Query reads
// only its partition, in sort key byte order, as DynamoDB does.
//
// # One process at a time
//
// bbolt lets one process open a file at a time: Open takes an exclusive
// flock on it and holds it until Close. That file lock IS the
// cross-process mutual exclusion of the embedded backend: a second
// process (a second `run`, or `ingest` while `schedule` is running) waits
// up to Options.LockTimeout and then gets an error matching ErrLocked,
// which the command line reports as "lease held elsewhere" (exit 3).
// Within the process that has the file open, the lease in the jobs bucket
// still applies, exactly as with DynamoDB. A process that only reads gets
// a snapshot of the last commit from the one that has the file open
// instead (OpenSnapshot, snapshot.go).
//
// Each Open is a session with a random id, which the lease records. A
// lease recorded by another session belongs to a process that has closed
// the file or died (the file lock proves it is not running): Acquire takes
// it over at once, with the next token, instead of waiting for it to
// expire. Within one session the lease rules are DynamoDB's.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/embedded/dedupeindex"
	"github.com/reportjob/reportjob/internal/ingest"
)

var (
	_ collect.Source   = (*Store)(nil)
	_ collect.Index    = (*Store)(nil)
	_ ingest.Writer    = (*Store)(nil)
	_ checkpoint.Store = (*Store)(nil)
)

// ErrLocked means another process has the store's file open. Errors that
// match it name the file.
var ErrLocked = errors.New("embedded store is in use by another process")

// Defaults of Options' zero fields.
const (
	DefaultLockTimeout = time.Second
	DefaultPageSize    = 1000
	DefaultPageBytes   = 1 << 20
)

// format identifies this package's layout in the meta bucket. formatV1 is
// the layout before the dedupe index kept its claims in runs (a by-id
// bucket): Open migrates it (dedupeindex.Migrate) and records format.
// formatV2 is the layout before the index packed its period lists in
// blocks (dedupeindex: one key per id): the index reads both layouts (a
// list records its own), so Open takes it as it is, and the first
// NewClaimWriter, which writes a packed list, records format in the same
// transaction. A binary from before format sees the new marker and
// refuses the file (it would not read the runs, or the packed lists, and
// would bill again what they claim).
const (
	format   = "reportjob/3"
	formatV2 = "reportjob/2"
	formatV1 = "reportjob/1"
)

var (
	bucketMeta  = []byte("meta")
	bucketItems = []byte("items")
	bucketJobs  = []byte("jobs")
	keyFormat   = []byte("format")
)

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// LockTimeout is how long Open waits for another process to close
	// the file before it returns ErrLocked. Zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// PageSize is the most items Query passes to fn at once. Zero means
	// DefaultPageSize.
	PageSize int
	// PageBytes bounds a page's encoded size (keys and attributes), like
	// DynamoDB's 1 MB; a page holds at least one item. Zero means
	// DefaultPageBytes.
	PageBytes int
}

func (o Options) withDefaults() Options {
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.PageBytes <= 0 {
		o.PageBytes = DefaultPageBytes
	}
	return o
}

// Store is an open store file. It is safe for concurrent use. The
// embedded Index is the dedupe index in the same file (collect.Index).
type Store struct {
	*dedupeindex.Index
	db   *bolt.DB
	path string
	opts Options
	// session identifies this Open of the file in the leases it grants.
	session string
	// listener serves snapshots to other processes (snapshot.go); serving
	// counts its goroutines.
	listener net.Listener
	serving  sync.WaitGroup
	// snapshot marks a read-only copy (OpenSnapshot), whose temporary
	// folder removeOnClose Close removes.
	snapshot      bool
	removeOnClose string
}

// Open opens the store file at path, creating it and its parent
// directories when missing. The buckets are created by Init or by the
// first write; reading a store with none is reading an empty store. When
// another process has the file open, Open returns an error matching
// ErrLocked after opts.LockTimeout.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("open embedded store: path is empty")
	}
	opts = opts.withDefaults()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("open embedded store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open embedded store %s: still locked after %s: %w", path, opts.LockTimeout, ErrLocked)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("open embedded store %s: not a store file (%w)", path, err)
	case err != nil:
		return nil, fmt.Errorf("open embedded store %s: %w", path, err)
	}
	s := &Store{Index: dedupeindex.New(db, path), db: db, path: path, opts: opts, session: newSession()}
	s.MarkWrites(markFormat)
	if err := s.checkFormat(); err != nil {
		_ = db.Close()
		return nil, err
	}
	s.serveSnapshots()
	return s, nil
}

// checkFormat refuses a file of another format, takes one of formatV2 as
// it is (see format), and migrates one of formatV1 (or without a marker,
// holding by-id claims: written without Init). The migration runs here
// because Open holds bbolt's file lock: no other process reads or writes
// the file meanwhile, and the index then never sees the by-id layout. It is done once: a migration cut short is done
// again by the next Open, and the marker is set in its last transaction.
func (s *Store) checkFormat() error {
	migrate := false
	err := s.db.View(func(tx *bolt.Tx) error {
		var got []byte
		if meta := tx.Bucket(bucketMeta); meta != nil {
			got = meta.Get(keyFormat)
		}
		switch string(got) {
		case format, formatV2:
		case formatV1:
			migrate = true
		case "":
			migrate = dedupeindex.Legacy(tx)
		default:
			return fmt.Errorf("open embedded store %s: format %q, want %q, %q or %q", s.path, got, format, formatV2, formatV1)
		}
		return nil
	})
	if err != nil || !migrate {
		return err
	}
	if err := dedupeindex.Migrate(context.Background(), s.db, s.path, markFormat); err != nil {
		return fmt.Errorf("open embedded store %s: %w", s.path, err)
	}
	return nil
}

// markFormat records format in tx (writable), when not yet.
func markFormat(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if string(meta.Get(keyFormat)) == format {
		return nil
	}
	return meta.Put(keyFormat, []byte(format))
}

// Path returns the file's path as given to Open.
func (s *Store) Path() string { return s.path }

// Close closes the file and releases its lock.
func (s *Store) Close() error {
	s.stopServing()
	err := s.db.Close()
	if s.removeOnClose != "" {
		_ = os.RemoveAll(s.removeOnClose)
	}
	if err != nil {
		return fmt.Errorf("close embedded store %s: %w", s.path, err)
	}
	return nil
}

// Init creates the buckets and records the file's format. It is
// idempotent.
func (s *Store) Init(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("init embedded store: %w", err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keyFormat, []byte(format)); err != nil {
			return err
		}
		for _, name := range [][]byte{bucketItems, bucketJobs} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("init embedded store %s: %w", s.path, err)
	}
	return nil
}
