package main

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// hostileAgencies are agency ids that look like paths, patterns or
// commands; each is a valid agency_id and gets a folder of its own,
// inside the sink.
var hostileAgencies = []string{
	"..", ".", "../../../../tmp/evil", "/etc/passwd", `a\..\..\b`, "%2e%2e", "agency=x/../y", "~root", "$(id)",
	"*", "C:\\Windows", "acme", "acme2", "acme/../acme2",
}

// hostileAgencyTx are purchases of each hostile agency, and two rejects
// whose agency id holds a NUL or a right-to-left override.
func hostileAgencyTx(start time.Time) []item.Transaction {
	usd := money.Currency{Code: "USD", Digits: 2}
	var out []item.Transaction
	for i, a := range append(slices.Clone(hostileAgencies), "a\x00b", "a\u202eb") {
		at := start.Add(time.Duration(i) * time.Minute)
		id := "sec-" + string(rune('a'+i))
		pk, sk := keys.ForTransaction(id, at, 1)
		out = append(out, item.Transaction{PK: pk, SK: sk, ID: id, AgencyID: a, Kind: item.Purchase, Currency: usd, Amount: 100, RecordedAt: at})
	}
	return out
}

// checkAgencyKeys: every key under agencies/ is agencies/agency=A/period=P/name
// with A the escape of one of the hostile agencies (or of more); each has
// its folder.
func checkAgencyKeys(t *testing.T, keyList []string, more ...string) {
	t.Helper()
	ids := append(slices.Clone(hostileAgencies), more...)
	folders := map[string]bool{}
	for _, k := range keyList {
		if _, ok := report.AgencySegment(k); !ok {
			continue
		}
		segs := strings.Split(k, "/")
		esc, _ := report.AgencySegment(k)
		id, err := url.PathUnescape(esc)
		if len(segs) != 4 || err != nil || !slices.Contains(ids, id) || esc != keys.EscapeAgency(id) {
			t.Errorf("agency object %s: folder %q is not an escaped agency id (%q, %v)", k, esc, id, err)
		}
		folders[id] = true
	}
	if len(folders) != len(ids) {
		t.Errorf("%d agency folders, want %d: %v", len(folders), len(ids), folders)
	}
}

// withUmask0 makes the process umask 0 for the test, so that files have
// exactly the modes the code asks for. Tests of this package that run
// in parallel wait until the sequential ones are done.
func withUmask0(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
}

// checkModes walks root (not root itself) and fails for a file or folder
// with permissions beyond file or dir; it returns how many it saw.
func checkModes(t *testing.T, root string, file, dir fs.FileMode) (files, dirs int) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		limit := file
		if d.IsDir() {
			limit, dirs = dir, dirs+1
		} else {
			files++
		}
		if info.Mode().Perm()&^limit != 0 {
			t.Errorf("%s: mode %v, beyond %v", p, info.Mode(), limit)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, dirs
}

// TestSecurityFileSink runs the CLI on the embedded store and a folder
// under umask 0, with hostile agency ids: every file stays in the sink
// folder or the store's, agencies get one escaped folder each, files are
// 0640 and folders 0750 at most (the store 0600), the scratch folder is
// gone after the run, and the demo's folder follows the same modes.
func TestSecurityFileSink(t *testing.T) {
	withUmask0(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	h := newHarness(t, harnessOptions{extra: "  agency_files: [csv, parquet]"})
	h.mustRun(exitOK, "init")
	h.putTx(hostileAgencyTx(bdPeriod.Start)...)
	sum := h.mustRun(exitOK, "run", "--now", bdNow)
	if sum["transactions"] != float64(len(hostileAgencies)) || sum["rejects"] != float64(2) {
		t.Fatalf("run: %v", sum)
	}
	var keyList []string
	for k := range h.objects() {
		keyList = append(keyList, k)
	}
	checkAgencyKeys(t, keyList)

	// Nothing outside the test folder's reports/ and data/.
	entries, err := os.ReadDir(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != "reports" && n != "data" && n != "config.yaml" {
			t.Errorf("%s written in the test folder, outside the sink and the store", n)
		}
	}
	parent, _ := os.ReadDir(filepath.Dir(h.dir))
	for _, e := range parent {
		if !e.IsDir() {
			t.Errorf("%s written beside the test folder", e.Name())
		}
	}
	files, dirs := checkModes(t, filepath.Join(h.dir, "reports"), 0o640, 0o750)
	dbFiles, _ := checkModes(t, filepath.Join(h.dir, "data"), 0o600, 0o750)
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in TMPDIR after the run: %v", left)
	}

	demo := filepath.Join(t.TempDir(), "demo")
	h.mustRun(exitOK, "demo", "--dir", demo, "--transactions", "50", "--top", "1")
	demoFiles, demoDirs := checkModes(t, demo, 0o640, 0o750)
	if fi, err := os.Stat(demo); err != nil || fi.Mode().Perm()&^0o750 != 0 {
		t.Errorf("demo folder: %v, %v; want 0750 at most", fi.Mode(), err)
	}
	t.Logf("sink: %d files, %d folders; store: %d files; demo: %d files, %d folders", files, dirs, dbFiles, demoFiles, demoDirs)
}
