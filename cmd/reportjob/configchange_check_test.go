//go:build linux

package main

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
)

// The config-change matrix's job, items, model and checks (the timeline
// and the cases are in configchange_test.go).

// ccConfig is the part of config.yaml the matrix changes.
type ccConfig struct {
	period       string // report.period
	shards       int    // keys.shards
	dedupeWindow string // report.dedupe_window
	start        string // report.start
	agencyFiles  string // report.agency_files, a YAML flow list
	lineItems    bool   // report.line_items
	recheckAfter string // report.recheck_after, a YAML flow list
	commission   string // commission, a YAML flow mapping
}

func ccDefault() ccConfig {
	return ccConfig{period: "1h", shards: 1, dedupeWindow: "35d", start: ccStart.Format(time.RFC3339),
		agencyFiles: "[csv]", lineItems: true, recheckAfter: "[1h]", commission: "{default_bps: 1000}"}
}

var ccShardsLine = regexp.MustCompile(`(?m)^keys: \{shards: \d+\}$`)

// yaml is the whole config file: base (job, store, keys, sink) with c.
func (c ccConfig) yaml(base string) string {
	return ccShardsLine.ReplaceAllString(base, fmt.Sprintf("keys: {shards: %d}", c.shards)) + fmt.Sprintf(`report:
  period: %s
  lateness: 2m
  start: %q
  concurrency: 4
  line_items: %v
  agency_files: %s
  recheck_after: %s
  dedupe_window: %s
log: {level: info, format: json}
commission: %s
`, c.period, c.start, c.lineItems, c.agencyFiles, c.recheckAfter, c.dedupeWindow, c.commission)
}

// ccItem is one item a producer writes (retries of a transaction have its
// id and content, another recorded_at).
type ccItem struct {
	id, agency, amount, currency string
	at                           time.Time
}

func ccAt(h, m, s int) time.Time {
	return ccH(h).Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
}

// ccItems are the items placed before the run of each stage, an original
// before its retries.
func ccItems() [3][]ccItem {
	var out [3][]ccItem
	byID := map[string]ccItem{}
	hour := func(s, h int) {
		for i := 0; i < 4; i++ {
			it := ccItem{id: fmt.Sprintf("s%d-%02d-%d", s, h, i), agency: []string{"acme", "beta", "Agence Étoile"}[i%3],
				amount: []string{"12.34", "7.05", "1500", "0.15"}[i], currency: []string{"USD", "USD", "JPY", "USD"}[i],
				at: ccAt(h, 2+13*i, 5)}
			out[s] = append(out[s], it)
			byID[it.id] = it
		}
	}
	retry := func(s int, id string, at time.Time) {
		it := byID[id]
		it.at = at
		out[s] = append(out[s], it)
	}
	for h := 0; h < 3; h++ {
		hour(0, h)
	}
	for h := 3; h < 5; h++ {
		hour(1, h)
	}
	out[1] = append(out[1], ccItem{id: "late-1", agency: "acme", amount: "33.33", currency: "USD", at: ccAt(2, 35, 0)})
	retry(1, "s0-02-1", ccAt(3, 10, 9)) // billed before the change, retried after it
	retry(1, "s1-04-2", ccAt(2, 50, 9)) // billed after the change, retried into a delivered period
	for h := 5; h < 7; h++ {
		hour(2, h)
	}
	out[2] = append(out[2], ccItem{id: "late-2", agency: "beta", amount: "20.05", currency: "USD", at: ccAt(1, 30, 0)})
	retry(2, "s0-00-0", ccAt(5, 5, 9))
	return out
}

// ccRun is one case played on one stack.
type ccRun struct {
	t       *testing.T
	binPath string
	h       *harness
	c       ccCase
	base    string // the harness's config up to report: (job, store, keys, sink)
	cfg     [3]ccConfig
	items   [3][]ccItem
	placed  [3][]ccItem
	// snap is the manifests after the last step, by key.
	snap map[string]*report.Manifest
}

func newCCRun(t *testing.T, bin, backend string, c ccCase) *ccRun {
	h := procHarness(t, backend, harnessOptions{})
	b, err := os.ReadFile(h.config)
	if err != nil {
		t.Fatal(err)
	}
	base, _, ok := strings.Cut(string(b), "report:\n")
	if !ok {
		t.Fatalf("harness config without report: %s", b)
	}
	r := &ccRun{t: t, binPath: bin, h: h, c: c, base: base, items: ccItems(), snap: map[string]*report.Manifest{}}
	cfg := ccDefault()
	for s := range r.cfg {
		if c.edit[s] != nil {
			c.edit[s](&cfg)
		}
		r.cfg[s] = cfg
	}
	return r
}

