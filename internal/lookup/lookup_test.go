package lookup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// memDriver is an in-memory driver.Bucket that counts the requests a
// reader makes.
type memDriver struct {
	mu          sync.Mutex
	objs        map[string][]byte
	gets, lists int
}

func newMem() *memDriver { return &memDriver{objs: map[string][]byte{}} }

func (m *memDriver) Put(_ context.Context, key string, body io.ReadSeeker, _ int64, _ driver.PutOptions) (driver.Attrs, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return driver.Attrs{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[key] = b
	return driver.Attrs{Key: key, Size: int64(len(b)), ETag: "e"}, nil
}

func (m *memDriver) Get(_ context.Context, key string) (io.ReadCloser, driver.Attrs, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	b, ok := m.objs[key]
	if !ok {
		return nil, driver.Attrs{}, driver.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), driver.Attrs{Key: key, Size: int64(len(b)), ETag: "e"}, nil
}

func (m *memDriver) Stat(ctx context.Context, key string) (driver.Attrs, error) {
	_, a, err := m.Get(ctx, key)
	return a, err
}

func (m *memDriver) List(_ context.Context, prefix string) ([]driver.Attrs, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lists++
	var out []driver.Attrs
	for k, b := range m.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, driver.Attrs{Key: k, Size: int64(len(b)), ETag: "e"})
		}
	}
	slices.SortFunc(out, func(a, b driver.Attrs) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (m *memDriver) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, key)
	return nil
}

func (m *memDriver) MaxKeyLen() int     { return 1024 }
func (m *memDriver) MaxSegmentLen() int { return 1024 }
func (m *memDriver) String() string     { return "mem://" }

func (m *memDriver) requests() (int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gets, m.lists
}

var usd = money.Currency{Code: "USD", Digits: 2}

// fixture writes delivered periods straight into a bucket.
type fixture struct {
	t     *testing.T
	b     *sink.Bucket
	files map[int64][]report.FileInfo
}

