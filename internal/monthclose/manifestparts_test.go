package monthclose_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// TestMonthManifestParts: a month of more agencies than a month manifest
// holds itself is published with its agencies' files and entries in
// parts. It reads back whole; the next revision's cleanup deletes the
// parts it replaced; verify finds nothing wrong; a part that is not what
// the manifest committed to is an error, not a shorter statement.
func TestMonthManifestParts(t *testing.T) {
	defer monthclose.SetPartLimits(5, 4)()
	f := newFixture(t)
	const m = "2026-01"
	agencies := map[string]int64{}
	for i := range 9 {
		agencies[fmt.Sprintf("ag-%02d", i)] = int64(100 + i)
	}
	f.publish(hour(0), report.ReasonDelivery, agencies)
	f.mustUpdate(hour(1).Start, "")

	st := f.statement(m)
	man := st.Manifest
	if man.Format != monthclose.FormatParts || len(man.Parts) < 2 {
		t.Fatalf("format %q with %d parts; want %q and parts", man.Format, len(man.Parts), monthclose.FormatParts)
	}
	if len(man.Agencies) != 9 || len(st.Rows) != 9 {
		t.Fatalf("%d agency entries, %d statement rows; want 9", len(man.Agencies), len(st.Rows))
	}
	for a := range agencies {
		if files := monthclose.AgencyFiles(man, a); len(files) != 1 || !strings.HasSuffix(files[0], ".csv") {
			t.Errorf("agency %s: files %v, want its statement csv", a, files)
		}
	}
	if raw := f.raw(report.MonthManifestKey(m)); strings.Contains(raw, "agency=ag-03") || strings.Contains(raw, `"agency_id"`) {
		t.Errorf("manifest.json holds agency entries itself:\n%s", raw)
	}
	first := man.Keys()
	listed := func() []string {
		var out []string
		for _, k := range f.keys(report.MonthManifestPrefix(m)) {
			if k != report.MonthManifestKey(m) {
				out = append(out, k)
			}
		}
		return out
	}
	var parts []string
	for _, p := range man.Parts {
		parts = append(parts, p.Key)
	}
	slices.Sort(parts)
	if got := listed(); !slices.Equal(got, parts) {
		t.Fatalf("under the month's manifest prefix: %v; want the parts %v", got, parts)
	}

	// A part a crashed publication left (uploaded, its manifest never
	// written): the next revision's cleanup deletes it.
	stray := report.MonthManifestPrefix(m) + "files-0123456789abcdef.json"
	if _, err := f.b.PutBytes(f.ctx, stray, []byte("{}\n"), sink.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// The next revision: one agency's commission changes.
	agencies["ag-03"] = 999
	f.publish(hour(0), report.ReasonRecheck, agencies)
	f.mustUpdate(hour(1).Start.Add(30*60e9), "")
	st = f.statement(m)
	man = st.Manifest
	if man.StatementRevision != 2 || due(st, "ag-03") != "9.99/0.00/9.99" || due(st, "ag-04") != "1.04/0.00/1.04" {
		t.Fatalf("revision %d, ag-03 %s, ag-04 %s", man.StatementRevision, due(st, "ag-03"), due(st, "ag-04"))
	}
	keep := man.Keys()
	for k := range first {
		if !keep[k] && slices.Contains(f.keys(k), k) {
			t.Errorf("%s of revision 1 is still there", k)
		}
	}
	parts = parts[:0]
	for _, p := range man.Parts {
		parts = append(parts, p.Key)
	}
	slices.Sort(parts)
	if got := listed(); !slices.Equal(got, parts) {
		t.Fatalf("after revision 2, under the month's manifest prefix: %v; want the parts %v", got, parts)
	}
	checks, err := f.c.Verify(f.ctx, f.rec, []string{m}, false)
	if err != nil || len(checks) != 1 || checks[0].Differs() {
		t.Fatalf("verify: %+v, %v", checks, err)
	}

	// A part changed under the manifest.
	if _, err := f.b.PutBytes(f.ctx, parts[0], []byte(`{"format":"reportjob.statements-part/1","files":[],"replaced_files":[],"agencies":[]}`+"\n"), sink.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Read(f.ctx, m); !errors.Is(err, report.ErrManifestPart) {
		t.Errorf("read with a changed part: %v, want %v", err, report.ErrManifestPart)
	}
}
