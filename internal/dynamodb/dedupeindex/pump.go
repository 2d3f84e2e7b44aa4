package dedupeindex

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/dynamodb/batch"
)

// The writes of a claim writer leave the caller's goroutine. Add hands
// each segment of the list (the chunks the list cut, and the claims of
// their ids held back until then) to a pump goroutine, and goes on
// deciding, aggregating and encoding while the pump writes it: the
// chunks one at a time and in order (PutItem), then the segment's claims
// through a batch.AsyncWriter (batch.Retrier.Concurrency BatchWriteItem
// calls in flight). So the invariant of pending.go holds as before: a
// claim is written only after every chunk up to the one that lists its id,
// and chunk n+1 only after chunk n (the next writer reads a failed
// writer's chunks until one is missing). After the first failure the pump
// writes nothing more: no later chunk, no claim of a later segment.

// pumpDepth is how many segments wait for the pump besides the one it
// writes: the most claims held in memory is about (pumpDepth+2) x heldMax.
const pumpDepth = 2

// segment is what the pump writes in one go: chunks, then claims.
type segment struct {
	chunks [][]byte
	claims []heldClaim
}

// pump writes a claim writer's segments in order, in a goroutine of its
// own.
type pump struct {
	w      *claimWriter
	out    *batch.AsyncWriter
	in     chan segment
	ended  chan struct{}
	mu     sync.Mutex
	err    error
	closed bool
}

func startPump(w *claimWriter, out *batch.AsyncWriter) *pump {
	p := &pump{w: w, out: out, in: make(chan segment, pumpDepth), ended: make(chan struct{})}
	go p.run()
	return p
}

func (p *pump) run() {
	defer close(p.ended)
	for seg := range p.in {
		if p.failed() != nil {
			continue // drain: nothing after a failure
		}
		if err := p.write(seg); err != nil {
			p.fail(err)
		}
	}
}

// write puts seg's chunks in order, then queues its claims.
func (p *pump) write(seg segment) error {
	w := p.w
	for _, data := range seg.chunks {
		if err := w.putChunk(data); err != nil {
			return err
		}
	}
	for _, c := range seg.claims {
		key := claimKey(w.job, c.id)
		err := p.out.Put(types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			attr.Job: attr.S(key), attrPeriod: w.periodN, attrPeriodEnd: w.endN, attrFP: attr.B(c.fp[:]), attrExpiresAt: w.expiresN,
		}}}, len(key)+80)
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *pump) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

// failed returns the pump's first failure, or its AsyncWriter's.
func (p *pump) failed() error {
	p.mu.Lock()
	err := p.err
	p.mu.Unlock()
	if err != nil {
		return err
	}
	return p.out.Failed()
}

// send queues seg, waiting while pumpDepth segments wait.
func (p *pump) send(ctx context.Context, seg segment) error {
	select {
	case p.in <- seg:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("queue claims: %w", ctx.Err())
	}
}

// close ends the input once, then waits for the pump to end.
func (p *pump) close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.in)
	}
	p.mu.Unlock()
	<-p.ended
}

// finish waits for every segment queued and every claim in flight, and
// returns the first failure.
func (p *pump) finish() error {
	p.close()
	if err := p.failed(); err != nil {
		p.out.Wait()
		return err
	}
	return p.out.Flush()
}

// abort writes the segments queued, as Abort did before the pump (the
// claims handed to the AsyncWriter were written), drops the last partial
// batch of claims and waits for the writes in flight. A failure (a lost
// lease refuses every write: package fence) stops it at once.
func (p *pump) abort() {
	p.close()
	p.out.Wait()
}

// queueChunk is the list's emit: the chunk waits, with the claims held,
// for queueSegment.
func (w *claimWriter) queueChunk(data []byte) error {
	w.cut = append(w.cut, data)
	return nil
}

// queueSegment hands the chunks cut and the claims held, whose ids they
// list, to the pump.
func (w *claimWriter) queueSegment() error {
	seg := segment{chunks: w.cut, claims: w.held}
	w.cut, w.held = nil, nil
	return w.pump.send(w.ctx, seg)
}

// putChunk writes chunk n of the writer's list (the pump's goroutine, in
// order): the claims of its ids are written only after it.
func (w *claimWriter) putChunk(data []byte) error {
	key := chunkKey(w.job, w.period, w.gen, w.chunks)
	_, err := w.ix.api.PutItem(w.ctx, &dynamodb.PutItemInput{
		TableName: aws.String(w.ix.table),
		Item:      map[string]types.AttributeValue{attr.Job: attr.S(key), attrIDs: attr.B(data), attrExpiresAt: w.expiresN},
	})
	if err != nil {
		return fmt.Errorf("put chunk %q: %w", key, err)
	}
	w.chunks++
	return nil
}
