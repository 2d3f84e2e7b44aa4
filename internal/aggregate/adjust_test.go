package aggregate

import (
	"testing"

	"github.com/reportjob/reportjob/internal/report"
)

func TestCurrencyTotals(t *testing.T) {
	rows := []report.SummaryRow{
		row("a", bhd, 1, 1, "1.500", "2.000", "-0.500", "-0.050"),
		row("a", usd, 2, 1, "25.00", "5.00", "20.00", "2.00"),
		row("b", usd, 0, 1, "0", "10.00", "-10.00", "-1.00"),
		row("big", usd, 3, 0, "123456789012345678901.23", "0", "123456789012345678901.23", "12345678901234567890.12"),
		row("c", jpy, 1, 0, "1500", "0", "1500", "150"),
	}
	got, err := CurrencyTotals(rows)
	if err != nil {
		t.Fatal(err)
	}
	want := []report.CurrencyTotal{
		{Currency: "BHD", Agencies: 1, PurchaseCount: 1, RefundCount: 1, Gross: "1.500", Refunds: "2.000", Net: "-0.500", Commission: "-0.050"},
		{Currency: "JPY", Agencies: 1, PurchaseCount: 1, Gross: "1500", Refunds: "0", Net: "1500", Commission: "150"},
		{Currency: "USD", Agencies: 3, PurchaseCount: 5, RefundCount: 2,
			Gross: "123456789012345678926.23", Refunds: "15.00", Net: "123456789012345678911.23", Commission: "12345678901234567891.12"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("totals[%d] = %+v\nwant %+v", i, got[i], want[i])
		}
	}

	// No rows: an empty list, not nil (the manifest says "totals": []).
	if got, err := CurrencyTotals(nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("CurrencyTotals(nil) = %#v, %v; want an empty non-nil slice", got, err)
	}
}

// TestAdjustments: per (agency, currency), cur - prev for every pair that
// differs; added pairs positive, removed ones negative, unchanged ones
// omitted; sorted; the revision set on each.
func TestAdjustments(t *testing.T) {
	const big = "123456789012345678901.23"
	prev := []report.SummaryRow{
		row("A", usd, 1, 0, "10.00", "0", "10.00", "1.00"),
		row("a", usd, 2, 1, "25.00", "5.00", "20.00", "2.00"),
		row("b", eur, 1, 0, "3.00", "0", "3.00", "0.30"),
		row("big", usd, 1, 0, big, "0", big, "1.00"),
		row("c", jpy, 1, 0, "1500", "0", "1500", "150"),
	}
	cur := []report.SummaryRow{
		row("A", usd, 1, 0, "10.00", "0", "10.00", "1.50"), // commission only (a rate changed)
		row("a", eur, 1, 0, "7.00", "0", "7.00", "0.70"),   // a currency added to an agency
		row("a", usd, 2, 2, "25.00", "8.00", "17.00", "1.70"),
		row("b", eur, 1, 0, "3.00", "0", "3.00", "0.30"), // unchanged
		row("big", usd, 1, 0, "0.01", "0", "0.01", "1.00"),
		// c removed
		row("d", jpy, 0, 1, "0", "100", "-100", "-10"), // an agency added
	}
	adj := func(r report.SummaryRow, rev int32) report.AdjustmentRow {
		return report.AdjustmentRow{SummaryRow: r, Revision: rev}
	}
	tests := []struct {
		name      string
		prev, cur []report.SummaryRow
		want      []report.AdjustmentRow
	}{
		{"restated", prev, cur, []report.AdjustmentRow{
			adj(row("A", usd, 0, 0, "0", "0", "0", "0.50"), 4),
			adj(row("a", eur, 1, 0, "7.00", "0", "7.00", "0.70"), 4),
			adj(row("a", usd, 0, 1, "0", "3.00", "-3.00", "-0.30"), 4),
			adj(row("big", usd, 0, 0, "-123456789012345678901.22", "0", "-123456789012345678901.22", "0"), 4),
			adj(row("c", jpy, -1, 0, "-1500", "0", "-1500", "-150"), 4),
			adj(row("d", jpy, 0, 1, "0", "100", "-100", "-10"), 4),
		}},
		{"unchanged", prev, prev, nil},
		{"both empty", nil, nil, nil},
		{"all added", nil, prev[:2], []report.AdjustmentRow{adj(prev[0], 4), adj(prev[1], 4)}},
		{"all removed", prev[3:], nil, []report.AdjustmentRow{
			adj(row("big", usd, -1, 0, "-"+big, "0", "-"+big, "-1.00"), 4),
			adj(row("c", jpy, -1, 0, "-1500", "0", "-1500", "-150"), 4),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Adjustments(tt.prev, tt.cur, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d rows, want %d:\n%+v", len(got), len(tt.want), got)
			}
			for i := range tt.want {
				if got[i].Revision != tt.want[i].Revision {
					t.Errorf("row %d revision %d, want %d", i, got[i].Revision, tt.want[i].Revision)
				}
			}
			gotRows := make([]report.SummaryRow, len(got))
			wantRows := make([]report.SummaryRow, len(got))
			for i := range got {
				gotRows[i], wantRows[i] = got[i].SummaryRow, tt.want[i].SummaryRow
			}
			checkRows(t, gotRows, wantRows)
		})
	}
}
