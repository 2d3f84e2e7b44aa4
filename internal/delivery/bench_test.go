package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/mail"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// BenchmarkPassMonth is the delivery pass of a final month of N agencies
// (RJBENCH_DELIVERY_AGENCIES, default 10,000) on the embedded store: each
// agency e-mailed (its PDF attached) and announced to one endpoint, the
// mailer and the poster accepting at once. It prints the pass's wall
// time and the live heap's peak (as of each collection, sampled every
// 5 ms) above what the fixture holds: what the outbox and the pass keep,
// which must not grow with the month. -benchtime 1x.
func BenchmarkPassMonth(b *testing.B) {
	n := 10000
	if v := os.Getenv("RJBENCH_DELIVERY_AGENCIES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	stmts, objects, dir := marketplaceMonth(n)
	b.StopTimer()
	for range b.N {
		st, err := embedded.Open(filepath.Join(b.TempDir(), "s.db"), embedded.Options{})
		if err != nil {
			b.Fatal(err)
		}
		l, err := st.Acquire(b.Context(), "j", "me", t0, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		ml, po := &countMailer{}, &fakePoster{}
		p := &Pass{Job: "j", Email: config.Email{Host: "smtp.example.com", From: "b@example.com", Attach: []string{"pdf"}},
			Webhooks:   []config.Webhook{{ID: "ep-1", URL: "https://x.example/h", SecretEnv: "S", Events: config.EventTypes}},
			Statements: stmts, Objects: objects, Directory: dir,
			Outbox: st, Mailer: ml, Poster: po, Getenv: func(string) string { return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
			Clock: func() time.Time { return t0 }}
		runtime.GC()
		base := liveHeap()
		var peak atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if h := liveHeap(); h > peak.Load() {
					peak.Store(h)
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		started := time.Now()
		b.StartTimer()
		res, err := p.Run(b.Context(), holder{l}, Options{})
		b.StopTimer()
		took := time.Since(started)
		close(stop)
		<-done
		if err != nil || res.MailSent != n || res.EventsSent != n+1 || res.Pending != 0 {
			b.Fatalf("pass: %+v, %v", res, err)
		}
		b.Logf("%d agencies: %d e-mails, %d events in %s; live heap's peak %d MB above the fixture's %d MB",
			n, ml.n, len(po.ids), took.Round(time.Millisecond), (peak.Load()-min(base, peak.Load()))>>20, base>>20)
		st.Close()
	}
}

// countMailer accepts every message, counting them.
type countMailer struct{ n int }

func (c *countMailer) Send(_ context.Context, _ *mail.Message) error { c.n++; return nil }

// liveHeap is the heap's live bytes as of the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// marketplaceMonth is a final March of n agencies, each with an address
// and a PDF.
func marketplaceMonth(n int) (fakeStatements, fakeObjects, fakeDir) {
	usd, _ := money.LookupCurrency("USD")
	pdf := []byte("%PDF statement")
	sum := sha256.Sum256(pdf)
	man := &monthclose.Manifest{Month: "2026-03", Status: string(statement.Final), StatementRevision: 1, GeneratedAt: t0}
	objects := fakeObjects{}
	dir := fakeDir{}
	rows := make([]encode.StatementRow, n)
	for i := range n {
		id := fmt.Sprintf("agency-%06d", i)
		key := report.AgencyMonthPrefix(id, "2026-03") + "statement-x.pdf"
		objects[key] = pdf
		dir[id] = Recipient{Emails: []string{id + "@example.com"}}
		man.Agencies = append(man.Agencies, monthclose.AgencyEntry{AgencyID: id, Revision: 1})
		man.Files = append(man.Files, report.FileInfo{Key: key, Bytes: int64(len(pdf)), SHA256: hex.EncodeToString(sum[:])})
		rows[i] = encode.StatementRow{Month: "2026-03", Status: "final", AgencyID: id, Currency: usd, StatementRevision: 1}
		rows[i].Line.Currency = usd
	}
	return fakeStatements{"2026-03": {Manifest: man, Rows: rows}}, objects, dir
}
