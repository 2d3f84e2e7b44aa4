package monthclose_test

import (
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/statement"
)

// A final month's PDFs rendered by an older renderer whose bytes the
// current one no longer gives (the file keys are content hashes): verify
// reports the month (every PDF a rebuild gives is unlisted), and --repair
// cannot restore a lost PDF (it restores only what a rebuild gives byte for
// byte) nor change the final month: it says "0 object(s) restored", names
// the lost PDF in NotRepairable, and the month keeps differing. The older
// renderer restores it.
func TestVerifyFinalMonthAfterRendererChange(t *testing.T) {
	f := newFixture(t)
	renderer := func(version string) func(io.Writer, *statement.Agency) error {
		return func(w io.Writer, s *statement.Agency) error {
			_, err := io.WriteString(w, "renderer "+version+" "+s.AgencyID+" revision "+strconv.Itoa(s.Revision))
			return err
		}
	}
	f.c.Formats = monthclose.Formats{CSV: true, PDF: true}
	f.c.RenderPDF = renderer("v1")
	f.january()
	var pdf string
	for _, k := range f.keys(report.AgencyMonthPrefix("acme", "2026-01")) {
		if strings.HasSuffix(k, ".pdf") {
			pdf = k
		}
	}
	if pdf == "" {
		t.Fatal("no PDF published")
	}

	f.c.RenderPDF = renderer("v2")
	checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false)
	if err != nil || len(checks) != 1 || !checks[0].Differs() {
		t.Fatalf("verify with another renderer, nothing lost: %v %+v, want the month differing", err, checks)
	}
	if p := strings.Join(checks[0].Problems, "; "); !strings.Contains(p, "which the month manifest does not list") || !strings.Contains(p, ".pdf") {
		t.Errorf("problems %q, want the rebuilt PDF unlisted", p)
	}
	t.Logf("intact final month, another renderer: %s", strings.Join(checks[0].Problems, "; "))

	if err := f.b.Delete(f.ctx, pdf); err != nil {
		t.Fatal(err)
	}
	manifest := f.raw(report.MonthManifestKey("2026-01"))
	checks, err = f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, true)
	if err != nil || !checks[0].Differs() || !strings.Contains(checks[0].Repaired, "0 object(s) restored") {
		t.Fatalf("verify --repair with another renderer: %v %+v, want 0 objects restored", err, checks)
	}
	if nr := checks[0].NotRepairable; !strings.Contains(nr, "1 lost or corrupt object(s) cannot be made again") || !strings.Contains(nr, pdf) {
		t.Errorf("not repairable %q, want the lost PDF %s named", nr, pdf)
	}
	t.Logf("lost PDF, another renderer, --repair: %s -> %s; not repairable: %s", strings.Join(checks[0].Problems, "; "),
		checks[0].Repaired, checks[0].NotRepairable)
	if got := f.raw(report.MonthManifestKey("2026-01")); got != manifest {
		t.Error("the final month's manifest changed")
	}
	if _, err := f.b.Stat(f.ctx, pdf); err == nil {
		t.Error("the lost PDF came back from a renderer that gives other bytes")
	}
	if checks, _ := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false); !checks[0].Differs() {
		t.Error("verify after the repair: the month no longer differs")
	}

	f.c.RenderPDF = renderer("v1")
	checks, err = f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, true)
	if err != nil || !strings.Contains(checks[0].Repaired, "1 object(s) restored") || checks[0].NotRepairable != "" {
		t.Fatalf("verify --repair with the renderer that published it: %v %+v, want 1 object restored", err, checks)
	}
	if checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false); err != nil || checks[0].Differs() {
		t.Fatalf("verify after the restore: %v %+v", err, checks)
	}
}

