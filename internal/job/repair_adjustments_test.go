package job_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
)

// globex is an agency whose id is escaped in its folder's name and
// neutralised in its CSV cells.
const globex = "+glo bex/é"

// restatedEnv publishes 10:00 as revision 2 (a recheck that found late
// items for acme and globex) with agency files in formats, and returns a
// job maker with those formats.
func restatedEnv(t *testing.T, s stack, formats encode.Formats) (*env, func(owner string) *job.Job) {
	t.Helper()
	e := newEnv(t, s)
	mk := func(owner string) *job.Job {
		j := e.job(owner)
		j.AgencyFiles = formats
		return j
	}
	e.put(purchase("t-1", "acme", 1000, at(10, 5)), purchase("t-2", globex, 500, at(10, 6)))
	e.run(mk("A"), job.RunOptions{Now: at(11, 2)})
	e.put(purchase("t-3", "acme", 250, at(10, 30)), purchase("t-4", globex, 100, at(10, 31)))
	e.run(mk("B"), job.RunOptions{Now: at(12, 3)})
	if m := e.manifest(hour(10)); m.Revision != 2 || len(e.keysUnder("adjustments/period=20900301T1000Z/")) != 1 {
		t.Fatalf("revision %d, adjustments %q", m.Revision, e.keysUnder("adjustments"))
	}
	return e, mk
}

// repairHour10 runs verify --repair over 10:00 and returns its one check.
func repairHour10(t *testing.T, e *env, j *job.Job) job.PeriodCheck {
	t.Helper()
	checks, err := j.Verify(context.Background(), job.VerifyOptions{From: at(10, 0), To: at(11, 0), Repair: true, Now: at(12, 30)})
	if err != nil || len(checks) != 1 {
		t.Fatalf("verify --repair: %+v, %v", checks, err)
	}
	return checks[0]
}

// TestRepairKeepsAdjustments: verify --repair of a restated revision whose
// adjustments Parquet (or summary Parquet) is missing or corrupt restores
// the correction record from the agencies' adjustments files, byte for
// byte, and the revision stands; when nothing of it can be read back, it
// keeps every object that is there (the agencies' adjustments files
// included), restores what it can, and reports the period as not
// repairable.
func TestRepairKeepsAdjustments(t *testing.T) {
	const adjParquet = "adjustments/period=20900301T1000Z/"
	csvOnly, parquetOnly, both := encode.Formats{CSV: true}, encode.Formats{Parquet: true}, encode.Formats{CSV: true, Parquet: true}
	tests := []struct {
		name    string
		formats encode.Formats
		// remove and corrupt name the objects damaged (a substring of
		// one key each).
		remove, corrupt []string
		// restored is how many objects the repair writes back; -1: the
		// period is not repairable.
		restored int
	}{
		{name: "adjustments parquet missing, agency CSVs", formats: csvOnly, remove: []string{adjParquet}, restored: 1},
		{name: "adjustments parquet corrupt, agency CSVs", formats: csvOnly, corrupt: []string{adjParquet}, restored: 1},
		{name: "adjustments parquet missing, agency Parquet", formats: parquetOnly, remove: []string{adjParquet}, restored: 1},
		{name: "adjustments parquet missing, one agency Parquet corrupt, its CSV intact", formats: both,
			remove: []string{adjParquet}, corrupt: []string{"agency=acme/period=20900301T1000Z/adjustments-.parquet"}, restored: 2},
		{name: "summary parquet missing", formats: csvOnly, remove: []string{"summary/period=20900301T1000Z/"}, restored: 1},
		{name: "summary and adjustments parquet missing", formats: csvOnly,
			remove: []string{"summary/period=20900301T1000Z/", adjParquet}, restored: 2},
		{name: "adjustments parquet and one agency's adjustments CSV missing", formats: csvOnly,
			remove: []string{adjParquet, "agency=acme/period=20900301T1000Z/adjustments-", "agency=" + keys.EscapeAgency(globex) + "/period=20900301T1000Z/summary-"}, restored: -1},
		{name: "adjustments parquet missing, no agency files", formats: encode.Formats{}, remove: []string{adjParquet}, restored: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			backends(t, func(t *testing.T, s stack) {
				e, mk := restatedEnv(t, s, tt.formats)
				before := e.objects()
				lost := map[string]bool{} // what nothing can restore
				for _, sub := range tt.remove {
					key := oneKey(t, e, sub)
					e.remove(key)
					lost[key] = true
				}
				for _, sub := range tt.corrupt {
					key := oneKey(t, e, sub)
					e.write(key, "not what the manifest says")
				}
				pc := repairHour10(t, e, mk("V"))
				if !pc.Differs {
					t.Fatalf("the damaged period does not differ: %+v", pc)
				}
				if m := e.manifest(hour(10)); m.Revision != 2 {
					t.Errorf("after the repair: revision %d (%s), want 2", m.Revision, pc.Repaired)
				}
				after := e.objects()
				if tt.restored < 0 {
					if pc.NotRepairable == "" || pc.Repaired != "" || !strings.Contains(pc.NotRepairable, "adjustments") {
						t.Errorf("repaired %q, not repairable %q; want only not repairable, naming the adjustments", pc.Repaired, pc.NotRepairable)
					}
					// What is there stays; whatever else could be
					// restored is.
					want := maps.Clone(before)
					for key := range lost {
						if strings.HasPrefix(key, report.DirAgencies+"/") && strings.Contains(key, "/summary-") {
							continue // restorable: rebuilt from the items
						}
						delete(want, key)
					}
					if !mapsEqual(want, after) {
						t.Errorf("objects after the refused repair:\n%v\nwant\n%v", after, want)
					}
					return
				}
				if pc.NotRepairable != "" {
					t.Errorf("not repairable: %s", pc.NotRepairable)
				}
				if want := "restored " + strconv.Itoa(tt.restored) + " object(s) of revision 2"; pc.Repaired != want {
					t.Errorf("repaired %q, want %q", pc.Repaired, want)
				}
				if !mapsEqual(before, after) {
					t.Errorf("objects after the repair differ from before:\n%v\nwant\n%v", after, before)
				}
				checks, err := mk("W").Verify(context.Background(), job.VerifyOptions{From: at(10, 0), To: at(11, 0), Now: at(12, 40)})
				if err != nil || len(checks) != 1 || checks[0].Differs {
					t.Errorf("verify after the repair: %+v, %v", checks, err)
				}
				e.checkSink()
			})
		})
	}
}

