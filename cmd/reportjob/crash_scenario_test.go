//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
)

// The crash scenario, shared by the crash-point and random-kill suites.
//
// Hourly periods from 2024-03-01T00:00Z, lateness 2m, recheck_after [1h],
// dedupe_window 35d (the defaults). Before the run under test, a first run
// at 03:02 delivered 00:00, 01:00 and 02:00 (02:00 is owed a recheck at
// 04:00). Then, as a producer would, items arrive for 03:00..06:00, late
// items land in 02:00, and a retry of a 03:00 transaction is re-stamped
// into 02:00. The run under test, at 07:02, delivers 03:00..06:00 (four
// periods: after-read, after-claims, after-manifest, after-cleanup and
// after-checkpoint are hit four times) and then rechecks 02:00, which it
// restates as revision 2 (the fifth hit of each; mid-restatement on each
// of its uploads).
//
// Besides, every period has identical copies of a transaction: within
// 00:00, a retry re-stamped from 01:00 into 02:00 and from 03:00 into
// 04:00 (dropped by the dedupe index), a reject (unknown currency) in
// 01:00, a conflicting duplicate (two contents, both rejected) in 05:00 and
// a refund in 04:00.
var (
	csStart   = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	csPrepNow = "2024-03-01T03:02:00Z" // delivers 00:00..02:00
	csNow     = "2024-03-01T07:02:00Z" // the run under test
	// csCheckpoint is where the run under test leaves the checkpoint.
	csCheckpoint = time.Date(2024, 3, 1, 7, 0, 0, 0, time.UTC)
)

// crashScenario is the scenario's items and what each should become.
type crashScenario struct {
	prep, late []item.Item // written before the first run, and after it
	// billed maps each transaction id that must be billed to the start of
	// the one period that bills it.
	billed map[string]time.Time
	// rejected are the ids that must never be billed.
	rejected map[string]bool

	// The embedded template (see setup).
	tmplOnce sync.Once
	tmplDir  string
	tmplErr  error
}

func hourAt(h, m, s int) time.Time {
	return csStart.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
}