// stage writes the config of stage s and places its items (keys as a
// producer on that config computes them).
func (r *ccRun) stage(s int) {
	t := r.t
	if err := os.WriteFile(r.h.config, []byte(r.cfg[s].yaml(r.base)), 0o644); err != nil {
		t.Fatal(err)
	}
	if s == 0 {
		if out := r.bin("init"); out.code != exitOK {
			t.Fatalf("init: %s", ccOutput(out))
		}
	}
	items := make([]item.Item, len(r.items[s]))
	for i, it := range r.items[s] {
		pk, sk := keys.ForTransaction(it.id, it.at, r.cfg[s].shards)
		items[i] = item.Item{PK: pk, SK: sk, Attrs: map[string]item.Value{
			item.AttrTransactionID: item.S(it.id), item.AttrAgencyID: item.S(it.agency),
			item.AttrAmount: item.N(it.amount), item.AttrCurrency: item.S(it.currency),
		}}
	}
	// A config that does not load is the case's failure (the binary
	// refuses it as well: exit 2).
	if _, err := config.Load(r.h.config, true, r.h.env); err != nil {
		t.Fatalf("stage %d: the config of the change does not load (%+v): %v", s, r.cfg[s], err)
	}
	putItems(r.h, items)
	r.placed[s] = r.items[s]
}

// bin runs the binary on the case's config.
func (r *ccRun) bin(args ...string) procOut {
	r.t.Helper()
	return procRun(r.t, r.binPath, r.h, nil, args...)
}

// manifests reads every period manifest of the sink, by key (the months'
// are checkFinal's).
func (r *ccRun) manifests() map[string]*report.Manifest {
	t := r.t
	sk := r.h.sink()
	infos, err := sk.List(context.Background(), report.DirManifests+"/")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*report.Manifest{}
	for _, o := range infos {
		if !isPeriodManifest(o.Key) {
			continue
		}
		m, err := report.ParseManifest(r.h.read(sk, o.Key))
		if err != nil {
			t.Fatalf("%s: %v", o.Key, err)
		}
		out[o.Key] = m
	}
	return out
}

// after checks what step `what` published, from the manifests before it:
// a period new to the sink is a delivery (revision 1) after the
// checkpoint cp the step started from (anything before it is invented);
// a restated period has reason `reason` and an item of placed in it
// (unless anyRebuild); no two manifests overlap. It keeps the manifests
// for the next step.
func (r *ccRun) after(what string, before map[string]*report.Manifest, placed []ccItem, reason string, anyRebuild bool, cp string) {
	t := r.t
	t.Helper()
	cpT, _ := time.Parse(time.RFC3339, cp)
	now := r.manifests()
	for _, key := range sortedKeys(now) {
		m, b := now[key], before[key]
		p := m.Period()
		switch {
		case b == nil && p.Start.Before(cpT):
			t.Errorf("%s: published period %s (revision %d, reason %q, %d transactions) before the checkpoint %s: "+
				"a period no run delivered, invented", what, p, m.Revision, m.Reason, m.Transactions, cp)
		case b == nil && (m.Revision != 1 || m.Reason != report.ReasonDelivery):
			t.Errorf("%s: new period %s published as revision %d (reason %q), want revision 1 (delivery)", what, p, m.Revision, m.Reason)
		case b == nil:
		case !b.Period().Start.Equal(p.Start) || !b.Period().End.Equal(p.End):
			t.Errorf("%s: %s was of period %s, now of %s", what, key, b.Period(), p)
		case m.Revision < b.Revision:
			t.Errorf("%s: period %s went back from revision %d to %d", what, p, b.Revision, m.Revision)
		case m.Revision == b.Revision:
		case m.Reason != reason:
			t.Errorf("%s: period %s restated as revision %d with reason %q, want %q (items read %d before, %d now)",
				what, p, m.Revision, m.Reason, reason, m.PreviousItemsRead, m.ItemsRead)
		case anyRebuild:
		case len(ccIn(placed, p)) == 0:
			t.Errorf("%s: period %s restated as revision %d (reason %q, items read %d before, %d now, transactions %d before, %d now; "+
				"commission %s before, %s now) but no item landed in it: a restatement no item caused", what, p, m.Revision, m.Reason,
				m.PreviousItemsRead, m.ItemsRead, b.Transactions, m.Transactions, ccCommissions(b), ccCommissions(m))
		}
	}
	for key, b := range before {
		if now[key] == nil {
			t.Errorf("%s: the manifest of period %s (revision %d) is gone", what, b.Period(), b.Revision)
		}
	}
	ms := make([]*report.Manifest, 0, len(now))
	for _, m := range now {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].PeriodStart.Before(ms[j].PeriodStart) })
	for i := 1; i < len(ms); i++ {
		if ms[i].PeriodStart.Before(ms[i-1].PeriodEnd) {
			t.Errorf("%s: the manifests of %s (revision %d, %s) and %s (revision %d, %s) overlap: their common items are billed twice",
				what, ms[i-1].Period(), ms[i-1].Revision, ms[i-1].Reason, ms[i].Period(), ms[i].Revision, ms[i].Reason)
		}
	}
	r.snap = now
}

