// Package dedupeindex is the dedupe-window index (collect.Index) of the
// DynamoDB store. It lives in the store's state table (HASH "job" (S), with
// Time to Live on expires_at, both set up by dynamodb.Store.Init), beside
// the job items, under keys that no job name can take (job names have no
// '#'):
//
//	job = "<job>#claim#<id>"                 the claim of one transaction id
//	    period      N  start of the period that billed it, Unix ms
//	    period_end  N  end of that period, Unix ms (absent in claims
//	                   written before claims recorded it)
//	    fp          B  content fingerprint (collect.FPLen bytes)
//	    expires_at  N  Claim.Expires, Unix s (Time to Live)
//	job = "<job>#period#<start ms>"          head of a period's id list
//	    gen         N  generation: a random id of the ClaimWriter that
//	                   wrote the list, in its chunks' keys
//	    chunks      N  number of chunks
//	    count       N  number of ids
//	    expires_at  N  Unix s (Time to Live)
//	    pending     NS generations of the writers registered and not
//	                   committed (see pending.go); a head with only
//	                   pending and expires_at holds no list
//	job = "<job>#period#<start ms>#<gen>#<n>"  chunk n (from 0) of a list
//	    ids         B  zstd of the ids in ascending byte order, each as
//	                   uvarint length + bytes; at most ~350 KB
//	    expires_at  N
//
// Lookup is BatchGetItem by key, never a Scan or Query. A ClaimWriter
// registers its generation in the head, writes each chunk (PutItem) before
// the claims of its ids (BatchWriteItem) as it goes, then the head (the
// atomic switch to the new generation), then deletes the previous
// generation's chunks and those of the failed writers it released. Since each writer's generation is its own, the
// chunks of two writers of one period (which the lease should prevent)
// never mix: the head names one writer's complete list. Expired items are
// left to Time to Live, which DynamoDB applies by its own (wall) clock,
// within days: Lookup returns a claim until it is deleted, and PeriodIDs
// reads a list until its head is deleted (a chunk missing from a list whose
// expires_at has passed by the wall clock ends it). No decision here goes
// by the host's clock alone, so a host clock ahead loses no claim and
// hides no list.
//
// Batch reads and writes (BatchGetItem, BatchWriteItem) go through a
// batch.Retrier, which retries unprocessed keys, items and throttling until
// its deadline (dynamodb.Options.WriteDeadline).
package dedupeindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/dynamodb/batch"
	"github.com/reportjob/reportjob/internal/report"
)

var _ collect.Index = (*Index)(nil)

// API is the subset of *dynamodb.Client the index uses besides its
// batch.Retrier's BatchWriteItem. Implementations must be safe for
// concurrent use and retry transient errors as the SDK client does.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Index is the dedupe index in one state table. It is safe for concurrent
// use.
type Index struct {
	api   API
	table string
	batch *batch.Retrier
	log   *slog.Logger
	// clock is the wall clock DynamoDB's Time to Live goes by (not the
	// report clock); tests replace it.
	clock func() time.Time
}

// New returns the index in table over api. b runs its batch calls (b.API
// must reach the same DynamoDB as api); log (not nil) receives warnings.
// New does not touch the table.
func New(api API, table string, b *batch.Retrier, log *slog.Logger) *Index {
	return &Index{api: api, table: table, batch: b, log: log, clock: time.Now}
}

// ExpiresByWallClock implements collect.WallClockIndex: DynamoDB's Time
// to Live deletes expired items by its own clock.
func (ix *Index) ExpiresByWallClock() {}

var _ collect.WallClockIndex = (*Index)(nil)

// AttrExpiresAt is the attribute that holds an index item's expiry, in Unix
// seconds: the state table's Time to Live attribute.
const AttrExpiresAt = "expires_at"

// Attribute names of the index items (the key is attr.Job).
const (
	attrExpiresAt = AttrExpiresAt
	attrPeriod    = "period"
	attrPeriodEnd = "period_end"
	attrFP        = "fp"
	attrGen       = "gen"
	attrChunks    = "chunks"
	attrCount     = "count"
	attrIDs       = "ids"
)