// TestRepairRestatesWithAdjustmentsFromAgencyFiles: verify --repair of a
// restated revision whose summary Parquet is missing, when late items have
// come since, publishes the next revision with its adjustments (computed
// against the agencies' summary files), not a revision without them.
func TestRepairRestatesWithAdjustmentsFromAgencyFiles(t *testing.T) {
	backends(t, func(t *testing.T, s stack) {
		e, mk := restatedEnv(t, s, encode.Formats{CSV: true})
		e.remove(oneKey(t, e, "summary/period=20900301T1000Z/"))
		e.put(purchase("t-5", "acme", 75, at(10, 45)))
		pc := repairHour10(t, e, mk("V"))
		if m := e.manifest(hour(10)); m.Revision != 3 || pc.Repaired != "restated as revision 3" {
			t.Fatalf("revision %d, repaired %q, not repairable %q", m.Revision, pc.Repaired, pc.NotRepairable)
		}
		adj := e.keysUnder("agency=acme/period=20900301T1000Z/adjustments-")
		if len(adj) != 1 || !strings.Contains(e.read(adj[0]), ",USD,1,0,0.75,0.00,0.75,0.08,3") {
			t.Errorf("acme's adjustments %q:\n%s", adj, readAll(e, adj))
		}
		if got := e.keysUnder("agency=" + keys.EscapeAgency(globex) + "/period=20900301T1000Z/adjustments-"); len(got) != 0 {
			t.Errorf("globex did not change, yet has adjustments %q", got)
		}
		e.checkSink()
	})
}

// oneKey returns the one key that contains sub (a key's name part may be
// given as "adjustments-.parquet": the hash is left out).
func oneKey(t *testing.T, e *env, sub string) string {
	t.Helper()
	dir, name, _ := strings.Cut(sub, "-.")
	var out []string
	for _, k := range e.keysUnder(dir) {
		if name == "" || strings.HasSuffix(k, "."+name) {
			out = append(out, k)
		}
	}
	if len(out) != 1 {
		t.Fatalf("keys with %q: %q", sub, out)
	}
	return out[0]
}

func readAll(e *env, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(e.read(k))
	}
	return b.String()
}
