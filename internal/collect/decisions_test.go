package collect_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
)

// billedSet is a Previous's billed function over ids (asked in ascending
// order, as the Pricer's merge requires).
func billedSet(t *testing.T, ids ...string) func(string) (bool, error) {
	last := ""
	return func(id string) (bool, error) {
		if id < last {
			t.Errorf("billed asked %q after %q", id, last)
		}
		last = id
		return slices.Contains(ids, id), nil
	}
}

func crossPeriodLines(t *testing.T, b []byte) []collect.CrossPeriod {
	t.Helper()
	var out []collect.CrossPeriod
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var cp collect.CrossPeriod
		if err := json.Unmarshal(sc.Bytes(), &cp); err != nil {
			t.Fatal(err)
		}
		out = append(out, cp)
	}
	return out
}

// TestRebuildKeepsDecisions: a period's cross-period decisions are
// recorded in its duplicates file, in id order; a rebuild given them back
// (Previous) keeps each one with an index that has lost every claim (its
// retention passed): the identical copy stays dropped, the different one
// rejected with the same reason, the same file; only the new transaction
// is looked up and billed. Without them, the same rebuild bills all three
// (the bug of issue 31, point 4). A rebuild of the billing period keeps
// billing what it billed though a later period claimed the ids since; a
// copy whose content changed is a new item, looked up again.
func TestRebuildKeepsDecisions(t *testing.T) {
	s := openStore(t)
	put(t, s,
		tx("t-retry", "a", 100, p10.Start.Add(59*time.Minute)),
		tx("t-changed", "a", 100, p10.Start.Add(10*time.Minute)),
	)
	opts := func(index collect.Index, prev collect.Previous) collect.DedupeOptions {
		return collect.DedupeOptions{Job: "job", Index: index, Window: week, Write: true, Now: p12.End, Previous: prev, Record: true}
	}
	o10 := runWith(t, s, p10, opts(s, nil))
	if o10.duplicates != nil {
		t.Errorf("p10 has a duplicates file: %s", o10.duplicates)
	}
	put(t, s,
		tx("t-retry", "a", 100, p11.Start.Add(time.Second)),
		tx("t-changed", "a", 999, p11.Start.Add(2*time.Second)),
		tx("t-new", "a", 100, p11.Start.Add(3*time.Second)),
	)
	o11 := runWith(t, s, p11, opts(s, nil))
	lines := crossPeriodLines(t, o11.duplicates)
	if len(lines) != 2 || lines[0].TransactionID != "t-changed" || lines[0].Decision != collect.SightingRejected ||
		lines[1].TransactionID != "t-retry" || lines[1].Decision != collect.SightingDropped ||
		lines[0].BilledBy != "20240301T1000Z" || lines[1].BilledBy != "20240301T1000Z" || len(lines[1].Fingerprint) != 2*collect.FPLen ||
		lines[1].PartitionKey == "" || lines[1].SortKey == "" || o11.stats.DuplicatesLines != 2 {
		t.Fatalf("p11 duplicates file (%d lines):\n%s", o11.stats.DuplicatesLines, o11.duplicates)
	}

	// The claims are gone: an index of its own, empty.
	empty := openStore(t)
	lost := runWith(t, s, p11, opts(empty, nil))
	if want := []string{"t-changed", "t-new", "t-retry"}; !slices.Equal(lost.billed, want) {
		t.Errorf("rebuild without the decisions billed %v, want %v (the bug this guards against)", lost.billed, want)
	}
	empty = openStore(t)
	prev := collect.NewPreviousRevision(bytes.NewReader(o11.duplicates), billedSet(t, o11.billed...))
	kept := runWith(t, s, p11, opts(empty, prev))
	if want := []string{"t-new"}; !slices.Equal(kept.billed, want) {
		t.Errorf("rebuild with the decisions billed %v, want %v", kept.billed, want)
	}
	if kept.stats.DuplicatesAcrossPeriods != 1 || kept.stats.Rejects != 1 ||
		!slices.Equal(reasons(kept.rejects), reasons(o11.rejects)) || !bytes.Equal(kept.duplicates, o11.duplicates) {
		t.Errorf("rebuild with the decisions: stats %+v, rejects %q (want %q), duplicates\n%s\nwant\n%s",
			kept.stats, reasons(kept.rejects), reasons(o11.rejects), kept.duplicates, o11.duplicates)
	}
	// The rebuild recorded its own claim (t-new) and sightings as a run does.
	if cl, err := empty.Lookup(t.Context(), "job", []string{"t-new", "t-retry"}); err != nil || len(cl) != 1 || cl[0].ID != "t-new" {
		t.Errorf("claims after the rebuild: %+v, %v", cl, err)
	}
	if ss, err := empty.Sightings(t.Context(), "job", "t-retry"); err != nil || len(ss) != 1 || ss[0].Kind != collect.SightingDropped {
		t.Errorf("sightings of t-retry after the rebuild: %+v, %v", ss, err)
	}

	// 10:00 rebuilt after 11:00 billed its transactions (10:00's claims
	// were gone when 11:00 was rebuilt): 10:00 keeps billing them.
	other := openStore(t)
	runWith(t, s, p11, opts(other, nil))
	if o := runWith(t, s, p10, opts(other, nil)); len(o.billed) != 0 {
		t.Errorf("10:00 rebuilt without its decisions billed %v (want none: 11:00's claims count)", o.billed)
	}
	other2 := openStore(t)
	runWith(t, s, p11, opts(other2, nil))
	again := runWith(t, s, p10, opts(other2, collect.NewPreviousRevision(nil, billedSet(t, o10.billed...))))
	if !slices.Equal(again.billed, o10.billed) || again.duplicates != nil {
		t.Errorf("10:00 rebuilt with its decisions billed %v (want %v), duplicates %s", again.billed, o10.billed, again.duplicates)
	}

	// A copy whose content changed since is new: looked up, and billed
	// when no claim counts.
	changed := bytes.Replace(o11.duplicates, []byte(lines[1].Fingerprint), []byte(strings.Repeat("0", 2*collect.FPLen)), 1)
	empty = openStore(t)
	o := runWith(t, s, p11, opts(empty, collect.NewPreviousRevision(bytes.NewReader(changed), nil)))
	if want := []string{"t-new", "t-retry"}; !slices.Equal(o.billed, want) {
		t.Errorf("rebuild with t-retry's fingerprint changed billed %v, want %v", o.billed, want)
	}
}

