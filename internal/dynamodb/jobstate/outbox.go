package jobstate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/outbox"
)

var _ outbox.Store = (*State)(nil)

// The outbox (package outbox) lives in the state table too, in items of
// its own, so that the job item's size does not grow with it. The ids of
// what is pending, and those of each month, are spread over index items by
// a hash of the id, so that none grows past DynamoDB's 400 KB item limit
// with the outbox (a final month of 100,000 agencies enqueues 100,000
// e-mails and as many events per endpoint):
//
//	job "<job>#outbox"                  months  SS  the months (UTC "2026-04")
//	                                                of the entries' at
//	job "<job>#outbox#p#<b>"            pending SS  ids not sent yet whose
//	                                                bucketOf is b
//	job "<job>#outbox#m#<YYYY-MM>#<b>"  ids     SS  the entries whose at is in
//	                                                that month and whose
//	                                                bucketOf is b (Since)
//	job "<job>#outbox#e#<id>"           kind S, target S, at N, payload B,
//	                                    attempts N, next_attempt N, last_error S,
//	                                    sent N, resends N (absent when zero)
//
// Before the buckets (a state table written by an earlier version) the
// ids were in one set each: "pending" in "<job>#outbox" and "ids" in
// "<job>#outbox#m#<YYYY-MM>". Those are still read, and a sent entry is
// deleted from them too; nothing new is added to them.
//
// Every write is one TransactWriteItems whose first action is the lease's
// ConditionCheck on the job item: fenced like every state write.
const enqueueChunk = 30 // entries per transaction: 1 + 30 + 30 pending buckets + 30 month buckets + 1 <= 100 actions

// indexBuckets is how many index items the pending ids, and each month's
// ids, are spread over: the most one month enqueues (100,000 agencies,
// e-mail and two endpoints: 300,000 ids, each at most 256 bytes with the
// longest agency ids) is 150 KB per bucket, and a backlog of a few such
// months still fits. Pending reads them all (6 BatchGetItem), Since all of
// each month from its start.
const indexBuckets = 512

func bucketOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % indexBuckets)
}

func pendingKey(job string, b int) map[string]types.AttributeValue {
	return outboxKey(job, "#p#"+strconv.Itoa(b))
}

func outboxMonthKey(job, month string, b int) map[string]types.AttributeValue {
	return outboxKey(job, "#m#"+month+"#"+strconv.Itoa(b))
}

func outboxKey(job, suffix string) map[string]types.AttributeValue {
	return attr.JobKey(job + "#outbox" + suffix)
}

func ss(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }

func (s *State) leaseCheck(job string, l checkpoint.Lease, now time.Time) types.TransactWriteItem {
	cond, names, vals := leaseCond(l, &now)
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.table), Key: attr.JobKey(job),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
}

// fencedTransact writes items after the lease check; a failed check is
// the lease lost.
func (s *State) fencedTransact(ctx context.Context, job string, l checkpoint.Lease, now time.Time, items []types.TransactWriteItem) error {
	err := s.transact(ctx, append([]types.TransactWriteItem{s.leaseCheck(job, l, now)}, items...))
	if err == nil {
		return nil
	}
	old, failed, err := s.conditionFailed(ctx, job, err)
	if !failed {
		return err
	}
	if lost := leaseLost(old, l, now); lost != nil {
		return lost
	}
	return fmt.Errorf("%w (a condition of the write failed)", checkpoint.ErrLeaseLost)
}

func entryItem(job string, e outbox.Entry) map[string]types.AttributeValue {
	it := outboxKey(job, "#e#"+e.ID)
	it["kind"] = attr.S(e.Kind)
	it["at"] = attr.Millis(e.At)
	if e.Target != "" {
		it["target"] = attr.S(e.Target)
	}
	if len(e.Payload) > 0 {
		it["payload"] = attr.B(e.Payload)
	}
	maps.Copy(it, stateAttrs(e))
	return it
}

