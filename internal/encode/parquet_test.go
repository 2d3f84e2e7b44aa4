package encode

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/reportjob/reportjob/internal/money"
	"github.com/reportjob/reportjob/internal/report"
)

// The schemas as parquet-go prints them: SPEC section 4's columns, in its
// order, with its physical and logical types.
const (
	summarySchema = `message summaryRecord {
	required int64 period_start (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));
	required int64 period_end (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));
	required binary agency_id (STRING);
	required binary currency (STRING);
	required int64 purchase_count (INT(64,true));
	required int64 refund_count (INT(64,true));
	required fixed_len_byte_array(16) gross_amount (DECIMAL(38,4));
	required fixed_len_byte_array(16) refund_amount (DECIMAL(38,4));
	required fixed_len_byte_array(16) net_amount (DECIMAL(38,4));
	required fixed_len_byte_array(16) commission_amount (DECIMAL(38,4));
}`
	adjustmentsSchema = `message adjustmentRecord {
	required int64 period_start (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));
	required int64 period_end (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));
	required binary agency_id (STRING);
	required binary currency (STRING);
	required int64 purchase_count (INT(64,true));
	required int64 refund_count (INT(64,true));
	required fixed_len_byte_array(16) gross_amount (DECIMAL(38,4));
	required fixed_len_byte_array(16) refund_amount (DECIMAL(38,4));
	required fixed_len_byte_array(16) net_amount (DECIMAL(38,4));
	required fixed_len_byte_array(16) commission_amount (DECIMAL(38,4));
	required int32 revision (INT(32,true));
}`
	lineItemSchema = `message lineItemRecord {
	required binary transaction_id (STRING);
	required binary agency_id (STRING);
	optional binary customer_id (STRING);
	optional binary product_id (STRING);
	required binary kind (STRING);
	required binary currency (STRING);
	required int64 amount (DECIMAL(18,4));
	required int64 commission_amount (DECIMAL(18,4));
	required int32 commission_bps (INT(32,true));
	required int64 recorded_at (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));
	required binary partition_key (STRING);
	required binary sort_key (STRING);
}`
)

