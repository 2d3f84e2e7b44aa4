//go:build linux

package main

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
)

// The crash suites on a backfill, and on a crash between a period's
// manifest and its checkpoint followed by a report.period change (issue
// 31). Both start from the crash scenario (crash_scenario_test.go).
//
// The backfill: after the scenario's run under test (checkpoint 07:00),
// late items land in 01:00, 02:00 (at revision 2) and 05:00, and a retry
// of tx-04-01 is re-stamped into 01:00 (04:00 billed it: dropped). Then
// `run --backfill --from 00:00 --to 07:00` (within the checkpoint) rebuilds
// the seven periods and restates three; it is killed at a step
// (TestCrashPointsBackfill) or at random (TestCrashRandomKillBackfill),
// and ONE rerun must leave what an uncrashed backfill leaves, with the
// sum of all statements equal to the latest period summaries.
//
// The period change (TestCrashPointsPeriodChange): the run under test is
// killed after a period's manifest and before its checkpoint moved, then
// report.period changes; ONE rerun must exit 0, finish that period on the
// hourly grid, switch, bill every transaction once, and keep every
// statement check.
//
//	go test ./cmd/reportjob -run 'TestCrashPoints(Backfill|PeriodChange)|TestCrashRandomKillBackfill' -v

const cbNow = "2024-03-01T07:30:00Z"

var cbArgs = []string{"run", "--backfill", "--from", "2024-03-01T00:00:00Z", "--to", "2024-03-01T07:00:00Z", "--now", cbNow}

// cbCases: the backfill reads the seven periods (after-read:7 is 06:00's)
// and publishes three revisions, 01:00, 02:00 and 05:00 in that order
// (after-manifest:3 is 05:00's); mid-restatement:1 is 01:00's first
// upload; the close at its end publishes March's next draft.
var cbCases = []string{
	"after-read:1", "after-read:7", "after-claims:2", "after-upload:1", "mid-restatement:1", "mid-restatement:4",
	"after-manifest:1", "after-manifest:3", "after-cleanup:2",
	"month-after-upload:1", "month-after-manifest:1", "month-after-cleanup:1", "before-due-delete:2",
}

// backfillScenario is the crash scenario followed by the late items of
// the backfill.
type backfillScenario struct {
	*crashScenario
	late []item.Item
	// billed is the crash scenario's, with the late items.
	billed *crashScenario
}

func newBackfillScenario(s *crashScenario) *backfillScenario {
	b := &backfillScenario{crashScenario: s,
		billed: &crashScenario{billed: maps.Clone(s.billed), rejected: s.rejected}}
	mk := func(id, agency, amount, currency string, at time.Time) item.Item {
		pk, sk := keys.ForTransaction(id, at, 1)
		return item.Item{PK: pk, SK: sk, Attrs: map[string]item.Value{
			item.AttrTransactionID: item.S(id), item.AttrAgencyID: item.S(agency), item.AttrAmount: item.N(amount),
			item.AttrCurrency: item.S(currency), item.AttrCustomerID: item.S("cust-" + id)}}
	}
	for _, l := range []struct {
		id, agency, amount, currency string
		h, m                         int
	}{{"bf-late-01", "acme", "7.25", "USD", 1, 50}, {"bf-late-02", "beta", "3.00", "EUR", 2, 45}, {"bf-late-05", "Agence Étoile", "900", "JPY", 5, 55}} {
		b.late = append(b.late, mk(l.id, l.agency, l.amount, l.currency, hourAt(l.h, l.m, 0)))
		b.billed.billed[l.id] = hourAt(l.h, 0, 0)
	}
	// tx-04-01 (USD, 12.34) retried, re-stamped into 01:00: 04:00 billed it.
	b.late = append(b.late, mk("tx-04-01", "beta", "12.34", "USD", hourAt(1, 58, 0)))
	return b
}

