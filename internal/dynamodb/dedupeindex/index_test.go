package dedupeindex

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

func TestIndexConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T) collect.Index {
		return newIndex(t, nil)
	})
}

const ixJob = "job-1"

var (
	ixP0  = time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC)
	ixExp = ixP0.Add(time.Hour + 35*24*time.Hour)
	ixNow = ixP0.Add(2 * time.Hour)
)

// ixWrite commits a list of ids for ixP0, writing the claims of those
// that write says.
func ixWrite(t *testing.T, s *Index, ids []string, write func(i int) bool) error {
	t.Helper()
	w, err := s.NewClaimWriter(t.Context(), ixJob, hourOf(ixP0), ixExp, ixNow)
	if err != nil {
		t.Fatalf("NewClaimWriter: %v", err)
	}
	for i, id := range ids {
		if err := w.Add(id, indextest.FP(id, 0), write(i)); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Commit()
}

func ixAll(int) bool { return true }

func ixSeqIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("tx-%06d", i)
	}
	return ids
}

func ixRead(t *testing.T, s *Index) ([]string, error) {
	t.Helper()
	var ids []string
	for id, err := range s.PeriodIDs(t.Context(), ixJob, ixP0) {
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func ixHead(t *testing.T, s *Index) head {
	t.Helper()
	h, ok, err := s.getHead(t.Context(), ixJob, ixP0)
	if err != nil || !ok {
		t.Fatalf("getHead = %v, %v", ok, err)
	}
	return h
}

func ixExists(t *testing.T, s *Index, key string) bool {
	t.Helper()
	out, err := testClient(t).GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: attr.JobKey(key), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem %q: %v", key, err)
	}
	return out.Item != nil
}

// ixRandomIDs returns n ascending ids with random tails.
func ixRandomIDs(n, tail int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	ids := make([]string, n)
	b := make([]byte, tail)
	for i := range ids {
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		ids[i] = fmt.Sprintf("%08d-%s", i, base64.RawURLEncoding.EncodeToString(b))
	}
	return ids
}

// TestIndexChunks writes a list of several chunks, checks their sizes, and
// that replacing the list deletes the previous generation's chunks.
func TestIndexChunks(t *testing.T) {
	s := newIndex(t, nil)
	ids := ixRandomIDs(60_000, 24, 1) // ~2.5 MB of ids that hardly compress
	if err := ixWrite(t, s, ids, func(int) bool { return false }); err != nil {
		t.Fatalf("write list: %v", err)
	}
	h := ixHead(t, s)
	if h.chunks < 4 || h.count != int64(len(ids)) || h.gen < 1 {
		t.Errorf("head %+v, want %d ids in 4 or more chunks", h, len(ids))
	}
	for n := range h.chunks {
		out, err := testClient(t).GetItem(t.Context(), &dynamodb.GetItemInput{
			TableName: aws.String(s.table), Key: attr.JobKey(chunkKey(ixJob, ixP0, h.gen, n)),
		})
		if err != nil || out.Item == nil {
			t.Fatalf("chunk %d: %v", n, err)
		}
		size := len(out.Item[attrIDs].(*types.AttributeValueMemberB).Value)
		if size > chunkMax || (n < h.chunks-1 && size < chunkAim/3) {
			t.Errorf("chunk %d holds %d bytes, want about %d and at most %d", n, size, chunkAim, chunkMax)
		}
		if e, _ := intAttr(out.Item, attrExpiresAt); e != ixExp.Unix() {
			t.Errorf("chunk %d expires_at %d, want %d", n, e, ixExp.Unix())
		}
	}
	got, err := ixRead(t, s)
	if err != nil || !slices.Equal(got, ids) {
		t.Fatalf("PeriodIDs returned %d ids (%v), want the %d written", len(got), err, len(ids))
	}

	if err := ixWrite(t, s, ids[:10], ixAll); err != nil {
		t.Fatal(err)
	}
	for n := range h.chunks {
		if ixExists(t, s, chunkKey(ixJob, ixP0, h.gen, n)) {
			t.Errorf("chunk %d of the replaced generation %d is still there", n, h.gen)
		}
	}
	if h2 := ixHead(t, s); h2.gen == h.gen || h2.chunks != 1 || h2.count != 10 {
		t.Errorf("head after replacing: %+v, want a new generation with 10 ids in 1 chunk", h2)
	}
}

// TestIndexListChunker cuts incompressible ids into chunks under a small limit,
// splitting those that come out too big.
func TestIndexListChunker(t *testing.T) {
	ids := ixRandomIDs(5000, 40, 2)
	var chunks [][]byte
	c := &listChunker{aim: 8000, max: 10000, rawTarget: 64 << 10, emit: func(data []byte) error {
		chunks = append(chunks, data)
		return nil
	}}
	for _, id := range ids {
		if err := c.add(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, data := range chunks {
		if len(data) > 10000 {
			t.Errorf("chunk %d: %d bytes, over the 10000 limit", i, len(data))
		}
		raw, err := zstdDec().DecodeAll(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(raw); {
			n, k := binary.Uvarint(raw[off:])
			got = append(got, string(raw[off+k:off+k+int(n)]))
			off += k + int(n)
		}
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("chunks decode to %d ids, want the %d added in order", len(got), len(ids))
	}
	if len(chunks) < 20 {
		t.Errorf("%d chunks for ~300 KB of incompressible ids under 10 KB each", len(chunks))
	}
}

func TestIndexCommitConcurrentWriter(t *testing.T) {
	s := newIndex(t, nil)
	if err := ixWrite(t, s, ixSeqIDs(1), ixAll); err != nil {
		t.Fatal(err)
	}
	w1, err := s.NewClaimWriter(t.Context(), ixJob, hourOf(ixP0), ixExp, ixNow)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := s.NewClaimWriter(t.Context(), ixJob, hourOf(ixP0), ixExp, ixNow)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []collect.ClaimWriter{w1, w2} {
		for _, id := range ixRandomIDs(20_000, 24, uint64(10+i)) { // chunks of both are written
			if err := w.Add(id, indextest.FP(id, 0), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Commit(); err == nil || !strings.Contains(err.Error(), "another writer") {
		t.Errorf("second writer's Commit = %v, want an error saying another writer replaced the list", err)
	}
	// The list is the first writer's, whole: no chunk of the second.
	if got, err := ixRead(t, s); err != nil || !slices.Equal(got, ixRandomIDs(20_000, 24, 10)) {
		t.Errorf("PeriodIDs = %d ids, %v; want the first writer's 20000", len(got), err)
	}
}

// TestIndexPeriodIDsExpiredHead: a list is read whatever the host's wall
// clock says of its expiry (Time to Live goes by DynamoDB's clock): a host
// clock ahead past the expiry, by a second or by a year, still yields its
// ids, so that a rebuild releases the claims of the ids it no longer bills.
func TestIndexPeriodIDsExpiredHead(t *testing.T) {
	s := newIndex(t, nil)
	if err := ixWrite(t, s, ixSeqIDs(3), ixAll); err != nil {
		t.Fatal(err)
	}
	for _, now := range []time.Time{ixExp.Add(-time.Second), ixExp, ixExp.Add(time.Hour), ixExp.AddDate(1, 0, 0)} {
		s.clock = func() time.Time { return now }
		if got, err := ixRead(t, s); err != nil || len(got) != 3 {
			t.Errorf("wall clock %s: PeriodIDs = %q, %v; want the 3 ids", now, got, err)
		}
	}
	// Lookup returns expired claims: the caller decides.
	if got, err := ixLookup(t, s, ixSeqIDs(3)); err != nil || len(got) != 3 {
		t.Errorf("Lookup after the expiry = %q, %v; want the 3 claims", got, err)
	}
}

// TestIndexPeriodIDsMissingChunk: a chunk missing from a list that has not
// expired is an error; from a list that has (by the wall clock), it is
// Time to Live's doing and ends the list.
func TestIndexPeriodIDsMissingChunk(t *testing.T) {
	s := newIndex(t, nil)
	ids := ixRandomIDs(30_000, 24, 3)
	if err := ixWrite(t, s, ids, func(int) bool { return false }); err != nil {
		t.Fatal(err)
	}
	h := ixHead(t, s)
	key := chunkKey(ixJob, ixP0, h.gen, 1)
	if _, err := testClient(t).DeleteItem(t.Context(), &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: attr.JobKey(key),
	}); err != nil {
		t.Fatal(err)
	}
	got, err := ixRead(t, s)
	if err == nil || !strings.Contains(err.Error(), "missing") || !strings.Contains(err.Error(), key) {
		t.Errorf("PeriodIDs with chunk 1 of %d gone = %d ids, %v; want an error naming the missing chunk", h.chunks, len(got), err)
	}
	s.clock = func() time.Time { return ixExp }
	got, err = ixRead(t, s)
	if err != nil || len(got) == 0 || len(got) >= len(ids) || !slices.Equal(got, ids[:len(got)]) {
		t.Errorf("PeriodIDs of an expired list with chunk 1 of %d gone = %d ids, %v; want the ids of chunk 0, no error", h.chunks, len(got), err)
	}
}

// TestIndexAbortKeepsListPending: an aborted writer's chunks stay, and it
// stays pending in the head (which holds no list), so that the next writer
// reads its ids (Previous); that writer's Commit deletes them and clears
// the pending set. Before, Abort deleted the chunks and left the claims
// written unlisted.
func TestIndexAbortKeepsListPending(t *testing.T) {
	s := newIndex(t, nil)
	w, err := s.NewClaimWriter(t.Context(), ixJob, hourOf(ixP0), ixExp, ixNow)
	if err != nil {
		t.Fatal(err)
	}
	ids := ixRandomIDs(30_000, 24, 4)
	for _, id := range ids {
		if err := w.Add(id, indextest.FP(id, 0), true); err != nil {
			t.Fatal(err)
		}
	}
	cw := w.(*claimWriter)
	// The pump writes in the background: let it write chunk 0 first.
	for deadline := time.Now().Add(time.Minute); !ixExists(t, s, chunkKey(ixJob, ixP0, cw.gen, 0)); {
		if time.Now().After(deadline) {
			t.Fatal("chunk 0 not written after a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.Abort()
	if cw.chunks < 1 {
		t.Fatalf("%d chunks written before Abort, want some", cw.chunks)
	}
	for n := range cw.chunks {
		if !ixExists(t, s, chunkKey(ixJob, ixP0, cw.gen, n)) {
			t.Errorf("chunk %d gone after Abort", n)
		}
	}
	if h, found, err := s.getHead(t.Context(), ixJob, ixP0); err != nil || found || !slices.Equal(h.pending, []int64{cw.gen}) {
		t.Errorf("head after Abort = %+v, list %v, %v; want no list, writer %d pending", h, found, err, cw.gen)
	}
	if got, err := ixRead(t, s); err != nil || len(got) != 0 {
		t.Errorf("PeriodIDs after Abort = %d ids, %v; want none", len(got), err)
	}

	w2, err := s.NewClaimWriter(t.Context(), ixJob, hourOf(ixP0), ixExp, ixNow)
	if err != nil {
		t.Fatal(err)
	}
	var prev []string
	for id, err := range w2.Previous() {
		if err != nil {
			t.Fatal(err)
		}
		prev = append(prev, id)
	}
	// Every id written in a chunk; the claims held for the last one were
	// dropped by Abort.
	if n := len(prev); n == 0 || n > len(ids) || !slices.Equal(prev, ids[:n]) {
		t.Errorf("Previous = %d ids, want the first of the aborted writer's %d", n, len(ids))
	}
	if err := w2.Commit(); err != nil {
		t.Fatal(err)
	}
	for n := range cw.chunks {
		if ixExists(t, s, chunkKey(ixJob, ixP0, cw.gen, n)) {
			t.Errorf("chunk %d of the aborted writer still there after the next Commit", n)
		}
	}
	if h, found, err := s.getHead(t.Context(), ixJob, ixP0); err != nil || !found || len(h.pending) != 0 {
		t.Errorf("head after the next Commit = %+v, list %v, %v; want a list, none pending", h, found, err)
	}
}
