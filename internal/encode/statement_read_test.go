package encode

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/statement"
)

// TestStatementCSVRoundTrip: an agency's statement CSV read back gives
// every line it printed (what a lost PDF of a final month is made again
// from), with the digest chain and with a legacy one.
func TestStatementCSVRoundTrip(t *testing.T) {
	usd, err := money.LookupCurrency("USD")
	if err != nil {
		t.Fatal(err)
	}
	p := report.Period{Start: time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 1, 11, 0, 0, 0, 0, time.UTC)}
	tot := statement.Totals{PurchaseCount: 2, RefundCount: 1, Gross: money.TotalOf(1000), Refunds: money.TotalOf(-300),
		Net: money.TotalOf(700), Commission: money.TotalOf(-56)}
	for _, legacy := range []bool{false, true} {
		s := &statement.Agency{AgencyID: "=acme", Month: "2026-02", Status: statement.Final, Revision: 3, LegacyChain: legacy,
			Lines:       []statement.Line{{Currency: usd, Totals: tot, PriorPeriodAdjustments: money.TotalOf(8), CommissionDue: money.TotalOf(-48)}},
			Days:        []statement.Day{{Date: "2026-02-01", Currency: usd, Totals: tot}},
			Adjustments: []statement.Adjustment{{Period: p, ToRevision: 2, Reason: "recheck", Digest: "d2", Currency: usd, Totals: tot}},
			Periods:     []statement.PeriodRef{{Period: p, Revision: 1, Digest: "d1", ManifestSHA256: "m1"}},
		}
		var b bytes.Buffer
		if err := WriteStatementCSV(&b, s); err != nil {
			t.Fatal(err)
		}
		got, err := ReadStatementCSV(bytes.NewReader(b.Bytes()), s.AgencyID)
		if err != nil {
			t.Fatalf("legacy %v: %v\n%s", legacy, err, b.String())
		}
		want := *s
		if legacy {
			want.Periods = []statement.PeriodRef{{Period: p, Revision: 1, ManifestSHA256: "m1"}}
			want.Adjustments = []statement.Adjustment{want.Adjustments[0]}
			want.Adjustments[0].Digest = ""
		} else {
			want.Periods = []statement.PeriodRef{{Period: p, Revision: 1, Digest: "d1"}}
		}
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("legacy %v: read back\n%+v\nwant\n%+v", legacy, got, &want)
		}
	}
}

// TestStatementNumberLayouts: a numbered statement with rate lines is
// written with statement_number, date_to and commission_bps and read back
// whole (an unknown rate too); its Parquet row carries the number; an
// unnumbered statement keeps the layout of before numbers in both files
// (TestStatementCSVRoundTrip reads it back).
func TestStatementNumberLayouts(t *testing.T) {
	eur, err := money.LookupCurrency("EUR")
	if err != nil {
		t.Fatal(err)
	}
	tot := statement.Totals{PurchaseCount: 1, Gross: money.TotalOf(1000), Net: money.TotalOf(1000), Commission: money.TotalOf(120)}
	s := &statement.Agency{AgencyID: "acme", Month: "2026-03", Status: statement.Draft, Revision: 2,
		Doc:   statement.Document{Number: "-job-202603-000007"},
		Lines: []statement.Line{{Currency: eur, Totals: tot, CommissionDue: money.TotalOf(120)}},
		Rates: []statement.RateLine{
			{Currency: eur, BPS: 1200, From: "2026-03-01", To: "2026-03-14", Base: money.TotalOf(500), Commission: money.TotalOf(60)},
			{Currency: eur, BPS: statement.UnknownBPS, From: "2026-03-15", To: "2026-03-15", Base: money.TotalOf(500), Commission: money.TotalOf(60)},
		},
		Days: []statement.Day{{Date: "2026-03-02", Currency: eur, Totals: tot}},
	}
	var b bytes.Buffer
	if err := WriteStatementCSV(&b, s); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b.Bytes(), []byte("agency_id,statement_number,month,")) || !bytes.Contains(b.Bytes(), []byte(",rate,2026-03-01,2026-03-14,")) {
		t.Errorf("csv:\n%s", b.String())
	}
	got, err := ReadStatementCSV(bytes.NewReader(b.Bytes()), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, s)
	}
	for _, numbered := range []bool{true, false} {
		c := *s
		if !numbered {
			c.Doc.Number = ""
		}
		var p bytes.Buffer
		if err := WriteStatementsParquet(&p, []*statement.Agency{&c}); err != nil {
			t.Fatal(err)
		}
		rows, err := ReadStatementsParquet(bytes.NewReader(p.Bytes()), int64(p.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].StatementNumber != c.Doc.Number || rows[0].CommissionDue != money.TotalOf(120) {
			t.Errorf("numbered %v: parquet rows %+v", numbered, rows)
		}
		if has := bytes.Contains(p.Bytes(), []byte("statement_number")); has != numbered {
			t.Errorf("numbered %v: the file has a statement_number column: %v", numbered, has)
		}
	}
}
