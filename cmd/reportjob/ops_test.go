package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
)

// Operations tests through the real CLI in process (the harness): catch-up,
// backfill, dry run and status here; metrics pushes in ops_metrics_test.go;
// the scheduler in ops_schedule_test.go; tests that start reportjob
// processes (concurrent runs, SIGTERM) in ops_process_test.go.

// opsSummaries parses every JSON line of stdout whose command is cmd.
func opsSummaries(t testing.TB, stdout, cmd string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q: %v", line, err)
		}
		if m["command"] == cmd {
			out = append(out, m)
		}
	}
	return out
}

// opsOnlyMonth returns the one month of months (nil-safe: an empty
// statement when there is not exactly one).
func opsOnlyMonth(months map[string]*monthStatement) *monthStatement {
	if len(months) == 1 {
		for _, m := range months {
			return m
		}
	}
	return &monthStatement{manifest: &monthclose.Manifest{}}
}

// statementsOf checks h's statements (checkStatements, after a completed
// run) and that they take in n periods in all, each once.
func statementsOf(h *harness, n int) {
	h.t.Helper()
	months := checkStatements(h)
	seen := map[string]int{}
	for _, ms := range months {
		for _, p := range ms.manifest.Periods {
			seen[p.Key]++
		}
	}
	if len(seen) != n {
		h.t.Errorf("statements take in %d periods, want %d: %v", len(seen), n, months)
	}
	for k, c := range seen {
		if c != 1 {
			h.t.Errorf("period %s is in %d statements", k, c)
		}
	}
}

// opsStoppedStatements checks the statements after a schedule stopped by
// a signal, n periods delivered in all. The run stopped at the signal
// skips its close (job.Run: a stopped run ends at once), leaving the due
// markers of what it delivered: each of the n periods is in a statement
// or has its due marker. One more run's close takes them in: its periods
// and the n are in the statements, no due marker left.
func opsStoppedStatements(h *harness, n int) {
	h.t.Helper()
	objs := h.objects()
	var due []string
	covered := map[string]bool{}
	for k := range objs {
		if name, ok := strings.CutPrefix(k, report.DueStatementsPrefix+"period="); ok {
			due = append(due, k)
			covered[strings.TrimSuffix(name, ".json")] = true
		}
	}
	for _, ms := range checkStatements(h, due...) {
		for _, p := range ms.manifest.Periods {
			covered[report.Period{Start: p.Start, End: p.End}.Name()] = true
		}
	}
	if len(covered) != n {
		h.t.Errorf("after the stop, %d periods in the statements or due (%v), want %d", len(covered), due, n)
	}
	sum := h.mustRun(exitOK, "run", "--now", time.Now().UTC().Format(time.RFC3339))
	statementsOf(h, n+opsInt(h.t, sum, "periods_processed"))
}

// opsInt reads a JSON number field as an int.
func opsInt(t testing.TB, m map[string]any, key string) int {
	t.Helper()
	f, ok := m[key].(float64)
	if !ok {
		t.Fatalf("field %q = %#v (%T), want a number; in %v", key, m[key], m[key], m)
	}
	return int(f)
}

// opsManifests returns the period end of every period manifest in the
// sink, by key (the months' manifests are checkStatements').
func opsManifests(h *harness) map[string]time.Time {
	h.t.Helper()
	sk := h.sink()
	infos, err := sk.List(context.Background(), "")
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, o := range infos {
		if !isPeriodManifest(o.Key) {
			continue
		}
		var m report.Manifest
		if err := json.Unmarshal(h.read(sk, o.Key), &m); err != nil {
			h.t.Fatalf("%s: %v", o.Key, err)
		}
		out[o.Key] = m.PeriodEnd
	}
	return out
}

// opsPut writes n valid USD purchases in each hour of [from, to), and
// bad ones (an unknown currency) at the given instants, straight into the
// store, as a producer would.
func opsPut(h *harness, from, to time.Time, n int, bad ...time.Time) int {
	h.t.Helper()
	var items []item.Item
	add := func(id string, rec time.Time, cur string) {
		pk, sk := keys.ForTransaction(id, rec, 1)
		items = append(items, item.Item{PK: pk, SK: sk, Attrs: map[string]item.Value{
			item.AttrTransactionID: item.S(id), item.AttrAgencyID: item.S("agency-" + strconv.Itoa(len(items)%3)),
			item.AttrAmount: item.N("12.50"), item.AttrCurrency: item.S(cur),
		}})
	}
	for t := from; t.Before(to); t = t.Add(time.Hour) {
		for i := 0; i < n; i++ {
			add(fmt.Sprintf("ops-%s-%d", t.Format("0215"), i), t.Add(time.Duration(i)*time.Minute), "USD")
		}
	}
	for i, t := range bad {
		add(fmt.Sprintf("ops-bad-%d", i), t, "XXX")
	}
	h.withStore(func(st *store) {
		if err := st.PutItems(context.Background(), items); err != nil {
			h.t.Fatal(err)
		}
	})
	return len(items) - len(bad)
}

func opsTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func opsStatus(h *harness, now string) map[string]any {
	h.t.Helper()
	return h.mustRun(exitOK, "status", "--json", "--now", now)
}

// TestOpsCatchUp: after a day of downtime, each run processes due periods
// oldest first up to report.max_periods_per_run, its summary says how many
// remain, status agrees, and later runs finish the backlog.
func TestOpsCatchUp(t *testing.T) {
	h := newHarness(t, harnessOptions{extra: "  max_periods_per_run: 5"})
	want := opsPut(h, opsTime("2024-03-01T00:00:00Z"), opsTime("2024-03-02T01:00:00Z"), 2)

	sum := h.mustRun(exitOK, "run", "--now", "2024-03-01T01:02:00Z")
	if sum["status"] != "ok" || opsInt(t, sum, "periods_processed") != 1 || sum["checkpoint"] != "2024-03-01T01:00:00Z" {
		t.Fatalf("first run: %v", sum)
	}
	// The job is down for a day.
	now := "2024-03-02T01:02:00Z"
	st := opsStatus(h, now)
	if opsInt(t, st, "periods_behind") != 24 || st["next_period_start"] != "2024-03-01T01:00:00Z" {
		t.Fatalf("status after a day down: %v", st)
	}
	next := opsTime("2024-03-01T01:00:00Z")
	transactions := 2 // the first run's
	for i, wantRemaining := range []int{19, 14, 9, 4, 0} {
		sum := h.mustRun(exitOK, "run", "--now", now)
		n := opsInt(t, sum, "periods_processed")
		wantN := 5
		if wantRemaining == 0 {
			wantN = 4
		}
		last := next.Add(time.Duration(wantN-1) * time.Hour)
		next = next.Add(time.Duration(wantN) * time.Hour)
		if sum["status"] != "ok" || n != wantN || opsInt(t, sum, "periods_remaining") != wantRemaining ||
			sum["first_period"] != last.Add(-time.Duration(wantN-1)*time.Hour).Format(time.RFC3339) ||
			sum["last_period"] != last.Format(time.RFC3339) || sum["checkpoint"] != next.Format(time.RFC3339) {
			t.Fatalf("catch-up run %d: %v; want %d periods ending with %s, %d remaining, checkpoint %s",
				i, sum, wantN, last.Format(time.RFC3339), wantRemaining, next.Format(time.RFC3339))
		}
		transactions += opsInt(t, sum, "transactions")
		if st := opsStatus(h, now); opsInt(t, st, "periods_behind") != wantRemaining || st["checkpoint"] != next.Format(time.RFC3339) {
			t.Fatalf("status after catch-up run %d: %v", i, st)
		}
	}
	if sum := h.mustRun(exitOK, "run", "--now", now); sum["status"] != "nothing_due" || opsInt(t, sum, "periods_processed") != 0 {
		t.Fatalf("run after catching up: %v", sum)
	}
	if transactions != want {
		t.Errorf("%d transactions billed, want %d", transactions, want)
	}
	if ms := opsManifests(h); len(ms) != 25 {
		t.Errorf("%d manifests, want 25", len(ms))
	}
	// March's statement takes in the 25 periods.
	if ms := checkStatements(h); len(ms) != 1 || ms[report.MonthManifestKey("2024-03")] == nil ||
		len(ms[report.MonthManifestKey("2024-03")].manifest.Periods) != 25 {
		t.Errorf("statements %v, want March's of 25 periods", ms)
	}
}