func (f *fixture) put(key string, body []byte, rows int64) report.FileInfo {
	f.t.Helper()
	if _, err := f.b.PutBytes(context.Background(), key, body, sink.PutOptions{}); err != nil {
		f.t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	return report.FileInfo{Key: key, Bytes: int64(len(body)), Rows: rows, SHA256: hex.EncodeToString(sum[:])}
}

func hashed(prefix, base, ext string, body []byte) string {
	return prefix + report.HashedName(base, ext, sha256.Sum256(body))
}

// line makes agency's n-th line of period p.
func line(p report.Period, agency string, n int) report.LineItem {
	at := p.Start.Add(time.Duration(n) * time.Second)
	return report.LineItem{Tx: item.Transaction{
		PK: at.Format("200601021504"), SK: fmt.Sprintf("%s.%04d", at.Format("2006-01-02T15:04:05"), n),
		ID: fmt.Sprintf("%s-%s-%d", agency, p.Name(), n), AgencyID: agency, Kind: item.Purchase, Currency: usd,
		Amount: int64(100 + n), RecordedAt: at,
	}, BPS: 1000, Commission: int64(10 + n/10)}
}

// period writes one delivered period holding lines per agency: with
// agency files (CSV) when csv, else the dataset files only.
func (f *fixture) period(p report.Period, rev int, csv bool, lines map[string][]report.LineItem) {
	f.t.Helper()
	var files []report.FileInfo
	var all []report.LineItem
	var sum []report.SummaryRow
	agencies := make([]string, 0, len(lines))
	for a := range lines {
		agencies = append(agencies, a)
	}
	slices.Sort(agencies)
	for _, a := range agencies {
		ls := lines[a]
		slices.SortFunc(ls, func(x, y report.LineItem) int { return strings.Compare(x.Tx.SK, y.Tx.SK) })
		all = append(all, ls...)
		sum = append(sum, report.SummaryRow{PeriodStart: p.Start, PeriodEnd: p.End, AgencyID: a, Currency: usd, PurchaseCount: int64(len(ls))})
		if csv {
			var buf bytes.Buffer
			w := encode.NewLineItemCSVWriter(&buf)
			for i := range ls {
				if err := w.Write(&ls[i]); err != nil {
					f.t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				f.t.Fatal(err)
			}
			files = append(files, f.put(hashed(report.AgencyPrefix(a, p), "transactions", "csv", buf.Bytes()), buf.Bytes(), int64(len(ls))))
		}
	}
	if !csv {
		files = append(files, f.datasets(p, all, sum)...)
	}
	slices.SortFunc(files, func(a, b report.FileInfo) int { return strings.Compare(a.Key, b.Key) })
	m := &report.Manifest{Job: "j", PeriodStart: p.Start, PeriodEnd: p.End, Revision: rev, Reason: report.ReasonDelivery,
		Transactions: int64(len(all)), ItemsRead: int64(len(all)), Files: files}
	body, parts, err := m.Encode()
	if err != nil || len(parts) > 0 {
		f.t.Fatalf("encode manifest: %v (%d parts)", err, len(parts))
	}
	f.put(report.ManifestKey(p), body, 0)
}

// datasets writes the period's transactions and summary Parquet.
func (f *fixture) datasets(p report.Period, all []report.LineItem, sum []report.SummaryRow) []report.FileInfo {
	var files []report.FileInfo
	var tb bytes.Buffer
	w := encode.NewLineItemWriter(&tb, report.LatestParquetLayout)
	for i := range all {
		if err := w.Write(&all[i]); err != nil {
			f.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		f.t.Fatal(err)
	}
	files = append(files, f.put(hashed(report.DatasetPrefix(report.DatasetTransactions, p), "transactions", "parquet", tb.Bytes()), tb.Bytes(), int64(len(all))))
	var sb bytes.Buffer
	if err := encode.WriteSummaryParquet(&sb, sum); err != nil {
		f.t.Fatal(err)
	}
	return append(files, f.put(hashed(report.DatasetPrefix(report.DatasetSummary, p), "summary", "parquet", sb.Bytes()), sb.Bytes(), int64(len(sum))))
}

func hours(from time.Time, n int) []report.Period {
	out := make([]report.Period, n)
	for i := range out {
		out[i] = report.PeriodAt(from.Add(time.Duration(i)*time.Hour), time.Hour)
	}
	return out
}

// TestPageCostYear: a page at the old end of a year of hourly periods
// reads the manifests of the periods it touches, a few read ahead, and the
// agency's files of those periods: O(page), not O(the year).
func TestPageCostYear(t *testing.T) {
	ctx := context.Background()
	mem := newMem()
	f := &fixture{t: t, b: sink.New(mem)}
	ps := hours(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), 365*24)
	const perPeriod = 3
	for _, p := range ps {
		f.period(p, 1, true, map[string][]report.LineItem{
			"acme":  {line(p, "acme", 0), line(p, "acme", 1), line(p, "acme", 2)},
			"other": {line(p, "other", 5)},
		})
	}
	r := &Reader{Objects: f.b, Periods: ps}
	// The position right after the 13th period's lines: the last page
	// holds the 12 periods before it.
	last := line(ps[12], "acme", 0)
	cur := Cursor{Kind: KindTransactions, Scope: "acme", Period: ps[12].Start, SK: last.Tx.SK, ID: last.Tx.ID, Rev: 1}.Encode()
	g0, l0 := mem.requests()
	pg, err := r.Transactions(ctx, Query{Agency: "acme", Limit: 37, Cursor: cur})
	if err != nil {
		t.Fatal(err)
	}
	gets, lists := mem.requests()
	gets, lists = gets-g0, lists-l0
	if len(pg.Rows) != 12*perPeriod || pg.Next != "" {
		t.Fatalf("page of %d rows, next %q; want the 36 oldest lines and no next page", len(pg.Rows), pg.Next)
	}
	// 13 manifests and 12 agency files (the cursor's period has no line
	// left): nothing is read ahead past the first period.
	if touched := 13; gets > 2*touched || lists != 0 {
		t.Fatalf("the last page read %d objects and listed %d times; want at most %d reads and no list", gets, lists, 2*touched)
	}
	t.Logf("the last page (36 lines) of %d hourly periods read %d objects", len(ps), gets)
	for i, l := range pg.Rows {
		want := line(ps[11-i/perPeriod], "acme", perPeriod-1-i%perPeriod)
		if l.Tx.ID != want.Tx.ID || l.Tx.Amount != want.Tx.Amount || l.Commission != want.Commission || l.Period.Start != ps[11-i/perPeriod].Start {
			t.Fatalf("row %d: %s %d, want %s %d", i, l.Tx.ID, l.Tx.Amount, want.Tx.ID, want.Tx.Amount)
		}
	}
	// A page of 37 in the middle of the year: 13 periods.
	mid := line(ps[4000], "acme", 0)
	cur = Cursor{Kind: KindTransactions, Scope: "acme", Period: ps[4000].Start, SK: mid.Tx.SK, ID: mid.Tx.ID, Rev: 1}.Encode()
	g0, _ = mem.requests()
	pg, err = r.Transactions(ctx, Query{Agency: "acme", Limit: 37, Cursor: cur})
	if err != nil {
		t.Fatal(err)
	}
	gets, _ = mem.requests()
	n := gets - g0
	if len(pg.Rows) != 37 || pg.Next == "" || n > 2*13+manifestReads {
		t.Fatalf("middle page: %d rows, next %q, %d reads; want 37 rows, a cursor, at most %d reads", len(pg.Rows), pg.Next, n, 2*13+manifestReads)
	}
	t.Logf("a page of 37 in a year of %d hourly periods read %d objects", len(ps), n)
}

// TestDatasetFallback: without agency files, the period's summary says
// whether the agency has lines there, and its transactions Parquet has
// them.
func TestDatasetFallback(t *testing.T) {
	ctx := context.Background()
	mem := newMem()
	f := &fixture{t: t, b: sink.New(mem)}
	ps := hours(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), 4)
	for i, p := range ps {
		lines := map[string][]report.LineItem{"zeta": {line(p, "zeta", 1)}}
		if i%2 == 0 {
			lines["acme"] = []report.LineItem{line(p, "acme", 1), line(p, "acme", 2)}
		}
		f.period(p, 1, false, lines)
	}
	r := &Reader{Objects: f.b, Periods: ps}
	var got []string
	next := ""
	for {
		pg, err := r.Transactions(ctx, Query{Agency: "acme", Limit: 3, Cursor: next})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range pg.Rows {
			got = append(got, l.Tx.ID)
		}
		if next = pg.Next; next == "" {
			break
		}
	}
	want := []string{"acme-20250101T0200Z-2", "acme-20250101T0200Z-1", "acme-20250101T0000Z-2", "acme-20250101T0000Z-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestCursor(t *testing.T) {
	c := Cursor{Kind: KindTransactions, Scope: "acme/travel", Period: time.Date(2025, 1, 1, 3, 0, 0, 0, time.UTC), SK: "2025-01-01T03:04:05.abc", ID: "tx-1", Rev: 2}
	s := c.Encode()
	got, err := DecodeCursor(s, KindTransactions, "acme/travel")
	if err != nil || got != c {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, c)
	}
	for name, tc := range map[string]struct{ s, kind, scope string }{
		"other agency":   {s, KindTransactions, "acme"},
		"other listing":  {s, KindRejects, "acme/travel"},
		"damaged":        {s[:10] + string(s[10]^1) + s[11:], KindTransactions, "acme/travel"},
		"cut short":      {s[:len(s)-3], KindTransactions, "acme/travel"},
		"not base64url":  {"a+b/c==", KindTransactions, "acme/travel"},
		"empty checksum": {"AQ", KindTransactions, "acme/travel"},
	} {
		if _, err := DecodeCursor(tc.s, tc.kind, tc.scope); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%s: err %v, want ErrBadCursor", name, err)
		}
	}
}

