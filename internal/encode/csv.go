package encode

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/report"
)

// CSV files follow RFC 4180 (CRLF line ends, fields quoted only when
// needed) with a header row and the same columns, in the same order, as
// the Parquet file of the same kind. Timestamps are RFC 3339 in UTC,
// amounts exact in the currency's own digits ("19.99", "1500" for JPY,
// "1.500" for BHD, "-5.00"). A text cell that a spreadsheet would run as a
// formula (starting with = + - @ TAB or CR) is prefixed with a single
// quote ('), as OWASP recommends for CSV injection; numbers are never
// altered, so "-5.00" stays a number.

var (
	summaryCSVHeader = []string{
		"period_start", "period_end", "agency_id", "currency",
		"purchase_count", "refund_count",
		"gross_amount", "refund_amount", "net_amount", "commission_amount",
	}
	adjustmentsCSVHeader = append(append([]string{}, summaryCSVHeader...), "revision")
	lineItemCSVHeader    = []string{
		"transaction_id", "agency_id", "customer_id", "product_id", "kind", "currency",
		"amount", "commission_amount", "commission_bps", "recorded_at", "partition_key", "sort_key",
	}
)

// csvBufs recycles the buffers of the encoding/csv writers: a period
// writes a summary CSV per agency, a month a statement CSV per agency, and
// csv.NewWriter's own buffer was 4 KB of garbage for each (400 MB over a
// period and month of 100,000 agencies).
var csvBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, csvBufSize) }}

// csvBufSize is the buffer csv.NewWriter makes: given a *bufio.Writer at
// least that large, it writes to it instead of making its own.
const csvBufSize = 4096

// newCSV returns a CSV writer on w with header written, and release, which
// gives its buffer back once the writer is flushed and no longer used.
func newCSV(w io.Writer, header []string) (cw *csv.Writer, release func(), err error) {
	bw := csvBufs.Get().(*bufio.Writer)
	bw.Reset(w)
	cw = csv.NewWriter(bw)
	cw.UseCRLF = true
	release = func() {
		bw.Reset(nil)
		csvBufs.Put(bw)
	}
	return cw, release, cw.Write(header)
}

func summaryCells(rec []string, r *report.SummaryRow) []string {
	c := r.Currency
	return append(rec[:0],
		csvTime(r.PeriodStart), csvTime(r.PeriodEnd), csvText(r.AgencyID), csvText(c.Code),
		strconv.FormatInt(r.PurchaseCount, 10), strconv.FormatInt(r.RefundCount, 10),
		c.FormatTotal(r.Gross), c.FormatTotal(r.Refunds), c.FormatTotal(r.Net), c.FormatTotal(r.Commission),
	)
}

// WriteSummaryCSV writes rows, already sorted, as a summary CSV to w.
func WriteSummaryCSV(w io.Writer, rows []report.SummaryRow) error {
	cw, release, err := newCSV(w, summaryCSVHeader)
	defer release()
	if err != nil {
		return fmt.Errorf("write summary csv: header: %w", err)
	}
	var rec []string
	for i := range rows {
		rec = summaryCells(rec, &rows[i])
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write summary csv: agency %q currency %s: %w", rows[i].AgencyID, rows[i].Currency.Code, err)
		}
	}
	return flushCSV(cw, "summary")
}

// WriteAdjustmentsCSV writes rows, already sorted, as an adjustments CSV
// to w.
func WriteAdjustmentsCSV(w io.Writer, rows []report.AdjustmentRow) error {
	cw, release, err := newCSV(w, adjustmentsCSVHeader)
	defer release()
	if err != nil {
		return fmt.Errorf("write adjustments csv: header: %w", err)
	}
	var rec []string
	for i := range rows {
		rec = append(summaryCells(rec, &rows[i].SummaryRow), strconv.FormatInt(int64(rows[i].Revision), 10))
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write adjustments csv: agency %q: %w", rows[i].AgencyID, err)
		}
	}
	return flushCSV(cw, "adjustments")
}

