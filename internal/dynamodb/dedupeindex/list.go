package dedupeindex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/klauspost/compress/zstd"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
)

// Chunk sizes of a period's id list. A chunk is compressed from raw ids
// gathered up to a raw size that adapts to the compression ratio so that
// chunks come out near chunkAim; one that comes out above chunkMax is split
// (an item holds at most 400 KB).
const (
	chunkAim    = 300_000
	chunkMax    = 350_000
	rawStart    = 512 << 10
	rawMin      = 64 << 10
	rawMax      = 4 << 20
	maxChunkRaw = 64 << 20 // refuse to decode more (a corrupt chunk)
)

var (
	zstdEnc = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil)
		if err != nil {
			panic(fmt.Sprintf("zstd encoder: %v", err)) // only with bad options
		}
		return e
	})
	zstdDec = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxChunkRaw), zstd.WithDecoderConcurrency(0))
		if err != nil {
			panic(fmt.Sprintf("zstd decoder: %v", err))
		}
		return d
	})
)

// listChunker cuts an ascending stream of ids into compressed chunks and
// passes each to emit, in order.
type listChunker struct {
	aim, max  int // compressed size aimed at, and the most allowed
	rawTarget int // raw bytes gathered before compressing
	raw       []byte
	emit      func(data []byte) error
}

func newListChunker(emit func([]byte) error) *listChunker {
	return &listChunker{aim: chunkAim, max: chunkMax, rawTarget: rawStart, emit: emit}
}

func (c *listChunker) add(id string) error {
	c.raw = binary.AppendUvarint(c.raw, uint64(len(id)))
	c.raw = append(c.raw, id...)
	if len(c.raw) >= c.rawTarget {
		return c.flush()
	}
	return nil
}

// flush emits what is gathered.
func (c *listChunker) flush() error {
	if len(c.raw) == 0 {
		return nil
	}
	err := c.compress(c.raw)
	c.raw = c.raw[:0]
	return err
}

func (c *listChunker) compress(raw []byte) error {
	data := zstdEnc().EncodeAll(raw, nil)
	if len(data) > c.max {
		mid := midEntry(raw)
		if mid == 0 {
			return fmt.Errorf("one id compresses to %d bytes, more than a chunk's %d", len(data), c.max)
		}
		if err := c.compress(raw[:mid]); err != nil {
			return err
		}
		return c.compress(raw[mid:])
	}
	c.rawTarget = min(max(int(int64(len(raw))*int64(c.aim)/int64(max(len(data), 1))), rawMin), rawMax)
	return c.emit(data)
}

// midEntry returns the offset of the first entry of raw that starts at or
// after its middle, or 0 when raw holds one entry.
func midEntry(raw []byte) int {
	for off := 0; off < len(raw); {
		n, k := binary.Uvarint(raw[off:])
		off += k + int(n)
		if off >= len(raw)/2 {
			if off >= len(raw) {
				return 0
			}
			return off
		}
	}
	return 0
}

// head is a period list's head item. An item with no gen holds no list,
// only pending writers.
type head struct {
	gen, chunks, count int64
	expires            int64 // Unix s
	// pending are the generations of the writers that registered and
	// have not committed (see register).
	pending []int64
}

// getHead reads the head of the period's list (strongly consistent); found
// is whether it holds a committed list.
func (ix *Index) getHead(ctx context.Context, job string, period time.Time) (head, bool, error) {
	key := headKey(job, period)
	out, err := ix.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(ix.table),
		Key:            attr.JobKey(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return head{}, false, fmt.Errorf("get period list head %q: %w", key, err)
	}
	if out.Item == nil {
		return head{}, false, nil
	}
	return ix.parseHead(key, out.Item)
}

