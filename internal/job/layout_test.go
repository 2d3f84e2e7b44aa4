package job_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/report"
)

// TestParquetLayoutKept: a period delivered in Parquet layout 1 (as every
// period delivered before layouts were recorded: its manifest without
// parquet_layout) is rebuilt in layout 1. A backfill and a verify
// --repair of it reproduce its objects, so the revision stands and
// nothing new is written; a restatement keeps layout 1 (and the files of
// the agencies it does not change); a new period gets layout 2.
func TestParquetLayoutKept(t *testing.T) {
	e := newEnv(t, embeddedStack)
	e.putHourly(at(0, 0), at(2, 0), 6)
	jobAt := func(owner string) *job.Job {
		j := e.job(owner)
		j.AgencyFiles = encode.Formats{CSV: true, Parquet: true}
		j.RecheckAfter = nil
		return j
	}
	e.run(jobAt("A"), job.RunOptions{Now: at(1, 2)})
	if got := e.manifest(hour(0)).ParquetLayout; got != report.LatestParquetLayout {
		t.Fatalf("a new period has parquet_layout %d, want %d", got, report.LatestParquetLayout)
	}
	e.toLayout1(hour(0))
	old := e.read(report.ManifestKey(hour(0)))
	if strings.Contains(old, "parquet_layout") {
		t.Fatal("the layout-1 manifest records a layout")
	}
	before := e.objects()
	e.checkLayout(hour(0), report.ParquetLayout1)

	// A backfill rebuilds every object of the period: the same bytes.
	e.drv.takePuts()
	res := e.run(jobAt("B"), job.RunOptions{Now: at(1, 30), Backfill: true, From: at(0, 0), To: at(1, 0)})
	if pr := res.Periods[0]; pr.Outcome != job.OutcomeUnchanged || pr.Manifest.Revision != 1 || len(pr.Uploaded) != 0 {
		t.Fatalf("backfill of a layout-1 period: %s revision %d, uploaded %v", pr.Outcome, pr.Manifest.Revision, pr.Uploaded)
	}
	if puts := e.drv.takePuts(); len(puts) != 0 {
		t.Errorf("backfill wrote %q", puts)
	}
	if after := e.objects(); !maps.Equal(after, before) || e.read(report.ManifestKey(hour(0))) != old {
		t.Errorf("backfill changed the sink")
	}

	// verify --repair of a missing transactions file restores its layout-1
	// bytes: the revision stands.
	for _, prefix := range []string{"transactions/period=20900301T0000Z/", "agency=a-1/period=20900301T0000Z/transactions-"} {
		var key string
		for _, k := range e.keysUnder(prefix) {
			if strings.HasSuffix(k, ".parquet") {
				key = k
			}
		}
		e.remove(key)
		checks, err := jobAt("V").Verify(context.Background(), job.VerifyOptions{From: at(0, 0), To: at(1, 0), Repair: true, Now: at(1, 40)})
		if err != nil {
			t.Fatal(err)
		}
		if c := checks[0]; c.Status != job.VerifyObjects || c.Repaired == "" || c.Revision != 1 {
			t.Fatalf("verify --repair of %s: %+v", key, c)
		}
		if after := e.objects(); !maps.Equal(after, before) || e.read(report.ManifestKey(hour(0))) != old {
			t.Errorf("verify --repair of %s did not restore the layout-1 period as it was", key)
		}
	}

	// A restatement (a late item of a-0) keeps layout 1: the agencies it
	// does not change keep their objects.
	e.put(purchase("late", "a-0", 500, at(0, 59)))
	res = e.run(jobAt("C"), job.RunOptions{Now: at(1, 50), Backfill: true, From: at(0, 0), To: at(1, 0)})
	if pr := res.Periods[0]; !pr.Restated() || pr.Manifest.ParquetLayout != report.ParquetLayout1 {
		t.Fatalf("restatement of a layout-1 period: %s, parquet_layout %d", pr.Outcome, pr.Manifest.ParquetLayout)
	}
	e.checkLayout(hour(0), report.ParquetLayout1)
	for key, sha := range before {
		if strings.Contains(key, "agency=a-1/") && e.objects()[key] != sha {
			t.Errorf("the restatement changed %s of an agency it does not change", key)
		}
	}

	// The next period is new: layout 2.
	e.run(jobAt("A"), job.RunOptions{Now: at(2, 2)})
	if got := e.manifest(hour(1)).ParquetLayout; got != report.ParquetLayout2 {
		t.Errorf("the next period has parquet_layout %d, want 2", got)
	}
	e.checkLayout(hour(1), report.ParquetLayout2)
	e.checkSink()
}

