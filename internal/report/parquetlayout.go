package report

import "fmt"

// ParquetLayout numbers the ways a period's Parquet files are encoded:
// codec and level, page sizes, dictionary columns. The columns, types and
// rows are the same in every layout (a reader sees no difference); the
// bytes, and so the objects' content-hash names, are not. A period's
// manifest records the layout its files were written with
// (Manifest.ParquetLayout), and every later build of the period writes
// that layout again (LayoutFor): a rebuild of an unchanged period must
// give the bytes it delivered, since its files are compared by SHA-256.
// internal/encode maps each layout to its writer options.
type ParquetLayout int

const (
	// ParquetLayout1: ZSTD at its default level, 256 KiB pages, dictionary
	// on agency_id, kind, currency and partition_key. Every period
	// delivered before layouts were recorded (a manifest without
	// parquet_layout) has it.
	ParquetLayout1 ParquetLayout = 1
	// ParquetLayout2 changes the transactions files only: ZSTD
	// SpeedFastest, 1 MiB pages in the period's transactions file (256 KiB
	// in an agency's), and a dictionary on product_id and commission_bps
	// too. Measured on 1M transactions: 44 % less encoding CPU, 5 % fewer
	// bytes than layout 1 (PERFORMANCE.md, Throughput (issue 19)).
	ParquetLayout2 ParquetLayout = 2
	// LatestParquetLayout is the layout of a period delivered for the
	// first time.
	LatestParquetLayout = ParquetLayout2
)

// Valid reports whether l is a layout this tool writes.
func (l ParquetLayout) Valid() bool { return l >= ParquetLayout1 && l <= LatestParquetLayout }

// Layout returns the layout m's files were written with: 1 when m does not
// record one (written before layouts were recorded).
func (m *Manifest) Layout() ParquetLayout {
	if m.ParquetLayout == 0 {
		return ParquetLayout1
	}
	return m.ParquetLayout
}

// LayoutFor returns the layout to write a period with, cur being its
// current (published) manifest, nil if it has none. This is the one place
// that decides it:
//
//   - a period never delivered gets LatestParquetLayout;
//   - a delivered period keeps the layout of its current revision, for a
//     rebuild whose content is unchanged (backfill, recheck, verify
//     --repair: it must reproduce the delivered bytes, or the period would
//     be republished with no item changed) and for a restatement alike (an
//     agency whose items did not change keeps its objects, and the
//     revisions of a period stay comparable file by file).
//
// So a layout change applies to new periods only; an earlier period
// changes layout only by a deliberate re-encoding, which no command does
// today.
func LayoutFor(cur *Manifest) ParquetLayout {
	if cur == nil {
		return LatestParquetLayout
	}
	return cur.Layout()
}

// checkLayout is ParseManifest's check of parquet_layout: absent, or one
// this tool can write again (a layout from a newer binary cannot be
// rebuilt to the same bytes, so its period is refused rather than
// restated).
func (m *Manifest) checkLayout() error {
	if m.ParquetLayout == 0 || m.ParquetLayout.Valid() {
		return nil
	}
	return fmt.Errorf("parquet_layout %d, this tool writes %d to %d (written by a newer reportjob?)",
		m.ParquetLayout, ParquetLayout1, LatestParquetLayout)
}
