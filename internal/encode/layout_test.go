package encode

import (
	"bytes"
	"fmt"
	"github.com/reportjob/reportjob/internal/testenv"
	"io"
	"os"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/uncompressed"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"

	"github.com/reportjob/reportjob/internal/report"
)

// The layouts compared in PERFORMANCE.md (Throughput, issue 19): the same rows (a
// delivered transactions file, RJBENCH_LINEITEMS_FILE) written again with
// other codecs, page and row-group sizes, statistics and dictionaries.
//
//	RJBENCH_LINEITEMS_FILE=reports/transactions/period=P/transactions-H.parquet \
//	  go test ./internal/encode -run TestLineItemLayouts -count=1 -v

// lineItemRecordDictMore also dictionary-encodes product_id and
// commission_bps; lineItemRecordNoDict has no dictionary. Same fields, so
// lineItemRecord converts to both.
type lineItemRecordDictMore struct {
	TransactionID     string    `parquet:"transaction_id"`
	AgencyID          string    `parquet:"agency_id,dict"`
	CustomerID        *string   `parquet:"customer_id,optional"`
	ProductID         *string   `parquet:"product_id,optional,dict"`
	Kind              string    `parquet:"kind,dict"`
	Currency          string    `parquet:"currency,dict"`
	Amount            int64     `parquet:"amount,decimal(4:18)"`
	Commission        int64     `parquet:"commission_amount,decimal(4:18)"`
	BPS               int32     `parquet:"commission_bps,dict"`
	RecordedAt        time.Time `parquet:"recorded_at,timestamp(millisecond)"`
	PartitionKey      string    `parquet:"partition_key,dict"`
	SortKey           string    `parquet:"sort_key"`
	customer, product string
}

type lineItemRecordNoDict struct {
	TransactionID     string    `parquet:"transaction_id"`
	AgencyID          string    `parquet:"agency_id"`
	CustomerID        *string   `parquet:"customer_id,optional"`
	ProductID         *string   `parquet:"product_id,optional"`
	Kind              string    `parquet:"kind"`
	Currency          string    `parquet:"currency"`
	Amount            int64     `parquet:"amount,decimal(4:18)"`
	Commission        int64     `parquet:"commission_amount,decimal(4:18)"`
	BPS               int32     `parquet:"commission_bps"`
	RecordedAt        time.Time `parquet:"recorded_at,timestamp(millisecond)"`
	PartitionKey      string    `parquet:"partition_key"`
	SortKey           string    `parquet:"sort_key"`
	customer, product string
}

type layout struct {
	name  string
	codec compress.Codec
	opts  []parquet.WriterOption
	rg    int64
	dict  string // "", "more", "none"
}

func TestLineItemLayouts(t *testing.T) {
	path := os.Getenv("RJBENCH_LINEITEMS_FILE")
	if path == "" {
		t.Skip("RJBENCH_LINEITEMS_FILE not set")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lis, err := ReadLineItemsParquet(f, int64(len(b)), LineFilter{})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]lineItemRecord, len(lis))
	for i := range lis {
		if err := fillLineItemRecord(&recs[i], &lis[i]); err != nil {
			t.Fatal(err)
		}
	}
	lis = nil
	zdef := &zstd.Codec{Level: zstd.SpeedDefault, Concurrency: 1}
	zfast := &zstd.Codec{Level: zstd.SpeedFastest, Concurrency: 1}
	layouts := []layout{
		{name: "today: zstd default, page 256 KiB, rg 64Ki, dict 4 cols", codec: zdef},
		{name: "zstd fastest", codec: zfast},
		{name: "zstd better", codec: &zstd.Codec{Level: zstd.SpeedBetterCompression, Concurrency: 1}},
		{name: "snappy", codec: &snappy.Codec{}},
		{name: "uncompressed", codec: &uncompressed.Codec{}},
		{name: "page 64 KiB", codec: zdef, opts: []parquet.WriterOption{parquet.PageBufferSize(64 << 10)}},
		{name: "page 1 MiB", codec: zdef, opts: []parquet.WriterOption{parquet.PageBufferSize(1 << 20)}},
		{name: "row group 16Ki", codec: zdef, rg: 16 << 10},
		{name: "row group 256Ki", codec: zdef, rg: 256 << 10},
		{name: "no page statistics", codec: zdef, opts: []parquet.WriterOption{parquet.DataPageStatistics(false)}},
		{name: "no page bounds on unique ids", codec: zdef, opts: []parquet.WriterOption{parquet.SkipPageBounds("transaction_id"), parquet.SkipPageBounds("sort_key"), parquet.SkipPageBounds("customer_id")}},
		{name: "dict + product_id, commission_bps", codec: zdef, dict: "more"},
		{name: "no dictionary", codec: zdef, dict: "none"},
		{name: "zstd fastest + dict product_id, bps", codec: zfast, dict: "more"},
		{name: "zstd fastest + page 1 MiB", codec: zfast, opts: []parquet.WriterOption{parquet.PageBufferSize(1 << 20)}},
		{name: "zstd fastest + dict more + page 1 MiB", codec: zfast, dict: "more", opts: []parquet.WriterOption{parquet.PageBufferSize(1 << 20)}},
	}
	t.Logf("%d rows from %s (%d bytes)", len(recs), path, len(b))
	t.Logf("| layout | bytes | vs today | CPU s (min of 3) | wall s (min of 3) |")
	t.Logf("|---|---:|---:|---:|---:|")
	var base int64
	for _, l := range layouts {
		var size int64
		bestCPU, bestWall := time.Duration(1<<62), time.Duration(1<<62)
		for range 3 {
			cw := &countingWriter{}
			c0, w0 := testenv.ProcessCPU(), time.Now()
			writeLayout(t, cw, recs, l)
			bestCPU, bestWall = min(bestCPU, testenv.ProcessCPU()-c0), min(bestWall, time.Since(w0))
			size = cw.n
		}
		if base == 0 {
			base = size
		}
		t.Logf("| %s | %d | %+.1f %% | %.2f | %.2f |", l.name, size, 100*float64(size-base)/float64(base), bestCPU.Seconds(), bestWall.Seconds())
	}
}

