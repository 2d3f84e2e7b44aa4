package main

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
)

// The monthly statements' side of the sink checks (SPEC section 7): the
// period helpers of this package look at period objects only, these at
// the month objects.

// isPeriodManifest reports whether key is a period's manifest.json (not a
// month's).
func isPeriodManifest(key string) bool {
	return strings.HasSuffix(key, "/manifest.json") && !report.IsStatementKey(key)
}

// periodManifestKeys returns the keys of the period manifests among
// objs, sorted.
func periodManifestKeys(objs map[string]string) []string {
	var out []string
	for k := range objs {
		if isPeriodManifest(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// monthStatement is one month's statements read back: its manifest and
// the rows of its statements dataset file.
type monthStatement struct {
	manifest *monthclose.Manifest
	rows     []encode.StatementRow
	// current is, for each period manifest key a draft lists, the
	// report.ContentDigest of the period's manifest in the sink now.
	current map[string]string
}

func (ms *monthStatement) String() string { return statementContent(ms) }

// readStatements reads every month manifest among objects (key -> SHA-256)
// and its statements file, by month manifest key.
func readStatements(t testing.TB, objects map[string]string, read func(key string) []byte) map[string]*monthStatement {
	t.Helper()
	out := map[string]*monthStatement{}
	for key := range objects {
		m, ok := report.MonthOfKey(key)
		if !ok || !strings.HasSuffix(key, "/manifest.json") {
			continue
		}
		man, err := monthclose.ParseManifest(read(key))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		ms := &monthStatement{manifest: man, current: map[string]string{}}
		for _, p := range man.Periods {
			if _, ok := objects[p.Key]; !ok || man.Final() {
				continue
			}
			pm, err := report.ReadManifest(context.Background(), read(p.Key), func(_ context.Context, k string) ([]byte, error) { return read(k), nil })
			if err != nil {
				t.Fatalf("%s: %v", p.Key, err)
			}
			ms.current[p.Key] = report.ContentDigest(pm)
		}
		for _, f := range man.Files {
			if !strings.HasPrefix(f.Key, report.StatementsPrefix(m)) {
				continue
			}
			if _, ok := objects[f.Key]; !ok {
				continue // checkStatements says so
			}
			b := read(f.Key)
			if ms.rows, err = encode.ReadStatementsParquet(bytes.NewReader(b), int64(len(b))); err != nil {
				t.Fatalf("%s: %v", f.Key, err)
			}
		}
		out[key] = ms
	}
	return out
}

// statementProblems checks the statements' objects among objects (key ->
// SHA-256) against the month manifests read back:
//   - each month manifest is at its month's key and lists a statements
//     file; every file it lists exists with its SHA-256, under its month;
//   - every other statement object is listed by its month's manifest or,
//     unless completed, lies in a month an intent covers (a close cut
//     short, which the next run's close cleans up);
//   - with completed (the last command finished): no month intent and no
//     due marker is left, and each draft is built from the latest revision
//     of each of its periods.
func statementProblems(objects map[string]string, months map[string]*monthStatement, completed bool) []string {
	var problems []string
	listed := map[string]string{}
	intents := map[string]bool{} // months
	for key := range objects {
		if m, ok := report.MonthOfKey(key); ok && report.IsIntentKey(key) {
			intents[m] = true
		}
	}
	for mk, ms := range months {
		m := ms.manifest
		if mk != report.MonthManifestKey(m.Month) {
			problems = append(problems, fmt.Sprintf("month manifest %s is of month %s", mk, m.Month))
		}
		statements := 0
		for _, f := range m.Files {
			listed[f.Key] = f.SHA256
			if strings.HasPrefix(f.Key, report.StatementsPrefix(m.Month)) {
				statements++
			}
			if monthOfObject(f.Key) != m.Month {
				problems = append(problems, fmt.Sprintf("%s lists %s of another month", mk, f.Key))
			}
			if sum, ok := objects[f.Key]; !ok || sum != f.SHA256 {
				problems = append(problems, fmt.Sprintf("%s lists %s (sha256 %.12s), the sink has sha256 %.12s", mk, f.Key, f.SHA256, sum))
			}
		}
		if statements != 1 {
			problems = append(problems, fmt.Sprintf("%s lists %d statements files, want 1", mk, statements))
		}
		if !completed || m.Final() {
			continue
		}
		// A draft is brought up to date by every command that completes:
		// it is built from the latest revision of each period.
		for _, p := range m.Periods {
			if p.Digest == "" && p.SHA256 != "" { // a draft written before digests
				if got := objects[p.Key]; got != p.SHA256 {
					problems = append(problems, fmt.Sprintf("draft %s was built from %s revision %d (sha256 %.12s), the period's manifest is now %.12s",
						m.Month, p.Key, p.Revision, p.SHA256, got))
				}
				continue
			}
			if got := ms.current[p.Key]; p.Digest == "" || got != p.Digest {
				problems = append(problems, fmt.Sprintf("draft %s was built from %s revision %d (digest %.12s), the period's digest is now %.12s",
					m.Month, p.Key, p.Revision, p.Digest, got))
			}
		}
	}
	for key, sum := range objects {
		switch {
		case !report.IsStatementKey(key):
		case strings.HasPrefix(key, report.DueStatementsPrefix):
			if completed {
				problems = append(problems, "due marker left after a completed run: "+key)
			}
		case report.IsIntentKey(key):
			if completed {
				problems = append(problems, "month intent left: "+key)
			}
		case strings.HasSuffix(key, "/manifest.json"):
		case listed[key] == "":
			if completed || !intents[monthOfObject(key)] {
				problems = append(problems, "statement object listed by no month manifest: "+key)
			}
		case listed[key] != sum:
			problems = append(problems, fmt.Sprintf("statement object %s differs from its month manifest's sha256", key))
		}
	}
	slices.Sort(problems)
	return problems
}

// monthRE finds the month of a statement object's key.
var monthRE = regexp.MustCompile(`(?:^|/)month=([0-9]{4}-[0-9]{2})/`)

// monthOfObject returns the month of a statement object ("" if none).
func monthOfObject(key string) string {
	if m := monthRE.FindStringSubmatch(key); m != nil {
		return m[1]
	}
	return ""
}

// checkStatements reads h's sink after a completed run and checks its
// statements' objects (statementProblems); wantDue are the due markers
// the run leaves by design (a backfilled period beyond the checkpoint
// waits for the checkpoint to reach it), which must be there. It returns
// the months read back.
func checkStatements(h *harness, wantDue ...string) map[string]*monthStatement {
	h.t.Helper()
	sk := h.sink()
	objs := h.objects()
	for _, key := range wantDue {
		if _, ok := objs[key]; !ok {
			h.t.Errorf("due marker %s is missing", key)
		}
		delete(objs, key)
	}
	months := readStatements(h.t, objs, func(key string) []byte { return h.read(sk, key) })
	for _, p := range statementProblems(objs, months, true) {
		h.t.Error(p)
	}
	return months
}

// compareStatements checks that got publishes the statements the
// reference does, by content: the same months, each with the same status,
// period revisions, adjustments and totals, and the same statements rows
// but for statement_revision. A crash can change how many statement
// revisions a month went through, and with it the files' names and bytes
// (the revision is in them) and the period manifests' hashes (their
// generated_at), so neither is compared.
func compareStatements(t testing.TB, ref, got map[string]*monthStatement) {
	t.Helper()
	for _, key := range sortedKeys(ref) {
		r, g := ref[key], got[key]
		if g == nil {
			t.Errorf("missing month manifest %s", key)
			continue
		}
		if a, b := statementContent(r), statementContent(g); a != b {
			t.Errorf("month %s differs from the reference's:\n got %s\nwant %s", key, b, a)
		}
	}
	for key := range got {
		if ref[key] == nil {
			t.Errorf("month manifest the reference does not have: %s", key)
		}
	}
}

// statementContent renders what compareStatements compares of a month.
func statementContent(ms *monthStatement) string {
	m := ms.manifest
	var b strings.Builder
	fmt.Fprintf(&b, "status %s month %s [%s, %s) tz %s\n", m.Status, m.Month, m.MonthStart, m.MonthEnd, m.Timezone)
	for _, p := range m.Periods {
		fmt.Fprintf(&b, "period %s [%s, %s) revision %d\n", p.Key, p.Start, p.End, p.Revision)
	}
	for _, a := range m.Adjustments {
		fmt.Fprintf(&b, "adjustment %s [%s, %s) of %s revision %d -> %d (%s): %v\n", a.Key, a.PeriodStart, a.PeriodEnd,
			a.PeriodMonth, a.FromRevision, a.ToRevision, a.Reason, a.Commission)
	}
	for _, tot := range m.Totals {
		fmt.Fprintf(&b, "total %+v\n", tot)
	}
	kinds := map[string]int{}
	for _, f := range m.Files {
		dir := f.Key[:strings.LastIndexByte(f.Key, '/')+1]
		name := f.Key[len(dir):]
		kinds[fmt.Sprintf("%s%s %s rows %d", dir, strings.SplitN(name, "-", 2)[0], path.Ext(name), f.Rows)]++
	}
	for _, k := range sortedKeys(kinds) {
		fmt.Fprintf(&b, "files %s: %d\n", k, kinds[k])
	}
	for _, r := range ms.rows {
		r.StatementRevision = 0
		fmt.Fprintf(&b, "row %s %s %s %s %+v\n", r.Month, r.Status, r.AgencyID, r.Currency.Code, r.Line)
	}
	return b.String()
}