// stateAttrs are e's attempt state, zero values left out.
func stateAttrs(e outbox.Entry) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{}
	if e.Attempts > 0 {
		it["attempts"] = attr.N(int64(e.Attempts))
	}
	if !e.NextAttempt.IsZero() {
		it["next_attempt"] = attr.Millis(e.NextAttempt)
	}
	if e.LastError != "" {
		it["last_error"] = attr.S(e.LastError)
	}
	if !e.Sent.IsZero() {
		it["sent"] = attr.Millis(e.Sent)
	}
	if e.Resends > 0 {
		it["resends"] = attr.N(int64(e.Resends))
	}
	return it
}

// Enqueue implements outbox.Store: the ids already held are read first
// (the lease keeps other writers out), the others written in transactions
// of enqueueChunk entries.
func (s *State) Enqueue(ctx context.Context, job string, l checkpoint.Lease, now time.Time, es []outbox.Entry) (int, error) {
	if err := checkJob(job); err != nil {
		return 0, fmt.Errorf("enqueue: %w", err)
	}
	for _, e := range es {
		if err := e.Validate(); err != nil {
			return 0, fmt.Errorf("enqueue: %w", err)
		}
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	have, err := s.getEntries(ctx, job, ids, false)
	if err != nil {
		return 0, fmt.Errorf("enqueue deliveries of job %q: %w", job, err)
	}
	var fresh []outbox.Entry
	seen := map[string]bool{}
	for _, e := range es {
		if _, ok := have[e.ID]; !ok && !seen[e.ID] {
			fresh = append(fresh, e)
			seen[e.ID] = true
		}
	}
	for chunk := range slices.Chunk(fresh, enqueueChunk) {
		// The index items first, then the entries: on a server without
		// transactions (dynalite) the writes go one by one, and a process
		// that dies between them leaves ids without an entry (skipped,
		// then written whole by the next Enqueue of the same entries),
		// never an entry that no index lists, which nothing would send.
		var items, puts []types.TransactWriteItem
		byMonth := map[string]map[int][]string{} // month -> bucket -> ids
		pending := map[int][]string{}            // bucket -> ids
		for _, e := range chunk {
			puts = append(puts, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: entryItem(job, e)}})
			m, b := e.At.UTC().Format("2006-01"), bucketOf(e.ID)
			if byMonth[m] == nil {
				byMonth[m] = map[int][]string{}
			}
			byMonth[m][b] = append(byMonth[m][b], e.ID)
			if e.Sent.IsZero() {
				pending[b] = append(pending[b], e.ID)
			}
		}
		add := func(key map[string]types.AttributeValue, attrName string, ids []string) {
			items = append(items, types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.table), Key: key,
				UpdateExpression:          aws.String("ADD #a :v"),
				ExpressionAttributeNames:  map[string]string{"#a": attrName},
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": ss(ids...)}}})
		}
		months := slices.Sorted(maps.Keys(byMonth))
		add(outboxKey(job, ""), "months", months)
		for _, b := range slices.Sorted(maps.Keys(pending)) {
			add(pendingKey(job, b), "pending", pending[b])
		}
		for _, m := range months {
			for _, b := range slices.Sorted(maps.Keys(byMonth[m])) {
				add(outboxMonthKey(job, m, b), "ids", byMonth[m][b])
			}
		}
		if err := s.fencedTransact(ctx, job, l, now, append(items, puts...)); err != nil {
			return 0, fmt.Errorf("enqueue deliveries of job %q: %w", job, err)
		}
	}
	return len(fresh), nil
}

