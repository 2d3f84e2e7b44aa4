package ingest

import (
	"bytes"
	"context"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var genDay = GenerateOptions{
	N:    20000,
	Seed: 42,
	From: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
	To:   time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC),
}

func collect(t *testing.T, g GenerateOptions) []Record {
	t.Helper()
	var out []Record
	if err := GenerateRecords(g, func(r Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonl(t *testing.T, recs []Record) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		j, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func TestGenerateRecordsDeterministic(t *testing.T) {
	g := genDay
	g.N = 3000
	a, b := jsonl(t, collect(t, g)), jsonl(t, collect(t, g))
	if !bytes.Equal(a, b) {
		t.Fatal("same options gave different records")
	}
	g.Seed = 43
	if c := jsonl(t, collect(t, g)); bytes.Equal(a, c) {
		t.Error("seeds 42 and 43 gave the same records")
	}
	// Pinned output: the generator must not drift silently (demo output
	// and docs quote it). go test -run Deterministic -update rewrites it.
	golden := filepath.Join("testdata", "generate_seed1.jsonl")
	got := jsonl(t, collect(t, GenerateOptions{N: 20, Seed: 1, From: genDay.From, To: genDay.To}))
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("seed 1 records differ from %s (run with -update if intended):\n%s", golden, got)
	}
}

func TestGenerateRecordsDistribution(t *testing.T) {
	recs := collect(t, genDay)
	if len(recs) != genDay.N {
		t.Fatalf("%d records, want %d", len(recs), genDay.N)
	}
	var refunds, ownBPS int
	perAgency := map[string]int{}
	perCurrency := map[string]int{}
	ids := map[string]bool{}
	// Minor units: USD 5.00..500.00, JPY 500..50000 yen, BHD 2.000..200.000.
	amountRange := map[string][2]int64{
		"USD": {500, 50000}, "EUR": {500, 50000}, "GBP": {400, 40000}, "JPY": {500, 50000}, "BHD": {2000, 200000},
	}
	var prev time.Time
	for _, r := range recs {
		if ids[r.TransactionID] {
			t.Fatalf("transaction id %s twice", r.TransactionID)
		}
		ids[r.TransactionID] = true
		perAgency[r.AgencyID]++
		perCurrency[r.Currency]++
		if r.Kind == "refund" {
			refunds++
		}
		if r.CommissionBPS != nil {
			ownBPS++
			if *r.CommissionBPS < 500 || *r.CommissionBPS > 2500 {
				t.Errorf("%s: commission_bps %d outside 500..2500", r.TransactionID, *r.CommissionBPS)
			}
		}
		if r.CustomerID == "" || r.ProductID == "" {
			t.Errorf("%s: customer_id or product_id empty", r.TransactionID)
		}
		if r.RecordedAt.Before(genDay.From) || !r.RecordedAt.Before(genDay.To) || r.RecordedAt.Before(prev) ||
			r.RecordedAt.Nanosecond()%int(time.Millisecond) != 0 {
			t.Errorf("%s: recorded_at %v out of the window, order or milliseconds", r.TransactionID, r.RecordedAt)
		}
		prev = r.RecordedAt
		c, err := money.LookupCurrency(r.Currency)
		if err != nil {
			t.Fatal(err)
		}
		minor, err := money.ParseAmount(r.Amount, c)
		if err != nil {
			t.Fatalf("%s: %v", r.TransactionID, err)
		}
		if c.Format(minor) != r.Amount {
			t.Errorf("%s: amount %q is not in %s's own digits", r.TransactionID, r.Amount, c.Code)
		}
		lo, hi := amountRange[r.Currency][0], amountRange[r.Currency][1]
		if minor < lo || minor > hi {
			t.Errorf("%s: %s %s outside %s..%s", r.TransactionID, r.Currency, r.Amount, c.Format(lo), c.Format(hi))
		}
	}
	share := func(n int) float64 { return float64(n) / float64(len(recs)) }
	if s := share(refunds); s < 0.04 || s > 0.06 {
		t.Errorf("refund share %.3f, want ~0.05", s)
	}
	if s := share(ownBPS); s < 0.08 || s > 0.12 {
		t.Errorf("own commission_bps share %.3f, want ~0.10", s)
	}
	for _, c := range []string{"USD", "EUR", "GBP", "JPY", "BHD"} {
		if perCurrency[c] == 0 {
			t.Errorf("no %s transactions", c)
		}
	}
	if s := share(perCurrency["USD"]); s < 0.65 || s > 0.75 {
		t.Errorf("USD share %.3f, want ~0.70", s)
	}
	for _, a := range []string{"Agence Étoile", "acme/travel"} {
		if perAgency[a] == 0 {
			t.Errorf("no transactions for awkward agency %q", a)
		}
	}
	counts := slices.Sorted(maps.Values(perAgency))
	slices.Reverse(counts)
	top, median := counts[0], counts[len(counts)/2]
	if len(counts) < 200 || top < 20*median {
		t.Errorf("%d agencies, top %d, median %d: want hundreds of agencies, top >> median", len(counts), top, median)
	}
	t.Logf("%d agencies, top %d (%.1f%%), median %d; currencies %v", len(counts), top, 100*share(top), median, perCurrency)
}

// TestGenerateMatchesJSONL checks Generate writes what ingesting the
// generator's JSON Lines writes: the .jsonl form round-trips.
func TestGenerateMatchesJSONL(t *testing.T) {
	g := genDay
	g.N, g.Shards, g.BatchSize = 3000, 3, 100
	direct := newMemWriter()
	stats, err := Generate(t.Context(), direct, g)
	if err != nil {
		t.Fatal(err)
	}
	if stats != (Stats{Read: 3000, Written: 3000}) || len(direct.items) != 3000 {
		t.Errorf("stats %+v, %d items", stats, len(direct.items))
	}
	for _, n := range direct.batches {
		if n != 100 {
			t.Errorf("batch of %d, want 100", n)
		}
	}
	viaFile := newMemWriter()
	// Generate writes any window; ingesting the file needs AllowLate.
	opts := Options{Shards: 3, AllowLate: true, Now: func() time.Time { return g.To }}
	if _, bad, err := ReadJSONL(t.Context(), bytes.NewReader(jsonl(t, collect(t, g))), viaFile, opts); err != nil || len(bad) > 0 {
		t.Fatalf("ReadJSONL: %v %v", bad, err)
	}
	if !maps.EqualFunc(direct.items, viaFile.items, func(a, b item.Item) bool { return maps.Equal(a.Attrs, b.Attrs) }) {
		t.Error("Generate and ReadJSONL of the generated file wrote different items")
	}
	shards := map[string]bool{}
	for k := range direct.items {
		shards[k[0][strings.IndexByte(k[0], '#'):]] = true
	}
	if len(shards) != 3 {
		t.Errorf("shard suffixes %v, want #0, #1, #2", shards)
	}
}

func TestGenerateRecordsBadOptions(t *testing.T) {
	for _, g := range []GenerateOptions{
		{N: 1},
		{N: 1, From: genDay.To, To: genDay.From},
		{N: -1, From: genDay.From, To: genDay.To},
		{N: 1, Agencies: -1, From: genDay.From, To: genDay.To},
	} {
		if err := GenerateRecords(g, func(Record) error { return nil }); err == nil {
			t.Errorf("%+v: no error", g)
		}
	}
}

type nopWriter struct{}

func (nopWriter) PutItems(context.Context, []item.Item) error { return nil }

func BenchmarkReadJSONL(b *testing.B) {
	var recs []Record
	g := genDay
	g.N = 100_000
	_ = GenerateRecords(g, func(r Record) error { recs = append(recs, r); return nil })
	var buf bytes.Buffer
	for _, r := range recs {
		j, _ := r.MarshalJSON()
		buf.Write(j)
		buf.WriteByte('\n')
	}
	opts := Options{AllowLate: true, Now: func() time.Time { return g.To }}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for b.Loop() {
		stats, bad, err := ReadJSONL(b.Context(), bytes.NewReader(buf.Bytes()), nopWriter{}, opts)
		if err != nil || len(bad) > 0 || stats.Written != g.N {
			b.Fatalf("%+v %v %v", stats, bad, err)
		}
	}
	b.ReportMetric(float64(g.N*b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkGenerate(b *testing.B) {
	g := genDay
	g.N = 100_000
	for b.Loop() {
		if _, err := Generate(b.Context(), nopWriter{}, g); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(g.N*b.N)/b.Elapsed().Seconds(), "records/s")
}