func flushCSV(cw *csv.Writer, what string) error {
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write %s csv: %w", what, err)
	}
	return nil
}

// LineItemCSVWriter streams a transactions CSV. Rows must arrive in file
// order (the caller's; not checked here). Errors are sticky.
//
// The bytes are those of encoding/csv with UseCRLF (the summary files'
// writer; TestLineItemCSVSameAsEncodingCSV checks it), but each row is
// appended to one reused buffer, numbers, amounts and times included
// (strconv.AppendInt, appendMinor, time.AppendFormat): no allocation per
// field, and no buffer of its own between the row and w, which the
// caller buffers (a temp file's bufio.Writer).
type LineItemCSVWriter struct {
	w    io.Writer
	buf  []byte
	rows int64
	err  error
}

// lineCSVFlush is how many bytes of rows LineItemCSVWriter gathers before
// it writes them to w.
const lineCSVFlush = 16 << 10

// lineCSVStart is the buffer a LineItemCSVWriter starts with: its header
// and a few rows.
const lineCSVStart = 1 << 10

// NewLineItemCSVWriter writes the header to w and returns the writer.
func NewLineItemCSVWriter(w io.Writer) *LineItemCSVWriter {
	// The buffer grows with the rows, up to lineCSVFlush and a row: most
	// agencies' files are a header and a few rows, and a buffer of that
	// size for each was 1.5 GB of garbage over a period of 100,000.
	lw := &LineItemCSVWriter{w: w, buf: make([]byte, 0, lineCSVStart)}
	for i, h := range lineItemCSVHeader {
		if i > 0 {
			lw.buf = append(lw.buf, ',')
		}
		lw.buf = appendCSVField(lw.buf, "", h)
	}
	lw.buf = append(lw.buf, '\r', '\n')
	return lw
}

// Write adds one line item.
func (lw *LineItemCSVWriter) Write(li *report.LineItem) error {
	if lw.err != nil {
		return lw.err
	}
	tx := &li.Tx
	c := tx.Currency
	b := lw.buf
	b = appendCSVText(b, tx.ID)
	b = appendCSVText(append(b, ','), tx.AgencyID)
	b = appendCSVText(append(b, ','), tx.CustomerID)
	b = appendCSVText(append(b, ','), tx.ProductID)
	b = appendCSVField(append(b, ','), "", string(tx.Kind))
	b = appendCSVText(append(b, ','), c.Code)
	b = appendMinor(append(b, ','), c.Digits, tx.Amount)
	b = appendMinor(append(b, ','), c.Digits, li.Commission)
	b = strconv.AppendInt(append(b, ','), int64(li.BPS), 10)
	b = appendCSVTime(append(b, ','), tx.RecordedAt)
	b = appendCSVText(append(b, ','), tx.PK)
	b = appendCSVText(append(b, ','), tx.SK)
	lw.buf = append(b, '\r', '\n')
	lw.rows++
	if len(lw.buf) >= lineCSVFlush {
		return lw.flush(tx.ID)
	}
	return nil
}

// flush writes the gathered rows to w; id names the last row in an error.
func (lw *LineItemCSVWriter) flush(id string) error {
	if len(lw.buf) == 0 {
		return nil
	}
	if _, err := lw.w.Write(lw.buf); err != nil {
		lw.err = fmt.Errorf("write line items csv: transaction %q: %w", id, err)
		return lw.err
	}
	lw.buf = lw.buf[:0]
	return nil
}

// Close writes what is gathered; it does not close the underlying writer.
func (lw *LineItemCSVWriter) Close() error {
	if lw.err != nil {
		return lw.err
	}
	if _, err := lw.w.Write(lw.buf); err != nil {
		lw.err = fmt.Errorf("write line items csv: %w", err)
		return lw.err
	}
	lw.buf = lw.buf[:0]
	return nil
}

// Rows returns how many line items were written.
func (lw *LineItemCSVWriter) Rows() int64 { return lw.rows }

