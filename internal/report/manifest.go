package report

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"sort"
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

// Manifest is a period's manifest.json: what was read, what was billed and
// every file written. It is written last: its presence means the period's
// reports are complete.
type Manifest struct {
	Job               string          `json:"job"`
	PeriodStart       time.Time       `json:"period_start"`
	PeriodEnd         time.Time       `json:"period_end"`
	GeneratedAt       time.Time       `json:"generated_at"`
	ToolVersion       string          `json:"tool_version"`
	Sink              string          `json:"sink,omitempty"`
	Partitions        []string        `json:"partitions"`
	ItemsRead         int64           `json:"items_read"`
	Transactions      int64           `json:"transactions"`
	DuplicatesDropped int64           `json:"duplicates_dropped"`
	Rejects           int64           `json:"rejects"`
	Totals            []CurrencyTotal `json:"totals"`
	Files             []FileInfo      `json:"files"`
}

// CurrencyTotal is one currency's totals over every agency of a period.
// Amounts are exact decimal strings in the currency's own digits.
type CurrencyTotal struct {
	Currency      string `json:"currency"`
	Agencies      int64  `json:"agencies"`
	PurchaseCount int64  `json:"purchase_count"`
	RefundCount   int64  `json:"refund_count"`
	Gross         string `json:"gross_amount"`
	Refunds       string `json:"refund_amount"`
	Net           string `json:"net_amount"`
	Commission    string `json:"commission_amount"`
}

// FileInfo describes one written object. Key is relative to the sink URL.
type FileInfo struct {
	Key    string `json:"key"`
	Bytes  int64  `json:"bytes"`
	Rows   int64  `json:"rows"`
	SHA256 string `json:"sha256"`
}

// totals accumulates a period's per-currency totals in minor units.
type totals map[string]*totalAcc

type totalAcc struct {
	cur money.Currency
	row SummaryRow
	n   int64
}

func (t totals) add(r SummaryRow) error {
	a := t[r.Currency.Code]
	if a == nil {
		a = &totalAcc{cur: r.Currency}
		t[r.Currency.Code] = a
	}
	a.n++
	return addRow(&a.row, r)
}

func (t totals) list() []CurrencyTotal {
	out := make([]CurrencyTotal, 0, len(t))
	for _, a := range t {
		c := a.cur
		out = append(out, CurrencyTotal{
			Currency: c.Code, Agencies: a.n,
			PurchaseCount: a.row.PurchaseCount, RefundCount: a.row.RefundCount,
			Gross: c.Format(a.row.Gross), Refunds: c.Format(a.row.Refunds),
			Net: c.Format(a.row.Net), Commission: c.Format(a.row.Commission),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Currency < out[j].Currency })
	return out
}

// addRow adds r's counts and amounts to dst, checking for overflow.
func addRow(dst *SummaryRow, r SummaryRow) error {
	dst.PurchaseCount += r.PurchaseCount
	dst.RefundCount += r.RefundCount
	for _, f := range [...]struct {
		dst *int64
		v   int64
	}{
		{&dst.Gross, r.Gross}, {&dst.Refunds, r.Refunds}, {&dst.Net, r.Net}, {&dst.Commission, r.Commission},
	} {
		s, err := money.Add(*f.dst, f.v)
		if err != nil {
			return err
		}
		*f.dst = s
	}
	return nil
}

// hashWriter counts and hashes what passes through it.
type hashWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func newHashWriter(w io.Writer) *hashWriter { return &hashWriter{w: w, h: sha256.New()} }

func (hw *hashWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	hw.n += int64(n)
	return n, err
}

func (hw *hashWriter) info(key string, rows int64) FileInfo {
	return FileInfo{Key: key, Bytes: hw.n, Rows: rows, SHA256: hex.EncodeToString(hw.h.Sum(nil))}
}
