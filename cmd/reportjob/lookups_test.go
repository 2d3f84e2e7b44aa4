package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
)

// lkLine is a line of `transactions --json`.
type lkLine struct {
	Period   string `json:"period"`
	Revision int    `json:"revision"`
	ID       string `json:"transaction_id"`
	Agency   string `json:"agency_id"`
	SortKey  string `json:"sort_key"`
	Amount   string `json:"amount"`
	Object   string `json:"object"`
}

// lkPage runs `transactions --json` and returns its lines and summary.
func (h *harness) lkPage(want int, args ...string) ([]lkLine, map[string]any) {
	h.t.Helper()
	out, errs, code := h.run(append([]string{"transactions", "--json"}, args...)...)
	if code != want {
		h.t.Fatalf("transactions %v: exit %d, want %d\n%s\n%s", args, code, want, out, errs)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var rows []lkLine
	for _, l := range lines[:len(lines)-1] {
		var r lkLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			h.t.Fatalf("line %q: %v", l, err)
		}
		rows = append(rows, r)
	}
	return rows, lastJSON(h.t, out)
}

// lkBase is the first day of the look-up fixtures: three days ago, so
// that the claims the runs write are not expired by the wall clock
// (DynamoDB Local applies Time to Live as AWS does).
func lkBase() time.Time { return time.Now().UTC().Truncate(24 * time.Hour).Add(-72 * time.Hour) }

// lkDates returns a function that moves the fixtures' dates, written as
// 2024-03-01..03, to base and the two days after it.
func lkDates(base time.Time) func(string) string {
	var pairs []string
	for i := range 3 {
		d := base.Add(time.Duration(i) * 24 * time.Hour)
		pairs = append(pairs, fmt.Sprintf("2024-03-0%d", i+1), d.Format(time.DateOnly), fmt.Sprintf("2024030%d", i+1), d.Format("20060102"))
	}
	return strings.NewReplacer(pairs...).Replace
}

// mustRunOut runs the CLI, fails unless it exits 0, and returns stdout.
func (h *harness) mustRunOut(args ...string) string {
	h.t.Helper()
	out, errs, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("reportjob %v: exit %d\n%s\n%s", args, code, out, errs)
	}
	return out
}

// lkTransactions returns JSON Lines of transactions of agency, n of them spread evenly over
// [from, from+span), ids prefix-i.
func lkTransactions(agency, prefix string, n int, from time.Time, span time.Duration) []string {
	out := make([]string, n)
	step := span / time.Duration(n)
	for i := range out {
		at := from.Add(time.Duration(i) * step).Add(time.Duration(i%7) * time.Millisecond)
		out[i] = fmt.Sprintf(`{"transaction_id":"%s-%05d","agency_id":%q,"amount":"%d.%02d","currency":"USD","recorded_at":%q}`,
			prefix, i, agency, 1+i%50, i%100, at.Format(time.RFC3339Nano))
	}
	return out
}

// newerLine reports whether a comes before b in the listing's order.
func newerLine(a, b lkLine) bool {
	if a.Period != b.Period {
		return a.Period > b.Period
	}
	if a.SortKey != b.SortKey {
		return a.SortKey > b.SortKey
	}
	return a.ID > b.ID
}

// TestTransactionsPaging pages through an agency of 10,000 lines over 48
// hourly periods, 37 at a time: every line once, in order; then again with
// a restatement of the cursor's period between two pages. Cursors of
// another agency, or damaged, are exit 2. On both stacks.
func TestTransactionsPaging(t *testing.T) {
	for _, backend := range []string{"embedded", "aws"} {
		t.Run(backend, func(t *testing.T) { testTransactionsPaging(t, backend) })
	}
}

