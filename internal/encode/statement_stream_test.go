package encode

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/statement"
)

// writeStatementsOneCall is WriteStatementsParquet as it was before the
// StatementsWriter: every row built, then handed to parquet-go in one call.
func writeStatementsOneCall(w io.Writer, stmts []*statement.Agency) error {
	var recs []statementRecordNumbered
	numbered := false
	for _, s := range stmts {
		numbered = numbered || s.Doc.Number != ""
		for _, l := range s.Lines {
			d := decimals{cur: l.Currency, what: func() string { return s.AgencyID }}
			recs = append(recs, statementRecordNumbered{
				Month: s.Month, Status: string(s.Status), AgencyID: s.AgencyID, Currency: l.Currency.Code,
				PurchaseCount: l.PurchaseCount, RefundCount: l.RefundCount,
				Gross: d.d38("gross_amount", l.Gross), Refunds: d.d38("refund_amount", l.Refunds),
				Net: d.d38("net_amount", l.Net), Commission: d.d38("commission_amount", l.Commission),
				PriorPeriodAdjustments: d.d38("prior_period_adjustments", l.PriorPeriodAdjustments),
				CommissionDue:          d.d38("commission_due", l.CommissionDue),
				StatementRevision:      int32(s.Revision), StatementNumber: s.Doc.Number,
			})
		}
	}
	if numbered {
		return writeAll(w, "statements", recs, parquetOptions())
	}
	v3 := make([]statementRecord, len(recs))
	for i, r := range recs {
		v3[i] = statementRecord{Month: r.Month, Status: r.Status, AgencyID: r.AgencyID, Currency: r.Currency,
			PurchaseCount: r.PurchaseCount, RefundCount: r.RefundCount, Gross: r.Gross, Refunds: r.Refunds, Net: r.Net,
			Commission: r.Commission, PriorPeriodAdjustments: r.PriorPeriodAdjustments, CommissionDue: r.CommissionDue,
			StatementRevision: r.StatementRevision}
	}
	return writeAll(w, "statements", v3, parquetOptions())
}

// TestStatementsWriterSameBytes: the statements Parquet written agency by
// agency in batches (its pages in memory or in temp files) has the bytes of
// the one-call write, in both layouts,
// for sizes around the batch and page boundaries (many pages: 40,000 rows).
func TestStatementsWriterSameBytes(t *testing.T) {
	var curs []money.Currency
	for _, code := range []string{"EUR", "JPY", "USD"} {
		c, err := money.LookupCurrency(code)
		if err != nil {
			t.Fatal(err)
		}
		curs = append(curs, c)
	}
	for _, n := range []int{0, 1, 63, 64, 65, statementsBatch - 1, statementsBatch, statementsBatch + 1, 3*statementsBatch + 17, 20_000} {
		for _, numbered := range []bool{true, false} {
			stmts := make([]*statement.Agency, n)
			for i := range stmts {
				s := &statement.Agency{AgencyID: fmt.Sprintf("agency-%06d", i), Month: "2026-01", Status: statement.Final, Revision: 1 + i%3}
				if numbered {
					s.Doc.Number = statement.FormatNumber("acme", "2026-01", i+1)
				}
				for j := range 1 + i%2 {
					c := curs[(i+j)%len(curs)]
					s.Lines = append(s.Lines, statement.Line{Currency: c, Totals: statement.Totals{PurchaseCount: int64(i), RefundCount: int64(j),
						Gross: money.TotalOf(int64(i * 1000)), Net: money.TotalOf(int64(i * 900)), Commission: money.TotalOf(int64(i * 7))},
						CommissionDue: money.TotalOf(int64(i * 7))})
				}
				stmts[i] = s
			}
			var want, got bytes.Buffer
			if err := writeStatementsOneCall(&want, stmts); err != nil {
				t.Fatal(err)
			}
			if err := WriteStatementsParquet(&got, stmts); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%d agencies, numbered %v: the batched write differs from the one-call write (%d bytes, want %d)",
					n, numbered, got.Len(), want.Len())
			}
			// Its pages held in temp files until the footer: the same bytes
			// (for a file with rows: NewStatementsWriter).
			if n == 0 {
				continue
			}
			var paged bytes.Buffer
			sw := NewStatementsWriter(&paged, numbered, t.TempDir())
			for _, s := range stmts {
				if err := sw.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			if err := sw.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(paged.Bytes(), want.Bytes()) {
				t.Errorf("%d agencies, numbered %v: the write with file page buffers differs from the one-call write (%d bytes, want %d)",
					n, numbered, paged.Len(), want.Len())
			}
		}
	}
}