// setup is the crash scenario after its run under test, with the late
// items written.
func (b *backfillScenario) setup(t *testing.T, bin, backend string) *harness {
	t.Helper()
	h := b.crashScenario.setup(t, bin, backend)
	if out := procRun(t, bin, h, nil, "run", "--now", csNow); out.code != exitOK {
		t.Fatalf("the run before the backfill: %s", out)
	}
	b.put(h, b.late)
	return h
}

// reference is the uncrashed backfill.
func (b *backfillScenario) reference(t *testing.T, bin, backend string) crashReference {
	t.Helper()
	h := b.setup(t, bin, backend)
	out := procRun(t, bin, h, nil, cbArgs...)
	if out.code != exitOK {
		t.Fatalf("reference backfill: %s", out)
	}
	if sum := lastJSON(t, out.stdout); opsInt(t, sum, "periods_processed") != 7 || opsInt(t, sum, "restated") != 3 ||
		sum["checkpoint"] != csCheckpoint.Format(time.RFC3339) {
		t.Fatalf("reference backfill: %v", sum)
	}
	ref := crashReference{snap: snapshot(h), state: procState(h)}
	checkSinkInvariant(t, ref.snap)
	b.billed.checkBilledOnce(h, ref.snap)
	checkStatementTotals(h, ref.snap)
	for hh, rev := range map[int]int{1: 2, 2: 3, 5: 2} {
		p := report.Period{Start: hourAt(hh, 0, 0), End: hourAt(hh+1, 0, 0)}
		if m := ref.snap.manifests[report.ManifestKey(p)]; m == nil || m.Revision != rev || m.Reason != report.ReasonBackfill {
			t.Fatalf("reference backfill: %s not at revision %d: %+v", p.Name(), rev, m)
		}
	}
	return ref
}

// check compares h after a crashed backfill and its rerun with the
// reference.
func (b *backfillScenario) check(h *harness, ref crashReference) {
	h.t.Helper()
	checkNoTemp(h)
	snap := snapshot(h)
	checkSinkInvariant(h.t, snap)
	compareSinks(h.t, ref.snap, snap)
	compareStates(h.t, ref.state, procState(h))
	b.billed.checkBilledOnce(h, snap)
	checkStatementTotals(h, snap)
}

// cbCasesFor: every case on the embedded stack; on DynamoDB + S3 the
// first hit of each point (every case in the long mode).
func cbCasesFor(backend string) []string {
	if backend == "embedded" || procLong() {
		return cbCases
	}
	var out []string
	for _, c := range cbCases {
		if strings.HasSuffix(c, ":1") {
			out = append(out, c)
		}
	}
	return out
}

func TestCrashPointsBackfill(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	b := newBackfillScenario(newCrashScenario())
	defer b.cleanup()
	onBothStacks(t, func(t *testing.T, backend string) ([]string, func(*testing.T, string)) {
		started := time.Now()
		ref := b.reference(t, bin, backend)
		cases := cbCasesFor(backend)
		t.Cleanup(func() {
			crashLine(t, "crash points of a backfill on %s: %d cases in %s", backend, len(cases), time.Since(started).Round(time.Millisecond))
		})
		return cases, func(t *testing.T, c string) {
			h := b.setup(t, bin, backend)
			crash := procRun(t, bin, h, []string{crashpoint.EnvVar + "=" + c}, cbArgs...)
			if !crash.killed || !strings.Contains(crash.stderr, "crashpoint "+c+" reached") {
				t.Fatalf("the backfill did not crash at %s: %s", c, crash)
			}
			procWaitLease(h)
			rerun := procRun(t, bin, h, nil, cbArgs...)
			procKeepLogs(t, map[string]procOut{"crash": crash, "rerun": rerun})
			if rerun.code != exitOK {
				t.Fatalf("the one rerun of the backfill after a crash at %s: %s", c, rerun)
			}
			b.check(h, ref)
		}
	})
}