// newCrashScenario builds the scenario (the same keys and bytes every
// time: keys derived from the transaction ids, as a producer that has ids
// writes them).
func newCrashScenario() *crashScenario {
	s := &crashScenario{billed: map[string]time.Time{}, rejected: map[string]bool{}}
	agencies := []string{"acme", "beta", "Agence Étoile"}
	currencies := []string{"USD", "EUR", "JPY", "BHD"}
	amounts := map[string]string{"USD": "12.34", "EUR": "9.99", "JPY": "1500", "BHD": "1.005"}
	type tx struct {
		id, agency, amount, currency, kind string
	}
	mk := func(t tx, at time.Time) item.Item {
		pk, sk := keys.ForTransaction(t.id, at, 1)
		attrs := map[string]item.Value{
			item.AttrTransactionID: item.S(t.id), item.AttrAgencyID: item.S(t.agency),
			item.AttrAmount: item.N(t.amount), item.AttrCurrency: item.S(t.currency),
			item.AttrCustomerID: item.S("cust-" + t.id),
		}
		if t.kind != "" {
			attrs[item.AttrKind] = item.S(t.kind)
		}
		return item.Item{PK: pk, SK: sk, Attrs: attrs}
	}
	txs := map[string]tx{}
	hour := func(dst *[]item.Item, h int) {
		for i := 0; i < 12; i++ {
			cur := currencies[(h+i)%len(currencies)]
			t := tx{id: fmt.Sprintf("tx-%02d-%02d", h, i), agency: agencies[i%len(agencies)], amount: amounts[cur], currency: cur}
			if i%5 == 4 {
				t.amount = fmt.Sprintf("%d", 100+h*10+i) // whole units: every currency takes them
			}
			txs[t.id] = t
			*dst = append(*dst, mk(t, hourAt(h, i*4, 7)))
			s.billed[t.id] = hourAt(h, 0, 0)
		}
	}
	for h := 0; h < 3; h++ {
		hour(&s.prep, h)
	}
	// Within 00:00: the producer retried tx-00-00 a second later.
	s.prep = append(s.prep, mk(txs["tx-00-00"], hourAt(0, 0, 8)))
	// A reject in 01:00.
	s.prep = append(s.prep, mk(tx{id: "bad-01", agency: "acme", amount: "1.00", currency: "XXX"}, hourAt(1, 30, 0)))
	s.rejected["bad-01"] = true
	// tx-01-01 retried, re-stamped into the next period: billed in 01:00 only.
	s.prep = append(s.prep, mk(txs["tx-01-01"], hourAt(2, 0, 5)))
	// The only transaction of an agency in 02:00, which then becomes a
	// reject: the agency vanishes from 02:00 when it is restated (its
	// files go, an adjustments file of its own takes them back).
	vanish := tx{id: "vanish-02", agency: "zeta vanishing", amount: "20.00", currency: "USD"}
	s.prep = append(s.prep, mk(vanish, hourAt(2, 20, 0)))
	s.rejected[vanish.id] = true

	for h := 3; h < 7; h++ {
		hour(&s.late, h)
	}
	// Late items in the delivered 02:00: it is restated at its recheck.
	for i := 0; i < 3; i++ {
		t := tx{id: fmt.Sprintf("late-02-%d", i), agency: agencies[i], amount: "7.50", currency: "USD"}
		s.late = append(s.late, mk(t, hourAt(2, 41+i, 0)))
		s.billed[t.id] = hourAt(2, 0, 0)
	}
	vanish.currency = "XXX"
	s.late = append(s.late, mk(vanish, hourAt(2, 20, 0)))
	// A retry of tx-03-05 re-stamped back into 02:00: 03:00, delivered
	// first, bills it; the restatement of 02:00 drops it.
	s.late = append(s.late, mk(txs["tx-03-05"], hourAt(2, 59, 0)))
	// tx-03-02 retried into 04:00.
	s.late = append(s.late, mk(txs["tx-03-02"], hourAt(4, 0, 7)))
	// A refund in 04:00.
	s.late = append(s.late, mk(tx{id: "ref-04", agency: "acme", amount: "5.00", currency: "USD", kind: "refund"}, hourAt(4, 30, 0)))
	s.billed["ref-04"] = hourAt(4, 0, 0)
	// Two items with one id and different amounts in 05:00: both rejected.
	s.late = append(s.late, mk(tx{id: "conf-05", agency: "beta", amount: "1.00", currency: "USD"}, hourAt(5, 10, 0)))
	s.late = append(s.late, mk(tx{id: "conf-05", agency: "beta", amount: "2.00", currency: "USD"}, hourAt(5, 11, 0)))
	s.rejected["conf-05"] = true
	return s
}

// put writes items straight into h's store, as a producer does.
func (s *crashScenario) put(h *harness, items []item.Item) {
	h.t.Helper()
	h.withStore(func(st *store) {
		if err := st.PutItems(context.Background(), items); err != nil {
			h.t.Fatal(err)
		}
	})
}

// crashExtra is the report: config of the crash scenario on a backend.
func crashExtra(backend string) string {
	if backend == "aws" {
		// A dead holder's lease on DynamoDB frees itself only by expiring:
		// the shortest TTL the config takes keeps the rerun's wait short.
		return "  lease_ttl: 5s"
	}
	// The default TTL (2m): the rerun must not wait for it (the dead
	// holder's lease is taken over at once).
	return ""
}