// parseHead decodes a head item; found is whether it holds a committed
// list (a gen).
func (ix *Index) parseHead(key string, av map[string]types.AttributeValue) (h head, found bool, err error) {
	if v, ok := av[attrPending]; ok {
		ns, ok := v.(*types.AttributeValueMemberNS)
		if !ok {
			return head{}, false, fmt.Errorf("table %q: period list head %q: attribute %s = %v, want a number set (NS)", ix.table, key, attrPending, v)
		}
		for _, n := range ns.Value {
			g, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				return head{}, false, fmt.Errorf("table %q: period list head %q: pending generation %q: %w", ix.table, key, n, err)
			}
			h.pending = append(h.pending, g)
		}
	}
	if _, ok := av[attrGen]; !ok {
		if _, ok := av[attrExpiresAt]; ok {
			if h.expires, err = intAttr(av, attrExpiresAt); err != nil {
				return head{}, false, fmt.Errorf("table %q: period list head %q: %w", ix.table, key, err)
			}
		}
		return h, false, nil
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{attrGen, &h.gen}, {attrChunks, &h.chunks}, {attrCount, &h.count}, {attrExpiresAt, &h.expires}} {
		n, err := intAttr(av, f.name)
		if err != nil {
			return head{}, false, fmt.Errorf("table %q: period list head %q: %w", ix.table, key, err)
		}
		*f.v = n
	}
	if h.gen < 1 || h.chunks < 0 || h.count < h.chunks {
		return head{}, false, fmt.Errorf("table %q: period list head %q: gen %d, chunks %d, count %d make no sense",
			ix.table, key, h.gen, h.chunks, h.count)
	}
	return h, true, nil
}

// putHead makes h the period's list (one UpdateItem), conditional on the
// stored head holding old (no list when hadOld is false; or deleted by
// Time to Live since): a writer that committed since fails it. It removes
// done (this writer and the failed ones whose lists it released) from the
// pending set; writers that registered since stay pending. A retry of a
// write that succeeded but whose response was lost finds its own
// generation and succeeds.
func (ix *Index) putHead(ctx context.Context, job string, period time.Time, h head, expires types.AttributeValue, old head, hadOld bool, done []int64) error {
	key := headKey(job, period)
	in := &dynamodb.UpdateItemInput{
		TableName:        aws.String(ix.table),
		Key:              attr.JobKey(key),
		UpdateExpression: aws.String("SET #g = :ng, #c = :c, #n = :n, #e = :e DELETE #pd :done"),
		ExpressionAttributeNames: map[string]string{
			"#j": attr.Job, "#g": attrGen, "#c": attrChunks, "#n": attrCount, "#e": attrExpiresAt, "#pd": attrPending,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":ng": attr.N(h.gen), ":c": attr.N(h.chunks), ":n": attr.N(h.count), ":e": expires, ":done": pendingSet(done...),
		},
		ConditionExpression:                 aws.String("attribute_not_exists(#j) OR attribute_not_exists(#g)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	want := "none"
	if hadOld {
		in.ConditionExpression = aws.String("attribute_not_exists(#j) OR #g = :g")
		in.ExpressionAttributeValues[":g"] = attr.N(old.gen)
		want = "generation " + strconv.FormatInt(old.gen, 10)
	}
	_, err := ix.api.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		if err != nil {
			return fmt.Errorf("put period list head %q: %w", key, err)
		}
		return nil
	}
	cur := ccf.Item
	if cur == nil { // a server that does not return it
		out, err := ix.api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(ix.table), Key: attr.JobKey(key), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return fmt.Errorf("put period list head %q: condition failed, then: %w", key, err)
		}
		cur = out.Item
	}
	got := "none"
	if g, ok := cur[attrGen].(*types.AttributeValueMemberN); ok {
		if g.Value == strconv.FormatInt(h.gen, 10) {
			return nil // our own earlier write
		}
		got = "generation " + g.Value
	}
	return fmt.Errorf("put period list head %q: another writer replaced the list (now %s, want %s): %w",
		key, got, want, err)
}

// deleteChunks deletes chunks [from, to) of generation gen, best effort:
// failures are logged.
func (ix *Index) deleteChunks(ctx context.Context, job string, period time.Time, gen, from, to int64) {
	if from >= to {
		return
	}
	w := ix.batch.NewAsyncWriter(ctx, ix.table)
	for n := from; n < to && w.Failed() == nil; n++ {
		_ = w.Put(types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: attr.JobKey(chunkKey(job, period, gen, n))}}, 100)
	}
	if err := w.Flush(); err != nil {
		ix.log.Warn("could not delete period list chunks; Time to Live will", logJob, job,
			logPeriod, period, logGen, gen, logErr, err)
	}
}