// toLayout1 turns delivered period p into what a binary of layout 1 wrote:
// each transactions Parquet re-encoded in layout 1 (its rows read back),
// and a manifest that lists them and records no layout.
func (e *env) toLayout1(p report.Period) {
	e.t.Helper()
	m := e.manifest(p)
	if len(m.Parts) != 0 {
		e.t.Fatal("toLayout1: a manifest with parts")
	}
	for i := range m.Files {
		f := &m.Files[i]
		if format, ok := encode.IsLineItemsKey(f.Key); !ok || format != "parquet" {
			continue
		}
		b := e.reencode(f.Key, report.ParquetLayout1)
		sum := sha256.Sum256(b)
		key := f.Key[:strings.LastIndexByte(f.Key, '/')+1] + report.HashedName("transactions", "parquet", sum)
		if key == f.Key {
			e.t.Fatalf("toLayout1: %s is the same in layout 1", key)
		}
		e.write(key, string(b))
		e.remove(f.Key)
		f.Key, f.Bytes, f.SHA256 = key, int64(len(b)), hex.EncodeToString(sum[:])
	}
	slices.SortFunc(m.Files, func(a, b report.FileInfo) int { return cmp.Compare(a.Key, b.Key) })
	m.ParquetLayout = 0
	body, err := m.Marshal()
	if err != nil {
		e.t.Fatal(err)
	}
	e.write(report.ManifestKey(p), string(body))
}

// reencode reads the transactions Parquet key and writes its rows again
// in layout l (an agency's writer: in layout 1 the period's file has the
// same pages).
func (e *env) reencode(key string, l report.ParquetLayout) []byte {
	e.t.Helper()
	b := []byte(e.read(key))
	lis, err := encode.ReadLineItemsParquet(bytes.NewReader(b), int64(len(b)), encode.LineFilter{})
	if err != nil {
		e.t.Fatalf("%s: %v", key, err)
	}
	var out bytes.Buffer
	w := encode.NewLineItemWriter(&out, l)
	for i := range lis {
		if err := w.Write(&lis[i]); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
	return out.Bytes()
}

// checkLayout checks that every transactions Parquet of p's manifest is
// in layout l: the column commission_bps is dictionary-encoded in layout 2
// only, and, in layout 1, the file is its rows written in layout 1.
func (e *env) checkLayout(p report.Period, l report.ParquetLayout) {
	e.t.Helper()
	m := e.manifest(p)
	if m.Layout() != l {
		e.t.Errorf("%s: manifest layout %d, want %d", p.Name(), m.Layout(), l)
	}
	n := 0
	for _, f := range m.Files {
		if format, ok := encode.IsLineItemsKey(f.Key); !ok || format != "parquet" {
			continue
		}
		n++
		b := []byte(e.read(f.Key))
		pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			e.t.Fatalf("%s: %v", f.Key, err)
		}
		for _, c := range pf.Metadata().RowGroups[0].Columns {
			if c.MetaData.PathInSchema[0] == "commission_bps" && (c.MetaData.DictionaryPageOffset != 0) != (l == report.ParquetLayout2) {
				e.t.Errorf("%s: commission_bps dictionary %v in layout %d", f.Key, c.MetaData.DictionaryPageOffset != 0, l)
			}
		}
		if l == report.ParquetLayout1 && !bytes.Equal(e.reencode(f.Key, l), b) {
			e.t.Errorf("%s is not its rows in layout 1", f.Key)
		}
	}
	if n == 0 {
		e.t.Errorf("%s: no transactions Parquet", p.Name())
	}
}