// setup makes a store and sink in the state just before the run under
// test: the items of 00:00..02:00 delivered by a run at 03:02, then the
// late and new items written. Runs go through the binary under test, as
// the runs the test crashes. On the embedded stack the first setup is kept
// as a template, and later ones copy its file and folder.
func (s *crashScenario) setup(t *testing.T, bin, backend string) *harness {
	t.Helper()
	h := procHarness(t, backend, harnessOptions{extra: crashExtra(backend)})
	if backend == "embedded" {
		s.tmplOnce.Do(func() {
			s.tmplDir, s.tmplErr = os.MkdirTemp("", "reportjob-crash-template-")
			if s.tmplErr != nil {
				return
			}
			s.tmplErr = fmt.Errorf("preparing the template failed (see %s)", t.Name())
			tmpl := writeHarness(t, s.tmplDir, harnessOptions{backend: "embedded", extra: crashExtra(backend)}, "", "")
			s.prepare(tmpl, bin) // may end t: tmplErr stays set
			s.tmplErr = nil
		})
		if s.tmplErr != nil {
			t.Fatal(s.tmplErr)
		}
		for _, sub := range []string{"data", "reports"} {
			if err := os.CopyFS(filepath.Join(h.dir, sub), os.DirFS(filepath.Join(s.tmplDir, sub))); err != nil {
				t.Fatal(err)
			}
		}
		return h
	}
	if out := procRun(t, bin, h, nil, "init"); out.code != exitOK {
		t.Fatalf("init: %s", out)
	}
	s.prepare(h, bin)
	return h
}

// prepare writes the items, delivers 00:00..02:00, and writes the late
// items.
func (s *crashScenario) prepare(h *harness, bin string) {
	h.t.Helper()
	s.put(h, s.prep)
	out := procRun(h.t, bin, h, nil, "run", "--now", csPrepNow)
	if out.code != exitOK || lastJSON(h.t, out.stdout)["checkpoint"] != "2024-03-01T03:00:00Z" {
		h.t.Fatalf("first run: %s", out)
	}
	s.put(h, s.late)
}

// cleanup removes the embedded template.
func (s *crashScenario) cleanup() {
	if s.tmplDir != "" {
		os.RemoveAll(s.tmplDir)
	}
}

// sinkSnapshot is what a sink holds: objects' SHA-256 by key, the parsed
// period manifests by key, and the months' statements by month manifest
// key.
type sinkSnapshot struct {
	objects   map[string]string
	manifests map[string]*report.Manifest
	months    map[string]*monthStatement
}

func snapshot(h *harness) sinkSnapshot {
	h.t.Helper()
	snap := sinkSnapshot{objects: h.objects(), manifests: map[string]*report.Manifest{}}
	sk := h.sink()
	for key := range snap.objects {
		if isPeriodManifest(key) {
			m, err := report.ParseManifest(h.read(sk, key))
			if err != nil {
				h.t.Fatalf("%s: %v", key, err)
			}
			snap.manifests[key] = m
		}
	}
	snap.months = readStatements(h.t, snap.objects, func(key string) []byte { return h.read(sk, key) })
	return snap
}

// checkSinkInvariant checks what must hold of any sink after a run that
// completed: every period object is listed, with its SHA-256, by its
// period's manifest, and no publication intent is left; every statement
// object is listed, with its SHA-256, by its month's manifest, no month
// intent and no due marker is left (statementProblems).
func checkSinkInvariant(t testing.TB, snap sinkSnapshot) {
	t.Helper()
	listed := map[string]string{}
	for mk, m := range snap.manifests {
		if mk != report.ManifestKey(m.Period()) {
			t.Errorf("manifest %s is of period %s", mk, m.Period())
		}
		for _, f := range m.Files {
			listed[f.Key] = f.SHA256
			if sum, ok := snap.objects[f.Key]; !ok || sum != f.SHA256 {
				t.Errorf("%s lists %s (sha256 %.12s), the sink has sha256 %.12s", mk, f.Key, f.SHA256, sum)
			}
		}
	}
	for key, sum := range snap.objects {
		switch {
		case report.IsStatementKey(key):
		case report.IsIntentKey(key):
			t.Errorf("publication intent left: %s", key)
		case strings.HasSuffix(key, "/manifest.json"):
		case listed[key] == "":
			t.Errorf("object listed by no manifest: %s", key)
		case listed[key] != sum:
			t.Errorf("object %s differs from its manifest's sha256", key)
		}
	}
	for _, p := range statementProblems(snap.objects, snap.months, true) {
		t.Error(p)
	}
}

