package encode

import (
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/reportjob/reportjob/internal/report"
)

// The transactions files' layouts (report.ParquetLayout): see the
// layout note in parquet.go.

var (
	fastestCodec  = &zstd.Codec{Level: zstd.SpeedFastest, Concurrency: 1}
	errBadLayout  = errors.New("unknown parquet layout")
	dictProductID = &parquet.StructTagOption{ColumnPath: []string{"ProductID"}, StructTag: `parquet:"product_id,optional,dict"`}
	dictBPS       = &parquet.StructTagOption{ColumnPath: []string{"BPS"}, StructTag: `parquet:"commission_bps,dict"`}
)

// lineItemLayout is how a transactions file is encoded in one layout.
type lineItemLayout struct {
	codec *zstd.Codec
	// datasetPage and agencyPage are the page sizes (before compression)
	// of the period's file and of an agency's (a writer sizes its column
	// buffers to a page, and a period opens one per agency: an agency's
	// file, a few thousand rows, keeps parquet-go's 256 KiB).
	datasetPage, agencyPage int
	// tags replace lineItemRecord's struct tags (more dictionary columns).
	tags []parquet.WriterOption
}

// lineItemLayouts maps each layout to its transactions encoding: the one
// place that does. A layout, once a period is delivered with it, never
// changes (its files must be rebuilt to the same bytes): a new encoding is
// a new layout.
var lineItemLayouts = map[report.ParquetLayout]lineItemLayout{
	report.ParquetLayout1: {codec: parquetCodec, datasetPage: parquet.DefaultPageBufferSize, agencyPage: parquet.DefaultPageBufferSize},
	report.ParquetLayout2: {codec: fastestCodec, datasetPage: 1 << 20, agencyPage: parquet.DefaultPageBufferSize,
		tags: []parquet.WriterOption{dictProductID, dictBPS}},
}

// lineItemOptions returns the writer options of a transactions file of
// layout l: the period's file (dataset) or an agency's.
func lineItemOptions(l report.ParquetLayout, dataset bool) ([]parquet.WriterOption, error) {
	lo, ok := lineItemLayouts[l]
	if !ok {
		return nil, fmt.Errorf("%w: %d", errBadLayout, l)
	}
	page := lo.agencyPage
	if dataset {
		page = lo.datasetPage
	}
	opts := append([]parquet.WriterOption{parquet.Compression(lo.codec), parquet.PageBufferSize(page),
		parquet.MaxRowsPerRowGroup(lineItemRowGroupRows)}, lo.tags...)
	return parquetOptions(opts...), nil
}

// agencyLineWriters makes the writers of the agencies' transactions files,
// per layout.
var agencyLineWriters = func() map[report.ParquetLayout]*smallWriters[lineItemRecord] {
	m := make(map[report.ParquetLayout]*smallWriters[lineItemRecord], len(lineItemLayouts))
	for l := range lineItemLayouts {
		opts, err := lineItemOptions(l, false)
		if err != nil {
			panic(err)
		}
		m[l] = newSmallWriters[lineItemRecord](opts)
	}
	return m
}()