// appendCSVText appends the text cell s as csvText neutralises it and
// encoding/csv quotes it.
func appendCSVText(b []byte, s string) []byte {
	if s != "" {
		switch s[0] {
		case '=', '+', '-', '@', '\t', '\r':
			return appendCSVField(b, "'", s)
		}
	}
	return appendCSVField(b, "", s)
}

// appendCSVField appends the cell prefix+s (prefix is "" or "'") quoted
// as encoding/csv's Writer with UseCRLF quotes it: when the cell is \.,
// holds a comma, quote, CR or LF, or starts with a space (unicode.IsSpace);
// inside quotes a quote is doubled, LF becomes CRLF and a lone CR is
// dropped.
func appendCSVField(b []byte, prefix, s string) []byte {
	if !csvNeedsQuotes(prefix, s) {
		return append(append(b, prefix...), s...)
	}
	b = append(append(b, '"'), prefix...)
	for len(s) > 0 {
		i := strings.IndexAny(s, "\"\r\n")
		if i < 0 {
			i = len(s)
		}
		b = append(b, s[:i]...)
		s = s[i:]
		if len(s) > 0 {
			switch s[0] {
			case '"':
				b = append(b, '"', '"')
			case '\n':
				b = append(b, '\r', '\n')
			}
			s = s[1:]
		}
	}
	return append(b, '"')
}

// csvSpecial marks the bytes that make encoding/csv quote a cell.
var csvSpecial = [256]bool{'\n': true, '\r': true, '"': true, ',': true}

func csvNeedsQuotes(prefix, s string) bool {
	if prefix == "" && s == "" {
		return false
	}
	if prefix == "" && s == `\.` {
		return true
	}
	if hasCSVSpecial(s) {
		return true
	}
	if prefix != "" {
		return false // starts with ', not a space
	}
	if s[0] < utf8.RuneSelf {
		switch s[0] {
		case '\t', '\v', '\f', ' ':
			return true
		}
		return false
	}
	r1, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r1)
}

// hasCSVSpecial reports whether s holds a byte of csvSpecial. It tests
// eight bytes at a time (a cell is mostly ids and keys of 10 to 40
// bytes): a word holds byte c exactly when x = w^(c*lsb) has a zero byte,
// and (x-lsb) & ^x & msb is non-zero exactly when x has one.
func hasCSVSpecial(s string) bool {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		comma, quote, cr, lf := w^(','*lsb), w^('"'*lsb), w^('\r'*lsb), w^('\n'*lsb)
		if ((comma-lsb)&^comma|(quote-lsb)&^quote|(cr-lsb)&^cr|(lf-lsb)&^lf)&msb != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if csvSpecial[s[i]] {
			return true
		}
	}
	return false
}

// appendMinor appends minor units of a currency with digits decimals as
// money.Currency.Format writes them ("19.99", "1500", "1.500", "-5.00",
// "0.05"), without allocating.
func appendMinor(b []byte, digits int, minor int64) []byte {
	u := uint64(minor)
	if minor < 0 {
		b = append(b, '-')
		u = -u
	}
	var tmp [20]byte
	d := strconv.AppendUint(tmp[:0], u, 10)
	if digits <= 0 {
		return append(b, d...)
	}
	if len(d) <= digits {
		b = append(b, '0', '.')
		for range digits - len(d) {
			b = append(b, '0')
		}
		return append(b, d...)
	}
	cut := len(d) - digits
	return append(append(append(b, d[:cut]...), '.'), d[cut:]...)
}

// appendCSVTime appends t as csvTime formats it, without parsing a
// layout for each cell (time.AppendFormat's cost): years 0 to 9999; any
// other goes through AppendFormat.
func appendCSVTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	hour, minute, sec := t.Clock()
	b = append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}

// csvTime formats t as RFC 3339 in UTC, with fractional seconds only when
// t has them ("2024-05-01T00:00:00Z", "2024-05-01T00:00:00.25Z").
func csvTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// csvText neutralises a text cell a spreadsheet would evaluate as a
// formula by prefixing it with a single quote.
func csvText(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}
