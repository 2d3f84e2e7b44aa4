package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
)

// memWriter is a fake Writer: a map keyed by (PK, SK), as the table is.
// It records every batch and fails a batch that repeats a key (as
// DynamoDB's BatchWriteItem does). failAt > 0 makes the failAt-th call
// return a *WriteError for its whole batch.
type memWriter struct {
	mu      sync.Mutex
	items   map[[2]string]item.Item
	batches []int
	calls   int
	failAt  int
}

func newMemWriter() *memWriter { return &memWriter{items: make(map[[2]string]item.Item)} }

func (m *memWriter) PutItems(_ context.Context, items []item.Item) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.Attrs[item.AttrTransactionID].Text
	}
	if m.calls == m.failAt {
		return &WriteError{TransactionIDs: ids, Err: errors.New("throttled")}
	}
	seen := make(map[[2]string]bool, len(items))
	for _, it := range items {
		k := [2]string{it.PK, it.SK}
		if seen[k] {
			return &WriteError{TransactionIDs: ids, Err: fmt.Errorf("duplicate keys %v in one batch", k)}
		}
		seen[k] = true
	}
	for _, it := range items {
		m.items[[2]string{it.PK, it.SK}] = it
	}
	m.batches = append(m.batches, len(items))
	return nil
}

var (
	testNow  = time.Date(2024, 5, 1, 10, 1, 0, 0, time.UTC)
	testOpts = Options{Lateness: 2 * time.Minute, Now: func() time.Time { return testNow }}
)

// jsonLine returns a valid record line with fields replaced by pairs of
// name and raw JSON ("" removes the field; new names are appended).
func jsonLine(pairs ...string) string {
	names := []string{"transaction_id", "agency_id", "amount", "currency", "recorded_at"}
	vals := map[string]string{
		"transaction_id": `"tx-1"`,
		"agency_id":      `"agency-0001"`,
		"amount":         `"19.99"`,
		"currency":       `"USD"`,
		"recorded_at":    `"2024-05-01T10:00:00Z"`,
	}
	for i := 0; i < len(pairs); i += 2 {
		if _, ok := vals[pairs[i]]; !ok {
			names = append(names, pairs[i])
		}
		vals[pairs[i]] = pairs[i+1]
	}
	var b strings.Builder
	b.WriteString("{")
	for _, n := range names {
		if vals[n] == "" {
			continue
		}
		if b.Len() > 1 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%s", n, vals[n])
	}
	b.WriteString("}")
	return b.String()
}

// ingestOne reads one line and returns the one item written, or the one
// line error.
func ingestOne(t *testing.T, line string, opts Options) (item.Item, *LineError) {
	t.Helper()
	w := newMemWriter()
	stats, bad, err := ReadJSONL(t.Context(), strings.NewReader(line+"\n"), w, opts)
	if err != nil {
		t.Fatalf("ReadJSONL: %v", err)
	}
	if stats.Read != 1 || stats.Written+stats.Invalid != 1 || len(bad) != stats.Invalid || len(w.items) != stats.Written {
		t.Fatalf("stats %+v, %d bad lines, %d items: want one record, written or invalid", stats, len(bad), len(w.items))
	}
	if len(bad) == 1 {
		if bad[0].Line != 1 {
			t.Errorf("line error on line %d, want 1", bad[0].Line)
		}
		return item.Item{}, &bad[0]
	}
	for _, it := range w.items {
		return it, nil
	}
	panic("unreachable")
}

