package monthclose_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/publish"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/statement"
)

// The close's edge cases on a file sink, with periods published by hand
// (package publish, as the job does: due marker, then manifest): hourly
// periods from 2026-01-31T00:00Z, statements in Africa/Lagos (+01:00), so
// January ends at 2026-01-31T23:00Z.

var (
	fxStart = time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)
	fxLoc   = mustZone("Africa/Lagos")
	usd     = mustCurrency("USD")
)

func mustZone(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

func mustCurrency(code string) money.Currency {
	c, err := money.LookupCurrency(code)
	if err != nil {
		panic(err)
	}
	return c
}

// hour returns the period starting h hours after fxStart.
func hour(h int) report.Period {
	s := fxStart.Add(time.Duration(h) * time.Hour)
	return report.Period{Start: s, End: s.Add(time.Hour)}
}

type fixture struct {
	t   *testing.T
	ctx context.Context
	b   *sink.Bucket
	pb  *publish.Publisher
	c   *monthclose.Closer
	rec monthclose.Record
	// rows is each period's current commission (minor units) per agency.
	rows map[time.Time]map[string]int64
	// rates is the rate table the period manifests record (nil: none).
	rates *pricing.Table
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fs, err := filesink.New(filepath.Join(t.TempDir(), "reports"))
	if err != nil {
		t.Fatal(err)
	}
	b := sink.New(fs)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := func() time.Time { return time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC) }
	pb := &publish.Publisher{Bucket: b, RunID: "test", Concurrency: 2, Now: now, Log: log}
	c := &monthclose.Closer{Periods: pb, Job: "j", Version: "test", RunID: "test", Loc: fxLoc, CloseAfter: time.Hour,
		Formats: monthclose.Formats{CSV: true}, Concurrency: 2, Dir: t.TempDir(), Log: log, Now: now}
	return &fixture{t: t, ctx: context.Background(), b: b, pb: pb, c: c,
		rec:  monthclose.Record{Grid: report.Grid{Start: fxStart, Period: time.Hour}, RecheckAfter: []time.Duration{time.Hour}},
		rows: map[time.Time]map[string]int64{}}
}