// compareSinks checks that got holds what the reference holds: the same
// period objects byte for byte (key and SHA-256), period manifests equal
// but for generated_at (and the hash of the manifest each replaced, which
// includes its generated_at), and the same statements by content
// (compareStatements).
func compareSinks(t testing.TB, ref, got sinkSnapshot) {
	t.Helper()
	// The statements' objects carry their statement revision, which a
	// crash may raise: compareStatements compares them by content.
	for key, sum := range ref.objects {
		if strings.HasSuffix(key, "/manifest.json") || report.IsStatementKey(key) {
			continue
		}
		if g, ok := got.objects[key]; !ok {
			t.Errorf("missing object %s", key)
		} else if g != sum {
			t.Errorf("object %s: sha256 %.12s, reference %.12s", key, g, sum)
		}
	}
	for key := range got.objects {
		if _, ok := ref.objects[key]; !ok && !report.IsStatementKey(key) {
			t.Errorf("object the reference does not have: %s", key)
		}
	}
	for key, rm := range ref.manifests {
		gm, ok := got.manifests[key]
		switch {
		case !ok:
			t.Errorf("missing manifest %s", key)
		case !gm.SameContent(rm) || gm.Revision != rm.Revision || gm.Reason != rm.Reason ||
			!slices.Equal(gm.ReplacedFiles, rm.ReplacedFiles):
			gj, _ := json.Marshal(gm)
			rj, _ := json.Marshal(rm)
			t.Errorf("manifest %s differs from the reference's:\n got %s\nwant %s", key, gj, rj)
		}
	}
	compareStatements(t, ref.months, got.months)
}

// compareStates checks checkpoint, rechecks and restatements. A crash
// between a restatement's manifest and the state update must not lose the
// restatement record (the rerun records it: job.restated).
func compareStates(t testing.TB, ref, got checkpoint.State) {
	t.Helper()
	if !got.Checkpoint.Equal(ref.Checkpoint) {
		t.Errorf("checkpoint %s, reference %s", got.Checkpoint, ref.Checkpoint)
	}
	sameRechecks := len(got.Rechecks) == len(ref.Rechecks)
	for i := 0; sameRechecks && i < len(got.Rechecks); i++ {
		g, r := got.Rechecks[i], ref.Rechecks[i]
		sameRechecks = g.Start.Equal(r.Start) && g.End.Equal(r.End) && g.Read.Equal(r.Read)
	}
	if !sameRechecks {
		t.Errorf("rechecks %+v, reference %+v", got.Rechecks, ref.Rechecks)
	}
	sameRestated := len(got.Restated) == len(ref.Restated)
	for i := 0; sameRestated && i < len(got.Restated); i++ {
		g, r := got.Restated[i], ref.Restated[i]
		sameRestated = g.Start.Equal(r.Start) && g.End.Equal(r.End) && g.At.Equal(r.At) && g.Revision == r.Revision &&
			g.Reason == r.Reason && g.ItemsBefore == r.ItemsBefore && g.ItemsAfter == r.ItemsAfter
	}
	if !sameRestated {
		t.Errorf("restatements %+v, reference %+v", got.Restated, ref.Restated)
	}
}

// checkBilledOnce reads every transactions Parquet file of h's sink and
// checks that each transaction the scenario bills is in exactly one of
// them, that of its period, and that nothing else is.
func (s *crashScenario) checkBilledOnce(h *harness, snap sinkSnapshot) {
	h.t.Helper()
	t := h.t
	sk := h.sink()
	seen := map[string][]string{}
	for key := range snap.objects {
		if !strings.HasPrefix(key, report.DatasetTransactions+"/") || !strings.HasSuffix(key, ".parquet") {
			continue
		}
		for _, r := range readParquet[lineRec](t, key, h.read(sk, key)) {
			seen[r.TransactionID] = append(seen[r.TransactionID], key)
		}
	}
	for id, start := range s.billed {
		want := report.DatasetPrefix(report.DatasetTransactions, report.Period{Start: start, End: start.Add(time.Hour)})
		switch files := seen[id]; {
		case len(files) != 1:
			t.Errorf("transaction %s billed %d times: %v", id, len(files), files)
		case !strings.HasPrefix(files[0], want):
			t.Errorf("transaction %s billed in %s, want under %s", id, files[0], want)
		}
	}
	for id, files := range seen {
		if _, ok := s.billed[id]; !ok {
			t.Errorf("transaction %s billed (%v) but should not be (rejected: %v)", id, files, s.rejected[id])
		}
	}
}