// Record implements outbox.Store.
func (s *State) Record(ctx context.Context, job string, l checkpoint.Lease, now time.Time, e outbox.Entry) error {
	if err := checkJob(job); err != nil {
		return fmt.Errorf("record delivery: %w", err)
	}
	if err := e.Validate(); err != nil {
		return fmt.Errorf("record delivery: %w", err)
	}
	have, err := s.getEntries(ctx, job, []string{e.ID}, false)
	if err != nil {
		return fmt.Errorf("record delivery %s of job %q: %w", e.ID, job, err)
	}
	if _, ok := have[e.ID]; !ok {
		return fmt.Errorf("record delivery of job %q: %w: %s", job, outbox.ErrNotFound, e.ID)
	}
	expr, vals := "REMOVE attempts, next_attempt, last_error, sent, resends", map[string]types.AttributeValue{}
	if st := stateAttrs(e); len(st) > 0 {
		var set, remove []string
		for _, k := range []string{"attempts", "next_attempt", "last_error", "sent", "resends"} {
			if v, ok := st[k]; ok {
				set = append(set, k+" = :"+k)
				vals[":"+k] = v
			} else {
				remove = append(remove, k)
			}
		}
		expr = "SET " + strings.Join(set, ", ")
		if len(remove) > 0 {
			expr += " REMOVE " + strings.Join(remove, ", ")
		}
	}
	up := &types.Update{TableName: aws.String(s.table), Key: outboxKey(job, "#e#"+e.ID), UpdateExpression: aws.String(expr)}
	if len(vals) > 0 {
		up.ExpressionAttributeValues = vals
	}
	// A sent entry leaves the pending set of its bucket (and the one set
	// of an earlier version's table, if it is there); any other stays.
	idx := func(key map[string]types.AttributeValue, op string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.table), Key: key,
			UpdateExpression: aws.String(op + " pending :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": ss(e.ID)}}}
	}
	items := []types.TransactWriteItem{{Update: up}, idx(pendingKey(job, bucketOf(e.ID)), "ADD")}
	if !e.Sent.IsZero() {
		items = []types.TransactWriteItem{{Update: up}, idx(pendingKey(job, bucketOf(e.ID)), "DELETE"), idx(outboxKey(job, ""), "DELETE")}
	}
	if err := s.fencedTransact(ctx, job, l, now, items); err != nil {
		return fmt.Errorf("record delivery %s of job %q: %w", e.ID, job, err)
	}
	return nil
}

// Get implements outbox.Store.
func (s *State) Get(ctx context.Context, job string, ids []string) (map[string]outbox.Entry, error) {
	if err := checkJob(job); err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	es, err := s.getEntries(ctx, job, ids, true)
	if err != nil {
		return nil, fmt.Errorf("read outbox of job %q: %w", job, err)
	}
	return es, nil
}

