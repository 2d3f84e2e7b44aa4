package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The performance edges suite runs the CLI over periods whose sizes sit on
// the pipeline's batch edges (the dedupe lookup's 100 ids, the line items'
// read-ahead batches of 256) and one agency whose CSV is past the 2 MiB a
// period's files are held in memory, with duplicates within and across
// periods. Two jobs, one with report.concurrency 4 and one with 1 (as many
// lookups, decodes and uploads at once), must deliver byte-identical
// objects, and every valid transaction must be billed exactly once.

// peTx is one JSON Lines transaction of the suite.
type peTx struct {
	ID       string `json:"transaction_id"`
	Agency   string `json:"agency_id"`
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
	Kind     string `json:"kind,omitempty"`
	At       string `json:"recorded_at"`
}

// peItems returns the suite's items and, for each transaction id billed,
// the period (hour) that must bill it; conflicting ids are not billed.
func peItems() (items []peTx, billed map[string]string) {
	billed = map[string]string{}
	at := func(h, s int) string { return fmt.Sprintf("2026-01-01T%02d:%02d:%02dZ", h, s/60%60, s%60) }
	period := func(h int) string { return fmt.Sprintf("20260101T%02d00Z", h) }
	curs := []struct{ code, amount string }{{"USD", "19.99"}, {"JPY", "1500"}, {"BHD", "1.500"}, {"EUR", "7.05"}}
	add := func(id string, h, s int, agency string, i int) peTx {
		c := curs[i%len(curs)]
		tx := peTx{ID: id, Agency: agency, Amount: c.amount, Currency: c.code, At: at(h, s)}
		if i%13 == 0 {
			tx.Kind = "refund"
		}
		items = append(items, tx)
		billed[id] = period(h)
		return tx
	}
	agencies := []string{"acme/travel", "Agence Étoile", "100% Voyages & Co.", "a,b\"c", "z-last"}
	// Hour 0 holds nothing; hours 1-8 the batch edges.
	for h, n := range []int{0, 1, 99, 100, 101, 255, 256, 257, 513} {
		for i := range n {
			add(fmt.Sprintf("h%d-%04d", h, i), h, i*7, agencies[i%len(agencies)], i)
		}
	}
	// Hour 9: copies within the period (identical, and one conflicting
	// per 10), and copies of hour 8's ids (identical: dropped; changed:
	// rejected), around the lookup's batch of 100.
	for i := range 300 {
		tx := add(fmt.Sprintf("d-%04d", i), 9, i, agencies[i%len(agencies)], i)
		dup := tx
		dup.At = at(9, 1000+i)
		if i%10 == 0 {
			dup.Amount = "3"
			delete(billed, tx.ID)
		}
		items = append(items, dup)
	}
	for i := 0; i < 513; i += 2 {
		var tx peTx
		for _, it := range items {
			if it.ID == fmt.Sprintf("h8-%04d", i) {
				tx = it
			}
		}
		tx.At = at(9, 2000+i)
		if i%4 == 0 {
			tx.Amount = "5"
		}
		items = append(items, tx) // billed stays hour 8
	}
	// Hour 10: one agency with a CSV past 2 MiB, and small ones.
	for i := range 20000 {
		add(fmt.Sprintf("big-%05d", i), 10, i%3600, "big agency", i)
	}
	for i := range 50 {
		add(fmt.Sprintf("small-%02d", i), 10, i, agencies[i%len(agencies)], i)
	}
	return items, billed
}

// peRun ingests items into a new job with the given concurrency, runs it
// over hours 0-10, and returns its objects (key -> sha256).
func peRun(t *testing.T, items []peTx, concurrency int) (*harness, map[string]string) {
	t.Helper()
	h := newHarness(t, harnessOptions{start: "2026-01-01",
		extra: "  line_items: true\n  agency_files: [csv, parquet]\n  dedupe_window: 35d"})
	cfg, err := os.ReadFile(h.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "concurrency: 4", fmt.Sprintf("concurrency: %d", concurrency), 1))
	if err := os.WriteFile(h.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, it := range items {
		line, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	h.mustRun(0, "init")
	h.mustRun(0, "ingest", "--file", h.writeFile("items.jsonl", b.String()), "--allow-late")
	sum := h.mustRun(0, "run", "--now", "2026-01-01T11:05:00Z")
	if sum["periods_processed"] != float64(11) {
		t.Fatalf("run: %v periods processed, want 11", sum["periods_processed"])
	}
	return h, h.objects()
}

func TestPerfEdgesDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the job twice over 22,000 items")
	}
	items, billed := peItems()
	h, four := peRun(t, items, 4)
	_, one := peRun(t, items, 1)

	// The record: manifests carry their generation time, and the month's
	// statements the manifests' hashes; every other object is the same.
	record := func(objs map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range objs {
			if !strings.HasPrefix(k, "manifests/") && !stIsMonthKey(k) && !strings.HasPrefix(k, ".") {
				out[k] = v
			}
		}
		return out
	}
	a, b := record(four), record(one)
	if len(a) == 0 {
		t.Fatal("no objects delivered")
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s: sha256 %s with concurrency 4, %q with 1", k, v, b[k])
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("%s: only with concurrency 1", k)
		}
	}

	// Billed exactly once, in the right period.
	checkBilledOnce(t, h, billed) // a conflict is billed nowhere

	// The big agency's CSV went past the memory limit (a temp file), the
	// others stayed under it.
	var big int
	sk := h.sink()
	for k := range four {
		if strings.HasPrefix(k, "agencies/agency=big%20agency/period=20260101T1000Z/transactions-") && strings.HasSuffix(k, ".csv") {
			big = len(h.read(sk, k))
		}
	}
	if big <= 2<<20 {
		t.Errorf("big agency's CSV is %d bytes, want past 2 MiB", big)
	}
	t.Logf("%d objects identical; big agency CSV %d bytes", len(a), big)
}
