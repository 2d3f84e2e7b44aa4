package encode

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// encodingCSVLineItems is the transactions CSV as encoding/csv writes it
// (the writer LineItemCSVWriter replaced): the reference its bytes must
// equal.
func encodingCSVLineItems(t testing.TB, rows []report.LineItem) []byte {
	t.Helper()
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	cw.UseCRLF = true
	if err := cw.Write(lineItemCSVHeader); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		tx := &rows[i].Tx
		c := tx.Currency
		if err := cw.Write([]string{
			csvText(tx.ID), csvText(tx.AgencyID), csvText(tx.CustomerID), csvText(tx.ProductID), string(tx.Kind), csvText(c.Code),
			c.Format(tx.Amount), c.Format(rows[i].Commission), strconv.FormatInt(int64(rows[i].BPS), 10),
			csvTime(tx.RecordedAt), csvText(tx.PK), csvText(tx.SK),
		}); err != nil {
			t.Fatal(err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func lineItemCSVBytes(t testing.TB, rows []report.LineItem) []byte {
	t.Helper()
	var b bytes.Buffer
	lw := NewLineItemCSVWriter(&b)
	for i := range rows {
		if err := lw.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if lw.Rows() != int64(len(rows)) {
		t.Errorf("Rows() = %d, want %d", lw.Rows(), len(rows))
	}
	return b.Bytes()
}

// csvEdgeTexts are cells encoding/csv quotes, or nearly does.
var csvEdgeTexts = []string{
	"", "acme", "=1", "+1", "-1", "@x", "\t=1", "\r=1", " a", "a ", "\u00a0a", "\u2003a", "\u0085a", "\x85a", "\xa0a",
	`\.`, `'\.`, "\\", "a,b", `a"b`, `"`, "a\nb", "a\rb", "a\r\nb", "\n", "\r", "\v1", "\f1", "'", "é", "\xff",
	"=HYPERLINK(\"http://x\")", "tx-1", "2024-05-01T10:00:00.1111111111111111",
}

// TestLineItemCSVSameAsEncodingCSV: the append-based writer gives the
// bytes of encoding/csv for every edge cell, amount and digit count, and
// across the flush threshold.
func TestLineItemCSVSameAsEncodingCSV(t *testing.T) {
	amounts := []int64{0, 1, -1, 5, -5, 99, 100, 12345, -12345, 10000, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	var rows []report.LineItem
	for i, s := range csvEdgeTexts {
		for d := 0; d <= 4; d++ {
			a := amounts[(i+d)%len(amounts)]
			rows = append(rows, report.LineItem{
				Tx: item.Transaction{PK: s, SK: s, ID: s, AgencyID: s, CustomerID: s, ProductID: s,
					Kind: item.Kind(s), Currency: money.Currency{Code: s, Digits: d}, Amount: a,
					RecordedAt: at.Add(time.Duration(i*d) * 250 * time.Microsecond)},
				BPS: int32(i - 3), Commission: amounts[(i+2*d+1)%len(amounts)],
			})
		}
	}
	for _, a := range amounts {
		for d := 0; d <= 4; d++ {
			rows = append(rows, report.LineItem{Tx: item.Transaction{ID: "x", Currency: money.Currency{Code: "C", Digits: d},
				Amount: a, Kind: item.Purchase, RecordedAt: at}, Commission: -a})
		}
	}
	rows = append(rows, genLineItems(2000)...) // past lineCSVFlush
	got, want := lineItemCSVBytes(t, rows), encodingCSVLineItems(t, rows)
	if !bytes.Equal(got, want) {
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(gl), len(wl)) {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Fatalf("line %d:\n got %q\nwant %q", i, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
}

// FuzzLineItemCSVSameAsEncodingCSV: the same, for any text and amount.
func FuzzLineItemCSVSameAsEncodingCSV(f *testing.F) {
	for _, s := range csvEdgeTexts {
		f.Add(s, int64(-500), uint8(2))
	}
	f.Fuzz(func(t *testing.T, s string, amount int64, digits uint8) {
		c := money.Currency{Code: s, Digits: int(digits % 5)}
		rows := []report.LineItem{{Tx: item.Transaction{PK: s, SK: s, ID: s, AgencyID: s, CustomerID: s, ProductID: s,
			Kind: item.Kind(s), Currency: c, Amount: amount, RecordedAt: time.Unix(0, amount).UTC()}, Commission: amount / 7}}
		if got, want := lineItemCSVBytes(t, rows), encodingCSVLineItems(t, rows); !bytes.Equal(got, want) {
			t.Fatalf("got  %q\nwant %q", got, want)
		}
	})
}

// BenchmarkLineItemCSV writes 200,000 line items per iteration.
func BenchmarkLineItemCSV(b *testing.B) {
	const n = 200_000
	rows := genLineItems(n)
	b.ReportAllocs()
	for b.Loop() {
		cw := &countingWriter{}
		lw := NewLineItemCSVWriter(cw)
		for i := range rows {
			if err := lw.Write(&rows[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := lw.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestHasCSVSpecial: the word-at-a-time test agrees with csvSpecial, byte
// by byte, for each special byte and its neighbours at every position of
// strings up to three words long.
func TestHasCSVSpecial(t *testing.T) {
	probes := []byte{',', '"', '\r', '\n', '+', '!', '#', '\t', 0, 0x80, 0xac, 0xff, 'a'}
	for n := 0; n <= 24; n++ {
		for pos := range n {
			for _, c := range probes {
				b := bytes.Repeat([]byte{'x'}, n)
				b[pos] = c
				s := string(b)
				want := false
				for i := 0; i < len(s); i++ {
					want = want || csvSpecial[s[i]]
				}
				if got := hasCSVSpecial(s); got != want {
					t.Fatalf("hasCSVSpecial(%q) = %t, want %t", s, got, want)
				}
			}
		}
	}
}

// TestAppendCSVTime: the hand-written format is csvTime's, from the first
// year to the last of the 4-digit ones and past them, at every fraction
// length.
func TestAppendCSVTime(t *testing.T) {
	var times []time.Time
	for _, y := range []int{-1, 0, 1, 9, 10, 99, 100, 999, 1000, 1677, 1970, 1999, 2000, 2024, 2262, 9999, 10000} {
		for _, ns := range []int{0, 1, 10, 100_000, 120_000_000, 123_456_789, 500_000_000, 999_999_999} {
			times = append(times, time.Date(y, time.December, 31, 23, 59, 59, ns, time.UTC), time.Date(y, time.January, 1, 0, 0, 0, ns, time.UTC))
		}
	}
	times = append(times, time.Date(2024, 2, 29, 12, 30, 5, 7, time.FixedZone("x", 5*3600+1800)), time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64), time.Time{})
	for _, at := range times {
		if got, want := string(appendCSVTime([]byte("x"), at)), "x"+csvTime(at); got != want {
			t.Errorf("appendCSVTime(%v) = %q, want %q", at, got, want)
		}
	}
}
