package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/faultproxy"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/report"
)

// TestFaults injects S3 and DynamoDB faults into real CLI runs, through the
// fault proxies, and checks each run against a reference job run without
// faults over the same items:
//
//   - transient faults (retried): the run exits 0, and the job's objects
//     (byte for byte; manifests but for job, sink, generated_at and
//     previous_sha256), checkpoint, rechecks, restatements and dedupe index
//     equal the reference's; every object is listed by a manifest, no
//     intent is left;
//   - persistent faults: the run exits 1 with a summary error naming what
//     failed, the checkpoint has not moved (or moved only past the periods
//     fully delivered), every manifest's objects are all there (no manifest
//     of an incomplete period), every object no manifest lists is covered
//     by an intent; then one run without faults makes the job equal to the
//     reference with the strict invariant.
//
// Each trial is a job that goes through two phases: the first delivery of
// three hourly periods (phase 0), then, after late items landed in the
// third, a run that delivers the (empty) fourth period and rechecks and
// restates the third (phase 1: adjustments, a manifest replaced with
// If-Match, an Update of the restated list). A trial's fault is injected
// in one phase; the other runs clean (in the short mode, a trial faulted
// in phase 0 stops after it).
//
// RJTEST_FAULT_SEEDS=N runs every randomised trial with N seeds instead of
// its default ones (the long mode); RJTEST_FAULT_TRIALS=S keeps only the
// trials whose name contains S. The suite logs its counts.
func TestFaults(t *testing.T) {
	s := newFaultSuite(t, harnessOptions{shards: 2, extra: faultReportYAML})
	trials := faultTrials(s, faultSeeds(t))
	if only := os.Getenv("RJTEST_FAULT_TRIALS"); only != "" {
		var kept []*faultTrial
		for _, tr := range trials {
			if strings.Contains(tr.name, only) {
				kept = append(kept, tr)
			}
		}
		trials = kept
	}
	start := time.Now()

	s.ingestJSONL("phase0.jsonl", faultItems(), faultNow0)
	periods, err := report.Grid{Start: faultDay, Period: time.Hour}.Range(faultDay, faultDay.Add(4*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	long := faultSeeds(t) > 0
	var ref [2]jobState
	ref[0] = s.reference("ref", 0, periods)
	for _, tr := range trials {
		s.trial(tr, 0, &ref[0], periods)
	}
	s.ingestJSONL("late.jsonl", faultLateItems(), faultNow1)
	ref[1] = s.reference("ref", 1, periods)
	for _, tr := range trials {
		// In the short mode, a trial faulted in phase 0 stops there.
		if tr.phase == 1 || long {
			s.trial(tr, 1, &ref[1], periods)
		}
	}
	s.report(trials, time.Since(start))
}

const faultReportYAML = `  line_items: true
  agency_files: [csv, parquet]
  recheck_after: [1h]
  lease_ttl: 10s`

var (
	faultDay  = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	faultNow0 = "2024-03-01T03:05:00Z" // periods 00, 01, 02 due; 02 owed a recheck
	faultNow1 = "2024-03-01T04:05:00Z" // period 03 due, recheck of 02 due
	faultNows = [2]string{faultNow0, faultNow1}
	// The checkpoint after each phase.
	faultCheckpoints = [2]time.Time{faultDay.Add(3 * time.Hour), faultDay.Add(4 * time.Hour)}
)

// faultItems are the first items: 240 generated transactions over three
// hours, a producer's re-stamped retry of one in a later period (dropped
// as a duplicate across periods by the dedupe index), and a copy of
// another with a different amount (a reject).
func faultItems() []ingest.Record {
	var recs []ingest.Record
	err := ingest.GenerateRecords(ingest.GenerateOptions{N: 240, Agencies: 6, Seed: 11, From: faultDay, To: faultDay.Add(3 * time.Hour)},
		func(r ingest.Record) error { recs = append(recs, r); return nil })
	if err != nil {
		panic(err)
	}
	retry := recs[0]
	retry.RecordedAt = faultDay.Add(90 * time.Minute)
	conflict := recs[1]
	conflict.Amount = "1234.56"
	conflict.Currency = "USD"
	conflict.RecordedAt = faultDay.Add(150 * time.Minute)
	return append(recs, retry, conflict)
}

// faultLateItems land in the third period after its delivery.
func faultLateItems() []ingest.Record {
	var recs []ingest.Record
	err := ingest.GenerateRecords(ingest.GenerateOptions{N: 20, Agencies: 6, Seed: 12, From: faultDay.Add(2 * time.Hour), To: faultDay.Add(3 * time.Hour)},
		func(r ingest.Record) error { recs = append(recs, r); return nil })
	if err != nil {
		panic(err)
	}
	return recs
}

// faultTrial is one job run through the phases with a fault in one.
type faultTrial struct {
	name  string // job name: unique
	fault string // the fault, as RELIABILITY.md names it
	phase int
	// s3 and ddb make the rules of the faulted run (nil: none).
	s3, ddb func() faultproxy.Rule
	env     []string // more environment of the faulted run
	// fail: the fault is persistent; the summary error must hold each of
	// these ("a|b": a or b). nil: the fault is transient and the run must
	// succeed.
	fail []string
	// moved: a persistent fault leaves the checkpoint at the phase's end
	// (the periods were delivered; what failed came after).
	moved bool
	// check, when set, replaces the check that a fault was injected (a
	// rule that acts as another client instead).
	check func(faultRun) error
	// result, filled by the run.
	failed             bool
	injected, requests int
	byFault            map[string]int
	took               time.Duration
}

func (tr *faultTrial) persistent() bool { return tr.fail != nil }

// reference runs the reference job through a phase without faults.
func (s *faultSuite) reference(job string, phase int, periods []report.Period) jobState {
	s.t.Helper()
	r := s.run(job, nil, nil, nil, "run", "--now", faultNows[phase])
	if r.code != exitOK {
		s.t.Fatalf("reference run, phase %d: exit %d\n%s\n%s", phase, r.code, r.stdout, r.stderr)
	}
	js, p := s.inspect(job, true, nil, periods)
	if len(p) > 0 {
		s.t.Fatalf("reference, phase %d: %s", phase, strings.Join(p, "\n"))
	}
	if !js.state.Checkpoint.Equal(faultCheckpoints[phase]) {
		s.t.Fatalf("reference, phase %d: checkpoint %s", phase, js.state.Checkpoint)
	}
	s.t.Logf("reference phase %d: %d objects, %d requests, %s", phase, len(js.objects), r.requests, r.took.Round(time.Millisecond))
	return js
}

// trial runs tr's job through phase, with its fault when it is tr's
// phase, and checks the outcome against the reference ref. A trial that
// failed a check is not run further.
func (s *faultSuite) trial(tr *faultTrial, phase int, ref *jobState, periods []report.Period) {
	t := s.t
	t.Helper()
	if tr.failed {
		return
	}
	errorf := func(format string, args ...any) {
		t.Helper()
		tr.failed = true
		t.Errorf("%s (%s), phase %d: %s", tr.name, tr.fault, phase, fmt.Sprintf(format, args...))
	}
	now := faultNows[phase]
	if tr.phase != phase {
		if r := s.run(tr.name, nil, nil, nil, "run", "--now", now); r.code != exitOK {
			errorf("clean run: exit %d: %v", r.code, r.summary["error"])
			return
		}
	} else {
		var s3r, ddbr faultproxy.Rule
		if tr.s3 != nil {
			s3r = tr.s3()
		}
		if tr.ddb != nil {
			ddbr = tr.ddb()
		}
		before := s.checkpointOf(tr.name)
		r := s.run(tr.name, s3r, ddbr, tr.env, "run", "--now", now)
		tr.injected, tr.requests, tr.byFault, tr.took = r.injected, r.requests, r.byFault, r.took
		switch {
		case tr.check != nil:
			if err := tr.check(r); err != nil {
				errorf("%v", err)
			}
		case r.injected == 0:
			errorf("no fault was injected (%d requests)", r.requests)
		}
		if !tr.persistent() {
			if r.code != exitOK {
				errorf("transient: exit %d, want 0: %v\n%s", r.code, r.summary["error"], tail(r.stderr, 3000))
				return
			}
		} else {
			msg, _ := r.summary["error"].(string)
			if r.code != exitFailed || r.summary["status"] != "failed" {
				errorf("persistent: exit %d, status %v, want 1, failed: %v", r.code, r.summary["status"], msg)
				return
			}
			for _, want := range tr.fail {
				if !slices.ContainsFunc(strings.Split(want, "|"), func(w string) bool { return strings.Contains(msg, w) }) {
					errorf("error %q does not say %q", msg, want)
				}
			}
			wantCP := before
			if tr.moved {
				wantCP = faultCheckpoints[phase]
			}
			if got := s.checkpointOf(tr.name); !got.Equal(wantCP) {
				errorf("checkpoint %s after the failed run, want %s", got, wantCP)
			}
			if _, p := s.inspect(tr.name, false, ref, periods); len(p) > 0 {
				errorf("after the failed run:\n%s", strings.Join(p, "\n"))
			}
			t.Logf("%s: failed as it should: %s", tr.name, msg)
			if r := s.run(tr.name, nil, nil, nil, "run", "--now", now); r.code != exitOK {
				errorf("rerun without faults: exit %d: %v", r.code, r.summary["error"])
				return
			}
		}
	}
	js, p := s.inspect(tr.name, true, ref, periods)
	if len(p) > 0 {
		errorf("%s", strings.Join(p, "\n"))
	}
	if d := js.diff(*ref); d != "" {
		errorf("differs from the reference: %s", d)
	}
}

// report logs one line per trial, then per fault the trials, their
// outcome and the faults injected, and the totals.
func (s *faultSuite) report(trials []*faultTrial, took time.Duration) {
	type row struct{ trials, failed, injected int }
	rows := map[string]*row{}
	injected := 0
	byFault := map[string]int{}
	for _, tr := range trials {
		for k, v := range tr.byFault {
			byFault[k] += v
		}
		kind := "transient"
		if tr.persistent() {
			kind = "persistent"
		}
		s.t.Logf("trial %-34s phase %d %-10s %-44s injected %4d of %5d requests, %s",
			tr.name, tr.phase, kind, tr.fault, tr.injected, tr.requests, tr.took.Round(time.Millisecond))
		injected += tr.injected
		r := rows[tr.fault]
		if r == nil {
			r = &row{}
			rows[tr.fault] = r
		}
		r.trials++
		r.injected += tr.injected
		if tr.failed {
			r.failed++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		r := rows[k]
		s.t.Logf("fault %-60s trials %3d, failed %d, injected %5d", k, r.trials, r.failed, r.injected)
	}
	for _, k := range slices.Sorted(maps.Keys(byFault)) {
		s.t.Logf("injected %-50s %5d", k, byFault[k])
	}
	s.t.Logf("fault trials: %d, faults injected: %d, suite time %s", len(trials), injected, took.Round(time.Second))
}

// faultSeeds is how many seeds each randomised trial runs with: 0 for the
// defaults, else RJTEST_FAULT_SEEDS.
func faultSeeds(t *testing.T) int {
	v := os.Getenv("RJTEST_FAULT_SEEDS")
	if v == "" {
		return 0
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
		t.Fatalf("RJTEST_FAULT_SEEDS=%q: want a positive number", v)
	}
	return n
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
