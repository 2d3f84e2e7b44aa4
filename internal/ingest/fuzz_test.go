package ingest

import (
	"bytes"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
)

// FuzzReadJSONL feeds arbitrary bytes to ReadJSONL and checks what it
// wrote and what it refused: the counts add up, every bad line is named
// once with a reason, and every item written is the canonical item of a
// valid transaction under the keys its transaction id and time give, in
// the accepted time window. A line is never both written and refused, and
// nothing panics.
func FuzzReadJSONL(f *testing.F) {
	seeds := []string{
		jsonLine(),
		jsonLine() + "\n" + jsonLine("transaction_id", `"tx-2"`) + "\n",
		"\xef\xbb\xbf" + jsonLine() + "\r\n\r\n" + jsonLine() + "\n",
		jsonLine("amount", `19.99`) + "\n" + jsonLine("amount", `1e400`) + "\n" + jsonLine("amount", `"NaN"`),
		jsonLine("amount", `-0`) + "\n" + jsonLine("amount", `1234567890123456789012345678901234567890`),
		jsonLine("currency", `"usd"`) + "\n" + jsonLine("currency", `"XTS"`) + "\n" + jsonLine("currency", `1`),
		jsonLine("agency_id", `"a\u0000b"`) + "\n" + jsonLine("agency_id", `"\ud800"`) + "\n" + jsonLine("agency_id", `{"x":[1]}`),
		jsonLine("recorded_at", `"2024-05-01T10:00:00+14:00"`) + "\n" + jsonLine("recorded_at", `"0000-01-01T00:00:00+01:00"`),
		jsonLine("recorded_at", "") + "\n" + jsonLine("kind", `"refund"`, "commission_bps", `"250"`),
		jsonLine("commission_bps", `12.5`) + "\n" + jsonLine("commission_bps", `true`) + "\n" + jsonLine("nope", `1`),
		jsonLine("transaction_id", `"tx-1"`, "amount", `"1.00"`) + "\n" + jsonLine("transaction_id", `"tx-1"`, "amount", `"2.00"`),
		`{"transaction_id":"a","transaction_id":"b"}` + "\n" + `[1,2]` + "\nnull\n\"x\"\n{\n}{}\n\xff\n",
		"\n\n   \n\t\n",
		`{"":""}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), false, uint8(1), uint8(0))
		f.Add([]byte(s), true, uint8(8), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, allowLate bool, shards, batch uint8) {
		w := newMemWriter()
		opts := testOpts
		opts.AllowLate, opts.Shards, opts.BatchSize = allowLate, int(shards%65), int(batch%4)
		stats, bad, err := ReadJSONL(t.Context(), bytes.NewReader(data), w, opts)
		if err != nil {
			t.Fatalf("ReadJSONL: %v", err) // memWriter does not fail
		}
		lines := bytes.Count(data, []byte("\n"))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		if stats.Read != stats.Written+stats.Invalid+stats.Duplicates || len(bad) != stats.Invalid || len(w.items) > stats.Written {
			t.Fatalf("stats %+v, %d bad lines, %d items stored", stats, len(bad), len(w.items))
		}
		if stats.Read > lines {
			t.Fatalf("%d records read from %d lines", stats.Read, lines)
		}
		prev := 0
		for _, le := range bad {
			if le.Line <= prev || le.Line > lines {
				t.Fatalf("bad line %d after %d, of %d lines", le.Line, prev, lines)
			}
			prev = le.Line
			var re *item.RejectError
			switch {
			case errors.As(le.Err, &re):
				// A member named "" is the one reject without a field name
				// (its message is then only "unknown field").
				if re.Reason == "" || re.Field == "" && !strings.HasPrefix(re.Reason, "unknown field") {
					t.Fatalf("line %d: reject without field or reason: %+v", le.Line, re)
				}
			case errors.Is(le.Err, ErrBadJSON), errors.Is(le.Err, ErrLineTooLong):
			default:
				t.Fatalf("line %d: error %v is neither a reject nor bad JSON", le.Line, le.Err)
			}
		}
		now := testNow
		for k, it := range w.items {
			checkWritten(t, k, it, opts, now)
		}
	})
}

// checkWritten: a stored item is the canonical item of a valid
// transaction, under the keys of its id and time, in the accepted window.
func checkWritten(t *testing.T, k [2]string, it item.Item, opts Options, now time.Time) {
	t.Helper()
	tx, err := item.Parse(it)
	if err != nil {
		t.Fatalf("wrote an item the report rejects: %+v: %v", it, err)
	}
	if canon := tx.Item(); !maps.Equal(canon.Attrs, it.Attrs) {
		t.Fatalf("wrote %+v, not the canonical item %+v", it.Attrs, canon.Attrs)
	}
	pk, sk := keys.ForTransaction(tx.ID, tx.RecordedAt, opts.Shards)
	if k != [2]string{pk, sk} || it.PK != pk || it.SK != sk {
		t.Fatalf("item of %q at %v under keys %q, want %q %q", tx.ID, tx.RecordedAt, k, pk, sk)
	}
	if _, _, err := keys.ParsePartition(pk); err != nil {
		t.Fatalf("partition key %q: %v", pk, err)
	}
	if at, err := keys.ParseSortKeyTime(sk); err != nil || !at.Equal(tx.RecordedAt.Truncate(time.Second)) {
		t.Fatalf("sort key %q: %v, %v", sk, at, err)
	}
	if tx.RecordedAt.After(now.Add(MaxFutureSkew)) || !opts.AllowLate && tx.RecordedAt.Before(now.Add(-opts.Lateness).Truncate(time.Millisecond)) {
		t.Fatalf("wrote %q recorded at %v, outside the window at %v (allow late %v)", tx.ID, tx.RecordedAt, now, opts.AllowLate)
	}
}

// FuzzRecordRoundTrip: a Record written with MarshalJSON and read back by
// ReadJSONL is written as the transaction it describes, or refused with a
// reason; never written as something else.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("tx-1", "acme", "19.99", "USD", "", "cust", "prod", 250, true, int64(0))
	f.Add("tx-2", "../x", "1E3", "JPY", "refund", "", "", 0, false, int64(-1500))
	f.Add("=1", "a\"b", "-1", "usd", "gift", "\n", "\x00", 10001, true, int64(1))
	f.Fuzz(func(t *testing.T, id, agency, amount, cur, kind, cust, prod string, bps int, hasBPS bool, ms int64) {
		r := Record{TransactionID: id, AgencyID: agency, Amount: amount, Currency: cur, Kind: kind,
			CustomerID: cust, ProductID: prod, RecordedAt: testNow.Add(time.Duration(ms%int64(time.Hour/time.Millisecond)) * time.Millisecond)}
		if hasBPS {
			r.CommissionBPS = &bps
		}
		line, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		if bytes.Contains(line, []byte("\n")) {
			t.Fatalf("MarshalJSON wrote a line break: %q", line)
		}
		w := newMemWriter()
		opts := testOpts
		opts.AllowLate = true
		stats, bad, err := ReadJSONL(t.Context(), bytes.NewReader(append(line, '\n')), w, opts)
		if err != nil || stats.Read != 1 {
			t.Fatalf("ReadJSONL(%s): %+v, %v", line, stats, err)
		}
		if len(bad) == 1 {
			var re *item.RejectError
			if !errors.As(bad[0].Err, &re) && !errors.Is(bad[0].Err, ErrBadJSON) {
				t.Fatalf("refused %s with %v", line, bad[0].Err)
			}
			return
		}
		for _, it := range w.items {
			tx, err := item.Parse(it)
			if err != nil {
				t.Fatal(err)
			}
			// JSON strings are UTF-8: MarshalJSON writes an invalid byte
			// as U+FFFD, as string([]rune(s)) does.
			u := func(s string) string { return string([]rune(s)) }
			id, agency, cur, kind, cust, prod := u(id), u(agency), u(cur), u(kind), u(cust), u(prod)
			wantKind := item.Kind(kind)
			if kind == "" {
				wantKind = item.Purchase
			}
			if tx.ID != id || tx.AgencyID != agency || tx.Currency.Code != cur || tx.Currency.Format(tx.Amount) == "" ||
				tx.Kind != wantKind || tx.CustomerID != cust || tx.ProductID != prod || tx.HasBPS != hasBPS ||
				hasBPS && int(tx.BPS) != bps || !tx.RecordedAt.Equal(r.RecordedAt.UTC().Truncate(time.Millisecond)) {
				t.Fatalf("record %+v written as %+v", r, tx)
			}
			if !strings.Contains(string(line), `"amount":`) {
				t.Fatalf("line without amount: %s", line)
			}
		}
	})
}