func TestReadJSONLValues(t *testing.T) {
	late := testOpts
	late.AllowLate = true
	tests := []struct {
		name  string
		line  string
		opts  *Options
		attr  string // attribute to check, default amount
		want  string // its text in the written item
		wantT item.Type
	}{
		{name: "string amount", line: jsonLine(), want: "19.99"},
		{name: "number amount", line: jsonLine("amount", `19.99`), want: "19.99"},
		{name: "0.1 exact", line: jsonLine("amount", `0.1`), want: "0.10"},
		{name: "0.2 exact", line: jsonLine("amount", `"0.2"`), want: "0.20"},
		{name: "exponent", line: jsonLine("amount", `1e2`), want: "100.00"},
		{name: "exponent string", line: jsonLine("amount", `"1.999E1"`), want: "19.99"},
		{name: "trailing zeros", line: jsonLine("amount", `19.990`), want: "19.99"},
		// 2^63-1 cents: float64 would round this to ...758.08.
		{name: "largest reportable", line: jsonLine("amount", `99999999999999.99`), want: "99999999999999.99"},
		{name: "big string", line: jsonLine("amount", `"12345678901234.56"`), want: "12345678901234.56"},
		{name: "JPY", line: jsonLine("amount", `1500`, "currency", `"JPY"`), want: "1500"},
		{name: "BHD", line: jsonLine("amount", `1.5`, "currency", `"BHD"`), want: "1.500"},
		{name: "bps number", line: jsonLine("commission_bps", `1500`), attr: "commission_bps", want: "1500"},
		{name: "bps string", line: jsonLine("commission_bps", `"250"`), attr: "commission_bps", want: "250"},
		{name: "bps exponent", line: jsonLine("commission_bps", `1.5e3`), attr: "commission_bps", want: "1500"},
		{name: "kind default", line: jsonLine(), attr: "kind", want: "purchase"},
		{name: "refund", line: jsonLine("kind", `"refund"`), attr: "kind", want: "refund"},
		{name: "null is absent", line: jsonLine("customer_id", `null`, "kind", `null`), attr: "kind", want: "purchase"},
		{name: "awkward agency", line: jsonLine("agency_id", `"Agence \u00c9toile"`), attr: "agency_id", want: "Agence Étoile", wantT: item.String},
		{name: "offset to UTC", line: jsonLine("recorded_at", `"2024-05-01T12:00:30.5+02:00"`),
			attr: "recorded_at", want: "2024-05-01T10:00:30.500Z", wantT: item.String},
		{name: "missing recorded_at is now", line: jsonLine("recorded_at", ""),
			attr: "recorded_at", want: "2024-05-01T10:01:00.000Z", wantT: item.String},
		{name: "1m59s late", line: jsonLine("recorded_at", `"2024-05-01T09:59:01Z"`), want: "19.99"},
		{name: "late allowed", line: jsonLine("recorded_at", `"2023-01-01T00:00:00Z"`), opts: &late, want: "19.99"},
		{name: "4m future", line: jsonLine("recorded_at", `"2024-05-01T10:05:00Z"`), want: "19.99"},
		{name: "BOM", line: "\uFEFF" + jsonLine(), want: "19.99"},
		{name: "CRLF", line: jsonLine() + "\r", want: "19.99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOpts
			if tc.opts != nil {
				opts = *tc.opts
			}
			it, lerr := ingestOne(t, tc.line, opts)
			if lerr != nil {
				t.Fatalf("refused: %v", lerr)
			}
			attr, typ := tc.attr, tc.wantT
			if attr == "" {
				attr = item.AttrAmount
			}
			if typ == 0 {
				typ = item.Number
				if attr == item.AttrKind {
					typ = item.String
				}
			}
			if got := it.Attrs[attr]; got != (item.Value{Type: typ, Text: tc.want}) {
				t.Errorf("%s = %+v, want %s %q", attr, got, typ, tc.want)
			}
			// The keys are the producer contract's, from the UTC instant.
			tx, err := item.Parse(it)
			if err != nil {
				t.Fatalf("written item does not parse: %v", err)
			}
			pk, sk := keys.ForTransaction(tx.ID, tx.RecordedAt, opts.Shards)
			if it.PK != pk || it.SK != sk {
				t.Errorf("keys (%s, %s), want (%s, %s)", it.PK, it.SK, pk, sk)
			}
		})
	}
}

// TestReadJSONLExactSum checks amounts never go through float64: 0.1 and
// 0.2 are 10 and 20 cents, and sum to exactly 30.
func TestReadJSONLExactSum(t *testing.T) {
	w := newMemWriter()
	in := jsonLine("transaction_id", `"a"`, "amount", `0.1`) + "\n" + jsonLine("transaction_id", `"b"`, "amount", `"0.2"`) + "\n"
	if _, bad, err := ReadJSONL(t.Context(), strings.NewReader(in), w, testOpts); err != nil || len(bad) > 0 {
		t.Fatalf("ReadJSONL: %v %v", bad, err)
	}
	var sum int64
	for _, it := range w.items {
		tx, err := item.Parse(it)
		if err != nil {
			t.Fatal(err)
		}
		sum += tx.Amount
	}
	if sum != 30 {
		t.Errorf("0.1 + 0.2 = %d cents, want 30", sum)
	}
}

