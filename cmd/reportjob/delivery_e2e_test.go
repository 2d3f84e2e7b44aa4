//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/delivery"
	"github.com/reportjob/reportjob/internal/locale"
	"github.com/reportjob/reportjob/internal/mail"
)

// TestDeliveryE2E: through the built binary on both stacks, a month
// closes final and each agency with an address gets exactly one message
// (recipients, subject, Message-ID, the PDF and CSV attached with the
// sink's bytes), each event reaches the endpoint once with a valid
// signature; an agency without an address and a refused recipient are
// reported per agency and retried by the next run; status shows them;
// --resend sends a new message; events replay sends the same ids again.
//
//	go test ./cmd/reportjob -run TestDeliveryE2E -v
func TestDeliveryE2E(t *testing.T) {
	t.Parallel()
	bin := procBinary(t)
	for _, backend := range []string{"embedded", "aws"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			d := newDlv(t, bin, backend)
			sum := d.r.run(dlvNow, map[string]any{"status": "ok", "months_closed": float64(1)})
			mids, events, man := d.expected(t)
			failing := []string{"gamma"}
			if backend == "embedded" {
				failing = []string{"delta", "gamma"}
			}
			dl, _ := sum["delivery"].(map[string]any)
			if dl == nil || dl["sent"] != float64(len(mids)+len(events)) || dl["failed"] != float64(len(failing)) || dl["pending"] != float64(len(failing)) {
				t.Fatalf("run's delivery %v: want %d sent (%d e-mails, %d events), %d failed and pending", dl, len(mids)+len(events), len(mids), len(events), len(failing))
			}
			var failedTargets []string
			for _, f := range dl["failures"].([]any) {
				fm := f.(map[string]any)
				failedTargets = append(failedTargets, fm["target"].(string))
				if fm["target"] == "gamma" && !strings.Contains(fm["error"].(string), delivery.ErrNoAddress.Error()) {
					t.Errorf("gamma's failure %v: want %q", fm, delivery.ErrNoAddress)
				}
				if fm["target"] == "delta" && !strings.Contains(fm["error"].(string), mail.ErrRefused.Error()) {
					t.Errorf("delta's failure %v: want %q", fm, mail.ErrRefused)
				}
			}
			slices.Sort(failedTargets)
			if !slices.Equal(failedTargets, failing) {
				t.Errorf("failed targets %v, want %v", failedTargets, failing)
			}

			got := d.mails(t)
			for _, a := range d.agencies {
				m := got[a.id]
				if !a.mailed() {
					if len(m.ids) != 0 {
						t.Errorf("%s: %d messages, want none", a.id, len(m.ids))
					}
					continue
				}
				if len(m.ids) != 1 || m.ids[0] != mids[a.id] {
					t.Fatalf("%s: Message-IDs %v, want exactly one %s", a.id, m.ids, mids[a.id])
				}
				full, err := d.mp.Get(t.Context(), m.messages[0].ID)
				if err != nil {
					t.Fatal(err)
				}
				var to []string
				for _, x := range full.To {
					to = append(to, x.Address)
				}
				if !slices.Equal(to, a.emails) || len(full.Bcc) != 1 || full.Bcc[0].Address != "archive-"+d.tag+"@example.com" {
					t.Errorf("%s: to %v bcc %v, want %v and the archive", a.id, to, full.Bcc, a.emails)
				}
				loc := locale.English()
				if a.locale != "" {
					loc, _ = locale.Parse(a.locale)
				}
				number := man.Month + "/" + a.id
				if n := statementNumber(man, a.id); n != "" {
					number = n
				}
				if want := loc.T("mail.subject", "issuer", "e2e", "number", number, "month", loc.Month("2026-01")); full.Subject != want {
					t.Errorf("%s: subject %q, want %q", a.id, full.Subject, want)
				}
				if len(full.Attachments) != 2 {
					t.Fatalf("%s: %d attachments, want the PDF and the CSV", a.id, len(full.Attachments))
				}
				for i, ext := range []string{".pdf", ".csv"} {
					want, _ := d.sinkFile(t, man, a.id, ext)
					b, err := d.mp.Part(t.Context(), full.ID, full.Attachments[i].PartID)
					if err != nil {
						t.Fatal(err)
					}
					sum := sha256.Sum256(b)
					if hex.EncodeToString(sum[:]) != want || !strings.HasSuffix(full.Attachments[i].FileName, ext) {
						t.Errorf("%s: attachment %s has sha256 %x, the delivered %s %s", a.id, full.Attachments[i].FileName, sum, ext, want)
					}
				}
			}
			counts := d.rcv.counts()
			if d.rcv.badSig.Load() != 0 || len(counts) != len(events) {
				t.Fatalf("receiver: %d bad signatures, %d event ids %v, want %d", d.rcv.badSig.Load(), len(counts), counts, len(events))
			}
			for id, typ := range events {
				if counts[id] != 1 {
					t.Errorf("event %s (%s) delivered %d times", id, typ, counts[id])
				}
				var ev struct {
					Type string         `json:"type"`
					Data map[string]any `json:"data"`
				}
				if err := json.Unmarshal([]byte(d.rcv.bodies[id]), &ev); err != nil || ev.Type != typ || ev.Data["job"] != "e2e" {
					t.Errorf("event %s body %s: %v", id, d.rcv.bodies[id], err)
				}
			}

			// status shows what keeps failing.
			st, _ := d.r.cli(0, "status", "--json", "--now", dlvNow)
			sd, _ := st["delivery"].(map[string]any)
			if sd == nil || sd["pending"] != float64(len(failing)) || len(sd["failing"].([]any)) != len(failing) {
				t.Errorf("status delivery %v, want %d pending and failing", sd, len(failing))
			}
			// The next run retries them (and only them).
			sum = d.r.run(dlvNow, nil)
			if dl := sum["delivery"].(map[string]any); dl["sent"] != float64(0) || dl["failed"] != float64(len(failing)) {
				t.Errorf("second run's delivery %v: want nothing sent, %d failed again", dl, len(failing))
			}
			// --send: nothing new for acme; gamma still has no address (exit 1).
			if sd, _ := d.r.cli(0, "statement", "--send", "--month", "2026-01", "--agency", "acme"); sd["delivery"].(map[string]any)["sent"] != float64(0) {
				t.Errorf("statement --send of a statement sent already: %v", sd)
			}
			if sd, _ := d.r.cli(1, "statement", "--send", "--agency", "gamma"); sd["status"] != "failed" || !strings.Contains(sd["error"].(string), "gamma") {
				t.Errorf("statement --send to an agency without an address: %v", sd)
			}
			// A deliberate resend is a new message.
			rs, _ := d.r.cli(0, "statement", "--resend", "--month", "2026-01", "--agency", "acme")
			if rs["delivery"].(map[string]any)["resent"] != float64(1) {
				t.Errorf("statement --resend: %v", rs)
			}
			again := d.mails(t)["acme"]
			wantResend := mail.MessageID("e2e", "2026-01", "acme", man.StatementRevision, 1, "example.com")
			if len(again.ids) != 2 || !slices.Contains(again.ids, wantResend) || !slices.Contains(again.ids, mids["acme"]) {
				t.Errorf("after --resend acme has %v, want %s and %s", again.ids, mids["acme"], wantResend)
			}
			// events replay: the same ids again.
			ev, _ := d.r.cli(0, "events", "replay", "--since", "2026-01-01")
			if ev["delivery"].(map[string]any)["resent"] != float64(len(events)) {
				t.Errorf("events replay: %v", ev)
			}
			for id := range events {
				if c := d.rcv.counts()[id]; c != 2 {
					t.Errorf("event %s: %d deliveries after a replay, want 2", id, c)
				}
			}
			fmt.Println("delivery e2e", backend, "ok")
		})
	}
}
