//go:build linux

package main

import (
	"strings"
	"testing"
)

// TestDeliverySince: a job whose January is final turns delivery on with
// delivery.since 2026-02: runs send nothing of January (no e-mail reaches
// mailpit, no event the endpoint), status says since when, and statement
// --send --month 2026-01 is refused with the key to change. With since
// moved back to 2026-01, the next run sends January, each once.
func TestDeliverySince(t *testing.T) {
	t.Parallel()
	bin := procBinary(t)
	d := newDlv(t, bin, "embedded")
	env := d.r.h.env
	d.r.h.env = append(env, "REPORTJOB_DELIVERY_SINCE=2026-02")
	for range 2 {
		sum := d.r.run(dlvNow, nil)
		dl, _ := sum["delivery"].(map[string]any)
		if dl["sent"] != 0.0 || dl["pending"] != 0.0 || dl["failed"] != 0.0 {
			t.Fatalf("a run with January before delivery.since: delivery %v", dl)
		}
	}
	if man := d.r.monthManifest("2026-01"); !man.Final() {
		t.Fatalf("January is %s, want final", man.Status)
	}
	for id, m := range d.mailsOnce(t) {
		if len(m.ids) != 0 {
			t.Errorf("%s was e-mailed %v though January is before delivery.since", id, m.ids)
		}
	}
	if n := len(d.rcv.counts()); n != 0 {
		t.Errorf("the endpoint accepted %d events though January is before delivery.since", n)
	}
	out := procRun(t, bin, d.r.h, nil, "status", "--now", dlvNow)
	if !strings.Contains(out.stdout, "delivery:     0 pending, 0 failing (months from 2026-02 on; earlier ones are never delivered)") {
		t.Errorf("status does not say since when it delivers:\n%s", out.stdout)
	}
	out = procRun(t, bin, d.r.h, nil, "statement", "--send", "--month", "2026-01", "--now", dlvNow)
	if out.code != 2 || !strings.Contains(out.stderr, "the month is before delivery.since (2026-02)") || !strings.Contains(out.stderr, "set delivery.since to 2026-01 or earlier") {
		t.Errorf("statement --send of a month before delivery.since: %s", out)
	}

	d.r.h.env = append(env, "REPORTJOB_DELIVERY_SINCE=2026-01")
	d.r.run(dlvNow, nil)
	mids, events, _ := d.expected(t)
	got := d.mails(t)
	for _, a := range d.agencies {
		if want, ok := mids[a.id]; ok && (len(got[a.id].ids) != 1 || got[a.id].ids[0] != want) {
			t.Errorf("%s: mailed %v, want once %s", a.id, got[a.id].ids, want)
		}
	}
	counts := d.rcv.counts()
	for id := range events {
		if counts[id] != 1 {
			t.Errorf("event %s accepted %d times, want 1", id, counts[id])
		}
	}
}
