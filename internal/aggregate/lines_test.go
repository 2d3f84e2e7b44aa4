package aggregate

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/pricing"
	"github.com/reportjob/reportjob/internal/report"
)

// lineTxs returns n transactions with distinct (partition key, sort key)
// pairs, as a table holds them, shuffled: agency ids that are prefixes of
// one another or differ only in case, three currencies, every sort key in
// three partitions (so the partition key decides their order), refunds,
// own rates, optional ids, millisecond times.
func lineTxs(n int, seed uint64) []item.Transaction {
	r := rand.New(rand.NewPCG(seed, 7))
	agencies := []string{"a", "a b", "a-", "ab", "A", "b", "é", "%2F"}
	currencies := []money.Currency{usd, jpy, bhd}
	pks := []string{"202405011000", "202405011000#1", "202405011015"}
	out := make([]item.Transaction, n)
	for i := range out {
		tx := item.Transaction{
			PK:         pks[i%3],
			SK:         fmt.Sprintf("2024-05-01T10:%02d:%02d.%016d", i/3/60%60, i/3%60, i/3),
			ID:         fmt.Sprintf("tx-%d", i),
			AgencyID:   agencies[r.IntN(len(agencies))],
			Currency:   currencies[r.IntN(len(currencies))],
			Kind:       item.Purchase,
			Amount:     1 + r.Int64N(1_000_000),
			RecordedAt: testPeriod.Start.UTC().Add(time.Duration(r.IntN(3_600_000)) * time.Millisecond),
		}
		if r.IntN(4) == 0 {
			tx.Kind = item.Refund
		}
		if r.IntN(3) == 0 {
			tx.BPS, tx.HasBPS = int32(r.IntN(10001)), true
		}
		if r.IntN(2) == 0 {
			tx.CustomerID = fmt.Sprintf("cust-%d", r.IntN(100))
		}
		if r.IntN(2) == 0 {
			tx.ProductID = fmt.Sprintf("prod-%d", r.IntN(100))
		}
		out[i] = tx
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func compareTx(x, y item.Transaction) int {
	return cmp.Or(strings.Compare(x.AgencyID, y.AgencyID), strings.Compare(x.Currency.Code, y.Currency.Code),
		strings.Compare(x.SK, y.SK), strings.Compare(x.PK, y.PK))
}

func dirLen(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestLines: the line items come out in (agency, currency, sort key,
// partition key) order, whole, with their rate and commission, the same
// whether the sort stayed in memory or spilled to disk; spill files are
// gone after Close.
func TestLines(t *testing.T) {
	const n = 3000
	txs := lineTxs(n, 1)
	rates := flatRates(1000, map[string]int32{"a": 1500, "é": 0})
	want := slices.Clone(txs)
	slices.SortFunc(want, compareTx)

	var results [][]report.LineItem
	for _, tt := range []struct {
		name  string
		mem   int
		spill bool
	}{
		{"in memory", 0, false},
		{"spilled", 4 << 10, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			a := New(testPeriod, Options{Prices: rates.Pricer(), LineItems: true, Dir: dir, SortMemBytes: tt.mem})
			for i := range txs {
				if err := a.Add(&txs[i]); err != nil {
					t.Fatal(err)
				}
			}
			got := drain(t, a)
			if spilled := dirLen(t, dir) > 0; spilled != tt.spill {
				t.Errorf("spill files in the folder: %v, want %v", spilled, tt.spill)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if k := dirLen(t, dir); k != 0 {
				t.Errorf("%d files left in the folder after Close", k)
			}
			if len(got) != n {
				t.Fatalf("%d line items, want %d", len(got), n)
			}
			for i, li := range got {
				w := want[i]
				if !li.Tx.RecordedAt.Equal(w.RecordedAt) || li.Tx.RecordedAt.Location() != time.UTC {
					t.Fatalf("line %d recorded_at %v, want %v UTC", i, li.Tx.RecordedAt, w.RecordedAt)
				}
				g := li.Tx
				g.RecordedAt = w.RecordedAt
				if g != w {
					t.Fatalf("line %d = %+v\nwant %+v", i, g, w)
				}
				bps := rates.Of(&w)
				if li.BPS != bps || li.Commission != Commission(&w, bps) {
					t.Errorf("line %d (%s): bps %d commission %d, want %d %d", i, w.ID, li.BPS, li.Commission, bps, Commission(&w, bps))
				}
			}
			results = append(results, got)
		})
	}
	if len(results) == 2 && !slices.Equal(results[0], results[1]) {
		t.Error("spilled line items differ from the in-memory ones")
	}
}

// TestLinesOrderExamples pins the order on hand-picked keys: bytewise on
// each field in turn, a prefix first, the partition key last.
func TestLinesOrderExamples(t *testing.T) {
	mk := func(agency string, c money.Currency, sk, pk string) item.Transaction {
		return item.Transaction{PK: pk, SK: sk, ID: agency + c.Code + sk + pk, AgencyID: agency, Currency: c,
			Kind: item.Purchase, Amount: 100, RecordedAt: testPeriod.Start.UTC()}
	}
	want := []item.Transaction{
		mk("A", usd, "s1", "p1"),
		mk("a", jpy, "s2", "p1"), // currency before sort key
		mk("a", usd, "s1", "p1"),
		mk("a", usd, "s1", "p2"), // partition key last
		mk("a", usd, "s10", "p1"),
		mk("a", usd, "s2", "p0"),
		mk("a b", eur, "s0", "p0"), // "a" is a prefix of "a b"
		mk("a-", eur, "s0", "p0"),
		mk("ab", eur, "s0", "p0"),
		mk("é", eur, "s0", "p0"), // UTF-8 bytes after ASCII
	}
	in := slices.Clone(want)
	slices.Reverse(in)
	a := New(testPeriod, Options{Prices: pricing.Flat(1000).Pricer(), LineItems: true, Dir: t.TempDir()})
	defer a.Close()
	for i := range in {
		if err := a.Add(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	got := drain(t, a)
	for i := range want {
		if i >= len(got) || got[i].Tx.ID != want[i].ID {
			var ids []string
			for _, li := range got {
				ids = append(ids, li.Tx.ID)
			}
			t.Fatalf("order:\n%q\nwant position %d = %q", ids, i, want[i].ID)
		}
	}
}

// TestCloseWithoutLines: Close removes the spill files of line items that
// were never read.
func TestCloseWithoutLines(t *testing.T) {
	dir := t.TempDir()
	a := New(testPeriod, Options{Prices: pricing.Flat(1000).Pricer(), LineItems: true, Dir: dir, SortMemBytes: 4 << 10})
	txs := lineTxs(2000, 3)
	for i := range txs {
		if err := a.Add(&txs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if k := dirLen(t, dir); k != 0 {
		t.Errorf("%d files left in the folder after Close", k)
	}
}

// TestLinesReadAhead: the line items read ahead stop at a corrupt record
// with its error, after the items before it; Close stops the reading
// anywhere, and Next is false after it.
func TestLinesReadAhead(t *testing.T) {
	const n = 5 * linesBatch * linesAhead
	txs := lineTxs(n, 3)
	for _, stopAt := range []int{0, 1, linesBatch - 1, linesBatch, 3 * linesBatch, n} {
		t.Run(fmt.Sprint("close after ", stopAt), func(t *testing.T) {
			a := New(testPeriod, Options{Prices: pricing.Flat(1000).Pricer(), LineItems: true, Dir: t.TempDir(), SortMemBytes: 64 << 10})
			defer a.Close()
			for i := range txs {
				if err := a.Add(&txs[i]); err != nil {
					t.Fatal(err)
				}
			}
			lines, err := a.Lines()
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for got < stopAt && lines.Next() {
				got++
			}
			lines.Close()
			lines.Close()
			if got != stopAt || lines.Next() || lines.Err() != nil {
				t.Errorf("read %d, Next after Close, err %v; want %d, false, nil", got, lines.Err(), stopAt)
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		a := New(testPeriod, Options{Prices: pricing.Flat(1000).Pricer(), LineItems: true, Dir: t.TempDir()})
		defer a.Close()
		for i := range txs {
			if err := a.Add(&txs[i]); err != nil {
				t.Fatal(err)
			}
		}
		// Sorts after every agency of lineTxs: the last record.
		if err := a.lines.Add([]byte("\xff\x00x\x00pk\x00sk"), []byte{1}); err != nil {
			t.Fatal(err)
		}
		lines, err := a.Lines()
		if err != nil {
			t.Fatal(err)
		}
		defer lines.Close()
		got := 0
		for lines.Next() {
			got++
		}
		if got != n || !errors.Is(lines.Err(), item.ErrCorruptRecord) {
			t.Errorf("read %d, err %v; want %d, then %v", got, lines.Err(), n, item.ErrCorruptRecord)
		}
	})
}
