package dedupeindex

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
)

// Writers that never commit. A ClaimWriter registers its generation in
// the head's pending set before it writes anything, and writes each chunk
// of its list before the claims of the chunk's ids (heldMax claims at most
// are held back meanwhile). So every claim a writer stores is in a chunk
// that the next writer of the period finds (chunks 0, 1, ... of each
// pending generation, until one is missing), reads (Previous) and
// releases; that writer's Commit removes the generations it read from the
// pending set and deletes their chunks. This is the DynamoDB half of
// collect.ClaimWriter.Previous's invariant.

// attrPending is the head's set (NS) of the generations of writers that
// registered and have not committed.
const attrPending = "pending"

// heldMax is the most claims a writer holds back until the chunk listing
// their ids is written: it then writes the chunk early.
var heldMax = 10_000

// heldClaim is a claim waiting for the chunk that lists its id.
type heldClaim struct {
	id string
	fp [collect.FPLen]byte
}

func pendingSet(gens ...int64) *types.AttributeValueMemberNS {
	ns := &types.AttributeValueMemberNS{}
	for _, g := range gens {
		ns.Value = append(ns.Value, strconv.FormatInt(g, 10))
	}
	return ns
}

// register adds gen to the pending set of the period's head (creating a
// head that holds no list when there is none), and keeps the head at least
// until expires (Unix s). It returns the head as it is then, and whether it
// holds a committed list.
func (ix *Index) register(ctx context.Context, job string, period time.Time, gen, expires int64) (head, bool, error) {
	key := headKey(job, period)
	update := func(expr string) (map[string]types.AttributeValue, error) {
		out, err := ix.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(ix.table),
			Key:                       attr.JobKey(key),
			UpdateExpression:          aws.String(expr),
			ExpressionAttributeNames:  map[string]string{"#pd": attrPending, "#e": attrExpiresAt},
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": pendingSet(gen), ":e": attr.N(expires)},
			ReturnValues:              types.ReturnValueAllNew,
		})
		if err != nil {
			return nil, fmt.Errorf("register writer %d in period list head %q: %w", gen, key, err)
		}
		return out.Attributes, nil
	}
	av, err := update("ADD #pd :g SET #e = if_not_exists(#e, :e)")
	if err != nil {
		return head{}, false, err
	}
	h, found, err := ix.parseHead(key, av)
	if err != nil {
		return head{}, false, err
	}
	if h.expires < expires {
		// A raised window, or a head past its expiry: kept as long as
		// the claims this writer may write.
		if _, err := update("ADD #pd :g SET #e = :e"); err != nil {
			return head{}, false, err
		}
		h.expires = expires
	}
	if !slices.Contains(h.pending, gen) || found && h.gen == gen {
		return head{}, false, fmt.Errorf("register writer %d in period list head %q: head %+v", gen, key, h)
	}
	return h, found, nil
}

// Previous implements collect.ClaimWriter: the committed list as
// NewClaimWriter found it (none when past its expiry by the wall clock, as
// PeriodIDs), merged with the lists of the writers pending then.
func (w *claimWriter) Previous() iter.Seq2[string, error] {
	var seqs []iter.Seq2[string, error]
	if w.hadOld && w.old.expires > w.ix.clock().Unix() {
		seqs = append(seqs, w.wrap("committed list", w.ix.listIDs(w.ctx, w.job, w.period, w.old.gen, w.old.chunks, w.old.count, nil)))
	}
	for _, g := range w.failed {
		done := func(chunks int64) { w.read[g] = chunks }
		seqs = append(seqs, w.wrap(fmt.Sprintf("list of failed writer %d", g), w.ix.listIDs(w.ctx, w.job, w.period, g, -1, -1, done)))
	}
	return collect.MergeIDs(seqs...)
}

// wrap prefixes the errors of seq with what it reads.
func (w *claimWriter) wrap(what string, seq iter.Seq2[string, error]) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for id, err := range seq {
			if err != nil {
				yield("", fmt.Errorf("%s of job %q period %s: %w", what, w.job, attr.FormatTime(w.period), err))
				return
			}
			if !yield(id, nil) {
				return
			}
		}
	}
}

// released returns the generations Commit removes from the pending set:
// the writer's own and those of the failed writers whose lists Previous
// read to the end (the others stay pending, for the next writer).
func (w *claimWriter) released() []int64 {
	gens := []int64{w.gen}
	for _, g := range w.failed {
		if _, ok := w.read[g]; ok {
			gens = append(gens, g)
		}
	}
	return gens
}