// crashReference is the uncrashed run of the scenario on one stack.
type crashReference struct {
	snap  sinkSnapshot
	state checkpoint.State
}

// reference runs the scenario once without a crash (a subprocess, as the
// runs under test) and checks it against what the scenario says.
func (s *crashScenario) reference(t *testing.T, bin, backend string) crashReference {
	t.Helper()
	h := s.setup(t, bin, backend)
	out := procRun(t, bin, h, nil, "run", "--now", csNow)
	if out.code != exitOK {
		t.Fatalf("reference run: %s", out)
	}
	sum := lastJSON(t, out.stdout)
	if sum["status"] != "ok" || opsInt(t, sum, "periods_processed") != 4 || opsInt(t, sum, "restated") != 1 ||
		sum["checkpoint"] != csCheckpoint.Format(time.RFC3339) {
		t.Fatalf("reference run: %v", sum)
	}
	ref := crashReference{snap: snapshot(h), state: procState(h)}
	checkSinkInvariant(t, ref.snap)
	s.checkBilledOnce(h, ref.snap)
	checkStatementTotals(h, ref.snap)
	restated := report.Period{Start: hourAt(2, 0, 0), End: hourAt(3, 0, 0)}
	if m := ref.snap.manifests[report.ManifestKey(restated)]; m == nil || m.Revision != 2 || m.Reason != report.ReasonRecheck ||
		m.DuplicatesAcrossPeriods != 2 {
		t.Fatalf("reference: 02:00 not restated as expected: %+v", m)
	}
	if len(ref.state.Rechecks) != 1 || !ref.state.Rechecks[0].Start.Equal(hourAt(6, 0, 0)) || len(ref.state.Restated) != 1 {
		t.Fatalf("reference state: %+v", ref.state)
	}
	if len(ref.snap.manifests) != 7 {
		t.Fatalf("reference: %d manifests, want 7", len(ref.snap.manifests))
	}
	// March's statement (a draft) is built from the 7 periods, 02:00 at
	// its revision 2.
	march := ref.snap.months[report.MonthManifestKey("2024-03")]
	if len(ref.snap.months) != 1 || march == nil || march.manifest.Status != "draft" || len(march.manifest.Periods) != 7 ||
		march.manifest.Booked(restated.Start) != 2 || len(march.rows) == 0 {
		t.Fatalf("reference: statements %+v, want March's draft of 7 periods, 02:00 at revision 2", ref.snap.months)
	}
	return ref
}

// checkNoTemp checks that no temporary file is left anywhere under a
// folder sink (a file sink's temporary files are named .reportjob-tmp-*).
func checkNoTemp(h *harness) {
	h.t.Helper()
	if h.backend == "aws" {
		return
	}
	root := filepath.Join(h.dir, "reports")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".reportjob-tmp-") {
			h.t.Errorf("temporary file left: %s", strings.TrimPrefix(p, root+"/"))
		}
		return nil
	})
}

// check compares h (after a crash and its recovery) with the reference,
// and checks that the sum of all statements equals the latest period
// summaries.
func (s *crashScenario) check(h *harness, ref crashReference) {
	h.t.Helper()
	checkNoTemp(h) // before anything opens the sink again
	snap := snapshot(h)
	checkSinkInvariant(h.t, snap)
	compareSinks(h.t, ref.snap, snap)
	compareStates(h.t, ref.state, procState(h))
	s.checkBilledOnce(h, snap)
	checkStatementTotals(h, snap)
}

// checkStatementTotals checks the statements of snap to the minor unit
// (stCheckTotals, statements in UTC as the scenarios' are): the sum of all
// statements equals the latest revision of every period summary.
func checkStatementTotals(h *harness, snap sinkSnapshot) {
	h.t.Helper()
	mans := map[string]*monthclose.Manifest{}
	for _, ms := range snap.months {
		mans[ms.manifest.Month] = ms.manifest
	}
	stCheckTotals(h.t, h, snap.objects, mans, "UTC")
}