// An object under a final month's prefixes that its manifest does not
// list (a copy someone left, a file of an interrupted publication whose
// intent is gone): verify reports it, and --repair deletes it, the
// month's manifest and listed objects untouched; verify is then clean.
// Before, --repair left it, and every verify reported it again.
func TestRepairDeletesUnlistedFromFinalMonth(t *testing.T) {
	f := newFixture(t)
	manifest := f.january()
	listed := f.keys(report.StatementsPrefix("2026-01"))
	stray := []string{
		report.StatementsPrefix("2026-01") + "statements-0123456789abcdef.csv",
		report.MonthManifestPrefix("2026-01") + "files-0123456789abcdef.json",
		report.StatementsPrefix("2026-01") + "pending-copy.json", // named like an intent, not one
	}
	for _, k := range stray {
		if _, err := f.b.PutBytes(f.ctx, k, []byte("stray"), sink.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false)
	if err != nil || len(checks) != 1 || checks[0].Status != "final" {
		t.Fatalf("verify: %v %+v", err, checks)
	}
	for _, k := range stray {
		if p := strings.Join(checks[0].Problems, "; "); !strings.Contains(p, k+": not listed by the month manifest") {
			t.Errorf("problems %q, want %s unlisted", p, k)
		}
	}
	checks, err = f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, true)
	if err != nil || !strings.Contains(checks[0].Repaired, "3 unlisted object(s) deleted") {
		t.Fatalf("verify --repair: %v %+v, want 3 unlisted objects deleted", err, checks)
	}
	for _, k := range stray {
		if _, err := f.b.Stat(f.ctx, k); !errors.Is(err, sink.ErrNotFound) {
			t.Errorf("%s after --repair: %v, want it deleted", k, err)
		}
	}
	if got := f.keys(report.StatementsPrefix("2026-01")); !slices.Equal(got, listed) {
		t.Errorf("the month's objects after --repair: %q, want %q", got, listed)
	}
	if got := f.raw(report.MonthManifestKey("2026-01")); got != manifest {
		t.Error("the final month's manifest changed")
	}
	if checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false); err != nil || checks[0].Differs() {
		t.Fatalf("verify after --repair: %v %+v", err, checks)
	}
}

// A final month with an interrupted publication's intent: verify reports
// it (the cleanup it names is pending) and --repair finishes that cleanup
// (what the intent names and the manifest does not list, even in an
// agency's folder, then the intent); verify is clean afterwards. An intent
// that cannot be read stops every run's cleanup: verify fails too, naming
// it, where it used to say the month was fine.
func TestVerifyMonthIntents(t *testing.T) {
	f := newFixture(t)
	f.january()
	stray := report.AgencyMonthPrefix("acme", "2026-01") + "statement-0123456789abcdef.pdf"
	if _, err := f.b.PutBytes(f.ctx, stray, []byte("uploaded, never listed"), sink.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	intent := report.MonthIntentKey("2026-01", "crashed")
	if _, err := f.b.PutBytes(f.ctx, intent, []byte(`{"run_id":"crashed","keys":["`+stray+`"]}`), sink.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false)
	if err != nil || len(checks) != 1 || !strings.Contains(strings.Join(checks[0].Problems, "; "), intent+": an interrupted publication's intent") {
		t.Fatalf("verify with a pending intent: %v %+v", err, checks)
	}
	if _, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, true); err != nil {
		t.Fatalf("verify --repair: %v", err)
	}
	for _, k := range []string{stray, intent} {
		if _, err := f.b.Stat(f.ctx, k); !errors.Is(err, sink.ErrNotFound) {
			t.Errorf("%s after --repair: %v, want it deleted", k, err)
		}
	}
	if checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false); err != nil || checks[0].Differs() {
		t.Fatalf("verify after --repair: %v %+v", err, checks)
	}

	if _, err := f.b.PutBytes(f.ctx, intent, []byte("{not json"), sink.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false)
	if err == nil || !strings.Contains(err.Error(), intent) || !strings.Contains(err.Error(), "delete the objects it names") {
		t.Fatalf("verify with a corrupt intent: %v, want an error naming it and what to do", err)
	}
}