// Log attribute keys of the index.
const (
	logErr    = "err"
	logJob    = "job"
	logPeriod = "period"
	logGen    = "gen"
)

func claimKey(job, id string) string { return job + "#claim#" + id }

func headKey(job string, period time.Time) string {
	return job + "#period#" + strconv.FormatInt(period.UnixMilli(), 10)
}

func chunkKey(job string, period time.Time, gen, n int64) string {
	return headKey(job, period) + "#" + strconv.FormatInt(gen, 10) + "#" + strconv.FormatInt(n, 10)
}

// Lookup implements collect.Index with one strongly consistent BatchGetItem
// of the ids' claim items (projecting only the claim's attributes),
// retrying unprocessed keys and throttling until the batch.Retrier's
// deadline.
func (ix *Index) Lookup(ctx context.Context, job string, ids []string) ([]collect.Claim, error) {
	if err := collect.CheckJob(job); err != nil {
		return nil, fmt.Errorf("look up claims: %w", err)
	}
	seen := make(map[string]bool, len(ids))
	keys := make([]map[string]types.AttributeValue, 0, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		if err := collect.CheckID(id); err != nil {
			return nil, fmt.Errorf("look up claims of job %q: %w", job, err)
		}
		seen[id] = true
		keys = append(keys, attr.JobKey(claimKey(job, id)))
	}
	if len(keys) > collect.MaxLookup {
		return nil, fmt.Errorf("look up claims of job %q: %d distinct ids, at most %d per call", job, len(keys), collect.MaxLookup)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	table := ix.table
	prefix := claimKey(job, "")
	var claims []collect.Claim
	pending := keys
	op := batch.Op{Err: fmt.Sprintf("batch get from table %q", table), Log: "retrying batch get", Table: table, Noun: "keys"}
	err := ix.batch.Retry(ctx, op, func(ctx context.Context) (int, error) {
		out, err := ix.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{table: {
				Keys:                 pending,
				ConsistentRead:       aws.Bool(true),
				ProjectionExpression: aws.String("#j, #p, #pe, #fp, #e"),
				ExpressionAttributeNames: map[string]string{
					"#j": attr.Job, "#p": attrPeriod, "#pe": attrPeriodEnd, "#fp": attrFP, "#e": attrExpiresAt,
				},
			}},
		})
		if err != nil {
			return len(pending), err
		}
		for _, av := range out.Responses[table] {
			c, err := parseClaim(prefix, av)
			if err != nil {
				return len(pending), fmt.Errorf("table %q: %w", table, err)
			}
			claims = append(claims, c)
		}
		pending = out.UnprocessedKeys[table].Keys
		return len(pending), nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up claims of job %q: %w", job, err)
	}
	return claims, nil
}

// parseClaim decodes a claim item whose key starts with prefix.
func parseClaim(prefix string, av map[string]types.AttributeValue) (collect.Claim, error) {
	k, _ := av[attr.Job].(*types.AttributeValueMemberS)
	if k == nil || !strings.HasPrefix(k.Value, prefix) {
		return collect.Claim{}, fmt.Errorf("claim item with key %v: want a key starting with %q", av[attr.Job], prefix)
	}
	c := collect.Claim{ID: strings.TrimPrefix(k.Value, prefix)}
	period, err := intAttr(av, attrPeriod)
	if err != nil {
		return collect.Claim{}, fmt.Errorf("claim item %q: %w", k.Value, err)
	}
	expires, err := intAttr(av, attrExpiresAt)
	if err != nil {
		return collect.Claim{}, fmt.Errorf("claim item %q: %w", k.Value, err)
	}
	fp, _ := av[attrFP].(*types.AttributeValueMemberB)
	if fp == nil || len(fp.Value) != collect.FPLen {
		return collect.Claim{}, fmt.Errorf("claim item %q: attribute %s = %v, want %d bytes (B)", k.Value, attrFP, av[attrFP], collect.FPLen)
	}
	c.Period = attr.FromMillis(period)
	if _, ok := av[attrPeriodEnd]; ok {
		end, err := intAttr(av, attrPeriodEnd)
		if err != nil {
			return collect.Claim{}, fmt.Errorf("claim item %q: %w", k.Value, err)
		}
		c.End = attr.FromMillis(end)
	}
	c.Expires = time.Unix(expires, 0).UTC()
	copy(c.FP[:], fp.Value)
	return c, nil
}

