package encode

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// collector is a Writer's out: it keeps every file handed to it (they are
// its own, even when it fails) and returns err from call number failAt.
type collector struct {
	files  []File
	failAt int
	err    error
}

func (c *collector) out(f File) error {
	if f.Path == "" {
		// A file held in memory: the tests read files from a path.
		f.Path = filepath.Join(memFilesDir, fmt.Sprintf("mem-%d", memFiles.Add(1)))
		if err := os.WriteFile(f.Path, f.Data, 0o600); err != nil {
			panic(err)
		}
	}
	c.files = append(c.files, f)
	if len(c.files) == c.failAt {
		return c.err
	}
	return nil
}

// memFilesDir holds the files a Writer kept in memory, written out for
// the tests (TestMain removes it).
var (
	memFilesDir string
	memFiles    atomic.Int64
)

func TestMain(m *testing.M) {
	var err error
	if memFilesDir, err = os.MkdirTemp("", "encode-memfiles-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(memFilesDir)
	os.Exit(code)
}

// writePeriod writes the whole fixture period (rejects included, when
// rejects is not "") and stops at the first error.
func writePeriod(w *Writer, rows []report.SummaryRow, adj []report.AdjustmentRow, lines []report.LineItem, rejects string) error {
	if err := w.Summary(rows); err != nil {
		return err
	}
	if err := w.Adjustments(adj); err != nil {
		return err
	}
	for i := range lines {
		if err := w.Line(&lines[i]); err != nil {
			return err
		}
	}
	if err := w.EndLines(); err != nil {
		return err
	}
	if rejects != "" {
		return w.Rejects(rejects, 2)
	}
	return nil
}

// rejectsFile writes a two-line rejects file in a folder of its own.
func rejectsFile(t *testing.T) string {
	t.Helper()
	return writeTemp(t, "rejects.jsonl", []byte(`{"reason":"a"}`+"\n"+`{"reason":"b"}`+"\n"))
}

// wantFile is an expected object: its key without the hash, and the rest.
type wantFile struct {
	stem, ext, contentType string
	rows                   int64
}

func (w wantFile) String() string { return w.stem + "-H." + w.ext }

// wantFiles lists the objects of the fixture period in the order the
// Writer hands them out.
func wantFiles(f Formats, adjustments, rejects bool) []wantFile {
	ds := func(d string) string { return d + "/period=" + periodName + "/" + d }
	ag := func(esc, base string) string { return "agencies/agency=" + esc + "/period=" + periodName + "/" + base }
	agencyFiles := func(esc, base string, rows int64) []wantFile {
		var out []wantFile
		if f.CSV {
			out = append(out, wantFile{ag(esc, base), "csv", TypeCSV, rows})
		}
		if f.Parquet {
			out = append(out, wantFile{ag(esc, base), "parquet", TypeParquet, rows})
		}
		return out
	}
	out := []wantFile{{ds("summary"), "parquet", TypeParquet, 6}}
	for _, a := range writerAgencies {
		rows := int64(1)
		if a.id == "a/b" {
			rows = 2 // EUR and USD
		}
		out = append(out, agencyFiles(a.escaped, "summary", rows)...)
	}
	if adjustments {
		out = append(out, wantFile{ds("adjustments"), "parquet", TypeParquet, 2})
		out = append(out, agencyFiles("..%2Fx", "adjustments", 1)...)
		out = append(out, agencyFiles("plain", "adjustments", 1)...)
	}
	for i, a := range writerAgencies {
		out = append(out, agencyFiles(a.escaped, "transactions", int64(i+1))...)
	}
	out = append(out, wantFile{ds("transactions"), "parquet", TypeParquet, 15})
	if rejects {
		out = append(out, wantFile{ds("rejects"), "jsonl", TypeJSONL, 2})
	}
	return out
}

// checkFile checks that f is the object want: its key carries the first
// 16 hex digits of the SHA-256 of its temp file, and Bytes, Rows,
// SHA256 and ContentType are right.
func checkFile(t *testing.T, f File, want wantFile) {
	t.Helper()
	b, err := os.ReadFile(f.Path)
	if err != nil {
		t.Fatalf("%s: %v", f.Key, err)
	}
	sum := sha256.Sum256(b)
	full := hex.EncodeToString(sum[:])
	if wantKey := want.stem + "-" + full[:16] + "." + want.ext; f.Key != wantKey {
		t.Errorf("key %q, want %q", f.Key, wantKey)
	}
	if f.SHA256 != full || f.Bytes != int64(len(b)) || f.Rows != want.rows || f.ContentType != want.contentType {
		t.Errorf("%s: sha256 %s bytes %d rows %d type %q; want %s %d %d %q",
			f.Key, f.SHA256, f.Bytes, f.Rows, f.ContentType, full, len(b), want.rows, want.contentType)
	}
	if got := f.Info(); got != (report.FileInfo{Key: f.Key, Bytes: f.Bytes, Rows: f.Rows, SHA256: f.SHA256}) {
		t.Errorf("Info() = %+v", got)
	}
	if rows := countRows(t, f.Key, b); rows != want.rows {
		t.Errorf("%s holds %d rows, File.Rows %d", f.Key, rows, want.rows)
	}
}

// countRows counts the rows of an object's content, and checks that an
// agency's file holds only that agency's rows.
func countRows(t *testing.T, key string, b []byte) int64 {
	t.Helper()
	esc, agencyFile := report.AgencySegment(key)
	var agencies []string
	switch {
	case strings.HasSuffix(key, ".jsonl"):
		return int64(bytes.Count(b, []byte("\n")))
	case strings.HasSuffix(key, ".csv"):
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		col := slices.Index(recs[0], "agency_id")
		for _, r := range recs[1:] {
			agencies = append(agencies, r[col])
		}
	default:
		f := openParquet(t, b)
		col, _ := f.Schema().Lookup("agency_id")
		for _, rg := range f.RowGroups() {
			rows := make([]parquet.Row, rg.NumRows())
			rr := rg.Rows()
			n, _ := rr.ReadRows(rows)
			rr.Close()
			for _, r := range rows[:n] {
				agencies = append(agencies, r[col.ColumnIndex].String())
			}
		}
	}
	if agencyFile {
		for _, a := range agencies {
			if e := escapedOf(a); e != esc {
				t.Errorf("%s holds a row of agency %q", key, a)
			}
		}
	}
	return int64(len(agencies))
}

func escapedOf(id string) string {
	for _, a := range writerAgencies {
		if a.id == id {
			return a.escaped
		}
	}
	return "?" + id
}

// dirFiles returns the names of the files in dir, sorted.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}

// checkOnlyHandedOut checks that dir holds exactly the temp files of the
// files handed out (the rejects file lives elsewhere).
func checkOnlyHandedOut(t *testing.T, dir string, files []File) {
	t.Helper()
	var want []string
	for _, f := range files {
		if filepath.Dir(f.Path) == dir {
			want = append(want, f.Path)
		}
	}
	slices.Sort(want)
	if got := dirFiles(t, dir); !slices.Equal(got, want) {
		t.Errorf("after Close the folder holds %d files %q; want the %d handed out %q", len(got), got, len(want), want)
	}
}

func TestWriterFiles(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		f                    Formats
		adjustments, rejects bool
	}{
		{"no agency files", Formats{}, true, true},
		{"csv", Formats{CSV: true}, true, true},
		{"parquet", Formats{Parquet: true}, true, true},
		{"csv and parquet", Formats{CSV: true, Parquet: true}, true, true},
		{"first revision, no rejects", Formats{CSV: true}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var c collector
			w := NewWriter(dir, testPeriod, tt.f, report.LatestParquetLayout, c.out)
			var adj []report.AdjustmentRow
			if tt.adjustments {
				adj = writerAdjustments()
			}
			rejects := rejectsFile(t)
			rejectsArg := rejects
			if !tt.rejects {
				rejectsArg = ""
			}
			if err := writePeriod(w, writerSummary(), adj, writerLines(), rejectsArg); err != nil {
				t.Fatal(err)
			}
			w.Close()
			want := wantFiles(tt.f, tt.adjustments, tt.rejects)
			if len(c.files) != len(want) {
				var got []string
				for _, f := range c.files {
					got = append(got, f.Key)
				}
				t.Fatalf("handed out %d files:\n%s\nwant %d:\n%v", len(got), strings.Join(got, "\n"), len(want), want)
			}
			for i := range want {
				checkFile(t, c.files[i], want[i])
			}
			// The rejects file is hashed where it is, not copied.
			if last := c.files[len(c.files)-1]; tt.rejects && last.Path != rejects {
				t.Errorf("rejects path %q, want %q", last.Path, rejects)
			}
			if _, err := os.Stat(rejects); err != nil {
				t.Errorf("rejects file gone after Close: %v", err)
			}
			checkOnlyHandedOut(t, dir, c.files)

			// The datasets' files are those of the encoders alone.
			var b bytes.Buffer
			if err := WriteSummaryParquet(&b, writerSummary()); err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(b.Bytes()); c.files[0].SHA256 != hex.EncodeToString(sum[:]) {
				t.Error("summary dataset file differs from WriteSummaryParquet's")
			}
		})
	}
}