func TestCrashRandomKillBackfill(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	seed := crashSeed(t)
	t.Logf("seed %d (replay with RJTEST_SEED=%d)", seed, seed)
	b := newBackfillScenario(newCrashScenario())
	defer b.cleanup()
	trials := map[string]int{"embedded": 4, "aws": 2}
	if procLong() {
		trials = map[string]int{"embedded": 40, "aws": 10}
	}
	var stacks sync.WaitGroup
	for _, backend := range []string{"embedded", "aws"} {
		stacks.Add(1)
		go func() {
			defer stacks.Done()
			t.Run(backend, func(t *testing.T) {
				ref := b.reference(t, bin, backend)
				h := b.setup(t, bin, backend)
				timed := procRun(t, bin, h, nil, cbArgs...)
				if timed.code != exitOK {
					t.Fatalf("timing backfill: %s", timed)
				}
				maxDelay := max(timed.took*9/10, 100*time.Millisecond)
				for i := range trials[backend] {
					t.Run(fmt.Sprintf("trial-%02d", i), func(t *testing.T) {
						rng := rand.New(rand.NewPCG(seed, uint64(i)))
						h := b.setup(t, bin, backend)
						landed, step := 0, ""
						outs := map[string]procOut{}
						for k := 0; k < 4 && landed == 0; k++ {
							// A run that beats its SIGKILL is killed sooner
							// next time (on a fresh setup).
							delay := time.Duration(rng.Int64N(int64(maxDelay >> k)))
							out := procKillAfter(t, bin, h, delay, cbArgs...)
							outs[fmt.Sprintf("kill-%d", k)] = out
							switch {
							case out.killed:
								landed++
								step = lastLogMsg(out.stderr)
								procWaitLease(h)
							case out.code == exitOK:
								h = b.setup(t, bin, backend)
							default:
								t.Fatalf("backfill to be killed after %s: %s", delay, out)
							}
						}
						rerun := procRun(t, bin, h, nil, cbArgs...)
						outs["rerun"] = rerun
						procKeepLogs(t, outs)
						if rerun.code != exitOK {
							t.Fatalf("the one rerun after %d kill(s): %s", landed, rerun)
						}
						b.check(h, ref)
						t.Logf("%s: killed %d time(s) (last step %q), one rerun exit 0", backend, landed, step)
					})
				}
			})
		}()
	}
	stacks.Wait()
}