// intAttr returns av[name], an integer N.
func intAttr(av map[string]types.AttributeValue, name string) (int64, error) {
	n, ok := av[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %s = %v, want an integer (N)", name, av[name])
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s = %q, want an integer", name, n.Value)
	}
	return i, nil
}

// checkPeriod validates a ClaimWriter's period and expiry.
func checkPeriod(p report.Period, expires time.Time) error {
	switch {
	case p.Start.IsZero():
		return errors.New("period start is zero")
	case !p.End.After(p.Start):
		return fmt.Errorf("period end %s is not after its start %s", attr.FormatTime(p.End), attr.FormatTime(p.Start))
	case !expires.After(p.Start):
		return fmt.Errorf("expires %s is not after the period start %s", attr.FormatTime(expires), attr.FormatTime(p.Start))
	}
	return nil
}

// NewClaimWriter implements collect.Index. It registers the writer's
// generation in the period's list head (one UpdateItem that also returns
// the generation it replaces and the writers pending); sweep is not used,
// since expired items are left to Time to Live.
func (ix *Index) NewClaimWriter(ctx context.Context, job string, p report.Period, expires, sweep time.Time) (collect.ClaimWriter, error) {
	period := p.Start
	if err := collect.CheckJob(job); err != nil {
		return nil, fmt.Errorf("new claim writer: %w", err)
	}
	if err := checkPeriod(p, expires); err != nil {
		return nil, fmt.Errorf("new claim writer of job %q: %w", job, err)
	}
	gen := newGen(0)
	old, found, err := ix.register(ctx, job, period, gen, expires.Unix())
	if err != nil {
		return nil, fmt.Errorf("new claim writer of job %q period %s: %w", job, attr.FormatTime(period), err)
	}
	w := &claimWriter{
		ix: ix, ctx: ctx, job: job, period: period.UTC(),
		periodN: attr.Millis(period), endN: attr.Millis(p.End), expiresN: attr.N(expires.Unix()),
		old: old, hadOld: found, gen: gen, read: map[int64]int64{},
	}
	for _, g := range old.pending {
		if g != gen {
			w.failed = append(w.failed, g)
		}
	}
	w.list = newListChunker(w.queueChunk)
	w.pump = startPump(w, ix.batch.NewAsyncWriter(ctx, ix.table))
	return w, nil
}

// newGen returns a random generation, positive and other than old.
func newGen(old int64) int64 {
	for {
		if g := rand.Int64(); g > 0 && g != old {
			return g
		}
	}
}

// claimWriter is the DynamoDB collect.ClaimWriter.
type claimWriter struct {
	ix            *Index
	ctx           context.Context
	job           string
	period        time.Time
	periodN, endN types.AttributeValue
	expiresN      types.AttributeValue
	old           head // the list being replaced
	hadOld        bool
	gen           int64 // generation written: this writer's own
	// failed are the other writers pending when this one registered;
	// read maps those whose list Previous read to the end to the chunks
	// it read.
	failed []int64
	read   map[int64]int64
	held   []heldClaim // claims waiting for their chunk
	// cut are the chunks the list cut since the last segment was queued.
	cut  [][]byte
	pump *pump // writes the segments: chunks, then their claims
	list *listChunker
	// chunks is the number of chunks written: the pump's until it ends.
	chunks int64
	count  int64 // ids added
	last   string
	err    error // sticky: the first failure
	done   bool
}

func (w *claimWriter) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("claim writer of job %q period %s: %w", w.job, attr.FormatTime(w.period), err)
	}
	return w.err
}