// Pending implements outbox.Store: the ids of the pending sets, each
// bucket's and an earlier version's one.
func (s *State) Pending(ctx context.Context, job string) ([]string, error) {
	root, err := s.getItem(ctx, outboxKey(job, ""))
	if err != nil {
		return nil, fmt.Errorf("read outbox of job %q: %w", job, err)
	}
	keys := make([]map[string]types.AttributeValue, indexBuckets)
	for b := range keys {
		keys[b] = pendingKey(job, b)
	}
	ids, err := s.getSets(ctx, keys, "pending")
	if err != nil {
		return nil, fmt.Errorf("read outbox of job %q: %w", job, err)
	}
	ids = append(ids, setOf(root["pending"])...)
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Since implements outbox.Store.
func (s *State) Since(ctx context.Context, job string, t time.Time) ([]outbox.Entry, error) {
	root, err := s.getItem(ctx, outboxKey(job, ""))
	if err != nil {
		return nil, fmt.Errorf("read outbox of job %q: %w", job, err)
	}
	from := t.UTC().Format("2006-01")
	var keys []map[string]types.AttributeValue
	for _, m := range setOf(root["months"]) {
		if m < from {
			continue
		}
		keys = append(keys, outboxKey(job, "#m#"+m)) // an earlier version's one set
		for b := range indexBuckets {
			keys = append(keys, outboxMonthKey(job, m, b))
		}
	}
	ids, err := s.getSets(ctx, keys, "ids")
	if err != nil {
		return nil, fmt.Errorf("read outbox of job %q: %w", job, err)
	}
	es, err := s.getEntries(ctx, job, ids, true)
	if err != nil {
		return nil, fmt.Errorf("read outbox of job %q: %w", job, err)
	}
	tm := time.UnixMilli(t.UnixMilli())
	return sorted(es, func(e outbox.Entry) bool { return !e.At.Before(tm) }), nil
}

// getSets returns the members of the string set attrName of the items of
// keys that exist.
func (s *State) getSets(ctx context.Context, keys []map[string]types.AttributeValue, attrName string) ([]string, error) {
	var out []string
	err := s.batchGet(ctx, keys, map[string]string{"#a": attrName}, func(it map[string]types.AttributeValue) error {
		out = append(out, setOf(it[attrName])...)
		return nil
	})
	return out, err
}

func sorted(es map[string]outbox.Entry, keep func(outbox.Entry) bool) []outbox.Entry {
	var out []outbox.Entry
	for _, id := range slices.Sorted(maps.Keys(es)) {
		if keep(es[id]) {
			out = append(out, es[id])
		}
	}
	return out
}

func setOf(v types.AttributeValue) []string {
	if s, ok := v.(*types.AttributeValueMemberSS); ok {
		return s.Value
	}
	return nil
}

func (s *State) getItem(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// entryAttrs are the attributes of an entry but its payload.
var entryAttrs = map[string]string{"#k": "kind", "#t": "target", "#at": "at", "#n": "attempts", "#na": "next_attempt",
	"#le": "last_error", "#s": "sent", "#r": "resends"}

// getEntries reads the entries of ids that exist, with their payloads
// when withPayload.
func (s *State) getEntries(ctx context.Context, job string, ids []string, withPayload bool) (map[string]outbox.Entry, error) {
	out := map[string]outbox.Entry{}
	uniq := slices.Compact(slices.Sorted(slices.Values(ids)))
	prefix := job + "#outbox#e#"
	keys := make([]map[string]types.AttributeValue, len(uniq))
	for i, id := range uniq {
		keys[i] = outboxKey(job, "#e#"+id)
	}
	names := entryAttrs
	if withPayload {
		names = nil // every attribute
	}
	err := s.batchGet(ctx, keys, names, func(it map[string]types.AttributeValue) error {
		k, _ := it["job"].(*types.AttributeValueMemberS)
		if k == nil || len(k.Value) <= len(prefix) {
			return nil
		}
		e, err := parseEntry(k.Value[len(prefix):], it)
		if err != nil {
			return err
		}
		out[e.ID] = e
		return nil
	})
	return out, err
}

// batchGet calls each with every item of keys that exists (strongly
// consistent BatchGetItem, 100 keys at a time, unprocessed keys retried);
// names, when given, are the attributes read besides the key ("#a": name).
func (s *State) batchGet(ctx context.Context, keys []map[string]types.AttributeValue, names map[string]string, each func(map[string]types.AttributeValue) error) error {
	for chunk := range slices.Chunk(keys, 100) {
		ka := types.KeysAndAttributes{Keys: chunk, ConsistentRead: aws.Bool(true)}
		if len(names) > 0 {
			proj := []string{"#job"}
			for n := range names {
				proj = append(proj, n)
			}
			ka.ProjectionExpression = aws.String(strings.Join(proj, ", "))
			ka.ExpressionAttributeNames = map[string]string{"#job": "job"}
			maps.Copy(ka.ExpressionAttributeNames, names)
		}
		req := map[string]types.KeysAndAttributes{s.table: ka}
		for try := 0; len(req) > 0; try++ {
			if try > 20 {
				return errors.New("batch get of outbox items: keys still unprocessed after 20 tries")
			}
			res, err := s.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return err
			}
			for _, it := range res.Responses[s.table] {
				if err := each(it); err != nil {
					return err
				}
			}
			req = res.UnprocessedKeys
			if len(req) > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(try+1) * 50 * time.Millisecond):
				}
			}
		}
	}
	return nil
}

func parseEntry(id string, it map[string]types.AttributeValue) (outbox.Entry, error) {
	e := outbox.Entry{ID: id}
	str := func(k string) string {
		if v, ok := it[k].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	var bad error
	num := func(k string) int64 {
		v, ok := it[k].(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil && bad == nil {
			bad = fmt.Errorf("outbox entry %s: %s %q: %w", id, k, v.Value, err)
		}
		return n
	}
	ms := func(k string) time.Time {
		if n := num(k); n != 0 {
			return attr.FromMillis(n)
		}
		return time.Time{}
	}
	e.Kind, e.Target, e.LastError = str("kind"), str("target"), str("last_error")
	e.At, e.NextAttempt, e.Sent = ms("at"), ms("next_attempt"), ms("sent")
	e.Attempts, e.Resends = int(num("attempts")), int(num("resends"))
	if b, ok := it["payload"].(*types.AttributeValueMemberB); ok {
		e.Payload = b.Value
	}
	return e, bad
}