// ccCommissions is m's commission per currency, "USD 1.23, JPY 150".
func ccCommissions(m *report.Manifest) string {
	var out []string
	for _, ct := range m.Totals {
		out = append(out, ct.Currency+" "+ct.Commission)
	}
	return strings.Join(out, ", ")
}

// ccIn returns the items of items recorded in p.
func ccIn(items []ccItem, p report.Period) []ccItem {
	var out []ccItem
	for _, it := range items {
		if !it.at.Before(p.Start) && it.at.Before(p.End) {
			out = append(out, it)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ccTotals are one currency's expected or delivered totals, amounts in
// DECIMAL(38,4) units.
type ccTotals struct {
	count             int64
	gross, commission *big.Int
}

func (a *ccTotals) add(count int64, gross, commission *big.Int) {
	a.count += count
	a.gross.Add(a.gross, gross)
	a.commission.Add(a.commission, commission)
}

func (a *ccTotals) String() string {
	return fmt.Sprintf("%d transactions, gross %s, commission %s", a.count, decimal4(a.gross), decimal4(a.commission))
}

func ccTotalsOf(m map[string]*ccTotals, cur string) *ccTotals {
	if m[cur] == nil {
		m[cur] = &ccTotals{gross: new(big.Int), commission: new(big.Int)}
	}
	return m[cur]
}

// expected is the model: for each transaction id, the recorded_at of
// each item that bills it (the period that holds it bills it), and per
// currency the totals. An item in scope (at or after the first
// delivered period) bills when its id was not billed yet, or, for a case
// whose retries bill again, when it is a retry placed after the change;
// it is billed at the rate of the stage it was placed in (its first
// billing's), forever after.
func (r *ccRun) expected() (map[string][]time.Time, map[string]*ccTotals) {
	first := r.c.firstDelivered
	if first.IsZero() {
		first = ccStart
	}
	billings, totals := map[string][]time.Time{}, map[string]*ccTotals{}
	for s, items := range r.items {
		for _, it := range items {
			if it.at.Before(first) || len(billings[it.id]) > 0 && !(r.c.retriesBillAgain && s > 0) {
				continue
			}
			billings[it.id] = append(billings[it.id], it.at)
			rate := 1000
			if r.c.rate != nil {
				rate = r.c.rate(it, s)
			}
			scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(4-refDigits[it.currency])), nil)
			minor := refMinor(r.t, it.amount, it.currency)
			ccTotalsOf(totals, it.currency).add(1, new(big.Int).Mul(minor, scale), new(big.Int).Mul(refCommission(minor, rate), scale))
		}
	}
	return billings, totals
}

// checkFinal checks the sink at the end: every object listed, every
// transaction billed as the model says (summaries, manifests' totals and
// line items), to the minor unit.
func (r *ccRun) checkFinal() {
	t := r.t
	snap := snapshot(r.h)
	checkSinkInvariant(t, snap)
	sk := r.h.sink()
	billings, want := r.expected()
	summaries, totals := map[string]*ccTotals{}, map[string]*ccTotals{}
	var breakdown []string
	lines := map[string][]report.Period{} // transaction id -> periods whose line items hold it
	var lineRows, lineTx int64
	withLines := 0
	for _, mk := range sortedKeys(snap.manifests) {
		m := snap.manifests[mk]
		for _, ct := range m.Totals {
			gross, commission := ccDecimal4(t, ct.Gross), ccDecimal4(t, ct.Commission)
			ccTotalsOf(totals, ct.Currency).add(ct.PurchaseCount+ct.RefundCount, gross, commission)
			breakdown = append(breakdown, fmt.Sprintf("%s rev %d (%s): %s %d transactions, commission %s",
				m.Period().Name(), m.Revision, m.Reason, ct.Currency, ct.PurchaseCount, decimal4(commission)))
		}
		hasLines := false
		for _, f := range m.Files {
			switch {
			case strings.HasPrefix(f.Key, report.DatasetSummary+"/") && strings.HasSuffix(f.Key, ".parquet"):
				for _, row := range readParquet[summaryRec](t, f.Key, r.h.read(sk, f.Key)) {
					ccTotalsOf(summaries, row.Currency).add(row.PurchaseCount+row.RefundCount, dec38(row.Gross), dec38(row.Commission))
				}
			case strings.HasPrefix(f.Key, report.DatasetTransactions+"/") && strings.HasSuffix(f.Key, ".parquet"):
				hasLines = true
				for _, row := range readParquet[lineRec](t, f.Key, r.h.read(sk, f.Key)) {
					lines[row.TransactionID] = append(lines[row.TransactionID], m.Period())
					lineRows++
				}
			}
		}
		if hasLines {
			withLines++
			lineTx += m.Transactions
		}
	}
	for _, cur := range sortedKeys(want) {
		w, s, m := want[cur], ccTotalsOf(summaries, cur), ccTotalsOf(totals, cur)
		if s.String() != w.String() || m.String() != w.String() {
			t.Errorf("%s not billed exactly once at its rate:\n  the items: %s\n  summaries: %s\n  manifests: %s\n  per period:\n    %s",
				cur, w, s, m, strings.Join(breakdown, "\n    "))
		}
	}
	// The statements: over every month, the commission due (the month's
	// own periods plus the prior-period adjustments booked in it) adds up
	// to each currency's commission.
	statements := map[string]*ccTotals{}
	for _, ms := range snap.months {
		for _, tot := range ms.manifest.Totals {
			ccTotalsOf(statements, tot.Currency).add(0, new(big.Int), ccDecimal4(t, tot.CommissionDue))
		}
	}
	for _, cur := range sortedKeys(want) {
		if got := ccTotalsOf(statements, cur).commission; got.Cmp(want[cur].commission) != 0 {
			t.Errorf("%s: the statements' commission due adds up to %s, the items' commission is %s:\n%v",
				cur, decimal4(got), decimal4(want[cur].commission), snap.months)
		}
	}
	for cur, s := range summaries {
		if want[cur] == nil {
			t.Errorf("%s billed (%s) but no item is in %s", cur, s, cur)
		}
	}
	if lineRows != lineTx {
		t.Errorf("the line items hold %d rows, their manifests count %d transactions", lineRows, lineTx)
	}
	for _, id := range sortedKeys(lines) {
		ps, want := lines[id], billings[id]
		if len(ps) > len(want) {
			t.Errorf("transaction %s billed %d times (line items of %s), want %d", id, len(ps), ccNames(ps), len(want))
		}
		for _, p := range ps {
			if len(ccTimesIn(want, p)) == 0 {
				t.Errorf("transaction %s billed in %s, want in the period of %v (the period that first billed it keeps it)",
					id, p, want)
			}
		}
	}
	if withLines == len(snap.manifests) {
		for _, id := range sortedKeys(billings) {
			if got, want := len(lines[id]), len(billings[id]); got < want {
				t.Errorf("transaction %s billed %d times (line items of %s), want %d", id, got, ccNames(lines[id]), want)
			}
		}
	}
}

func ccNames(ps []report.Period) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func ccTimesIn(ts []time.Time, p report.Period) []time.Time {
	var out []time.Time
	for _, t := range ts {
		if !t.Before(p.Start) && t.Before(p.End) {
			out = append(out, t)
		}
	}
	return out
}

// ccDecimal4 converts a manifest amount (the currency's digits) to
// DECIMAL(38,4) units.
func ccDecimal4(t testing.TB, s string) *big.Int {
	v, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("manifest amount %q", s)
	}
	v.Mul(v, big.NewRat(10000, 1))
	if !v.IsInt() {
		t.Fatalf("manifest amount %q has more than 4 fraction digits", s)
	}
	return v.Num()
}