func testTransactionsPaging(t *testing.T, backend string) {
	base := lkBase()
	D := lkDates(base)
	const agency = "Big Agency/1"
	h := newHarness(t, harnessOptions{backend: backend, start: D("2024-03-01")})
	h.mustRun(0, "init")
	start := base
	lines := lkTransactions(agency, "big", 10_000, start, 48*time.Hour)
	lines = append(lines, lkTransactions("other", "oth", 500, start, 48*time.Hour)...)
	src := h.writeFile("tx.jsonl", strings.Join(lines, "\n")+"\n")
	h.mustRun(0, "ingest", "--file", src, "--allow-late", "--now", D("2024-03-03T00:02:00Z"))
	if sum := h.mustRun(0, "run", "--now", D("2024-03-03T00:02:00Z")); sum["periods_processed"] != float64(48) {
		t.Fatalf("run: %v", sum)
	}

	// Every line once, in order.
	seen := map[string]bool{}
	var all []lkLine
	cursor, pages := "", 0
	for {
		args := []string{"--agency", agency, "--limit", "37"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		rows, sum := h.lkPage(0, args...)
		pages++
		if len(rows) > 37 || sum["lines"] != float64(len(rows)) {
			t.Fatalf("page %d: %d rows, summary %v", pages, len(rows), sum)
		}
		all = append(all, rows...)
		cursor, _ = sum["next_cursor"].(string)
		if cursor == "" {
			break
		}
		if pages == 2 {
			// A cursor of another agency, or damaged, is a usage error.
			if _, sum := h.lkPage(2, "--agency", "other", "--cursor", cursor); !strings.Contains(fmt.Sprint(sum["error"]), "another agency") {
				t.Errorf("another agency's cursor: %v", sum)
			}
			bad := cursor[:20] + string(cursor[20]^1) + cursor[21:]
			if _, sum := h.lkPage(2, "--agency", agency, "--cursor", bad); sum["status"] != "bad_usage" {
				t.Errorf("damaged cursor: %v", sum)
			}
		}
	}
	if len(all) != 10_000 {
		t.Fatalf("%d lines over %d pages, want 10000", len(all), pages)
	}
	for i, l := range all {
		if seen[l.ID] || !strings.HasPrefix(l.ID, "big-") || l.Agency != agency || l.Revision != 1 {
			t.Fatalf("line %d: %+v (again, or not the agency's)", i, l)
		}
		seen[l.ID] = true
		if i > 0 && !newerLine(all[i-1], l) {
			t.Fatalf("lines %d and %d out of order: %+v, %+v", i-1, i, all[i-1], l)
		}
		if !strings.HasPrefix(l.Object, "agencies/agency=Big%20Agency%2F1/period="+l.Period+"/transactions-") {
			t.Fatalf("line %d read from %s", i, l.Object)
		}
	}
	if all[0].Period != D("20240302T2300Z") || all[len(all)-1].Period != D("20240301T0000Z") {
		t.Fatalf("first and last lines in %s and %s", all[0].Period, all[len(all)-1].Period)
	}

	// Again, with a restatement of the cursor's period after page 3.
	var again []lkLine
	cursor, pages = "", 0
	var restatedPeriod string
	restatedAt := -1
	for {
		args := []string{"--agency", agency, "--limit", "37"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		rows, sum := h.lkPage(0, args...)
		pages++
		if restatedPeriod != "" && restatedAt < 0 {
			if r, _ := sum["restated"].([]any); len(r) != 1 || r[0] != restatedPeriod {
				t.Errorf("the page after the restatement says restated %v, want [%s]", sum["restated"], restatedPeriod)
			}
			restatedAt = len(again)
		}
		again = append(again, rows...)
		cursor, _ = sum["next_cursor"].(string)
		if cursor == "" {
			break
		}
		if pages == 3 {
			// Two late lines into the period of the last line shown,
			// restated by verify --repair: one newer than the position
			// (not shown: the reader is past it), one older (shown, in the
			// new revision).
			last := rows[len(rows)-1]
			restatedPeriod = last.Period
			p, _ := time.Parse("20060102T1504Z", last.Period)
			late := []string{
				fmt.Sprintf(`{"transaction_id":"late-new","agency_id":%q,"amount":"1.00","currency":"USD","recorded_at":%q}`, agency, p.Add(time.Hour-time.Millisecond).Format(time.RFC3339Nano)),
				fmt.Sprintf(`{"transaction_id":"late-old","agency_id":%q,"amount":"2.00","currency":"USD","recorded_at":%q}`, agency, p.Add(time.Millisecond).Format(time.RFC3339Nano)),
			}
			h.mustRun(0, "ingest", "--file", h.writeFile("late.jsonl", strings.Join(late, "\n")+"\n"), "--allow-late", "--now", D("2024-03-03T00:02:00Z"))
			h.mustRun(4, "verify", "--from", p.Format(time.RFC3339), "--to", p.Add(time.Hour).Format(time.RFC3339), "--repair", "--now", D("2024-03-03T00:02:00Z"))
		}
	}
	ids := map[string]int{}
	for i, l := range again {
		ids[l.ID]++
		if i > 0 && !newerLine(again[i-1], l) {
			t.Fatalf("after the restatement, lines %d and %d out of order: %+v, %+v", i-1, i, again[i-1], l)
		}
		wantRev := 1
		if l.Period == restatedPeriod && i >= restatedAt {
			wantRev = 2
		}
		if l.Revision != wantRev {
			t.Fatalf("line %d (%s in %s): revision %d, want %d", i, l.ID, l.Period, l.Revision, wantRev)
		}
	}
	for id := range seen {
		if ids[id] != 1 {
			t.Errorf("%s shown %d times", id, ids[id])
		}
	}
	// late-old sorts after the position (older): shown; late-new sorts
	// before it (newer), where the reader already was: not shown.
	if ids["late-old"] != 1 || ids["late-new"] != 0 || len(again) != 10_001 {
		t.Errorf("late-old shown %d times, late-new %d times, %d lines; want 1, 0, 10001", ids["late-old"], ids["late-new"], len(again))
	}
}

// TestTransactionByID: a billed transaction, its re-stamped retry
// (dropped in a later period), a conflicting copy (rejected in another
// period), and an unknown id.
func TestTransactionByID(t *testing.T) {
	for _, backend := range []string{"embedded", "aws"} {
		t.Run(backend, func(t *testing.T) { testTransactionByID(t, backend) })
	}
}

func testTransactionByID(t *testing.T, backend string) {
	D := lkDates(lkBase())
	h := newHarness(t, harnessOptions{backend: backend, start: D("2024-03-01")})
	h.mustRun(0, "init")
	tx := func(id, amount, at string) string {
		return fmt.Sprintf(`{"transaction_id":%q,"agency_id":"acme","amount":%q,"currency":"USD","recorded_at":%q}`, id, amount, at)
	}
	src := h.writeFile("tx.jsonl", strings.Join([]string{
		tx("ord-1", "19.99", D("2024-03-01T00:10:00Z")),
		tx("ord-1", "19.99", D("2024-03-01T01:10:00Z")), // the producer's retry, re-stamped: dropped
		tx("ord-1", "25.00", D("2024-03-01T02:10:00Z")), // another content: rejected
		tx("ord-2", "5.00", D("2024-03-01T02:20:00Z")),
	}, "\n")+"\n")
	h.mustRun(0, "ingest", "--file", src, "--allow-late", "--now", D("2024-03-01T03:02:00Z"))
	// An item with a valid id that fails validation (a currency that does
	// not exist), written by a producer that is not our ingest.
	at, _ := time.Parse(time.RFC3339, D("2024-03-01T01:30:00Z"))
	bad := []rawItem{{pk: keys.Quarter(at), sk: keys.SortKey(at, "x1"), attrs: map[string]item.Value{
		"transaction_id": item.S("ord-3"), "agency_id": item.S("acme"), "amount": item.N("1.00"), "currency": item.S("XXQ")}}}
	if backend == "aws" {
		h.putRawDynamoDB(bad)
	} else {
		h.putRawEmbedded(bad)
	}
	out, errs, code := h.run("run", "--now", D("2024-03-01T03:02:00Z"), "--fail-on-rejects")
	if code != exitRejects || !strings.Contains(errs, D("2 reject(s) in 2 period(s) published by this run (20240301T0100Z, 20240301T0200Z)")) {
		t.Fatalf("run --fail-on-rejects: exit %d, want 5\n%s\n%s", code, out, errs)
	}
	if sum := lastJSON(t, out); sum["status"] != "ok" || sum["rejects"] != float64(2) || sum["duplicates_across_periods"] != float64(1) {
		t.Fatalf("run: %v", sum)
	}

	// From the index: billed in 00:00, the retry dropped in 01:00, the
	// other content rejected in 02:00; the three periods read, no other.
	out, _, code = h.run("transactions", "--id", "ord-1")
	for _, want := range []string{
		D(`billed:       period 20240301T0000Z revision 1, agency "acme", purchase 19.99 USD, commission 2.00 (1000 bps)`),
		D("agencies/agency=acme/period=20240301T0000Z/transactions-"),
		D("dropped:      period 20240301T0100Z: an identical copy came in this period and was not billed again"),
		D("rejected:     period 20240301T0200Z revision 1, item 202403010200 / 2024-03-01T02:10:00."),
		D("transaction_id: transaction_id already billed in period 20240301T0000Z with different content"),
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("--id ord-1: exit %d, want %q in\n%s", code, want, out)
		}
	}
	if sum := lastJSON(t, out); sum["billed"] != float64(1) || sum["dropped"] != float64(1) || sum["rejects"] != float64(1) ||
		sum["in_index"] != true || sum["periods_read"] != float64(3) {
		t.Fatalf("--id ord-1 summary: %v", sum)
	}
	// ord-2 was billed once, seen nowhere else: one period read.
	if sum := lastJSON(t, h.mustRunOut("transactions", "--id", "ord-2")); sum["billed"] != float64(1) || sum["periods_read"] != float64(1) || sum["objects_read"] != float64(3) {
		t.Fatalf("--id ord-2 summary: %v", sum)
	}
	// With a range: the same, from the files of every period of the range.
	out, _, _ = h.run("transactions", "--id", "ord-1", "--from", D("2024-03-01"), "--to", D("2024-03-02"), "--json")
	var kinds []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var f map[string]any
		_ = json.Unmarshal([]byte(l), &f)
		if k, ok := f["kind"].(string); ok {
			kinds = append(kinds, k+" "+fmt.Sprint(f["period"]))
		}
	}
	if strings.Join(kinds, "; ") != D("billed 20240301T0000Z; dropped 20240301T0100Z; rejected 20240301T0200Z") {
		t.Fatalf("--id ord-1 over a range: %v\n%s", kinds, out)
	}
	// A reject by validation, found from the index's sightings.
	out = h.mustRunOut("transactions", "--id", "ord-3")
	if sum := lastJSON(t, out); sum["rejects"] != float64(1) || sum["in_index"] != false || sum["periods_read"] != float64(1) ||
		!strings.Contains(out, D("rejected:     period 20240301T0100Z revision 1")) || !strings.Contains(out, "currency") {
		t.Fatalf("--id ord-3:\n%s", out)
	}
	// Unknown.
	out, _, code = h.run("transactions", "--id", "nope")
	if sum := lastJSON(t, out); code != 0 || sum["status"] != "not_found" || sum["in_index"] != false || !strings.Contains(out, "dedupe index: no entry") {
		t.Fatalf("--id nope: exit %d\n%s", code, out)
	}

	// rejects, newest first, with the reason; status shows them.
	out, _, code = h.run("rejects", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], D(`"reason":"transaction_id already billed in period 20240301T0000Z with different content"`)) {
		t.Fatalf("rejects: exit %d\n%s", code, out)
	}
	out, _, _ = h.run("status", "--now", D("2024-03-01T03:02:00Z"))
	if !strings.Contains(out, "rejects:      2 in the last day, in 2 period(s)") {
		t.Fatalf("status:\n%s", out)
	}
}
