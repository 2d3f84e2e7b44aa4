//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// upgradeFixture is a store and sink written by the binary from before the
// dedupe index's runs (commit 304813e, store format reportjob/1): see
// testdata/upgrade-v1/make.sh for the commands. Job "upg", hourly periods
// 2026-11-01T00 to 06 delivered, 10 transactions t-HH-NN per hour, with
// retries and conflicting copies of ids billed earlier; period 05 owes its
// recheck; hour 06 is ingested, not delivered.
const upgradeFixture = "testdata/upgrade-v1"

// upgradeTx is a JSON line of transaction t-HH-NN as the fixture's
// input/base-*.jsonl have it, recorded at at (a re-stamped retry when at
// is not its own time), with amount when set (a conflicting copy).
func upgradeTx(h, n int, at, amount string) string {
	if at == "" {
		at = fmt.Sprintf("2026-11-01T%02d:%02d:00Z", h, n*5+1)
	}
	if amount == "" {
		amount = fmt.Sprintf("%d.%02d", 10+h, n)
	}
	return fmt.Sprintf(`{"transaction_id":"t-%02d-%02d","agency_id":%q,"amount":%q,"currency":"USD","recorded_at":%q}`,
		h, n, []string{"acme", "beta", "gamma"}[n%3], amount, at)
}

// storeFormat reads the store's format marker and whether it still holds
// the by-id claims bucket of format reportjob/1, without migrating it.
func storeFormat(t *testing.T, path string) (string, bool) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var (
		format string
		byID   bool
	)
	_ = db.View(func(tx *bolt.Tx) error {
		if m := tx.Bucket([]byte("meta")); m != nil {
			format = string(m.Get([]byte("format")))
		}
		byID = tx.Bucket([]byte("claims")) != nil
		return nil
	})
	return format, byID
}