// PeriodIDs implements collect.Index: it reads the head, then the chunks one
// at a time (strongly consistent GetItem), holding one chunk in memory. The
// list is read whatever its expiry, since Time to Live goes by DynamoDB's
// clock, not this host's: a host clock ahead must not hide a list whose
// chunks are all there (a rebuild would not release the claims of the ids
// it no longer bills). A chunk missing from a list whose expires_at has
// passed by the wall clock is Time to Live's doing and ends the list (the
// claims of its ids expired with it). A missing chunk of a list that has
// not expired, a corrupt chunk, ids out of order, or a count that differs
// from the head's is an error.
func (ix *Index) PeriodIDs(ctx context.Context, job string, period time.Time) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		fail := func(err error) {
			yield("", fmt.Errorf("period ids of job %q period %s: %w", job, attr.FormatTime(period), err))
		}
		if err := collect.CheckJob(job); err != nil {
			fail(err)
			return
		}
		h, found, err := ix.getHead(ctx, job, period)
		if err != nil {
			fail(err)
			return
		}
		if !found {
			return
		}
		// A list whose head expired by the host clock is read until DynamoDB's
		// own Time to Live deletes it: a missing chunk then ends it (a host
		// clock ahead must not make a rebuild forget the ids to release).
		expired := h.expires <= ix.clock().Unix()
		for id, err := range ix.listIDs(ctx, job, period, h.gen, h.chunks, h.count, nil) {
			if err != nil {
				if expired && errors.Is(err, errChunkMissing) {
					return
				}
				fail(err)
				return
			}
			if !yield(id, nil) {
				return
			}
		}
	}
}

// listIDs yields the ids of generation gen's list, reading its chunks one
// at a time (strongly consistent GetItem), holding one chunk in memory.
// With chunks < 0 (a writer that never committed) it reads chunks until
// one is missing, and calls done with how many it read when it got to the
// end; otherwise a missing chunk is an error, and so is a count other than
// count. A corrupt chunk or ids out of order is an error.
func (ix *Index) listIDs(ctx context.Context, job string, period time.Time, gen, chunks, count int64, done func(chunks int64)) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		var (
			last string
			n    int64
			raw  []byte
			err  error
		)
		c := int64(0)
		for ; chunks < 0 || c < chunks; c++ {
			key := chunkKey(job, period, gen, c)
			raw, err = ix.getChunk(ctx, key, raw[:0])
			if chunks < 0 && errors.Is(err, errChunkMissing) {
				break
			}
			if err != nil {
				yield("", err)
				return
			}
			for off := 0; off < len(raw); {
				l, k := binary.Uvarint(raw[off:])
				if k <= 0 || l > uint64(len(raw)-off-k) {
					yield("", fmt.Errorf("chunk %q: corrupt at byte %d", key, off))
					return
				}
				id := string(raw[off+k : off+k+int(l)])
				off += k + int(l)
				if n > 0 && id <= last {
					yield("", fmt.Errorf("chunk %q: id %q after %q, want ascending", key, clip(id), clip(last)))
					return
				}
				last = id
				n++
				if !yield(id, nil) {
					return
				}
			}
		}
		if chunks >= 0 && n != count {
			yield("", fmt.Errorf("list has %d ids, its head says %d", n, count))
			return
		}
		if done != nil {
			done(c)
		}
	}
}

// errChunkMissing: a chunk of a list is not in the table.
var errChunkMissing = errors.New("chunk is missing")

// getChunk reads and decompresses one chunk, appending to raw.
func (ix *Index) getChunk(ctx context.Context, key string, raw []byte) ([]byte, error) {
	out, err := ix.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(ix.table),
		Key:                      attr.JobKey(key),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#i"),
		ExpressionAttributeNames: map[string]string{"#i": attrIDs},
	})
	if err != nil {
		return nil, fmt.Errorf("get chunk %q: %w", key, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("chunk %q: %w", key, errChunkMissing)
	}
	b, ok := out.Item[attrIDs].(*types.AttributeValueMemberB)
	if !ok {
		return nil, fmt.Errorf("chunk %q: attribute %s = %v, want B", key, attrIDs, out.Item[attrIDs])
	}
	raw, err = zstdDec().DecodeAll(b.Value, raw)
	if err != nil {
		return nil, fmt.Errorf("chunk %q: %w", key, err)
	}
	return raw, nil
}