func TestReadJSONLRejects(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		allowL  bool
		field   string // "" for a line that is not a record: then wantErr
		value   string
		reason  string // substring
		wantErr error
	}{
		{name: "too many digits", line: jsonLine("amount", `"19.999"`), field: "amount", value: "19.999", reason: "more fraction digits than USD has (2)"},
		{name: "JPY fraction", line: jsonLine("amount", `15.5`, "currency", `"JPY"`), field: "amount", value: "15.5", reason: "more fraction digits than JPY has (0)"},
		{name: "BHD 4 digits", line: jsonLine("amount", `1.2345`, "currency", `"BHD"`), field: "amount", value: "1.2345", reason: "BHD has (3)"},
		{name: "overflow", line: jsonLine("amount", `92233720368547758.08`), field: "amount", value: "92233720368547758.08", reason: "out of range"},
		{name: "zero", line: jsonLine("amount", `0`), field: "amount", value: "0", reason: "must be > 0"},
		{name: "negative", line: jsonLine("amount", `"-5"`), field: "amount", value: "-5", reason: "must be > 0"},
		{name: "not a number", line: jsonLine("amount", `"19,99"`), field: "amount", value: "19,99", reason: "not a decimal number"},
		{name: "empty amount", line: jsonLine("amount", `""`), field: "amount", reason: "not a decimal number"},
		{name: "amount bool", line: jsonLine("amount", `true`), field: "amount", value: "true", reason: "want type N"},
		{name: "amount null", line: jsonLine("amount", `null`), field: "amount", reason: "missing"},
		{name: "amount missing", line: jsonLine("amount", ""), field: "amount", reason: "missing"},
		{name: "typo ammount", line: jsonLine("amount", "", "ammount", `"19.99"`), field: "ammount", value: "\"19.99\"", reason: "unknown field; did you mean amount?"},
		{name: "escaped twice", line: strings.TrimSuffix(jsonLine(), "}") + ` , "am\u006funt" : 2 }`, field: "amount", value: "2", reason: "field given twice"},
		{name: "nested keys are not fields", line: jsonLine("agency_id", `{"amount":1,"x":[{"amount":2}]}`), field: "agency_id", reason: "want type S"},
		{name: "key attribute", line: jsonLine("random_timestamp", `"x"`), field: "random_timestamp", reason: "unknown field"},
		{name: "field twice", line: strings.TrimSuffix(jsonLine(), "}") + `,"amount":"1.00"}`, field: "amount", value: `"1.00"`, reason: "field given twice"},
		{name: "no transaction_id", line: jsonLine("transaction_id", ""), field: "transaction_id", reason: "missing"},
		{name: "numeric transaction_id", line: jsonLine("transaction_id", `42`), field: "transaction_id", value: "42", reason: "want type S, got N"},
		{name: "empty agency", line: jsonLine("agency_id", `""`), field: "agency_id", reason: "empty"},
		{name: "agency newline", line: jsonLine("agency_id", `"a\nb"`), field: "agency_id", value: "a\nb", reason: "U+000A"},
		{name: "agency object", line: jsonLine("agency_id", `{"id":1}`), field: "agency_id", value: `{"id":1}`, reason: "want type S"},
		{name: "lower currency", line: jsonLine("currency", `"usd"`), field: "currency", value: "usd", reason: "unknown ISO 4217 currency"},
		{name: "unknown currency", line: jsonLine("currency", `"XTS"`), field: "currency", value: "XTS", reason: "unknown ISO 4217 currency"},
		{name: "bad kind", line: jsonLine("kind", `"sale"`), field: "kind", value: "sale", reason: `want "purchase" or "refund"`},
		{name: "bps fraction", line: jsonLine("commission_bps", `15.5`), field: "commission_bps", value: "15.5", reason: "not an integer"},
		{name: "bps too big", line: jsonLine("commission_bps", `"10001"`), field: "commission_bps", value: "10001", reason: "want an integer 0..10000"},
		{name: "customer control", line: jsonLine("customer_id", `"c\u0007"`), field: "customer_id", value: "c\a", reason: "U+0007"},
		{name: "recorded_at text", line: jsonLine("recorded_at", `"yesterday"`), field: "recorded_at", value: "yesterday", reason: "RFC 3339"},
		{name: "recorded_at epoch", line: jsonLine("recorded_at", `1714557600`), field: "recorded_at", value: "1714557600", reason: "RFC 3339"},
		{name: "late", line: jsonLine("recorded_at", `"2024-05-01T09:58:59Z"`), field: "recorded_at", value: "2024-05-01T09:58:59Z", reason: "already reported"},
		{name: "future", line: jsonLine("recorded_at", `"2024-05-01T10:06:01Z"`), field: "recorded_at", value: "2024-05-01T10:06:01Z", reason: "time-zone error"},
		{name: "future even if late allowed", allowL: true, line: jsonLine("recorded_at", `"2025-05-01T10:00:00Z"`), field: "recorded_at", reason: "after the ingest clock"},
		{name: "truncated JSON", line: `{"transaction_id":"tx-1",`, wantErr: ErrBadJSON},
		{name: "array", line: `[1,2]`, wantErr: ErrBadJSON},
		{name: "string", line: `"tx-1"`, wantErr: ErrBadJSON},
		{name: "two objects", line: jsonLine() + jsonLine(), wantErr: ErrBadJSON},
		{name: "invalid UTF-8", line: jsonLine("agency_id", "\"a\xffb\""), wantErr: ErrBadJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOpts
			opts.AllowLate = tc.allowL
			_, lerr := ingestOne(t, tc.line, opts)
			if lerr == nil {
				t.Fatalf("written, want refused")
			}
			if tc.wantErr != nil {
				if !errors.Is(lerr, tc.wantErr) {
					t.Errorf("error %v, want %v", lerr, tc.wantErr)
				}
				return
			}
			var re *item.RejectError
			if !errors.As(lerr, &re) {
				t.Fatalf("error %v (%T), want a *item.RejectError", lerr.Err, lerr.Err)
			}
			if re.Field != tc.field || (tc.value != "" && re.Value != tc.value) || !strings.Contains(re.Reason, tc.reason) {
				t.Errorf("reject %+v, want field %q value %q reason containing %q", *re, tc.field, tc.value, tc.reason)
			}
			if msg := lerr.Error(); !strings.HasPrefix(msg, "line 1: "+tc.field) {
				t.Errorf("message %q does not start with the line and field", msg)
			}
		})
	}
}