// TestWriterDeterministic: a rebuild of the same period gives the same
// keys (hence bytes).
func TestWriterDeterministic(t *testing.T) {
	keys := func() []string {
		var c collector
		w := NewWriter(t.TempDir(), testPeriod, Formats{CSV: true, Parquet: true}, report.LatestParquetLayout, c.out)
		defer w.Close()
		if err := writePeriod(w, writerSummary(), writerAdjustments(), writerLines(), ""); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range c.files {
			out = append(out, f.Key)
		}
		return out
	}
	if a, b := keys(), keys(); !slices.Equal(a, b) {
		t.Errorf("two writes differ:\n%q\n%q", a, b)
	}
}

// TestWriterEmptyPeriod: an empty period has a summary and a transactions
// file of 0 rows, and no agency files, adjustments or rejects.
func TestWriterEmptyPeriod(t *testing.T) {
	dir := t.TempDir()
	var c collector
	w := NewWriter(dir, testPeriod, Formats{CSV: true, Parquet: true}, report.LatestParquetLayout, c.out)
	if err := writePeriod(w, nil, nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	w.Close()
	want := []wantFile{
		{"summary/period=" + periodName + "/summary", "parquet", TypeParquet, 0},
		{"transactions/period=" + periodName + "/transactions", "parquet", TypeParquet, 0},
	}
	if len(c.files) != len(want) {
		t.Fatalf("handed out %d files %+v, want %v", len(c.files), c.files, want)
	}
	for i := range want {
		checkFile(t, c.files[i], want[i])
	}
	for i, schema := range []string{summarySchema, lineItemSchema} {
		b, _ := os.ReadFile(c.files[i].Path)
		if got := openParquet(t, b).Schema().String(); got != schema {
			t.Errorf("%s schema:\n%s", c.files[i].Key, got)
		}
	}
	checkOnlyHandedOut(t, dir, c.files)
}

// TestWriterCloseAfterCallbackError fails the out callback at each call
// in turn: the error comes back (and sticks), and after Close the folder
// holds only the files handed out.
func TestWriterCloseAfterCallbackError(t *testing.T) {
	f := Formats{CSV: true, Parquet: true}
	total := len(wantFiles(f, true, true))
	for k := 1; k <= total; k++ {
		dir := t.TempDir()
		c := collector{failAt: k, err: errors.New("upload failed")}
		w := NewWriter(dir, testPeriod, f, report.LatestParquetLayout, c.out)
		err := writePeriod(w, writerSummary(), writerAdjustments(), writerLines(), rejectsFile(t))
		if !errors.Is(err, c.err) {
			t.Fatalf("fail at call %d: err = %v, want %v", k, err, c.err)
		}
		if len(c.files) != k {
			t.Errorf("fail at call %d: %d files handed out, want %d (nothing after the error)", k, len(c.files), k)
		}
		if err := w.EndLines(); !errors.Is(err, c.err) {
			t.Errorf("fail at call %d: EndLines after the error = %v, want the sticky error", k, err)
		}
		w.Close()
		checkOnlyHandedOut(t, dir, c.files)
	}
}

// TestWriterCloseMidLines: Close while line items are being written, or
// after a line item fails, removes their temp files and stops the
// period file's row group encoders.
func TestWriterCloseMidLines(t *testing.T) {
	lines := writerLines()
	for _, tt := range []struct {
		name string
		stop func(*testing.T, *Writer)
	}{
		{"early close", func(t *testing.T, w *Writer) {
			for i := range 5 {
				if err := w.Line(&lines[i]); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"line out of order", func(t *testing.T, w *Writer) {
			for i := range 5 {
				if err := w.Line(&lines[i]); err != nil {
					t.Fatal(err)
				}
			}
			err := w.Line(&lines[0])
			if err == nil || !strings.Contains(err.Error(), "comes before") {
				t.Fatalf("out-of-order line: err = %v", err)
			}
			if err2 := w.EndLines(); err2 != err {
				t.Errorf("EndLines after the error = %v, want the sticky %v", err2, err)
			}
		}},
		{"row groups in flight", func(t *testing.T, w *Writer) {
			n := 2*lineItemRowGroupRows + 3*lineItemBatch + 1
			for i := range n {
				li := genLineItem(i, n)
				if err := w.Line(&li); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"line overflow", func(t *testing.T, w *Writer) {
			bad := lines[0]
			bad.Commission = 1e17 // USD: x100 does not fit DECIMAL(18,4)
			err := w.Line(&bad)
			if !errors.Is(err, money.ErrOverflow) {
				t.Fatalf("err = %v, want ErrOverflow", err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			dir := t.TempDir()
			var c collector
			w := NewWriter(dir, testPeriod, Formats{CSV: true, Parquet: true}, report.LatestParquetLayout, c.out)
			if err := w.Summary(writerSummary()); err != nil {
				t.Fatal(err)
			}
			tt.stop(t, w)
			w.Close()
			w.Close() // twice is fine
			checkOnlyHandedOut(t, dir, c.files)
			waitGoroutines(t, before)
			if err := w.Line(&lines[0]); err == nil {
				t.Error("Line after Close: no error")
			}
		})
	}
}

func TestWriterClosed(t *testing.T) {
	dir := t.TempDir()
	var c collector
	w := NewWriter(dir, testPeriod, Formats{CSV: true}, report.LatestParquetLayout, c.out)
	w.Close()
	lines := writerLines()
	for name, err := range map[string]error{
		"Summary":     w.Summary(writerSummary()),
		"Adjustments": w.Adjustments(writerAdjustments()),
		"Line":        w.Line(&lines[0]),
		"EndLines":    w.EndLines(),
		"Rejects":     w.Rejects(rejectsFile(t), 2),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if len(c.files) != 0 || len(dirFiles(t, dir)) != 0 {
		t.Errorf("closed writer made files: %+v", c.files)
	}
}

func TestWriterRejectsMissing(t *testing.T) {
	var c collector
	w := NewWriter(t.TempDir(), testPeriod, Formats{}, report.LatestParquetLayout, c.out)
	defer w.Close()
	missing := filepath.Join(t.TempDir(), "no-such.jsonl")
	err := w.Rejects(missing, 1)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("err = %v, want a not-exist error naming the file", err)
	}
}
