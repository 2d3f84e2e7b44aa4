package dedupeindex

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/report"
)

// BenchmarkCompactRun: the deferred part of a period's claims, moving its
// run into the by-id bucket once maxRuns later runs are committed (see
// compact): the run of RJBENCH_IX_NEW ids written as in
// BenchmarkPeriodClaims/35d-hourly (not timed), then moved (timed).
func BenchmarkCompactRun(b *testing.B) {
	nNew := benchEnv(b, "RJBENCH_IX_NEW", 200_000)
	nHourly := benchEnv(b, "RJBENCH_IX_HOURLY_OLD", 1_000)
	ids := benchIDs(-1, nNew)
	const periods = 35 * 24
	tmpl := benchTemplate(b, "35d-hourly", periods, time.Hour, nHourly)
	start := benchStart.Add(periods * time.Hour)
	p := report.Period{Start: start, End: start.Add(time.Hour)}
	dir := b.TempDir()
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(dir, "store.db")
		copyFile(b, tmpl, path)
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		ix := New(db, path)
		benchPeriod(b, ix, p, ids)
		var key []byte
		_ = db.View(func(tx *bolt.Tx) error {
			f, _ := jobBucket(tx, "job", bucketFilters, false)
			c := f.Cursor()
			for k, _ := c.Seek(sortable(start.UnixMilli())); k != nil; k, _ = c.Next() {
				key = append([]byte(nil), k...)
			}
			return nil
		})
		if key == nil {
			b.Fatal("no filter of the new run")
		}
		b.StartTimer()
		if err := ix.compactRun(b.Context(), "job", key); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(nNew)*float64(b.N)/b.Elapsed().Seconds(), "claims/s")
}