// TestOpsBackfill: --from/--to must be period boundaries not beyond the
// watermark (exit 2, naming the flag); backfill takes the lease (exit 3
// when held) and never moves the checkpoint; --dry-run lists what it
// would write and where, and writes nothing.
func TestOpsBackfill(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	opsPut(h, opsTime("2024-03-01T00:00:00Z"), opsTime("2024-03-01T06:00:00Z"), 3, opsTime("2024-03-01T04:10:00Z"))
	const now = "2024-03-01T06:05:00Z"

	// Dry run first: nothing written, no checkpoint, no lease taken.
	out, errs, code := h.run("run", "--dry-run", "--now", now)
	if code != exitOK {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errs)
	}
	sum := lastJSON(t, out)
	if sum["mode"] != "dry-run" || opsInt(t, sum, "periods_processed") != 6 || opsInt(t, sum, "rejects") != 1 {
		t.Fatalf("dry run summary: %v", sum)
	}
	reports := filepath.Join(h.dir, "reports")
	var would []string
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "would write "); ok {
			would = append(would, p)
			if !strings.HasPrefix(p, reports+string(filepath.Separator)) || !strings.Contains(p, "period=2024030") {
				t.Errorf("dry run would write %q: not a full path under %s", p, reports)
			}
		}
	}
	// Per period: the summary and transactions datasets' files, a summary
	// and a transactions CSV for each of 3 agencies, and the manifest; the
	// rejects of 04:00.
	if len(would) != 6*(2+3*2+1)+1 || opsInt(t, sum, "objects_written") != 6*(2+3*2)+1 {
		t.Errorf("dry run lists %d writes (summary says %d objects), want %d:\n%s", len(would), opsInt(t, sum, "objects_written"), 6*9+1, strings.Join(would, "\n"))
	}
	for _, want := range []string{"rejects/period=20240301T0400Z/rejects-", "manifests/period=20240301T0500Z/manifest.json",
		"agencies/agency=agency-0/period=20240301T0000Z/summary-"} {
		if !strings.Contains(strings.Join(would, "\n"), filepath.FromSlash(want)) {
			t.Errorf("dry run does not list %s", want)
		}
	}
	if objs := h.objects(); len(objs) != 0 {
		t.Fatalf("dry run wrote %d objects", len(objs))
	}
	st := opsStatus(h, now)
	if _, ok := st["checkpoint"]; ok {
		t.Fatalf("dry run moved the checkpoint: %v", st)
	}
	if _, ok := st["lease"]; ok {
		t.Fatalf("dry run took the lease: %v", st)
	}

	sum = h.mustRun(exitOK, "run", "--now", "2024-03-01T03:02:00Z")
	if sum["checkpoint"] != "2024-03-01T03:00:00Z" {
		t.Fatalf("run: %v", sum)
	}
	objsAfterRun := h.objects()

	// Bad ranges: exit 2, the flag named, nothing written or moved.
	for _, tc := range []struct{ from, to, msg string }{
		{"2024-03-01T00:30:00Z", "2024-03-01T02:00:00Z", "--from 2024-03-01T00:30:00Z is not a period boundary"},
		{"2024-03-01T00:00:00Z", "2024-03-01T01:59:59Z", "--to 2024-03-01T01:59:59Z is not a period boundary"},
		{"2024-03-01T02:00:00Z", "2024-03-01T01:00:00Z", "must be after --from"},
		{"2024-03-01T05:00:00Z", "2024-03-01T07:00:00Z", "--to 2024-03-01T07:00:00Z is beyond the watermark 2024-03-01T06:03:00Z"},
		{"2024-03-01T05:00:00Z", "2024-03-01T06:04:00Z", "not a period boundary"},
		// Past the checkpoint (03:00): those periods are run's.
		{"2024-03-01T02:00:00Z", "2024-03-01T05:00:00Z", "--to 2024-03-01T05:00:00Z is after the checkpoint 2024-03-01T03:00:00Z: " +
			"a backfill rebuilds delivered periods only, and run delivers the periods after the checkpoint (3 due at " + now + ")"},
	} {
		out, errs, code := h.run("run", "--backfill", "--from", tc.from, "--to", tc.to, "--now", now)
		sum := lastJSON(t, out)
		if code != exitUsage || sum["status"] != "bad_usage" || !strings.Contains(sum["error"].(string), tc.msg) {
			t.Errorf("backfill %s..%s: exit %d, %v; want exit 2 with %q\n%s", tc.from, tc.to, code, sum, tc.msg, errs)
		}
	}
	for _, args := range [][]string{
		{"--backfill", "--from", "2024-03-01T00:00:00Z"},
		{"--from", "2024-03-01T00:00:00Z", "--to", "2024-03-01T01:00:00Z"},
		{"--backfill", "--from", "yesterday", "--to", "2024-03-01T01:00:00Z"},
	} {
		if _, errs, code := h.run(append([]string{"run", "--now", now}, args...)...); code != exitUsage {
			t.Errorf("run %v: exit %d, want 2\n%s", args, code, errs)
		}
	}

	// Backfill takes the lease: with another process holding the embedded
	// file, it exits 3 saying so.
	h.withStore(func(s *store) {
		out, errs, code = h.run("run", "--backfill", "--from", "2024-03-01T00:00:00Z", "--to", "2024-03-01T02:00:00Z", "--now", now)
	})
	if sum := lastJSON(t, out); code != exitLeaseHeld || sum["status"] != "lease_held" || !strings.Contains(sum["error"].(string), "in use by another process") {
		t.Fatalf("backfill with the store held: exit %d, %v\n%s", code, sum, errs)
	}
	// A dry backfill beyond the checkpoint is refused as the backfill is;
	// one of a delivered period builds it.
	out, _, code = h.run("run", "--backfill", "--dry-run", "--from", "2024-03-01T04:00:00Z", "--to", "2024-03-01T05:00:00Z", "--now", now)
	if sum := lastJSON(t, out); code != exitUsage || !strings.Contains(sum["error"].(string), "after the checkpoint") {
		t.Fatalf("dry backfill beyond the checkpoint: exit %d\n%s", code, out)
	}
	out, _, code = h.run("run", "--backfill", "--dry-run", "--from", "2024-03-01T02:00:00Z", "--to", "2024-03-01T03:00:00Z", "--now", now)
	if sum := lastJSON(t, out); code != exitOK || opsInt(t, sum, "periods_processed") != 1 || sum["mode"] != "dry-run" {
		t.Fatalf("dry backfill: exit %d\n%s", code, out)
	}
	if got := h.objects(); len(got) != len(objsAfterRun) {
		t.Fatalf("refused or dry runs wrote objects: %d -> %d", len(objsAfterRun), len(got))
	}

	// Backfill behind the checkpoint and up to it: rebuilt, same bytes
	// for the reports, checkpoint unchanged.
	for _, r := range [][2]string{
		{"2024-03-01T00:00:00Z", "2024-03-01T02:00:00Z"},
		{"2024-03-01T01:00:00Z", "2024-03-01T03:00:00Z"},
	} {
		sum := h.mustRun(exitOK, "run", "--backfill", "--from", r[0], "--to", r[1], "--now", now)
		wantN := int(opsTime(r[1]).Sub(opsTime(r[0])) / time.Hour)
		if sum["mode"] != "backfill" || opsInt(t, sum, "periods_processed") != wantN || sum["first_period"] != r[0] {
			t.Errorf("backfill %s..%s: %v", r[0], r[1], sum)
		}
		if st := opsStatus(h, now); st["checkpoint"] != "2024-03-01T03:00:00Z" {
			t.Fatalf("backfill %s..%s moved the checkpoint: %v", r[0], r[1], st)
		}
	}
	objs := h.objects()
	for k, sum := range objsAfterRun {
		// The statements are republished: checkStatements below.
		if objs[k] != sum && !report.IsStatementKey(k) {
			t.Errorf("backfill rewrote %s", k)
		}
	}
	if ms := opsManifests(h); len(ms) != 3 {
		t.Errorf("%d manifests after backfilling 00:00..03:00, want 3", len(ms))
	}
	// March's statement takes in the periods up to the checkpoint.
	if ms := checkStatements(h); len(opsOnlyMonth(ms).manifest.Periods) != 3 {
		t.Errorf("statements after the backfill %v, want March's of 3 periods", ms)
	}
	// The next run carries on from the checkpoint, not from the backfill.
	if sum := h.mustRun(exitOK, "run", "--now", now); sum["first_period"] != "2024-03-01T03:00:00Z" || opsInt(t, sum, "periods_processed") != 3 {
		t.Errorf("run after backfill: %v", sum)
	}
	// Its close takes in the 6 periods; no due marker is left.
	statementsOf(h, 6)
}

