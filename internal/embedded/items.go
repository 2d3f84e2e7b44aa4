package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/item"
)

// preferredBatch is how many items ingest hands PutItems at once: each
// call is one transaction and one fsync, which dominate small batches.
const preferredBatch = 10_000

// PreferredBatch implements ingest.BatchSizer.
func (s *Store) PreferredBatch() int { return preferredBatch }

// PutItems stores items in one write transaction: all of them or, on
// error, none (the *ingest.WriteError then names every transaction id).
// An item replaces any item with the same keys. Attributes are stored as
// given; an empty partition or sort key is refused.
func (s *Store) PutItems(ctx context.Context, items []item.Item) error {
	if len(items) == 0 {
		return nil
	}
	fail := func(err error) error {
		ids := make([]string, len(items))
		for i, it := range items {
			ids[i] = it.Attrs[item.AttrTransactionID].Text
		}
		return &ingest.WriteError{TransactionIDs: ids, Err: err}
	}
	for i, it := range items {
		if it.PK == "" || it.SK == "" {
			return fail(fmt.Errorf("item %d (transaction_id %q): empty key (partition key %q, sort key %q)",
				i, it.Attrs[item.AttrTransactionID].Text, it.PK, it.SK))
		}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketItems)
		if err != nil {
			return err
		}
		var (
			part   *bolt.Bucket
			partPK string
		)
		for _, it := range items {
			if part == nil || it.PK != partPK {
				if part, err = root.CreateBucketIfNotExists([]byte(it.PK)); err != nil {
					return fmt.Errorf("partition %q: %w", it.PK, err)
				}
				partPK = it.PK
			}
			if err := part.Put([]byte(it.SK), encodeAttrs(it.Attrs)); err != nil {
				return fmt.Errorf("item (%q, %q): %w", it.PK, it.SK, err)
			}
		}
		return nil
	})
	if err != nil {
		return fail(fmt.Errorf("embedded store %s: %w", s.path, err))
	}
	return nil
}

// Query calls fn with pages of the items of partition pk whose sort key
// is greater than after, in sort key byte order. Each page is read in its
// own read transaction, none is held while fn runs; the next page starts
// after the last key of the previous one.
func (s *Store) Query(ctx context.Context, pk, after string, fn func(page []item.Item) error) error {
	return query(s, ctx, pk, after, func(k, v []byte, it *item.Item) error {
		sk, attrs, err := decodeItem(k, v)
		*it = item.Item{PK: pk, SK: sk, Attrs: attrs}
		return err
	}, fn)
}

// QueryRecords is Query with each item given as its item.Record
// (collect.RecordSource): the contract's attributes are decoded into the
// Record's array, and no map is built for an item that has no other
// attribute. The strings of a page's records share memory (item.Strings).
func (s *Store) QueryRecords(ctx context.Context, pk, after string, fn func(page []item.Record) error) error {
	var strs item.Strings
	return query(s, ctx, pk, after, func(k, v []byte, r *item.Record) error {
		return decodeRecord(pk, k, v, r, &strs)
	}, fn)
}

// query is Query with pages of what decode makes of each stored key and
// value (decode sets every field of the page's element it is given: the
// page's memory is reused).
func query[T any](s *Store, ctx context.Context, pk, after string, decode func(k, v []byte, dst *T) error, fn func(page []T) error) error {
	if pk == "" {
		return errors.New("query embedded store: partition key is empty")
	}
	var page []T
	last := []byte(after)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("query partition %q: %w", pk, err)
		}
		var (
			more bool
			err  error
		)
		page, last, more, err = readPage(s, pk, last, page[:0], decode)
		if err != nil {
			return fmt.Errorf("query partition %q of %s: %w", pk, s.path, err)
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
	}
}

// readPage appends to page the items of pk after `after` up to the page
// bounds, and returns the last key read and whether items may follow it.
func readPage[T any](s *Store, pk string, after []byte, page []T, decode func(k, v []byte, dst *T) error) ([]T, []byte, bool, error) {
	more := false
	var last []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketItems)
		if root == nil {
			return nil
		}
		part := root.Bucket([]byte(pk))
		if part == nil {
			return nil
		}
		c := part.Cursor()
		k, v := c.Seek(after)
		if k != nil && bytes.Equal(k, after) {
			k, v = c.Next()
		}
		size := 0
		var lastK []byte // bbolt's memory: copied before the transaction ends
		defer func() { last = bytes.Clone(lastK) }()
		for ; k != nil; k, v = c.Next() {
			if len(page) >= s.opts.PageSize || (len(page) > 0 && size+len(k)+len(v) > s.opts.PageBytes) {
				more = true
				return nil
			}
			// Decoded in place (a Record is 264 bytes), over what the
			// element held before: decode sets every field.
			page = slices.Grow(page, 1)
			page = page[:len(page)+1]
			if err := decode(k, v, &page[len(page)-1]); err != nil {
				return fmt.Errorf("item (%q, %q): %w", pk, k, err)
			}
			lastK = k
			size += len(k) + len(v)
		}
		return nil
	})
	if err != nil {
		return nil, nil, false, err
	}
	if last == nil {
		last = after
	}
	return page, last, more, nil
}

// DeleteItem removes the item with keys (pk, sk), if any: what an operator
// does with DynamoDB's DeleteItem to remove a wrong item before a backfill.
func (s *Store) DeleteItem(ctx context.Context, pk, sk string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketItems)
		if root == nil {
			return nil
		}
		part := root.Bucket([]byte(pk))
		if part == nil {
			return nil
		}
		return part.Delete([]byte(sk))
	})
	if err != nil {
		return fmt.Errorf("delete item (%q, %q) from %s: %w", pk, sk, s.path, err)
	}
	return nil
}