func (w *claimWriter) usable() error {
	if w.done {
		return fmt.Errorf("claim writer of job %q period %s: already committed or aborted", w.job, attr.FormatTime(w.period))
	}
	return w.err
}

// Add implements collect.ClaimWriter. A full chunk of the list and the
// claims of its ids are handed to the writer's pump, which writes them in
// the background (the chunk first, then the claims,
// batch.Retrier.Concurrency batches at a time) while the caller goes on;
// Add waits only when pumpDepth segments are queued. A failure is
// returned by a later call.
func (w *claimWriter) Add(id string, fp [collect.FPLen]byte, write bool) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.pump.failed(); err != nil {
		return w.fail(err)
	}
	if err := collect.CheckID(id); err != nil {
		return w.fail(err)
	}
	if w.count > 0 && id <= w.last {
		return w.fail(fmt.Errorf("Add(%q) after Add(%q): ids must be strictly ascending", clip(id), clip(w.last)))
	}
	w.last = id
	w.count++
	if write {
		w.held = append(w.held, heldClaim{id, fp})
	}
	err := w.list.add(id)
	if err == nil && len(w.cut) == 0 && len(w.held) >= heldMax {
		err = w.list.flush()
	}
	if err == nil && len(w.cut) > 0 {
		err = w.queueSegment()
	}
	if err != nil {
		return w.fail(err)
	}
	return nil
}

// Release implements collect.ClaimWriter with one DeleteItem conditional on
// the claim's period being the writer's (a failed condition is not an
// error).
func (w *claimWriter) Release(id string) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := collect.CheckID(id); err != nil {
		return w.fail(err)
	}
	_, err := w.ix.api.DeleteItem(w.ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(w.ix.table),
		Key:                       attr.JobKey(claimKey(w.job, id)),
		ConditionExpression:       aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": attrPeriod},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": w.periodN},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return w.fail(fmt.Errorf("release claim of %q: %w", clip(id), err))
	}
	return nil
}

// Commit implements collect.ClaimWriter: it writes the last chunk, waits
// for every claim and chunk, then puts the head, conditional on the head
// being the one NewClaimWriter read (a concurrent writer's Commit fails
// it), removing this writer and the failed ones whose lists Previous read
// from the pending set, and deletes the replaced generation's chunks and theirs (best
// effort: a failure is logged, and Time to Live removes them later). A
// Commit that fails before the head write leaves the previous list in
// force, and this writer pending.
func (w *claimWriter) Commit() error {
	if err := w.usable(); err != nil {
		if !w.done {
			// An earlier failure: Commit ends the writer as Abort would
			// (its caller calls one of them), stopping the pump.
			w.done = true
			w.pump.abort()
		}
		return err
	}
	w.done = true
	err := w.list.flush()
	if err == nil && len(w.cut) > 0 {
		err = w.queueSegment()
	}
	if err == nil {
		err = w.pump.finish()
	} else {
		w.pump.abort()
	}
	if err != nil {
		// The head still names the previous generation, and this one
		// stays pending: the next writer releases its claims.
		return w.fail(err)
	}
	h := head{gen: w.gen, chunks: w.chunks, count: w.count}
	if err := w.ix.putHead(w.ctx, w.job, w.period, h, w.expiresN, w.old, w.hadOld, w.released()); err != nil {
		return w.fail(err)
	}
	if w.hadOld {
		w.ix.deleteChunks(w.ctx, w.job, w.period, w.old.gen, 0, w.old.chunks)
	}
	for g, n := range w.read {
		w.ix.deleteChunks(w.ctx, w.job, w.period, g, 0, n)
	}
	return nil
}

// Abort implements collect.ClaimWriter. It waits for the segments queued
// and the writes in flight, and drops the claims held back. The chunks
// written stay, and the writer stays pending in the head: the next writer of the period reads them and
// releases the claims written. It does nothing after Commit or Abort.
func (w *claimWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.pump.abort()
	w.held, w.cut = nil, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
