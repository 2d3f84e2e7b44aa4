package encode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/reportjob/reportjob/internal/report"
)

// allLayouts are the layouts this tool writes, oldest first.
var allLayouts = []report.ParquetLayout{report.ParquetLayout1, report.ParquetLayout2}

func mustLineItemOptions(t testing.TB, l report.ParquetLayout, dataset bool) []parquet.WriterOption {
	t.Helper()
	opts, err := lineItemOptions(l, dataset)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// TestLineItemLayoutsKnown: every layout this tool writes has its
// encoding, and no other does.
func TestLineItemLayoutsKnown(t *testing.T) {
	var got []report.ParquetLayout
	for l := range lineItemLayouts {
		got = append(got, l)
	}
	slices.Sort(got)
	if !slices.Equal(got, allLayouts) || allLayouts[len(allLayouts)-1] != report.LatestParquetLayout {
		t.Errorf("lineItemLayouts has %v, want %v ending with the latest (%d)", got, allLayouts, report.LatestParquetLayout)
	}
	for _, l := range allLayouts {
		if !l.Valid() {
			t.Errorf("layout %d not Valid", l)
		}
	}
}

// TestLineItemLayoutsAreTheMeasured: each layout writes the bytes of the
// encoding it documents, written with plain parquet-go and struct tags:
// layout 1 as before layouts were recorded (zstd default level, 256 KiB
// pages, four dictionary columns), layout 2 as measured in PERFORMANCE.md
// (zstd fastest, 1 MiB pages in the period's file, dictionary on
// product_id and commission_bps too: lineItemRecordDictMore, whose tags
// lineItemLayouts replaces at run time).
func TestLineItemLayoutsAreTheMeasured(t *testing.T) {
	var more func(io.Writer, []lineItemRecord, []parquet.WriterOption) error
	rows := genLineItems(lineItemRowGroupRows + 3000)
	recs := make([]lineItemRecord, len(rows))
	for i := range rows {
		if err := fillLineItemRecord(&recs[i], &rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	zdef := &zstd.Codec{Level: zstd.SpeedDefault, Concurrency: 1}
	zfast := &zstd.Codec{Level: zstd.SpeedFastest, Concurrency: 1}
	opts := func(codec *zstd.Codec, page int) []parquet.WriterOption {
		return []parquet.WriterOption{
			&parquet.WriterConfig{CreatedBy: parquetCreatedBy}, parquet.Compression(codec), parquet.DataPageVersion(1),
			parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain),
			parquet.PageBufferSize(page), parquet.MaxRowsPerRowGroup(lineItemRowGroupRows),
		}
	}
	// The schema's root is named after the record's Go type: the same
	// name, here, for the struct tags of layout 2.
	type lineItemRecord2 = lineItemRecord
	{
		type lineItemRecord lineItemRecordDictMore
		more = func(w io.Writer, recs []lineItemRecord2, opts []parquet.WriterOption) error {
			return writeBatches(w, recs, opts, func(r lineItemRecord2) lineItemRecord { return lineItemRecord(r) })
		}
	}
	same := func(w io.Writer, recs []lineItemRecord, opts []parquet.WriterOption) error {
		return writeBatches(w, recs, opts, func(r lineItemRecord) lineItemRecord { return r })
	}
	for _, tt := range []struct {
		l       report.ParquetLayout
		dataset bool
		write   func(io.Writer) error
	}{
		{report.ParquetLayout1, false, func(w io.Writer) error { return same(w, recs, opts(zdef, 256<<10)) }},
		{report.ParquetLayout1, true, func(w io.Writer) error { return same(w, recs, opts(zdef, 256<<10)) }},
		{report.ParquetLayout2, false, func(w io.Writer) error { return more(w, recs, opts(zfast, 256<<10)) }},
		{report.ParquetLayout2, true, func(w io.Writer) error { return more(w, recs, opts(zfast, 1<<20)) }},
	} {
		t.Run(fmt.Sprintf("layout %d dataset %v", tt.l, tt.dataset), func(t *testing.T) {
			var want bytes.Buffer
			if err := tt.write(&want); err != nil {
				t.Fatal(err)
			}
			got := writeLineItemsLayout(t, tt.l, tt.dataset, rows)
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%d bytes, want the %d of the documented encoding", len(got), want.Len())
			}
		})
	}
}

// TestLineItemLayoutsReadBack: a transactions file of every layout, the
// period's and an agency's, reads back the same rows with the readers of
// the look-ups (ReadLineItemsParquet) and of the rates a revision keeps
// (ReadLineItemRates): the readers check the schema, not the encodings.
func TestLineItemLayoutsReadBack(t *testing.T) {
	rows := genLineItems(lineItemRowGroupRows + 3000)
	for _, l := range allLayouts {
		for _, dataset := range []bool{false, true} {
			b := writeLineItemsLayout(t, l, dataset, rows)
			got, err := ReadLineItemsParquet(bytes.NewReader(b), int64(len(b)), LineFilter{})
			if err != nil {
				t.Fatalf("layout %d dataset %v: %v", l, dataset, err)
			}
			if len(got) != len(rows) {
				t.Fatalf("layout %d dataset %v: %d rows, want %d", l, dataset, len(got), len(rows))
			}
			for i := range rows {
				// A line item records the rate applied, not whether the
				// item carried its own.
				tx := rows[i].Tx
				tx.BPS, tx.HasBPS = 0, false
				if got[i].Tx != tx || got[i].BPS != rows[i].BPS || got[i].Commission != rows[i].Commission {
					t.Fatalf("layout %d dataset %v row %d: %+v, want %+v", l, dataset, i, got[i], rows[i])
				}
			}
			var bps []int32
			err = ReadLineItemRates(bytes.NewReader(b), int64(len(b)), func(id []byte, r int32) error {
				bps = append(bps, r)
				return nil
			})
			if err != nil {
				t.Fatalf("layout %d dataset %v: rates: %v", l, dataset, err)
			}
			if len(bps) != len(rows) {
				t.Fatalf("layout %d dataset %v: %d rates, want %d", l, dataset, len(bps), len(rows))
			}
			for i := range rows {
				if bps[i] != rows[i].BPS {
					t.Fatalf("layout %d dataset %v: rate %d is %d, want %d", l, dataset, i, bps[i], rows[i].BPS)
				}
			}
		}
	}
}

// TestLineItemLayoutUnknown: a layout this tool does not write is the
// error of the writer's every call, and of the period's Writer's lines.
func TestLineItemLayoutUnknown(t *testing.T) {
	li := lineItems()[0]
	for _, l := range []report.ParquetLayout{0, report.LatestParquetLayout + 1} {
		lw := NewLineItemWriter(io.Discard, l)
		if err := lw.Write(&li); !errors.Is(err, errBadLayout) {
			t.Errorf("layout %d: Write: %v, want %v", l, err, errBadLayout)
		}
		if err := lw.Close(); !errors.Is(err, errBadLayout) {
			t.Errorf("layout %d: Close: %v, want %v", l, err, errBadLayout)
		}
		var c collector
		w := NewWriter(t.TempDir(), testPeriod, Formats{}, l, c.out)
		if err := w.Line(&li); !errors.Is(err, errBadLayout) {
			t.Errorf("layout %d: Writer.Line: %v, want %v", l, err, errBadLayout)
		}
		w.Close()
	}
}