func TestLineErrorMessage(t *testing.T) {
	_, lerr := ingestOne(t, jsonLine("amount", `"19.999"`), testOpts)
	want := `line 1: amount "19.999": more fraction digits than USD has (2)`
	if lerr == nil || lerr.Error() != want {
		t.Errorf("got %v, want %s", lerr, want)
	}
}

// TestReadJSONLFile checks a file with good, bad and blank lines: line
// numbers, stats, and that the good lines are written.
func TestReadJSONLFile(t *testing.T) {
	lines := []string{
		jsonLine("transaction_id", `"a"`), // 1 ok
		"",                                // 2 blank
		jsonLine("transaction_id", `"b"`, "amount", `"1.001"`), // 3 bad
		"   \t",                 // 4 blank
		`{"transaction_id":"c"`, // 5 bad JSON
		jsonLine("transaction_id", `"d"`, "currency", `"JPY"`),    // 6 bad: 19.99 yen
		jsonLine("transaction_id", `"e"`, "amount", `250`) + "\r", // 7 ok, CRLF
		jsonLine("transaction_id", `"f"`),                         // 8 ok, no final newline
	}
	w := newMemWriter()
	stats, bad, err := ReadJSONL(t.Context(), strings.NewReader(strings.Join(lines, "\n")), w, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stats{Read: 6, Written: 3, Invalid: 3, Lines: 8}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	var got []int
	for _, b := range bad {
		got = append(got, b.Line)
	}
	if fmt.Sprint(got) != "[3 5 6]" {
		t.Errorf("bad lines %v, want [3 5 6]: %v", got, bad)
	}
	ids := map[string]bool{}
	for _, it := range w.items {
		ids[it.Attrs[item.AttrTransactionID].Text] = true
	}
	if len(ids) != 3 || !ids["a"] || !ids["e"] || !ids["f"] {
		t.Errorf("written %v, want a, e, f", ids)
	}
}

func TestReadJSONLLongLines(t *testing.T) {
	// A valid record padded with spaces inside the object to exactly n bytes.
	padded := func(n int) string {
		l := jsonLine()
		return l[:1] + strings.Repeat(" ", n-len(l)) + l[1:]
	}
	in := strings.Join([]string{
		padded(MaxLineBytes),                  // 1 ok: exactly the limit
		padded(MaxLineBytes + 1),              // 2 too long
		strings.Repeat("x", 5*MaxLineBytes),   // 3 too long, not even JSON
		jsonLine("transaction_id", `"after"`), // 4 ok
	}, "\n")
	w := newMemWriter()
	stats, bad, err := ReadJSONL(t.Context(), strings.NewReader(in), w, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Written != 2 || len(bad) != 2 || bad[0].Line != 2 || bad[1].Line != 3 ||
		!errors.Is(&bad[0], ErrLineTooLong) || !errors.Is(&bad[1], ErrLineTooLong) {
		t.Errorf("stats %+v, bad %v: want lines 2 and 3 too long, 2 written", stats, bad)
	}
}

// TestReadJSONLIdempotent ingests the same file twice, and into a second
// table: the same item set each time.
func TestReadJSONLIdempotent(t *testing.T) {
	from := time.Date(2024, 4, 30, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	err := GenerateRecords(GenerateOptions{N: 2000, Seed: 7, From: from, To: from.Add(24 * time.Hour)}, func(r Record) error {
		j, err := r.MarshalJSON()
		b.Write(j)
		b.WriteByte('\n')
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := testOpts
	opts.AllowLate = true
	opts.Shards = 4
	w1, w2 := newMemWriter(), newMemWriter()
	for i, w := range []*memWriter{w1, w1, w2} {
		stats, bad, err := ReadJSONL(t.Context(), strings.NewReader(b.String()), w, opts)
		if err != nil || len(bad) > 0 || stats.Written != 2000 {
			t.Fatalf("run %d: stats %+v, bad %v, err %v", i, stats, bad, err)
		}
	}
	if len(w1.items) != 2000 || !maps.EqualFunc(w1.items, w2.items, func(a, b item.Item) bool {
		return a.PK == b.PK && a.SK == b.SK && maps.Equal(a.Attrs, b.Attrs)
	}) {
		t.Errorf("twice-ingested table has %d items and differs from a once-ingested one (%d items)", len(w1.items), len(w2.items))
	}
}

// TestReadJSONLBatches checks batch sizes and that a repeated record is
// kept once (the later one) with distinct keys in every batch.
func TestReadJSONLBatches(t *testing.T) {
	var lines []string
	for i := range 50 {
		lines = append(lines, jsonLine("transaction_id", fmt.Sprintf(`"tx-%d"`, i)))
		if i == 10 {
			// tx-10 again, right after: same keys, later content wins.
			lines = append(lines, jsonLine("transaction_id", `"tx-10"`, "amount", `"5.00"`))
		}
	}
	w := newMemWriter()
	opts := testOpts
	opts.BatchSize = 7
	stats, bad, err := ReadJSONL(t.Context(), strings.NewReader(strings.Join(lines, "\n")), w, opts)
	if err != nil || len(bad) > 0 {
		t.Fatalf("ReadJSONL: %v %v", bad, err)
	}
	if want := (Stats{Read: 51, Written: 50, Duplicates: 1, Lines: 51}); stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	if fmt.Sprint(w.batches) != "[7 7 7 7 7 7 7 1]" {
		t.Errorf("batches %v, want seven of 7 and one of 1", w.batches)
	}
	for _, it := range w.items {
		if it.Attrs[item.AttrTransactionID].Text == "tx-10" && it.Attrs[item.AttrAmount].Text != "5.00" {
			t.Errorf("tx-10 amount %s, want the later 5.00", it.Attrs[item.AttrAmount].Text)
		}
	}
}

func TestReadJSONLWriteError(t *testing.T) {
	var lines []string
	for i := range 10 {
		lines = append(lines, jsonLine("transaction_id", fmt.Sprintf(`"tx-%d"`, i)))
	}
	w := newMemWriter()
	w.failAt = 2
	opts := testOpts
	opts.BatchSize = 4
	stats, _, err := ReadJSONL(t.Context(), strings.NewReader(strings.Join(lines, "\n")), w, opts)
	var we *WriteError
	if !errors.As(err, &we) || len(we.TransactionIDs) != 4 || we.TransactionIDs[0] != "tx-4" {
		t.Fatalf("err %v, want a *WriteError for tx-4..tx-7", err)
	}
	if stats.Written != 4 || len(w.items) != 4 {
		t.Errorf("stats %+v, %d items: want the first batch of 4 written", stats, len(w.items))
	}
}

func TestReadJSONLCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	w := newMemWriter()
	_, _, err := ReadJSONL(ctx, strings.NewReader(jsonLine()), w, testOpts)
	if !errors.Is(err, context.Canceled) || len(w.items) != 0 {
		t.Errorf("err %v, %d items: want context.Canceled and nothing written", err, len(w.items))
	}
}

// stopWriter closes stop at its first call, as a signal would while the
// first batch is written.
type stopWriter struct {
	*memWriter
	stop chan struct{}
	once sync.Once
}

func (w *stopWriter) PutItems(ctx context.Context, items []item.Item) error {
	w.once.Do(func() { close(w.stop) })
	return w.memWriter.PutItems(ctx, items)
}

// TestReadJSONLStop: a closed Stop ends ReadJSONL before the next line,
// the lines read written, ErrStopped, and Lines says where the rest starts.
func TestReadJSONLStop(t *testing.T) {
	var lines []string
	for i := range 50 {
		lines = append(lines, jsonLine("transaction_id", fmt.Sprintf(`"tx-%d"`, i)))
	}
	w := &stopWriter{memWriter: newMemWriter(), stop: make(chan struct{})}
	opts := testOpts
	opts.BatchSize, opts.Stop = 4, w.stop
	stats, _, err := ReadJSONL(t.Context(), strings.NewReader(strings.Join(lines, "\n")), w, opts)
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("err %v, want ErrStopped", err)
	}
	if stats.Lines < 4 || stats.Lines >= 50 || stats.Written != stats.Lines || len(w.items) != stats.Lines {
		t.Errorf("stats %+v, %d items: want every line read written, and not all 50", stats, len(w.items))
	}
	// The rest, from line Lines+1, writes the others once.
	opts.Stop = nil
	rest, _, err := ReadJSONL(t.Context(), strings.NewReader(strings.Join(lines[stats.Lines:], "\n")), w, opts)
	if err != nil || rest.Written+stats.Written != 50 || len(w.items) != 50 {
		t.Errorf("the rest: %+v %v, %d items in all, want 50", rest, err, len(w.items))
	}
}

func TestRecordMarshalJSON(t *testing.T) {
	bps := 1500
	r := Record{TransactionID: "tx-1", AgencyID: "acme/travel", Amount: "19.99", Currency: "USD", Kind: "refund",
		CustomerID: "c1", ProductID: "p1", CommissionBPS: &bps,
		RecordedAt: time.Date(2024, 5, 1, 12, 0, 0, 5e8, time.FixedZone("CEST", 7200))}
	j, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"transaction_id":"tx-1","agency_id":"acme/travel","amount":"19.99","currency":"USD","kind":"refund",` +
		`"commission_bps":1500,"customer_id":"c1","product_id":"p1","recorded_at":"2024-05-01T10:00:00.5Z"}`
	if string(j) != want {
		t.Errorf("got  %s\nwant %s", j, want)
	}
	j, _ = Record{TransactionID: "t", AgencyID: "a", Amount: "1", Currency: "JPY"}.MarshalJSON()
	if string(j) != `{"transaction_id":"t","agency_id":"a","amount":"1","currency":"JPY"}` {
		t.Errorf("minimal record: %s", j)
	}
}