// TestPreviousRevisionMalformed: a duplicates file that is not what Dedupe
// writes is an error (ErrDuplicatesFile), never a decision.
func TestPreviousRevisionMalformed(t *testing.T) {
	fp := strings.Repeat("ab", collect.FPLen)
	line := func(id, fp, decision, by string) string {
		b, _ := json.Marshal(collect.CrossPeriod{TransactionID: id, Fingerprint: fp, Decision: decision, BilledBy: by})
		return string(b) + "\n"
	}
	for name, file := range map[string]string{
		"not json":     "{",
		"unknown key":  `{"transaction_id":"a","x":1}` + "\n",
		"short fp":     line("a", "abcd", "dropped", "20240301T1000Z"),
		"decision":     line("a", fp, "billed", "20240301T1000Z"),
		"billed_by":    line("a", fp, "dropped", "2024-03-01"),
		"out of order": line("b", fp, "dropped", "20240301T1000Z") + line("a", fp, "dropped", "20240301T1000Z"),
		"same id":      line("a", fp, "dropped", "20240301T1000Z") + line("a", fp, "dropped", "20240301T1000Z"),
	} {
		p := collect.NewPreviousRevision(strings.NewReader(file), nil)
		var k [collect.FPLen]byte
		_, err := p.Decision("a", k)
		if err == nil {
			_, err = p.Decision("zz", k)
		}
		if err == nil {
			err = p.Finish()
		}
		if !errors.Is(err, collect.ErrDuplicatesFile) {
			t.Errorf("%s: %v, want ErrDuplicatesFile", name, err)
		}
	}
}