// TestUpgradeFromFormatV1: the binary of this tree, on a store and sink
// the binary from before left (format reportjob/1), as a user upgrading a
// running job in place: its first command (a read-only status) migrates
// the store to reportjob/3, which the old binary refuses ("format
// \"reportjob/3\", want \"reportjob/1\""); then the old period owing its
// recheck is restated (a late retry of an id billed under the old binary
// dropped, a late new item billed), the next periods drop their retries of
// ids billed under the old binary (and reject a conflicting copy), a
// backfill of every period writes nothing, verify is clean, and each
// transaction is in exactly one period's transactions file: its own.
func TestUpgradeFromFormatV1(t *testing.T) {
	bin := procBinary(t)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(upgradeFixture)); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, config: filepath.Join(dir, "config.yaml"), backend: "embedded"}
	dbPath := filepath.Join(dir, "data", "reportjob.db")
	if f, byID := storeFormat(t, dbPath); f != "reportjob/1" || !byID {
		t.Fatalf("fixture: format %q, by-id claims %v; want reportjob/1 with them (regenerate it with make.sh)", f, byID)
	}
	run := func(want int, args ...string) map[string]any {
		t.Helper()
		out := procRun(t, bin, h, nil, args...)
		if out.code != want {
			t.Fatalf("reportjob %s: %s", strings.Join(args, " "), out)
		}
		return lastJSON(t, out.stdout)
	}
	counts := func(what string, sum map[string]any, want map[string]float64) {
		t.Helper()
		for k, v := range want {
			if sum[k] != v {
				t.Errorf("%s: %s = %v, want %v (summary %v)", what, k, sum[k], v, sum)
			}
		}
	}

	// The first command of the new binary migrates, even a read-only one.
	run(0, "status", "--json", "--now", "2026-11-01T07:05:00Z")
	if f, byID := storeFormat(t, dbPath); f != "reportjob/3" || byID {
		t.Fatalf("after the first command: format %q, by-id claims %v; want reportjob/3 without", f, byID)
	}

	// Late into 05 (delivered by the old binary, owing its recheck): a
	// retry of t-03-03 (billed in 03 by the old binary) and a new item.
	h.writeFile("late5.jsonl", upgradeTx(3, 3, "2026-11-01T05:58:00Z", "")+"\n"+
		`{"transaction_id":"late-05","agency_id":"acme","amount":"1.00","currency":"USD","recorded_at":"2026-11-01T05:59:00Z"}`+"\n")
	run(0, "ingest", "--file", filepath.Join(dir, "late5.jsonl"), "--allow-late", "--now", "2026-11-01T07:05:00Z")
	// 06 (ingested by the old binary, a third copy of t-00-01 in it) and
	// the recheck of 05.
	counts("run 07:05", run(0, "run", "--now", "2026-11-01T07:05:00Z"), map[string]float64{
		"periods_processed": 1, "transactions": 10, "duplicates_across_periods": 1, "rejects": 0,
		"rechecks": 1, "restated": 1, "late_items": 2,
	})

	// 07 and 08 with retries of ids billed by the old binary (and of one
	// billed by the new), one conflicting.
	var lines []string
	for hh := 7; hh <= 8; hh++ {
		for n := range 10 {
			lines = append(lines, upgradeTx(hh, n, "", ""))
		}
	}
	lines = append(lines,
		upgradeTx(5, 9, "2026-11-01T07:10:00Z", ""),      // billed in 05 (old binary)
		upgradeTx(4, 4, "2026-11-01T07:20:00Z", "44.44"), // conflicting: rejected
		upgradeTx(5, 0, "2026-11-01T08:15:00Z", ""),
		`{"transaction_id":"late-02","agency_id":"acme","amount":"1.00","currency":"USD","recorded_at":"2026-11-01T08:20:00Z"}`, // billed by 02's restatement (old binary)
		upgradeTx(6, 3, "2026-11-01T08:25:00Z", ""), // billed in 06 (new binary)
	)
	h.writeFile("later.jsonl", strings.Join(lines, "\n")+"\n")
	run(0, "ingest", "--file", filepath.Join(dir, "later.jsonl"), "--allow-late", "--now", "2026-11-01T09:05:00Z")
	counts("run 09:05", run(0, "run", "--now", "2026-11-01T09:05:00Z"), map[string]float64{
		"periods_processed": 2, "transactions": 20, "duplicates_across_periods": 4, "rejects": 1,
	})

	// An id billed under the old binary: billed once, its copies dropped.
	counts("transactions --id t-00-01", run(0, "transactions", "--id", "t-00-01"), map[string]float64{
		"billed": 1, "dropped": 2, "rejects": 0,
	})

	// Every period rebuilt: the same bytes, nothing restated.
	counts("backfill", run(0, "run", "--backfill", "--from", "2026-11-01T00:00:00Z", "--to", "2026-11-01T09:00:00Z", "--now", "2026-11-01T09:05:00Z"),
		map[string]float64{"periods_processed": 9, "transactions": 92, "rejects": 3, "objects_written": 0, "restated": 0})
	counts("verify", run(0, "verify", "--from", "2026-11-01T00:00:00Z", "--to", "2026-11-01T09:00:00Z", "--now", "2026-11-01T09:05:00Z"),
		map[string]float64{"periods": 9, "ok": 9, "differ": 0})

	// Exactly once, in its own period: t-HH-NN in HH, late-02 in 02,
	// late-05 in 05.
	want := map[string]string{"late-02": "20261101T0200Z", "late-05": "20261101T0500Z"}
	for hh := 0; hh <= 8; hh++ {
		for n := range 10 {
			want[fmt.Sprintf("t-%02d-%02d", hh, n)] = fmt.Sprintf("20261101T%02d00Z", hh)
		}
	}
	checkBilledOnce(t, h, want)
	if f, _ := storeFormat(t, dbPath); f != "reportjob/3" {
		t.Errorf("format at the end %q, want reportjob/3", f)
	}
}
