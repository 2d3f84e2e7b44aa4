package dedupeindex

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/reportjob/reportjob/internal/testenv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/report"
)

// benchEnv reads a size from the environment, def when unset.
func benchEnv(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// benchIDs returns n sorted transaction ids of period seed, random-looking
// (as UUIDs are), so that periods' ids interleave in the key space.
func benchIDs(seed, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		h := sha256.Sum256([]byte(fmt.Sprintf("%d/%d", seed, i)))
		ids[i] = hex.EncodeToString(h[:16])
	}
	slices.Sort(ids)
	return ids
}

var benchStart = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// benchPeriod writes (and looks up first, as collect.Dedupe does) the
// claims of ids for period p: per batch of MaxLookup ids a Lookup, then
// an Add of each unclaimed id, then Commit. It returns how many were
// claimed already.
func benchPeriod(b *testing.B, ix *Index, p report.Period, ids []string) int {
	ctx := b.Context()
	w, err := ix.NewClaimWriter(ctx, "job", p, p.End.Add(collect.ClaimRetention(35*24*time.Hour)), p.Start)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort()
	for _, err := range w.Previous() {
		if err != nil {
			b.Fatal(err)
		}
	}
	found := 0
	var fp [collect.FPLen]byte
	for batch := range slices.Chunk(ids, collect.MaxLookup) {
		claims, err := ix.Lookup(ctx, "job", batch)
		if err != nil {
			b.Fatal(err)
		}
		found += len(claims)
		for _, id := range batch {
			copy(fp[:], id)
			if err := w.Add(id, fp, true); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	return found
}

// BenchmarkPeriodClaims: the dedupe index's work for one period of
// RJBENCH_IX_NEW new transactions (default 200,000): look up every id
// (batches of 100) and write its claim, then commit. "fresh" starts from
// an empty index; "35d" from one holding 35 earlier daily periods of
// RJBENCH_IX_OLD ids each (default 20,000); "35d-hourly" from 840 earlier
// hourly periods of RJBENCH_IX_HOURLY_OLD ids each (default 1,000). The
// earlier claims are written by the same code, and the new ids interleave
// with theirs across the key space. Each iteration copies the prepared
// file first (not timed).
func BenchmarkPeriodClaims(b *testing.B) {
	nNew := benchEnv(b, "RJBENCH_IX_NEW", 200_000)
	nOld := benchEnv(b, "RJBENCH_IX_OLD", 20_000)
	ids := benchIDs(-1, nNew)
	day := 24 * time.Hour
	nHourly := benchEnv(b, "RJBENCH_IX_HOURLY_OLD", 1_000)
	for _, tc := range []struct {
		name    string
		periods int
		period  time.Duration
		old     int
	}{{"fresh", 0, day, 0}, {"35d", 35, day, nOld}, {"35d-hourly", 35 * 24, time.Hour, nHourly}} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			tmpl := benchTemplate(b, tc.name, tc.periods, tc.period, tc.old)
			start := benchStart.Add(time.Duration(tc.periods) * tc.period)
			p := report.Period{Start: start, End: start.Add(time.Hour)}
			var cpu time.Duration
			defer func() { b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op") }()
			for b.Loop() {
				b.StopTimer()
				path := filepath.Join(dir, "store.db")
				testenv.CopyFile(b, tmpl, path)
				db, err := bolt.Open(path, 0o600, nil)
				if err != nil {
					b.Fatal(err)
				}
				c0 := testenv.ProcessCPU()
				b.StartTimer()
				if found := benchPeriod(b, New(db, path), p, ids); found != 0 {
					b.Fatalf("%d new ids found claimed", found)
				}
				b.StopTimer()
				cpu += testenv.ProcessCPU() - c0
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(nNew)*float64(b.N)/b.Elapsed().Seconds(), "claims/s")
		})
	}
	// 35d-hourly-steady: the steady state with hourly periods, deferred
	// work included: on the 35d-hourly store, the next 24 hourly periods
	// of RJBENCH_IX_HOURLY_OLD new ids each, one after the other, with
	// whatever each NewClaimWriter does first (compaction, merges). One
	// op is the 24 periods; s/period is per period.
	b.Run("35d-hourly-steady", func(b *testing.B) {
		const periods, next = 35 * 24, 24
		dir := b.TempDir()
		tmpl := benchTemplate(b, "35d-hourly", periods, time.Hour, nHourly)
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			path := filepath.Join(dir, "store.db")
			testenv.CopyFile(b, tmpl, path)
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				b.Fatal(err)
			}
			ix := New(db, path)
			c0 := testenv.ProcessCPU()
			b.StartTimer()
			for i := range next {
				start := benchStart.Add(time.Duration(periods+i) * time.Hour)
				if found := benchPeriod(b, ix, report.Period{Start: start, End: start.Add(time.Hour)}, benchIDs(periods+i, nHourly)); found != 0 {
					b.Fatalf("%d new ids found claimed", found)
				}
			}
			b.StopTimer()
			cpu += testenv.ProcessCPU() - c0
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*next), "s/period")
		b.ReportMetric(cpu.Seconds()/float64(b.N*next), "cpu-s/period")
	})
}

// benchTemplates are the prepared stores, by name, kept for the process
// (-count runs a benchmark again) in benchDir.
var (
	benchTemplates = map[string]string{}
	benchDir       string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		_ = os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchTemplate returns a store holding periods earlier periods of length
// period of nOld claims each.
func benchTemplate(b *testing.B, name string, periods int, period time.Duration, nOld int) string {
	if p, ok := benchTemplates[name]; ok {
		return p
	}
	if benchDir == "" {
		d, err := os.MkdirTemp("", "dedupeindex-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	}
	tmpl := filepath.Join(benchDir, name+".db")
	db, err := bolt.Open(tmpl, 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	db.NoSync = true // preparation only
	ix := New(db, tmpl)
	for i := range periods {
		start := benchStart.Add(time.Duration(i) * period)
		benchPeriod(b, ix, report.Period{Start: start, End: start.Add(period)}, benchIDs(i, nOld))
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	benchTemplates[name] = tmpl
	return tmpl
}