// TestRejectsPaging: the rejects of several periods, newest first, a page
// at a time, every one once; the --agency filter; a cursor of another
// filter is refused.
func TestRejectsPaging(t *testing.T) {
	ctx := context.Background()
	mem := newMem()
	f := &fixture{t: t, b: sink.New(mem)}
	ps := hours(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), 5)
	var want []string // newest first
	for i, p := range ps {
		if i == 2 {
			f.period(p, 1, true, map[string][]report.LineItem{"acme": {line(p, "acme", 1)}}) // no rejects
			continue
		}
		var body bytes.Buffer
		var mine []string
		for n := range 3 {
			at := p.Start.Add(time.Duration(n) * time.Minute)
			agency := []string{"acme", "zeta", "acme"}[n]
			sk := at.Format("2006-01-02T15:04:05") + ".k"
			fmt.Fprintf(&body, `{"partition_key":"%s","sort_key":"%s","field":"currency","value":"XXQ","reason":"unknown currency","item":{"agency_id":{"S":%q},"transaction_id":{"S":"r-%d-%d"}}}`+"\n",
				at.Format("200601021504"), sk, agency, i, n)
			mine = append([]string{fmt.Sprintf("r-%d-%d", i, n)}, mine...)
		}
		want = append(mine, want...)
		key := hashed(report.DatasetPrefix(report.DatasetRejects, p), "rejects", "jsonl", body.Bytes())
		fi := f.put(key, body.Bytes(), 3)
		m := &report.Manifest{Job: "j", PeriodStart: p.Start, PeriodEnd: p.End, Revision: 1, Reason: report.ReasonDelivery,
			ItemsRead: 3, Rejects: 3, Files: []report.FileInfo{fi}}
		b, _, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		f.put(report.ManifestKey(p), b, 0)
	}
	r := &Reader{Objects: f.b, Periods: ps}
	page := func(agency string) []string {
		var got []string
		next := ""
		for {
			pg, err := r.Rejects(ctx, Query{Agency: agency, Limit: 2, Cursor: next})
			if err != nil {
				t.Fatal(err)
			}
			for _, rj := range pg.Rows {
				got = append(got, rj.Attr("transaction_id"))
			}
			if next = pg.Next; next == "" {
				return got
			}
		}
	}
	if got := page(""); !slices.Equal(got, want) {
		t.Fatalf("rejects: %v, want %v", got, want)
	}
	var acme []string
	for _, id := range want {
		if !strings.HasSuffix(id, "-1") {
			acme = append(acme, id)
		}
	}
	if got := page("acme"); !slices.Equal(got, acme) {
		t.Fatalf("acme's rejects: %v, want %v", got, acme)
	}
	pg, err := r.Rejects(ctx, Query{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rejects(ctx, Query{Agency: "acme", Cursor: pg.Next}); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("a cursor of another filter: %v", err)
	}
	if _, err := r.Transactions(ctx, Query{Agency: "acme", Cursor: pg.Next}); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("a rejects cursor given to transactions: %v", err)
	}
}