// TestOpsStatusJSON checks the fields of status --json before any run,
// after runs, with the lease held and without report.start.
func TestOpsStatusJSON(t *testing.T) {
	h := newHarness(t, harnessOptions{period: "30m"})
	st := opsStatus(h, "2024-03-01T02:10:00Z")
	want := map[string]any{
		"command": "status", "job": "e2e", "now": "2024-03-01T02:10:00Z",
		"next_period_start": "2024-03-01T00:00:00Z", "next_period_end": "2024-03-01T00:30:00Z",
		"next_due_at": "2024-03-01T00:32:00Z", "periods_behind": 4.0, "lag_seconds": 0.0,
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("status before any run: %s = %v, want %v", k, st[k], v)
		}
	}
	for _, k := range []string{"checkpoint", "lease", "note"} {
		if _, ok := st[k]; ok {
			t.Errorf("status before any run has %s: %v", k, st)
		}
	}

	h.mustRun(exitOK, "run", "--now", "2024-03-01T01:05:00Z")
	st = opsStatus(h, "2024-03-01T02:10:00Z")
	want = map[string]any{
		"checkpoint": "2024-03-01T01:00:00Z", "next_period_start": "2024-03-01T01:00:00Z",
		"next_period_end": "2024-03-01T01:30:00Z", "next_due_at": "2024-03-01T01:32:00Z",
		"periods_behind": 2.0, "lag_seconds": 4200.0,
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("status after a run: %s = %v, want %v", k, st[k], v)
		}
	}
	if l, ok := st["lease"].(map[string]any); !ok || l["held"] != false || !strings.Contains(l["owner"].(string), "/") {
		t.Errorf("status after a run: lease = %v, want the last holder, not held", st["lease"])
	}

	expires := time.Date(2024, 3, 1, 2, 30, 0, 0, time.UTC)
	h.withStore(func(s *store) {
		if _, err := s.Acquire(context.Background(), "e2e", "host/7/run", expires.Add(-time.Hour), time.Hour); err != nil {
			t.Fatal(err)
		}
	})
	st = opsStatus(h, "2024-03-01T02:10:00Z")
	if l, _ := st["lease"].(map[string]any); l["owner"] != "host/7/run" || l["held"] != true || l["expires"] != "2024-03-01T02:30:00Z" {
		t.Errorf("status with the lease held: %v", st["lease"])
	}

	// Without report.start and checkpoint: a note, and run refuses (exit 2).
	h2 := newHarness(t, harnessOptions{})
	cfg, err := os.ReadFile(h2.config)
	if err != nil {
		t.Fatal(err)
	}
	h2.writeFile("config.yaml", strings.Replace(string(cfg), `start: "2024-03-01"`, `start: ""`, 1))
	if st := opsStatus(h2, "2024-03-01T02:10:00Z"); !strings.Contains(fmt.Sprint(st["note"]), "report.start is unset") {
		t.Errorf("status without start: %v", st)
	}
	if sum := h2.mustRun(exitUsage, "run", "--now", "2024-03-01T02:10:00Z"); sum["status"] != "bad_usage" ||
		!strings.Contains(sum["error"].(string), "report.start") {
		t.Errorf("run without start: %v", sum)
	}
}

