package monthclose_test

import (
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// A month revision renders the files of the agencies whose statements
// changed; the others keep their files and their statement revision
// (agencies.go). The final revision renders every agency.
func TestUnchangedAgenciesKeepTheirFiles(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	rendered := map[string]int{} // agency -> revision rendered last
	renders := 0
	f.c.Formats = monthclose.Formats{CSV: true, PDF: true}
	f.c.RenderPDF = func(w io.Writer, s *statement.Agency) error {
		mu.Lock()
		defer mu.Unlock()
		rendered[s.AgencyID] = s.Revision
		renders++
		_, err := io.WriteString(w, s.AgencyID+" revision "+strconv.Itoa(s.Revision))
		return err
	}
	revisions := func() map[string]int {
		t.Helper()
		out := map[string]int{}
		for _, r := range f.statement("2026-01").Rows {
			out[r.AgencyID] = int(r.StatementRevision)
		}
		return out
	}
	betaFiles := func() []string {
		return f.keys(report.AgencyMonthPrefix("beta", "2026-01"))
	}

	f.publish(hour(0), report.ReasonDelivery, map[string]int64{"acme": 100, "beta": 50})
	f.mustUpdate(hour(1).Start, "")
	if renders != 2 || !maps.Equal(revisions(), map[string]int{"acme": 1, "beta": 1}) {
		t.Fatalf("first revision: %d renders, revisions %v", renders, revisions())
	}
	beta := betaFiles()

	f.publish(hour(1), report.ReasonDelivery, map[string]int64{"acme": 100})
	f.mustUpdate(hour(2).Start, "")
	st := f.statement("2026-01")
	if st.Manifest.StatementRevision != 2 || renders != 3 || rendered["acme"] != 2 {
		t.Fatalf("second revision %d: %d renders (%v), want acme alone at 2", st.Manifest.StatementRevision, renders, rendered)
	}
	if got := revisions(); !maps.Equal(got, map[string]int{"acme": 2, "beta": 1}) {
		t.Fatalf("statement revisions %v, want acme 2 and beta 1", got)
	}
	if got := betaFiles(); !slices.Equal(got, beta) {
		t.Fatalf("beta's files changed: %v, were %v", got, beta)
	}
	for _, e := range st.Manifest.Agencies {
		if want := map[string]int{"acme": 2, "beta": 1}[e.AgencyID]; e.Revision != want || len(e.Digest) != 64 {
			t.Errorf("manifest agency entry %+v, want revision %d", e, want)
		}
	}
	checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false) // renders both: it compares every file
	if err != nil || len(checks) != 1 || checks[0].Differs() {
		t.Fatalf("verify: %v %+v", err, checks)
	}

	// A restatement of a period changes the statements of every agency
	// with rows in it (their audit chain lists its new revision).
	renders = 0
	f.publish(hour(0), report.ReasonRecheck, map[string]int64{"acme": 100, "beta": 70})
	f.mustUpdate(hour(2).Start, "")
	if renders != 2 || !maps.Equal(revisions(), map[string]int{"acme": 3, "beta": 3}) {
		t.Fatalf("after hour 0's restatement: %d renders, revisions %v", renders, revisions())
	}
	renders = 0
	f.publish(hour(2), report.ReasonDelivery, map[string]int64{"beta": 5})
	f.mustUpdate(hour(3).Start, "")
	if renders != 1 || !maps.Equal(revisions(), map[string]int{"acme": 3, "beta": 4}) {
		t.Fatalf("after a period of beta alone: %d renders, revisions %v", renders, revisions())
	}

	for h := 3; h < 23; h++ {
		f.publish(hour(h), report.ReasonDelivery, map[string]int64{})
	}
	f.mustUpdate(hour(23).Start, "2026-01")
	st = f.statement("2026-01")
	if st.Manifest.Status != "final" || !maps.Equal(revisions(), map[string]int{"acme": st.Manifest.StatementRevision, "beta": st.Manifest.StatementRevision}) {
		t.Fatalf("final revision %d (%s): revisions %v", st.Manifest.StatementRevision, st.Manifest.Status, revisions())
	}
	if checks, err := f.c.Verify(f.ctx, f.rec, []string{"2026-01"}, false); err != nil || checks[0].Differs() {
		t.Fatalf("verify the final month: %v %+v", err, checks)
	}
}