// publish publishes the next revision of p with commission (minor USD)
// per agency, and its adjustments against the previous revision; it moves
// the checkpoint to p's end when it is later.
func (f *fixture) publish(p report.Period, reason string, commission map[string]int64) int {
	f.t.Helper()
	cur, err := f.pb.Current(f.ctx, p)
	if err != nil {
		f.t.Fatal(err)
	}
	rev := 1
	if cur.Manifest != nil {
		rev = cur.Manifest.Revision + 1
	}
	row := func(agency string, v int64) report.SummaryRow {
		return report.SummaryRow{PeriodStart: p.Start, PeriodEnd: p.End, AgencyID: agency, Currency: usd, PurchaseCount: 1,
			Gross: money.TotalOf(10 * v), Net: money.TotalOf(10 * v), Commission: money.TotalOf(v)}
	}
	var sum []report.SummaryRow
	var agencies []string
	for a, v := range commission {
		sum = append(sum, row(a, v))
		agencies = append(agencies, a)
	}
	var adj []report.AdjustmentRow
	if rev > 1 {
		old := f.rows[p.Start]
		for a, v := range commission {
			if d := v - old[a]; d != 0 {
				adj = append(adj, report.AdjustmentRow{SummaryRow: row(a, d), Revision: int32(rev)})
			}
		}
	}
	s, err := f.pb.Begin(f.ctx, cur, agencies, publish.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	dir := f.t.TempDir()
	file, err := encode.NewFile(dir, report.DatasetPrefix(report.DatasetSummary, p), "summary", "parquet", encode.TypeParquet,
		int64(len(sum)), func(w io.Writer) error { return encode.WriteSummaryParquet(w, sum) })
	if err != nil {
		f.t.Fatal(err)
	}
	if err := s.Upload(file); err != nil {
		f.t.Fatal(err)
	}
	if len(adj) > 0 {
		file, err := encode.NewFile(dir, report.DatasetPrefix(report.DatasetAdjustments, p), "adjustments", "parquet", encode.TypeParquet,
			int64(len(adj)), func(w io.Writer) error { return encode.WriteAdjustmentsParquet(w, adj) })
		if err != nil {
			f.t.Fatal(err)
		}
		if err := s.Upload(file); err != nil {
			f.t.Fatal(err)
		}
	}
	files, err := s.Wait()
	if err != nil {
		f.t.Fatal(err)
	}
	m := &report.Manifest{Job: "j", PeriodStart: p.Start, PeriodEnd: p.End, Revision: rev, Reason: reason,
		GeneratedAt: fxStart, ToolVersion: "test", Partitions: []string{}, ItemsFingerprint: "x", Files: files, Rates: f.rates}
	if err := s.Commit(f.ctx, m); err != nil {
		f.t.Fatal(err)
	}
	f.rows[p.Start] = commission
	if p.End.After(f.rec.Grid.Checkpoint) {
		f.rec.Grid.Checkpoint = p.End
	}
	return rev
}

func (f *fixture) update(now time.Time, closeEarly string) (monthclose.Result, error) {
	f.t.Helper()
	return f.c.Update(f.ctx, now, f.rec, closeEarly)
}

func (f *fixture) mustUpdate(now time.Time, closeEarly string) monthclose.Result {
	f.t.Helper()
	res, err := f.update(now, closeEarly)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func (f *fixture) keys(prefix string) []string {
	f.t.Helper()
	objs, err := f.b.List(f.ctx, prefix)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

func (f *fixture) raw(key string) string {
	f.t.Helper()
	b, _, err := f.b.ReadAll(f.ctx, key, 1<<20)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) statement(m string) *monthclose.Statement {
	f.t.Helper()
	st, err := f.c.Read(f.ctx, m)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// due returns the row of agency in st ("" when none) as commission/adjustments/due.
func due(st *monthclose.Statement, agency string) string {
	for _, r := range st.Rows {
		if r.AgencyID == agency {
			return usd.FormatTotal(r.Commission) + "/" + usd.FormatTotal(r.PriorPeriodAdjustments) + "/" + usd.FormatTotal(r.CommissionDue)
		}
	}
	return ""
}

// january publishes the 23 periods of January (Lagos), closes it early,
// and returns the final manifest's bytes.
func (f *fixture) january() string {
	f.t.Helper()
	for h := 0; h < 23; h++ {
		f.publish(hour(h), report.ReasonDelivery, map[string]int64{"acme": 100})
	}
	f.mustUpdate(hour(23).Start, "")
	if st := f.statement("2026-01"); st.Manifest.Status != "draft" || due(st, "acme") != "23.00/0.00/23.00" {
		f.t.Fatalf("January draft: %s %s", st.Manifest.Status, due(st, "acme"))
	}
	res := f.mustUpdate(hour(23).Start, "2026-01")
	if res.Closed != 1 {
		f.t.Fatalf("early close: %+v", res)
	}
	return f.raw(report.MonthManifestKey("2026-01"))
}

// A period of a final month restated twice before the close took the
// first restatement in: the difference to book is not in the period's
// record (its adjustments file is revision 3 against 2), and the close
// says so, naming the period and both revisions; nothing is published.
func TestRestatedTwiceBeforeBooked(t *testing.T) {
	f := newFixture(t)
	jan := f.january()
	p := hour(10)
	f.publish(p, report.ReasonRecheck, map[string]int64{"acme": 150})
	f.publish(p, report.ReasonBackfill, map[string]int64{"acme": 175})
	_, err := f.update(hour(24).Start, "")
	if err == nil || !strings.Contains(err.Error(), "period 20260131T1000Z is at revision 3, and the statements account for revision 1") ||
		!strings.Contains(err.Error(), "cannot be booked") {
		t.Fatalf("Update: %v, want the clear error", err)
	}
	if got := f.raw(report.MonthManifestKey("2026-01")); got != jan {
		t.Error("the final January changed")
	}
	if len(f.keys(report.MonthManifestPrefix("2026-02"))) != 0 {
		t.Error("February was published")
	}
	if len(f.keys(report.DueStatementsPrefix)) != 1 {
		t.Error("the due marker of the period was deleted: the error would be lost")
	}
}

// One restatement of a period of a final month at a time is booked in the
// next month that is not final (here February, which has no period yet:
// its statement holds the adjustment only); a second restatement, taken
// in, is booked from the revision the first led to. January never
// changes.
func TestAdjustmentsBookedInNextOpenMonth(t *testing.T) {
	f := newFixture(t)
	jan := f.january()
	p := hour(10)
	f.publish(p, report.ReasonRecheck, map[string]int64{"acme": 150, "beta": 7})
	res := f.mustUpdate(hour(23).Start, "")
	if res.Adjustments != 1 {
		t.Fatalf("Update: %+v, want 1 adjustment", res)
	}
	feb := f.statement("2026-02")
	if feb.Manifest.Status != "draft" || due(feb, "acme") != "0.00/0.50/0.50" || due(feb, "beta") != "0.00/0.07/0.07" {
		t.Fatalf("February: %s acme %s beta %s", feb.Manifest.Status, due(feb, "acme"), due(feb, "beta"))
	}
	f.publish(p, report.ReasonRepair, map[string]int64{"acme": 120, "beta": 7})
	f.publish(hour(23), report.ReasonDelivery, map[string]int64{"acme": 1000})
	f.mustUpdate(hour(24).Start, "")
	feb = f.statement("2026-02")
	if due(feb, "acme") != "10.00/0.20/10.20" || due(feb, "beta") != "0.00/0.07/0.07" {
		t.Fatalf("February after a second restatement: acme %s beta %s", due(feb, "acme"), due(feb, "beta"))
	}
	var got []string
	for _, a := range feb.Manifest.Adjustments {
		got = append(got, a.PeriodStart.UTC().Format("15")+":"+a.Reason+":"+strconv.Itoa(a.FromRevision)+"->"+strconv.Itoa(a.ToRevision))
	}
	if strings.Join(got, " ") != "10:recheck:1->2 10:verify --repair:2->3" {
		t.Errorf("February's adjustments: %v", got)
	}
	if f.raw(report.MonthManifestKey("2026-01")) != jan {
		t.Error("the final January changed")
	}
	if k := f.keys(report.DueStatementsPrefix); len(k) != 0 {
		t.Errorf("due markers left: %v", k)
	}
}

// Due markers whose period has no new revision: a crash between a
// restatement's marker and its manifest (the marker names a period of a
// final month at the revision already booked): taken in and deleted,
// nothing booked, no error. A marker for a period past the checkpoint (a
// delivery whose checkpoint move has not happened yet) is kept for a later
// close, and publishes nothing. A marker that names no period of the grid
// is an error.
func TestDueMarkersWithoutPublication(t *testing.T) {
	f := newFixture(t)
	jan := f.january()
	before := f.keys("")
	for _, p := range []report.Period{hour(10), hour(30)} {
		if _, err := f.b.PutBytes(f.ctx, report.StatementDueKey(p), []byte("{}\n"), sink.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	res := f.mustUpdate(hour(23).Start, "")
	if res.Adjustments != 0 {
		t.Errorf("Update: %+v, want nothing booked", res)
	}
	if f.raw(report.MonthManifestKey("2026-01")) != jan {
		t.Error("the final January changed")
	}
	kept := report.StatementDueKey(hour(30))
	if k := f.keys(report.DueStatementsPrefix); len(k) != 1 || k[0] != kept {
		t.Errorf("due markers left: %v, want only %s", k, kept)
	}
	after := f.keys("")
	var extra []string
	for _, k := range after {
		// (February, where a restatement of 10:00Z would be booked, gets
		// its first, empty, statement: harmless, and what a month with no
		// activity gets anyway.)
		if !slices.Contains(before, k) && k != kept && !strings.HasPrefix(k, report.MonthManifestPrefix("2026-02")) &&
			!strings.HasPrefix(k, "statements/month=2026-02/") {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		t.Errorf("objects written for markers without a publication: %v", extra)
	}
	// A marker off the grid.
	if _, err := f.b.PutBytes(f.ctx, report.DueStatementsPrefix+"period=20260131T1030Z.json", []byte("{}\n"), sink.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.update(hour(23).Start, ""); err == nil || !strings.Contains(err.Error(), "names no period") {
		t.Errorf("a marker off the grid: %v", err)
	}
}

// An interrupted month publication (another run's intent, the objects it
// uploaded, an unlisted object under statements/) is cleaned up by the
// next Update, for a draft month and for a final one; what the manifest
// lists stays.
func TestCleanupOfInterruptedMonthPublication(t *testing.T) {
	for _, final := range []bool{false, true} {
		name := map[bool]string{false: "draft", true: "final"}[final]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			var man string
			if final {
				man = f.january()
			} else {
				f.publish(hour(0), report.ReasonDelivery, map[string]int64{"acme": 100})
				f.mustUpdate(hour(1).Start, "")
				man = f.raw(report.MonthManifestKey("2026-01"))
			}
			listed := f.keys("")
			dead := []string{"statements/month=2026-01/statements-dead.parquet", report.AgencyMonthPrefix("zeta", "2026-01") + "statement-dead.csv"}
			orphan := "statements/month=2026-01/statements-orphan.parquet"
			for _, k := range append(dead, orphan) {
				if _, err := f.b.PutBytes(f.ctx, k, []byte("x"), sink.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			intent := report.MonthIntentKey("2026-01", "crashed")
			body := `{"run_id":"crashed","keys":["` + strings.Join(dead, `","`) + `"]}`
			if _, err := f.b.PutBytes(f.ctx, intent, []byte(body), sink.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			f.mustUpdate(hour(1).Start, "")
			if got := f.keys(""); strings.Join(got, " ") != strings.Join(listed, " ") {
				t.Errorf("after the cleanup:\n%v\nwant\n%v", got, listed)
			}
			if f.raw(report.MonthManifestKey("2026-01")) != man {
				t.Error("the month manifest changed")
			}
		})
	}
}

// An early close of a month not fully delivered, or final already, is
// refused with ErrNotClosable; the close on time waits for the month's
// rechecks.
func TestCloseRules(t *testing.T) {
	f := newFixture(t)
	for h := 0; h < 22; h++ {
		f.publish(hour(h), report.ReasonDelivery, map[string]int64{"acme": 100})
	}
	f.mustUpdate(hour(22).Start, "")
	if _, err := f.update(hour(22).Start, "2026-01"); !errors.Is(err, monthclose.ErrNotClosable) || !strings.Contains(err.Error(), "not fully delivered") {
		t.Fatalf("early close of a month not delivered: %v", err)
	}
	f.publish(hour(22), report.ReasonDelivery, map[string]int64{"acme": 100})
	// 22:00Z is owed a recheck at 2026-02-01T00:00Z: past the close time
	// (23:00Z + 1h), January stays draft until it is done.
	f.rec.Rechecks = []checkpoint.Recheck{{Start: hour(22).Start, End: hour(22).End, Read: hour(22).End}}
	f.mustUpdate(hour(25).Start, "")
	if st := f.statement("2026-01"); st.Manifest.Status != "draft" {
		t.Fatalf("January with a recheck owed: %s", st.Manifest.Status)
	}
	f.rec.Rechecks[0].Read = hour(25).Start
	res := f.mustUpdate(hour(25).Start, "")
	st := f.statement("2026-01")
	if res.Closed != 1 || st.Manifest.Status != "final" || st.Manifest.Reason != monthclose.ReasonClose || due(st, "acme") != "23.00/0.00/23.00" {
		t.Fatalf("January on time: %+v, %s %s %s", res, st.Manifest.Status, st.Manifest.Reason, due(st, "acme"))
	}
	if _, err := f.update(hour(25).Start, "2026-01"); !errors.Is(err, monthclose.ErrNotClosable) || !strings.Contains(err.Error(), "final already") {
		t.Fatalf("early close of a final month: %v", err)
	}
	if _, _, err := statement.Bounds("2026-1", fxLoc); err == nil {
		t.Error("month 2026-1 accepted")
	}
}

// day returns the d-th daily period from 2026-01-01 (UTC).
func day(d int) report.Period {
	s := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d)
	return report.Period{Start: s, End: s.AddDate(0, 0, 1)}
}

// A restatement of a period whose month is final is booked in the next
// month that is NOT final, past a final one: daily periods in UTC,
// January and February closed early, then a January and a February
// period restated: both are booked in March (which has no period yet),
// and neither final month changes.
func TestAdjustmentSkipsFinalMonths(t *testing.T) {
	f := newFixture(t)
	f.c.Loc = time.UTC
	f.rec.Grid = report.Grid{Start: day(0).Start, Period: 24 * time.Hour}
	for d := 0; d < 31; d++ {
		f.publish(day(d), report.ReasonDelivery, map[string]int64{"acme": 100})
	}
	f.mustUpdate(day(31).Start, "2026-01")
	for d := 31; d < 59; d++ {
		f.publish(day(d), report.ReasonDelivery, map[string]int64{"acme": 200})
	}
	f.mustUpdate(day(59).Start, "2026-02")
	jan, feb := f.raw(report.MonthManifestKey("2026-01")), f.raw(report.MonthManifestKey("2026-02"))
	if st := f.statement("2026-02"); st.Manifest.Status != "final" || due(st, "acme") != "56.00/0.00/56.00" {
		t.Fatalf("February: %s %s", st.Manifest.Status, due(st, "acme"))
	}
	f.publish(day(3), report.ReasonRecheck, map[string]int64{"acme": 130})
	f.publish(day(40), report.ReasonBackfill, map[string]int64{"acme": 150})
	res := f.mustUpdate(day(59).Start, "")
	if res.Adjustments != 2 {
		t.Fatalf("Update: %+v, want 2 adjustments", res)
	}
	mar := f.statement("2026-03")
	if mar.Manifest.Status != "draft" || due(mar, "acme") != "0.00/-0.20/-0.20" || len(mar.Manifest.Adjustments) != 2 {
		t.Fatalf("March: %s %s %+v", mar.Manifest.Status, due(mar, "acme"), mar.Manifest.Adjustments)
	}
	for i, want := range []string{"2026-01", "2026-02"} {
		if a := mar.Manifest.Adjustments[i]; a.PeriodMonth != want || a.FromRevision != 1 || a.ToRevision != 2 {
			t.Errorf("March adjustment %d: %+v, want one of %s 1 -> 2", i, a, want)
		}
	}
	if f.raw(report.MonthManifestKey("2026-01")) != jan || f.raw(report.MonthManifestKey("2026-02")) != feb {
		t.Error("a final month changed")
	}
}

// Regression: a month whose statement is first published after its close
// time (a run catching up on it, or delivering its last period late) is
// issued final at once, revision 1, rather than as a draft that only the
// next run makes final. (Closability used to be decided only for months
// that already had a statement when the close started.)
func TestFirstPublicationAfterCloseTimeIsFinal(t *testing.T) {
	f := newFixture(t)
	for h := 0; h < 24; h++ {
		f.publish(hour(h), report.ReasonDelivery, map[string]int64{"acme": 100})
	}
	res := f.mustUpdate(hour(25).Start, "") // 2026-02-01T01:00Z: January ended 23:00Z, close_after 1h
	jan, feb := f.statement("2026-01"), f.statement("2026-02")
	if res.Closed != 1 || jan.Manifest.Status != "final" || jan.Manifest.StatementRevision != 1 || jan.Manifest.Reason != monthclose.ReasonClose {
		t.Fatalf("January: %+v: %s revision %d reason %q, want final revision 1 (close)", res, jan.Manifest.Status,
			jan.Manifest.StatementRevision, jan.Manifest.Reason)
	}
	if feb.Manifest.Status != "draft" || due(feb, "acme") != "1.00/0.00/1.00" {
		t.Fatalf("February: %s %s", feb.Manifest.Status, due(feb, "acme"))
	}
}

// Config changes under existing statements: a changed statements.timezone
// stops the close before it writes anything; a changed agency_files or
// close_after gives the month not final a new draft with the new files
// and close time.
func TestConfigChangesUnderStatements(t *testing.T) {
	f := newFixture(t)
	for h := 0; h < 3; h++ {
		f.publish(hour(h), report.ReasonDelivery, map[string]int64{"acme": 100})
	}
	f.mustUpdate(hour(3).Start, "")
	before := f.raw(report.MonthManifestKey("2026-01"))

	f.c.Loc = time.UTC
	if _, err := f.update(hour(3).Start, ""); !errors.Is(err, monthclose.ErrZoneChanged) || !strings.Contains(err.Error(), "Africa/Lagos") {
		t.Fatalf("close with another zone: %v", err)
	}
	if got := f.raw(report.MonthManifestKey("2026-01")); got != before {
		t.Fatal("the close with another zone changed January's manifest")
	}
	f.c.Loc = fxLoc

	f.c.Formats = monthclose.Formats{Parquet: true}
	f.c.CloseAfter = 2 * time.Hour
	f.publish(hour(3), report.ReasonDelivery, map[string]int64{"acme": 100})
	f.mustUpdate(hour(4).Start, "")
	st := f.statement("2026-01")
	m := st.Manifest
	if m.StatementRevision != 2 || !slices.Equal(m.AgencyFiles, []string{"parquet"}) || !m.ClosesAt.Equal(m.MonthEnd.Add(2*time.Hour)) {
		t.Fatalf("January after the change: revision %d, agency_files %v, closes_at %s", m.StatementRevision, m.AgencyFiles, m.ClosesAt)
	}
	for _, fi := range m.Files {
		if strings.HasPrefix(fi.Key, "agencies/") && !strings.HasSuffix(fi.Key, ".parquet") {
			t.Errorf("January lists %s after agency_files became [parquet]", fi.Key)
		}
	}
	objs, err := f.b.List(f.ctx, "agencies/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if strings.Contains(o.Key, "/month=") && strings.HasSuffix(o.Key, ".csv") {
			t.Errorf("the CSV statement %s was not cleaned up", o.Key)
		}
	}
}