// TestInstantsOutsideTheYears: an instant before the year 1000 (or after
// 9999) in report.start or a time flag is bad usage, said with its key
// and value, before anything is written. The zero time stands for "not
// set": `--from 0001-01-01T00:00:00Z` was taken for a missing --from, and
// a backfill of year 0 delivered a period no later run could find, which
// stopped every run after it at the month's statements.
func TestInstantsOutsideTheYears(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, args := range [][]string{
		{"run", "--backfill", "--from", "0001-01-01T00:00:00Z", "--to", "0001-01-01T02:00:00Z", "--now", "2024-03-01T02:10:00Z"},
		{"run", "--backfill", "--from", "2024-03-01", "--to", "9999-12-31T23:00:00-05:00", "--now", "2024-03-01T02:10:00Z"},
		{"verify", "--from", "0000-12-31T23:00:00Z", "--to", "2024-03-01", "--now", "2024-03-01T02:10:00Z"},
		{"run", "--now", "0999-12-31T23:59:59Z"},
	} {
		sum := h.mustRun(exitUsage, args...)
		if msg := fmt.Sprint(sum["error"]); sum["status"] != "bad_usage" || !strings.Contains(msg, "want 1000 to 9999") {
			t.Errorf("reportjob %s: %v", strings.Join(args, " "), sum)
		}
	}
	h2 := newHarness(t, harnessOptions{start: "0000-01-01"})
	sum := h2.mustRun(exitUsage, "run", "--backfill", "--from", "2024-03-01", "--to", "2024-03-01T01:00:00Z", "--now", "2024-03-01T02:10:00Z")
	if msg := fmt.Sprint(sum["error"]); !strings.Contains(msg, "report.start") || !strings.Contains(msg, "0000-01-01") ||
		!strings.Contains(msg, "1000 to 9999") {
		t.Errorf("report.start 0000-01-01: %v", sum)
	}
	for _, hh := range []*harness{h, h2} {
		if _, err := os.Stat(filepath.Join(hh.dir, "reports")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the sink folder was made (%v): a bad instant must stop the run before it writes", err)
		}
	}
}