func writeLayout(t *testing.T, w *countingWriter, recs []lineItemRecord, l layout) {
	rg := l.rg
	if rg == 0 {
		rg = lineItemRowGroupRows
	}
	opts := append([]parquet.WriterOption{
		&parquet.WriterConfig{CreatedBy: parquetCreatedBy},
		parquet.Compression(l.codec),
		parquet.DataPageVersion(1),
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain),
		parquet.MaxRowsPerRowGroup(rg),
	}, l.opts...)
	var err error
	switch l.dict {
	case "more":
		err = writeBatches(w, recs, opts, func(r lineItemRecord) lineItemRecordDictMore { return lineItemRecordDictMore(r) })
	case "none":
		err = writeBatches(w, recs, opts, func(r lineItemRecord) lineItemRecordNoDict { return lineItemRecordNoDict(r) })
	default:
		err = writeBatches(w, recs, opts, func(r lineItemRecord) lineItemRecord { return r })
	}
	if err != nil {
		t.Fatal(l.name, err)
	}
}

func writeBatches[T any](w io.Writer, recs []lineItemRecord, opts []parquet.WriterOption, conv func(lineItemRecord) T) error {
	pw := parquet.NewGenericWriter[T](w, opts...)
	batch := make([]T, 0, lineItemBatch)
	for i := range recs {
		if batch = append(batch, conv(recs[i])); len(batch) == lineItemBatch || i == len(recs)-1 {
			if _, err := pw.Write(batch); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			batch = batch[:0]
		}
	}
	return pw.Close()
}

// TestLineItemDictionaryColumns: the transactions file dictionary-encodes
// the low-cardinality columns of its layout, and only them (an id unique
// per row in a dictionary costs its bytes twice), in the agencies' files
// and in the period's (the Writer's, several row groups).
func TestLineItemDictionaryColumns(t *testing.T) {
	want := map[report.ParquetLayout]map[string]bool{
		report.ParquetLayout1: {"agency_id": true, "kind": true, "currency": true, "partition_key": true},
		report.ParquetLayout2: {"agency_id": true, "kind": true, "currency": true, "partition_key": true,
			"product_id": true, "commission_bps": true},
	}
	n := 2*lineItemRowGroupRows + 5
	rows := genLineItems(n)
	for _, l := range allLayouts {
		files := map[string][]byte{
			"agency": writeLineItemsLayout(t, l, false, lineItems()), "dataset": writeLineItemsLayout(t, l, true, rows),
		}
		for name, b := range files {
			f := openParquet(t, b)
			for g, rg := range f.Metadata().RowGroups {
				for _, c := range rg.Columns {
					col := c.MetaData.PathInSchema[0]
					dict := c.MetaData.DictionaryPageOffset != 0
					for _, e := range c.MetaData.Encoding {
						dict = dict || e == format.RLEDictionary || e == format.PlainDictionary
					}
					if dict != want[l][col] {
						t.Errorf("layout %d %s file row group %d column %s: dictionary %v, want %v", l, name, g, col, dict, want[l][col])
					}
				}
			}
		}
	}
}

// TestReadLineItemsOtherLayout: a transactions file written with another
// layout (other dictionary columns) reads back the same rows: the readers
// check the schema, not the encodings.
func TestReadLineItemsOtherLayout(t *testing.T) {
	rows := genLineItems(3000)
	recs := make([]lineItemRecord, len(rows))
	for i := range rows {
		if err := fillLineItemRecord(&recs[i], &rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	err := writeBatches(&b, recs, parquetOptions(parquet.MaxRowsPerRowGroup(1000)),
		func(r lineItemRecord) lineItemRecordNoDict { return lineItemRecordNoDict(r) })
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadLineItemsParquet(bytes.NewReader(b.Bytes()), int64(b.Len()), LineFilter{Agency: rows[2999].Tx.AgencyID})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range rows {
		if rows[i].Tx.AgencyID == rows[2999].Tx.AgencyID {
			want++
		}
	}
	if len(got) != want || got[len(got)-1].Tx.ID != rows[2999].Tx.ID || got[len(got)-1].Commission != rows[2999].Commission {
		t.Fatalf("read %d rows (last %+v), want %d ending with %+v", len(got), got[len(got)-1], want, rows[2999])
	}
}
