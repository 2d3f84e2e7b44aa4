package collect_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// The tests run on the embedded store: a real Source and Index.

var (
	usd  = money.Currency{Code: "USD", Digits: 2}
	day  = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	p10  = report.Period{Start: day.Add(10 * time.Hour), End: day.Add(11 * time.Hour)}
	p11  = report.Period{Start: day.Add(11 * time.Hour), End: day.Add(12 * time.Hour)}
	p12  = report.Period{Start: day.Add(12 * time.Hour), End: day.Add(13 * time.Hour)}
	week = 7 * 24 * time.Hour
)

func openStore(t *testing.T) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "store.db"), embedded.Options{PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// tx is a valid transaction recorded at `at`, amount in cents.
func tx(id, agency string, cents int64, at time.Time) item.Item {
	t := item.Transaction{ID: id, AgencyID: agency, Kind: item.Purchase, Currency: usd, Amount: cents, RecordedAt: at}
	t.PK, t.SK = keys.ForTransaction(id, at, 1)
	return t.Item()
}

func put(t *testing.T, s *embedded.Store, items ...item.Item) {
	t.Helper()
	if err := s.PutItems(context.Background(), items); err != nil {
		t.Fatal(err)
	}
}

type outcome struct {
	billed  []string // ids, in emit order
	sks     []string
	stats   collect.Stats
	rejects []collect.Reject
	fp      string
	read    int64
	// duplicates is the duplicates file's content (DedupeOptions.Record).
	duplicates []byte
}

// run reads and dedupes p; index nil = within the period only.
func run(t *testing.T, s collect.Source, p report.Period, index collect.Index, write bool) outcome {
	t.Helper()
	return runWith(t, s, p, collect.DedupeOptions{Job: "job", Index: index, Window: week, Write: write, Now: p.End})
}

// runWith reads and dedupes p with o.
func runWith(t *testing.T, s collect.Source, p report.Period, opts collect.DedupeOptions) outcome {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	c, err := collect.Read(ctx, collect.Config{Concurrency: 3, Dir: dir, SortMemBytes: 1 << 10}, s, p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var o outcome
	o.fp, o.read = c.Fingerprint.String(), c.ItemsRead
	o.stats, err = c.Dedupe(ctx, opts,
		func(tx *item.Transaction) error {
			o.billed = append(o.billed, tx.ID)
			o.sks = append(o.sks, tx.SK)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if o.stats.RejectsFile != "" {
		f, err := os.Open(o.stats.RejectsFile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r collect.Reject
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			o.rejects = append(o.rejects, r)
		}
	}
	if o.stats.DuplicatesFile != "" {
		if o.duplicates, err = os.ReadFile(o.stats.DuplicatesFile); err != nil {
			t.Fatal(err)
		}
	}
	if got := o.stats.Transactions + o.stats.DuplicatesWithinPeriod + o.stats.DuplicatesAcrossPeriods + o.stats.Rejects; got != o.read {
		t.Errorf("items read %d != billed %d + duplicates %d + %d + rejects %d", o.read, o.stats.Transactions,
			o.stats.DuplicatesWithinPeriod, o.stats.DuplicatesAcrossPeriods, o.stats.Rejects)
	}
	return o
}

func reasons(rs []collect.Reject) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Value+": "+r.Reason)
	}
	return out
}

// TestWithinPeriod: identical copies billed once (the copy with the
// smallest keys), conflicting copies all rejected, invalid items rejected,
// every id emitted once in id order.
func TestWithinPeriod(t *testing.T) {
	s := openStore(t)
	at := p10.Start.Add(5 * time.Minute)
	retry := tx("t-dup", "a", 100, at.Add(20*time.Minute)) // re-stamped retry: other keys, same content
	bad := tx("t-bad", "a", 100, at)
	bad.Attrs[item.AttrAmount] = item.N("1.999")
	put(t, s,
		tx("t-1", "a", 100, at), tx("t-dup", "a", 100, at), retry,
		tx("t-conf", "a", 100, at), tx("t-conf", "a", 200, at.Add(30*time.Minute)),
		bad, tx("t-0", "b", 5, at),
	)
	o := run(t, s, p10, nil, false)
	if want := []string{"t-0", "t-1", "t-dup"}; !slices.Equal(o.billed, want) {
		t.Errorf("billed %v, want %v", o.billed, want)
	}
	_, firstSK := keys.ForTransaction("t-dup", at, 1)
	if o.sks[2] != firstSK && o.sks[2] > retry.SK {
		t.Errorf("t-dup billed with sort key %s: want the smallest of its copies", o.sks[2])
	}
	if o.stats.DuplicatesWithinPeriod != 1 || o.stats.Rejects != 3 {
		t.Errorf("stats %+v, want 1 duplicate and 3 rejects", o.stats)
	}
	got := reasons(o.rejects)
	want := []string{
		`1.999: more fraction digits than USD has (2)`,
		"t-conf: conflicting duplicate: 2 items carry this transaction_id with different content",
		"t-conf: conflicting duplicate: 2 items carry this transaction_id with different content",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rejects\n%q\nwant\n%q", got, want)
	}
}

// TestAcrossPeriods: the dedupe index keeps a transaction in the period
// that billed it first; an identical re-stamped copy elsewhere is dropped,
// a different one rejected; a rebuild of the first period keeps it; a
// period that no longer bills an id releases it.
func TestAcrossPeriods(t *testing.T) {
	s := openStore(t)
	put(t, s,
		tx("t-retry", "a", 100, p10.Start.Add(59*time.Minute)),
		tx("t-changed", "a", 100, p10.Start.Add(10*time.Minute)),
		tx("t-only10", "a", 100, p10.Start),
	)
	o10 := run(t, s, p10, s, true)
	if want := []string{"t-changed", "t-only10", "t-retry"}; !slices.Equal(o10.billed, want) {
		t.Fatalf("p10 billed %v, want %v", o10.billed, want)
	}
	// The producer's retries land in 11:00: one identical, one not.
	put(t, s,
		tx("t-retry", "a", 100, p11.Start.Add(time.Second)),
		tx("t-changed", "a", 999, p11.Start.Add(2*time.Second)),
		tx("t-new", "a", 100, p11.Start.Add(3*time.Second)),
	)
	o11 := run(t, s, p11, s, true)
	if want := []string{"t-new"}; !slices.Equal(o11.billed, want) {
		t.Errorf("p11 billed %v, want %v", o11.billed, want)
	}
	if o11.stats.DuplicatesAcrossPeriods != 1 || o11.stats.Rejects != 1 ||
		!strings.Contains(o11.rejects[0].Reason, "already billed in period 20240301T1000Z with different content") {
		t.Errorf("p11 stats %+v, rejects %q", o11.stats, reasons(o11.rejects))
	}
	// A rebuild of 10:00 (restatement, backfill) keeps its transactions,
	// and a rebuild of 11:00 still does not bill them: the same outcome.
	if again := run(t, s, p10, s, true); !slices.Equal(again.billed, o10.billed) || again.fp != o10.fp {
		t.Errorf("rebuilt p10 billed %v (fp %s), want %v (fp %s)", again.billed, again.fp, o10.billed, o10.fp)
	}
	if again := run(t, s, p11, s, true); !slices.Equal(again.billed, o11.billed) {
		t.Errorf("rebuilt p11 billed %v, want %v", again.billed, o11.billed)
	}
	// An earlier period rebuilt after the fact (backfill) does not take a
	// transaction 11:00 billed.
	put(t, s, tx("t-new", "a", 100, p10.Start.Add(30*time.Minute)))
	if o := run(t, s, p10, s, true); slices.Contains(o.billed, "t-new") || o.stats.DuplicatesAcrossPeriods != 1 {
		t.Errorf("p10 after a late copy of t-new: billed %v, stats %+v", o.billed, o.stats)
	}
	// The operator deletes 10:00's t-changed (the 11:00 copy is right):
	// 10:00 rebuilt releases the id, and 11:00 rebuilt bills it.
	if del := tx("t-changed", "a", 100, p10.Start.Add(10*time.Minute)); s.DeleteItem(context.Background(), del.PK, del.SK) != nil {
		t.Fatal("delete failed")
	}
	if o := run(t, s, p10, s, true); slices.Contains(o.billed, "t-changed") {
		t.Errorf("p10 still bills t-changed: %v", o.billed)
	}
	if o := run(t, s, p11, s, true); !slices.Contains(o.billed, "t-changed") || o.stats.Rejects != 0 {
		t.Errorf("p11 after the fix: billed %v, rejects %q", o.billed, reasons(o.rejects))
	}
}

// TestDryRunWritesNoClaims: without Write, the index is read, not written.
func TestDryRunWritesNoClaims(t *testing.T) {
	s := openStore(t)
	put(t, s, tx("t-1", "a", 100, p10.Start), tx("t-1", "a", 100, p11.Start))
	run(t, s, p10, s, false)
	if o := run(t, s, p11, s, false); !slices.Equal(o.billed, []string{"t-1"}) {
		t.Errorf("p11 after a dry run of p10: billed %v, want t-1 (no claim written)", o.billed)
	}
	claims, err := s.Lookup(context.Background(), "job", []string{"t-1"})
	if err != nil || len(claims) != 0 {
		t.Errorf("Lookup after dry runs: %v, %v", claims, err)
	}
}

// TestWindow: a claim older than the window no longer counts.
func TestWindow(t *testing.T) {
	s := openStore(t)
	put(t, s, tx("t-1", "a", 100, p10.Start))
	run(t, s, p10, s, true)
	// The claim counts for periods starting before 11:00 + 7 days.
	later := report.Period{Start: p10.End.Add(week), End: p10.End.Add(week + time.Hour)}
	before := report.Period{Start: later.Start.Add(-time.Hour), End: later.Start}
	put(t, s, tx("t-1", "a", 100, later.Start), tx("t-1", "a", 100, before.Start))
	if o := run(t, s, later, s, true); !slices.Equal(o.billed, []string{"t-1"}) {
		t.Errorf("a week later: billed %v, want t-1 (the claim expired)", o.billed)
	}
	if o := run(t, s, before, s, false); len(o.billed) != 0 || o.stats.DuplicatesAcrossPeriods != 1 {
		t.Errorf("an hour before the window's edge: billed %v, stats %+v", o.billed, o.stats)
	}
}

// TestFingerprint: the same items give the same fingerprint whatever the
// page size and concurrency; a change shows.
func TestReadFingerprint(t *testing.T) {
	s := openStore(t)
	var items []item.Item
	for i := range 50 {
		items = append(items, tx(fmt.Sprintf("t-%02d", i), "a", int64(100+i), p10.Start.Add(time.Duration(i)*time.Minute)))
	}
	put(t, s, items...)
	o1 := run(t, s, p10, nil, false)
	if o1.read != 50 || len(o1.billed) != 50 {
		t.Fatalf("read %d, billed %d", o1.read, len(o1.billed))
	}
	put(t, s, tx("t-late", "a", 1, p10.Start.Add(59*time.Minute)))
	o2 := run(t, s, p10, nil, false)
	if o2.fp == o1.fp || o2.read != 51 {
		t.Errorf("a late item: fingerprint %s (was %s), read %d", o2.fp, o1.fp, o2.read)
	}
	if o3 := run(t, s, p10, nil, false); o3.fp != o2.fp {
		t.Errorf("same items, another read: %s, want %s", o3.fp, o2.fp)
	}
	if o := run(t, s, p12, nil, false); o.read != 0 || o.fp != (collect.Fingerprint{}).String() {
		t.Errorf("empty period: read %d, fp %s", o.read, o.fp)
	}
}

// TestAgencyProblem: an agency whose objects the sink cannot store
// becomes rejects; the others are billed.
func TestAgencyProblem(t *testing.T) {
	s := openStore(t)
	put(t, s, tx("t-1", "ok", 100, p10.Start), tx("t-2", "too-long", 100, p10.Start))
	c, err := collect.Read(context.Background(), collect.Config{Dir: t.TempDir(), AgencyProblem: func(a string) string {
		if a == "too-long" {
			return "its report objects cannot be stored"
		}
		return ""
	}}, s, p10)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var billed []string
	st, err := c.Dedupe(context.Background(), collect.DedupeOptions{}, func(tx *item.Transaction) error {
		billed = append(billed, tx.ID)
		return nil
	})
	if err != nil || !slices.Equal(billed, []string{"t-1"}) || st.Rejects != 1 {
		t.Errorf("billed %v, stats %+v, err %v", billed, st, err)
	}
}

// TestCloseRemovesFiles: no file is left in the scratch folder after
// Close, whether the period spilled or not.
func TestCloseRemovesFiles(t *testing.T) {
	s := openStore(t)
	var items []item.Item
	for i := range 300 {
		items = append(items, tx(fmt.Sprintf("t-%03d", i), "a", 100, p10.Start.Add(time.Duration(i)*time.Second)))
	}
	bad := tx("bad", "a", 1, p10.Start)
	delete(bad.Attrs, item.AttrCurrency)
	put(t, s, append(items, bad)...)
	dir := t.TempDir()
	c, err := collect.Read(context.Background(), collect.Config{Dir: dir, SortMemBytes: 512}, s, p10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Dedupe(context.Background(), collect.DedupeOptions{}, func(*item.Transaction) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		if e.Name() != "rejects.jsonl" { // the joined file belongs to the caller's folder
			left = append(left, e.Name())
		}
	}
	if len(left) > 0 {
		t.Errorf("files left after Close: %v", left)
	}
}

// TestRecordSource: reading through the store's QueryRecords (what Read
// does with an embedded store) and through its plain Query give the same
// fingerprint, billing and rejects, with every attribute of the rejected
// items, those outside the contract included.
func TestRecordSource(t *testing.T) {
	s := openStore(t)
	at := p10.Start.Add(5 * time.Minute)
	extra := tx("t-extra", "a", 100, at)
	extra.Attrs["note"] = item.S("kept")
	badExtra := tx("t-bad-extra", "a", 100, at)
	badExtra.Attrs[item.AttrAmount] = item.N("1.999")
	badExtra.Attrs["note"] = item.N("7")
	bad := tx("t-bad", "a", 100, at)
	bad.Attrs[item.AttrCurrency] = item.S("usd")
	noAgency := tx("t-no-agency", "a", 100, at)
	delete(noAgency.Attrs, item.AttrAgencyID)
	put(t, s, tx("t-1", "a", 100, at), tx("t-1", "a", 100, at.Add(time.Minute)), extra, badExtra, bad, noAgency,
		tx("t-conf", "b", 1, at), tx("t-conf", "b", 2, at.Add(time.Minute)))
	if _, ok := collect.Source(s).(collect.RecordSource); !ok {
		t.Fatal("the embedded store is not a RecordSource")
	}
	plain := run(t, struct{ collect.Source }{s}, p10, nil, false)
	records := run(t, s, p10, nil, false)
	plain.stats.RejectsFile, records.stats.RejectsFile = "", "" // two scratch folders
	if !reflect.DeepEqual(plain, records) {
		t.Errorf("through QueryRecords\n%+v\nthrough Query\n%+v", records, plain)
	}
	if len(records.rejects) != 5 || len(records.billed) != 2 {
		t.Errorf("rejects %v, billed %v: want 5 and 2", reasons(records.rejects), records.billed)
	}
	for _, r := range records.rejects {
		if r.Value == "1.999" && !reflect.DeepEqual(r.Item["note"], map[string]any{"N": "7"}) {
			t.Errorf("reject of t-bad-extra: item %v, want its note", r.Item)
		}
	}
}
