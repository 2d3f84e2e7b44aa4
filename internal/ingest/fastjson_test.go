package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/item"
)

// generalDecode is decodeLine without its fast path.
func generalDecode(line []byte) (map[string]item.Value, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil || fields == nil {
		return nil, errors.New("bad")
	}
	names := memberNames(line)
	for i, name := range names {
		if !knownFields[name] {
			return nil, errors.New("unknown")
		}
		for _, prev := range names[:i] {
			if prev == name {
				return nil, errors.New("twice")
			}
		}
	}
	attrs := make(map[string]item.Value, len(fields))
	for name, raw := range fields {
		if v, present := jsonValue(raw, numericFields[name]); present {
			attrs[name] = v
		}
	}
	return attrs, nil
}

// TestPlainLineMatchesGeneral: every line the fast decoder takes decodes
// to exactly what encoding/json gives, and it takes the usual lines. The
// inputs are typical records and random mutations of them (bytes
// inserted, deleted, replaced, with JSON's special characters), so that
// the fast path's grammar is checked against the general one.
func TestPlainLineMatchesGeneral(t *testing.T) {
	base := []string{
		`{"transaction_id":"ord-1001","agency_id":"acme-travel","amount":"19.99","currency":"USD","recorded_at":"2026-03-01T10:05:12Z"}`,
		`{"transaction_id":"ord-1002","agency_id":"acme-travel","amount":1500,"currency":"JPY","customer_id":"c-77","product_id":"p-9","recorded_at":"2026-03-01T10:20:00.250Z"}`,
		` { "transaction_id" : "t" , "agency_id":"Agence Étoile", "amount": -0.5e+3, "currency":"BHD", "commission_bps": 1250, "kind": null } `,
		`{}`, `{"kind":"refund"}`, `{"amount":0}`, `{"amount":1E5}`, `{"amount":"1.500"}`,
	}
	for i := range 50 {
		r := Record{TransactionID: fmt.Sprintf("tx-%d", i), AgencyID: "agency-0042", Amount: "19.99", Currency: "EUR", Kind: "purchase",
			CustomerID: "cust", ProductID: "prod"}
		j, _ := r.MarshalJSON()
		base = append(base, string(j))
	}
	special := []string{`"`, `\`, `{`, `}`, `[`, `]`, `:`, `,`, ` `, "\t", "0", "-", ".", "e", "+", "n", "null", "true", "é", "\x01", "1", "x"}
	rng := rand.New(rand.NewPCG(7, 8))
	lines := append([]string{}, base...)
	for range 30000 {
		b := []byte(base[rng.IntN(len(base))])
		for range 1 + rng.IntN(3) {
			p := rng.IntN(len(b) + 1)
			ins := special[rng.IntN(len(special))]
			switch rng.IntN(3) {
			case 0:
				b = append(b[:p], append([]byte(ins), b[p:]...)...)
			case 1:
				if p < len(b) {
					b = append(b[:p], b[p+1:]...)
				}
			default:
				if p < len(b) {
					b = append(b[:p], append([]byte(ins), b[p+1:]...)...)
				}
			}
		}
		lines = append(lines, string(b))
	}
	taken := 0
	for _, line := range lines {
		if !utf8.ValidString(line) {
			continue
		}
		got, ok := decodePlainLine([]byte(line))
		if !ok {
			continue
		}
		taken++
		want, err := generalDecode([]byte(line))
		if err != nil {
			t.Fatalf("%q: the fast path took a line the general one refuses (%v)", line, err)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%q:\n fast    %v\n general %v", line, got, want)
		}
	}
	for _, line := range base {
		if _, ok := decodePlainLine([]byte(line)); !ok {
			t.Errorf("%q: not taken by the fast path", line)
		}
	}
	if taken < 2000 {
		t.Errorf("only %d lines took the fast path", taken)
	}
}
