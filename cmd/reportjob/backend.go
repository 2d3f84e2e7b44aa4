package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/directory"
	"github.com/reportjob/reportjob/internal/dynamodb"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/outbox"
	"github.com/reportjob/reportjob/internal/s3sink"
	"github.com/reportjob/reportjob/internal/sink"
)

// store is the configured data table and state store: items, checkpoint,
// lease and dedupe index.
type store struct {
	collect.Source
	collect.Index
	ingest.Writer
	checkpoint.Store
	// outbox is the state store's delivery outbox.
	outbox outbox.Store
	init   func(context.Context) error
	close  func() error
	where  string // for messages: the file, or the table names
}

func openStore(ctx context.Context, c *cli) (*store, error) {
	cfg := c.cfg
	switch cfg.Store.Backend {
	case "embedded":
		if err := c.refuseNewStore(ctx); err != nil {
			return nil, err
		}
		s, err := embedded.Open(cfg.Store.Embedded.Path, embedded.Options{LockTimeout: c.lockTimeout})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return &store{Source: s, Index: s, Writer: s, Store: s, outbox: s, init: s.Init, close: s.Close, where: absPath(s.Path())}, nil
	case "dynamodb":
		d := cfg.Store.DynamoDB
		k, err := loadTestKnobs(c.env)
		if err != nil {
			return nil, err
		}
		client, err := dynamodb.NewClient(ctx, dynamodb.ClientConfig{Region: d.Region, Endpoint: d.Endpoint,
			RequestTimeout: k.requestTimeout, MaxBackoff: k.maxBackoff, Logger: c.log})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		s, err := dynamodb.New(client, dynamodb.Options{
			Table: d.Table, StateTable: d.StateTable,
			PartitionAttr: cfg.Keys.PartitionAttr, SortAttr: cfg.Keys.SortAttr,
			WriteDeadline: k.batchDeadline,
			// The dedupe index's claims: as many writes in flight as
			// Queries (PutItems keeps its own default).
			IndexConcurrency: cfg.Report.Concurrency,
			Logger:           c.log,
		})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return &store{Source: s, Index: s, Writer: s, Store: s, outbox: s, init: s.Init, close: func() error { return nil },
			where: "dynamodb tables " + d.Table + ", " + d.StateTable}, nil
	}
	return nil, fmt.Errorf("store.backend %q: unknown", cfg.Store.Backend) // config.Load refuses it first
}

// bucket is the configured report destination.
type bucket struct {
	*sink.Bucket
	init func(context.Context) error
	// path is where a key lands, for people: a file path or an s3:// URL.
	path func(key string) string
	// close releases what the sink holds (a folder sink's temporary
	// folder and its lock); nil when there is nothing to release.
	close func() error
	// getObject reads a small object of any bucket with the sink's S3
	// client (the agency directory at s3://); nil without one.
	getObject directory.Getter
}

// Close releases what the sink holds. Commands that write call it, so
// that a folder sink leaves no temporary folder behind.
func (b *bucket) Close() error {
	if b.close == nil {
		return nil
	}
	return b.close()
}

func openBucket(ctx context.Context, c *cli) (*bucket, error) {
	cfg := c.cfg
	switch {
	case strings.HasPrefix(cfg.Sink.URL, "file://"):
		s, err := filesink.New(cfg.Sink.Dir)
		if err != nil {
			return nil, fmt.Errorf("open sink: %w", err)
		}
		abs, _ := filepath.Abs(cfg.Sink.Dir)
		return &bucket{Bucket: sink.New(s), init: func(context.Context) error { return nil },
			path: func(key string) string { return filepath.Join(abs, filepath.FromSlash(key)) }, close: s.Close}, nil
	case strings.HasPrefix(cfg.Sink.URL, "s3://"):
		s3c := cfg.Sink.S3
		k, err := loadTestKnobs(c.env)
		if err != nil {
			return nil, err
		}
		client, err := s3sink.NewClient(ctx, s3sink.ClientConfig{Region: s3c.Region, Endpoint: s3c.Endpoint, PathStyle: s3c.PathStyle,
			RequestTimeout: k.requestTimeout, MaxBackoff: k.maxBackoff, Logger: c.log})
		if err != nil {
			return nil, fmt.Errorf("open sink: %w", err)
		}
		s, err := s3sink.New(client, s3sink.Options{
			Bucket: cfg.Sink.Bucket, Prefix: cfg.Sink.Prefix, SSE: s3c.SSE, KMSKeyID: s3c.KMSKeyID,
			PartSize: k.partSize,
		})
		if err != nil {
			return nil, fmt.Errorf("open sink: %w", err)
		}
		b := sink.New(s)
		get := func(ctx context.Context, bucket, key string) ([]byte, error) {
			return s3sink.GetObjectBytes(ctx, client, bucket, key, directory.MaxSize)
		}
		return &bucket{Bucket: b, path: b.URL, init: func(ctx context.Context) error {
			return s3sink.EnsureBucket(ctx, client, cfg.Sink.Bucket, s3c.Region)
		}, getObject: get}, nil
	}
	return nil, fmt.Errorf("sink.url %q: unknown scheme", cfg.Sink.URL) // config.Load refuses it first
}

// snapshotLockWait is how long a command that only reads waits for the
// embedded file before it asks the process holding it for a snapshot.
const snapshotLockWait = 100 * time.Millisecond

// openStoreToRead opens the store for a command that only reads it
// (status, transactions, rejects, statement without --close, verify
// without --repair). When another process has the embedded file open (a
// run), it reads a snapshot of that process's last commit instead of
// failing (embedded.OpenSnapshot); DynamoDB is read as it is. readOnly
// false is openStore.
func openStoreToRead(ctx context.Context, c *cli, readOnly bool) (*store, error) {
	if !readOnly || c.cfg.Store.Backend != "embedded" {
		return openStore(ctx, c)
	}
	// A short wait for the file first: a run holds it for minutes, and
	// serves a snapshot at once.
	quick := *c
	quick.lockTimeout = snapshotLockWait
	st, err := openStore(ctx, &quick)
	if !errors.Is(err, embedded.ErrLocked) {
		return st, err
	}
	s, serr := embedded.OpenSnapshot(ctx, c.cfg.Store.Embedded.Path)
	if errors.Is(serr, embedded.ErrNoSnapshot) {
		// No snapshot served (a process of an older version, or a path
		// too long for a socket): wait for the file as every command does.
		if st, err = openStore(ctx, c); err == nil || !errors.Is(err, embedded.ErrLocked) {
			return st, err
		}
	}
	if serr != nil {
		return nil, fmt.Errorf("%w; reading a snapshot instead failed: %v", err, serr)
	}
	c.log.Info("the store is in use by another process (a run): reading a snapshot of its last commit", "store", absPath(s.Path()))
	return &store{Source: s, Index: s, Writer: s, Store: s, init: s.Init, close: s.Close, where: absPath(s.Path())}, nil
}
