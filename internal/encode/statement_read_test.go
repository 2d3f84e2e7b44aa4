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