// TestCrashPointsPeriodChange: the run under test is killed after a
// period's manifest, before its checkpoint moved (after-manifest: the
// manifest is there, the checkpoint is not), then report.period changes:
// 1h -> 30m (without the published period, the switch would be at the
// checkpoint, that very period) and 1h -> 2h (after 04:00's manifest, the
// 2h grid would start at 04:00). ONE rerun must finish the published
// period on the hourly grid, switch after it, and leave a sink where
// every object is listed, every transaction billed once (in a period of
// its hour), and the statements equal the latest periods. The rerun is
// at 08:02, so that the 2h period from 06:00 is due too.
func TestCrashPointsPeriodChange(t *testing.T) {
	t.Parallel() // see procAWSEnv
	bin := procBinary(t)
	s := newCrashScenario()
	defer s.cleanup()
	type pcCase struct {
		point, period string
		// published is the hour whose manifest the crash left.
		published int
	}
	cases := []pcCase{
		{"after-manifest:1", "30m", 3}, {"after-manifest:2", "2h", 4}, {"after-cleanup:1", "30m", 3},
		{"after-manifest:3", "30m", 5}, {"after-cleanup:2", "2h", 4},
	}
	// The rerun is at 08:02 (a 2h period from 06:00 is due then too),
	// and delivers up to 08:00: items of 07:00 are none.
	const rerunNow = "2024-03-01T08:02:00Z"
	wantCheckpoint := csCheckpoint.Add(time.Hour).Format(time.RFC3339)
	byName := map[string]pcCase{}
	for _, c := range cases {
		byName[c.point+"-then-"+c.period] = c
	}
	onBothStacks(t, func(t *testing.T, backend string) ([]string, func(*testing.T, string)) {
		cs := cases
		if backend == "aws" && !procLong() {
			cs = cases[1:2]
		}
		names := make([]string, len(cs))
		for i, c := range cs {
			names[i] = c.point + "-then-" + c.period
		}
		return names, func(t *testing.T, name string) {
			c := byName[name]
			h := s.setup(t, bin, backend)
			crash := procRun(t, bin, h, []string{crashpoint.EnvVar + "=" + c.point}, "run", "--now", csNow)
			if !crash.killed || !strings.Contains(crash.stderr, "crashpoint "+c.point+" reached") {
				t.Fatalf("the run did not crash at %s: %s", c.point, crash)
			}
			procWaitLease(h)
			r := &stRunner{t: t, h: h, bin: bin}
			r.setPeriod("1h", c.period)
			rerun := procRun(t, bin, h, nil, "run", "--now", rerunNow)
			procKeepLogs(t, map[string]procOut{"crash": crash, "rerun": rerun})
			if rerun.code != exitOK {
				t.Fatalf("the one rerun after a crash at %s and report.period %s: %s", c.point, c.period, rerun)
			}
			if sum := lastJSON(t, rerun.stdout); sum["checkpoint"] != wantCheckpoint {
				t.Errorf("rerun: %v", sum)
			}
			snap := snapshot(h)
			checkSinkInvariant(t, snap)
			pub := report.Period{Start: hourAt(c.published, 0, 0), End: hourAt(c.published+1, 0, 0)}
			if m := snap.manifests[report.ManifestKey(pub)]; m == nil || m.Period() != pub {
				t.Errorf("the period published before the crash: %+v, want %s kept", m, pub)
			}
			checkBilledWithin(h, s, snap)
			checkStatementTotals(h, snap)
			if st := procState(h); len(st.Grid) != 2 || !st.Grid[1].From.After(pub.Start) {
				t.Errorf("recorded grid %v: want the hourly one, then %s after %s", st.Grid, c.period, pub.Name())
			}
		}
	})
}

// checkBilledWithin is checkBilledOnce on any grid: each transaction the
// scenario bills is in exactly one transactions file, that of a period
// within (or holding) the hour that bills it, and nothing else is billed.
func checkBilledWithin(h *harness, s *crashScenario, snap sinkSnapshot) {
	h.t.Helper()
	t := h.t
	sk := h.sink()
	byStart := map[string]report.Period{}
	for _, m := range snap.manifests {
		byStart[m.Period().Name()] = m.Period()
	}
	seen := map[string][]report.Period{}
	for key := range snap.objects {
		if !strings.HasPrefix(key, report.DatasetTransactions+"/") || !strings.HasSuffix(key, ".parquet") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(key, report.DatasetTransactions+"/period="), "/")
		p, ok := byStart[name]
		if !ok {
			t.Errorf("%s: no manifest of its period", key)
			continue
		}
		for _, r := range readParquet[lineRec](t, key, h.read(sk, key)) {
			seen[r.TransactionID] = append(seen[r.TransactionID], p)
		}
	}
	for id, start := range s.billed {
		switch ps := seen[id]; {
		case len(ps) != 1:
			t.Errorf("transaction %s billed %d times: %v", id, len(ps), ps)
		case !ps[0].End.After(start) || !ps[0].Start.Before(start.Add(time.Hour)):
			t.Errorf("transaction %s billed in %s, want a period of the hour %s", id, ps[0], start.Format(time.RFC3339))
		}
	}
	for id, ps := range seen {
		if _, ok := s.billed[id]; !ok {
			t.Errorf("transaction %s billed (%v) but should not be", id, ps)
		}
	}
}