func summaryParquet(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSummaryParquet(&b, summaryRows()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func adjustmentsParquet(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteAdjustmentsParquet(&b, adjustmentRows()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestParquetGolden pins the bytes of each kind of file and checks that
// two writes of the same rows are equal: names carry the content hash, so
// a rebuild must give the same bytes.
func TestParquetGolden(t *testing.T) {
	tests := []struct {
		name  string
		write func(testing.TB) []byte
	}{
		{"summary.parquet", summaryParquet},
		{"adjustments.parquet", adjustmentsParquet},
		// Layout 1 is the layout of every period delivered before layouts
		// were recorded, and a layout's bytes never change (a rebuild
		// compares them). The period's file of a layout is its agency's at
		// this size (pages differ past 256 KiB: see
		// TestLineItemLayoutsAreTheMeasured).
		{"transactions.parquet", func(t testing.TB) []byte {
			return writeLineItemsLayout(t, report.ParquetLayout1, false, lineItems())
		}},
		{"transactions-layout2.parquet", func(t testing.TB) []byte {
			return writeLineItemsLayout(t, report.ParquetLayout2, false, lineItems())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, second := tt.write(t), tt.write(t)
			if !bytes.Equal(first, second) {
				t.Fatal("two writes of the same rows differ")
			}
			golden(t, tt.name, first)
		})
	}
}

// TestParquetLayout checks the schema, codec, page version and encodings
// of each kind of file, and the footer's created_by and metadata.
func TestParquetLayout(t *testing.T) {
	tests := []struct {
		name   string
		b      []byte
		schema string
	}{
		{"summary", summaryParquet(t), summarySchema},
		{"adjustments", adjustmentsParquet(t), adjustmentsSchema},
		{"transactions layout 1", writeLineItemsLayout(t, report.ParquetLayout1, false, lineItems()), lineItemSchema},
		{"transactions layout 2", writeLineItemsLayout(t, report.ParquetLayout2, true, lineItems()), lineItemSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := openParquet(t, tt.b)
			if got := f.Schema().String(); got != tt.schema {
				t.Errorf("schema:\n%s\nwant:\n%s", got, tt.schema)
			}
			md := f.Metadata()
			if md.CreatedBy != parquetCreatedBy {
				t.Errorf("created_by = %q, want %q", md.CreatedBy, parquetCreatedBy)
			}
			if len(md.KeyValueMetadata) != 0 {
				t.Errorf("key/value metadata %v, want none (it would make files differ)", md.KeyValueMetadata)
			}
			if len(md.RowGroups) != 1 {
				t.Fatalf("%d row groups, want 1", len(md.RowGroups))
			}
			for _, c := range md.RowGroups[0].Columns {
				cm := c.MetaData
				if cm.Codec != format.Zstd {
					t.Errorf("column %v codec %v, want ZSTD", cm.PathInSchema, cm.Codec)
				}
				for _, e := range cm.Encoding {
					switch e {
					case format.Plain, format.RLE, format.RLEDictionary, format.PlainDictionary:
					default:
						t.Errorf("column %v uses encoding %v: old readers want PLAIN or dictionary", cm.PathInSchema, e)
					}
				}
				for _, s := range cm.EncodingStats {
					if s.PageType == format.DataPageV2 {
						t.Errorf("column %v has a v2 data page, want v1", cm.PathInSchema)
					}
				}
			}
		})
	}
}

// TestReadSummaryParquet reads a summary file back, totals past 10^18
// minor units and negative ones included, exactly as written.
func TestReadSummaryParquet(t *testing.T) {
	b := summaryParquet(t)
	got, err := ReadSummaryParquet(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	want := summaryRows()
	if len(got) != len(want) {
		t.Fatalf("read %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].PeriodStart.Equal(want[i].PeriodStart) || got[i].PeriodStart.Location().String() != "UTC" {
			t.Errorf("row %d period_start = %v, want %v UTC", i, got[i].PeriodStart, want[i].PeriodStart)
		}
		g, w := got[i], want[i]
		g.PeriodStart, g.PeriodEnd = w.PeriodStart, w.PeriodEnd
		if g != w {
			t.Errorf("row %d = %+v\nwant %+v", i, g, w)
		}
	}
	// An empty summary (an empty period's) reads as no rows.
	var empty bytes.Buffer
	if err := WriteSummaryParquet(&empty, nil); err != nil {
		t.Fatal(err)
	}
	if rows, err := ReadSummaryParquet(bytes.NewReader(empty.Bytes()), int64(empty.Len())); err != nil || len(rows) != 0 {
		t.Errorf("empty summary: %v, %v", rows, err)
	}
	big := got[len(got)-1]
	if s := usd.FormatTotal(big.Gross); s != bigAmount {
		t.Errorf("big gross = %s, want %s", s, bigAmount)
	}
	if s := usd.FormatTotal(big.Net); s != bigNet {
		t.Errorf("big net = %s, want %s", s, bigNet)
	}
}

func TestReadSummaryParquetErrors(t *testing.T) {
	t.Run("not parquet", func(t *testing.T) {
		b := []byte("PAR1 this is not a parquet file PAR1")
		if _, err := ReadSummaryParquet(bytes.NewReader(b), int64(len(b))); err == nil {
			t.Fatal("no error")
		}
	})
	// Files of another layout: read by column name, they would give wrong
	// amounts (v1's DECIMAL(18,4) on INT64) or panic (a missing column).
	type v1Record struct {
		PeriodStart   time.Time `parquet:"period_start,timestamp(millisecond)"`
		PeriodEnd     time.Time `parquet:"period_end,timestamp(millisecond)"`
		AgencyID      string    `parquet:"agency_id"`
		Currency      string    `parquet:"currency"`
		PurchaseCount int64     `parquet:"purchase_count"`
		RefundCount   int64     `parquet:"refund_count"`
		Gross         int64     `parquet:"gross_amount,decimal(4:18)"`
		Refunds       int64     `parquet:"refund_amount,decimal(4:18)"`
		Net           int64     `parquet:"net_amount,decimal(4:18)"`
		Commission    int64     `parquet:"commission_amount,decimal(4:18)"`
	}
	type renamedRecord struct { // agency instead of agency_id
		PeriodStart   time.Time `parquet:"period_start,timestamp(millisecond)"`
		PeriodEnd     time.Time `parquet:"period_end,timestamp(millisecond)"`
		AgencyID      string    `parquet:"agency"`
		Currency      string    `parquet:"currency"`
		PurchaseCount int64     `parquet:"purchase_count"`
		RefundCount   int64     `parquet:"refund_count"`
		Gross         [16]byte  `parquet:"gross_amount,decimal(4:38)"`
		Refunds       [16]byte  `parquet:"refund_amount,decimal(4:38)"`
		Net           [16]byte  `parquet:"net_amount,decimal(4:38)"`
		Commission    [16]byte  `parquet:"commission_amount,decimal(4:38)"`
	}
	type otherRecord struct {
		X int64 `parquet:"x"`
	}
	for _, tt := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"v1 summary", func(w io.Writer) error {
			return parquet.Write(w, []v1Record{{testPeriod.Start, testPeriod.End, "a", "CLF", 1, 0, 12345, 0, 12345, 1234}})
		}},
		{"renamed column", func(w io.Writer) error {
			return parquet.Write(w, []renamedRecord{{PeriodStart: testPeriod.Start, AgencyID: "a", Currency: "USD"}})
		}},
		{"another file", func(w io.Writer) error { return parquet.Write(w, []otherRecord{{5}}) }},
		{"adjustments", func(w io.Writer) error { return WriteAdjustmentsParquet(w, adjustmentRows()) }},
		{"transactions", func(w io.Writer) error { _, err := w.Write(writeLineItems(t, lineItems())); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			rows, err := ReadSummaryParquet(bytes.NewReader(b.Bytes()), int64(b.Len()))
			if err == nil || !strings.Contains(err.Error(), "not a summary file") {
				t.Fatalf("rows %+v, err %v; want a not-a-summary-file error", rows, err)
			}
		})
	}
	t.Run("unknown currency", func(t *testing.T) {
		rows := summaryRows()[:1]
		rows[0].Currency = money.Currency{Code: "XXX", Digits: 2}
		var b bytes.Buffer
		if err := WriteSummaryParquet(&b, rows); err != nil {
			t.Fatal(err)
		}
		_, err := ReadSummaryParquet(bytes.NewReader(b.Bytes()), int64(b.Len()))
		if !errors.Is(err, money.ErrUnknownCurrency) || !strings.Contains(err.Error(), `"XXX"`) {
			t.Fatalf("err = %v, want ErrUnknownCurrency naming XXX", err)
		}
	})
	t.Run("fraction of a minor unit", func(t *testing.T) {
		// Written as CLF (4 digits), read back as USD (2): 1.2345 is not
		// a whole number of cents.
		rows := summaryRows()[3:4]
		rows[0].Currency = money.Currency{Code: "USD", Digits: 4}
		var b bytes.Buffer
		if err := WriteSummaryParquet(&b, rows); err != nil {
			t.Fatal(err)
		}
		_, err := ReadSummaryParquet(bytes.NewReader(b.Bytes()), int64(b.Len()))
		if !errors.Is(err, money.ErrBadAmount) || !strings.Contains(err.Error(), `"agency-1"`) {
			t.Fatalf("err = %v, want ErrBadAmount naming agency-1", err)
		}
	})
}

// TestParquetAmountOverflow: an amount the column cannot hold is an error
// naming the row and the column, not a wrong number.
func TestParquetAmountOverflow(t *testing.T) {
	tooBig := tot(usd, "10000000000000000000000000000000000") // 10^36 cents: 39 digits at scale 4
	t.Run("summary", func(t *testing.T) {
		rows := summaryRows()
		rows[5].Refunds = tooBig
		err := WriteSummaryParquet(io.Discard, rows)
		checkOverflow(t, err, `"agency-1"`, "USD", "refund_amount")
	})
	t.Run("summary negative", func(t *testing.T) {
		rows := summaryRows()
		rows[6].Net = tooBig.Neg()
		err := WriteSummaryParquet(io.Discard, rows)
		checkOverflow(t, err, `"big"`, "USD", "net_amount")
	})
	t.Run("summary largest", func(t *testing.T) {
		// 10^36 - 1 cents is 38 digits at scale 4: it fits.
		rows := summaryRows()
		largest, _ := tooBig.Sub(money.TotalOf(1))
		rows[6].Gross, rows[6].Net = largest, largest.Neg()
		var b bytes.Buffer
		if err := WriteSummaryParquet(&b, rows); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSummaryParquet(bytes.NewReader(b.Bytes()), int64(b.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if got[6].Gross != largest || got[6].Net != largest.Neg() {
			t.Errorf("read back %s, %s; want %s, -%[3]s", got[6].Gross, got[6].Net, largest)
		}
	})
	t.Run("adjustments", func(t *testing.T) {
		rows := adjustmentRows()
		rows[0].Commission = tot(jpy, "-100000000000000000000000000000000000") // 10^35 yen
		err := WriteAdjustmentsParquet(io.Discard, rows)
		checkOverflow(t, err, `"+agency"`, "JPY", "commission_amount")
	})
	t.Run("line item", func(t *testing.T) {
		rows := lineItems()
		lw := NewLineItemWriter(io.Discard, report.LatestParquetLayout)
		if err := lw.Write(&rows[0]); err != nil {
			t.Fatal(err)
		}
		big := rows[1]
		big.Commission = -1e15 // JPY: x10^4 does not fit 18 digits
		err := lw.Write(&big)
		checkOverflow(t, err, `"tx-2"`, `"+agency"`, "JPY", "commission_amount")
		if lw.Rows() != 1 {
			t.Errorf("Rows() = %d after a refused row, want 1", lw.Rows())
		}
		// Sticky: every later call returns the same error.
		if err2 := lw.Write(&rows[2]); err2 != err {
			t.Errorf("Write after error = %v, want the sticky %v", err2, err)
		}
		if err2 := lw.Close(); err2 != err {
			t.Errorf("Close after error = %v, want the sticky %v", err2, err)
		}
	})
}

func checkOverflow(t *testing.T, err error, names ...string) {
	t.Helper()
	if !errors.Is(err, money.ErrOverflow) {
		t.Fatalf("err = %v, want money.ErrOverflow", err)
	}
	for _, s := range names {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
}

func TestParquetWriteError(t *testing.T) {
	if err := WriteSummaryParquet(failingWriter{}, summaryRows()); !errors.Is(err, errDiskFull) {
		t.Errorf("summary: err = %v, want %v", err, errDiskFull)
	}
	if err := WriteAdjustmentsParquet(failingWriter{}, adjustmentRows()); !errors.Is(err, errDiskFull) {
		t.Errorf("adjustments: err = %v, want %v", err, errDiskFull)
	}
	lw := NewLineItemWriter(failingWriter{}, report.LatestParquetLayout)
	rows := lineItems()
	for i := range rows {
		if err := lw.Write(&rows[i]); err != nil {
			t.Fatalf("Write %d: %v (nothing is flushed before Close)", i, err)
		}
	}
	if err := lw.Close(); !errors.Is(err, errDiskFull) {
		t.Errorf("line items: Close err = %v, want %v", err, errDiskFull)
	}
}
