package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/item"
)

const (
	pkA  = "202401010000"
	pkA1 = "202401010000#1"
	pkB  = "202401010015"
)

// base58 is the alphabet of sort key suffixes (no 0, O, I, l).
const base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// sortKey returns a sort key of the producer contract: the second, then a
// 16-character suffix derived from n.
func sortKey(second string, n int) string {
	var b strings.Builder
	b.WriteString(second)
	b.WriteByte('.')
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for range 16 {
		b.WriteByte(base58[r.IntN(len(base58))])
	}
	return b.String()
}

// txn returns a plausible transaction item; extra attributes override.
func txn(pk, sk string, extra map[string]item.Value) item.Item {
	attrs := map[string]item.Value{
		item.AttrTransactionID: item.S("tx-" + sk),
		item.AttrAgencyID:      item.S("agency-1"),
		item.AttrAmount:        item.N("19.99"),
		item.AttrCurrency:      item.S("USD"),
	}
	for k, v := range extra {
		attrs[k] = v
	}
	return item.Item{PK: pk, SK: sk, Attrs: attrs}
}

func put(t *testing.T, b Backend, items ...item.Item) {
	t.Helper()
	if err := b.Writer.PutItems(ctx(t), items); err != nil {
		t.Fatalf("PutItems(%d items): %v", len(items), err)
	}
}

// query returns every item of pk after `after` and the number of pages.
func query(t *testing.T, src collect.Source, pk, after string) ([]item.Item, int) {
	t.Helper()
	var got []item.Item
	pages := 0
	err := src.Query(ctx(t), pk, after, func(page []item.Item) error {
		pages++
		if len(page) == 0 {
			return fmt.Errorf("page %d is empty: fn must only get non-empty pages", pages)
		}
		got = append(got, page...) // items, not the slice, are kept
		return nil
	})
	if err != nil {
		t.Fatalf("Query(%q, after %q): %v", pk, after, err)
	}
	return got, pages
}

func keysOf(items []item.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.SK
	}
	return out
}

// normNumber returns the canonical form of a plain decimal ("019.990" ->
// "19.99", "-0.0" -> "0"), or s itself when it is not one.
func normNumber(s string) string {
	neg := strings.HasPrefix(s, "-")
	d := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	intPart, frac, hasDot := strings.Cut(d, ".")
	if intPart == "" && frac == "" || strings.Trim(intPart+frac, "0123456789") != "" {
		return s
	}
	intPart = strings.TrimLeft(intPart, "0")
	if hasDot {
		frac = strings.TrimRight(frac, "0")
	}
	if intPart == "" {
		intPart = "0"
	}
	out := intPart
	if frac != "" {
		out += "." + frac
	}
	if neg && out != "0" {
		out = "-" + out
	}
	return out
}

// attrsDiff describes how got differs from want ("" when equal): S values
// byte for byte, N values by numeric value.
func attrsDiff(got, want map[string]item.Value) string {
	var diffs []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s missing (want %s %q)", name, w.Type, w.Text))
		case g.Type != w.Type:
			diffs = append(diffs, fmt.Sprintf("%s: type %s, want %s", name, g.Type, w.Type))
		case w.Type == item.Number && normNumber(g.Text) != normNumber(w.Text):
			diffs = append(diffs, fmt.Sprintf("%s: N %q, want %q", name, g.Text, w.Text))
		case w.Type != item.Number && g.Text != w.Text:
			diffs = append(diffs, fmt.Sprintf("%s: %s %q, want %q", name, g.Type, g.Text, w.Text))
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected attribute %s = %s %q", name, g.Type, g.Text))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

func testItemsRoundTrip(t *testing.T, b Backend) {
	want := []item.Item{
		txn(pkA, sortKey("2024-01-01T00:00:00", 1), map[string]item.Value{
			item.AttrAgencyID:      item.S("Agência São Paulo 日本 🚀"),
			item.AttrAmount:        item.N("19.990"),
			item.AttrCommissionBPS: item.N("250"),
			item.AttrCustomerID:    item.S("  padded, \"quoted\", tab\there  "),
			item.AttrProductID:     item.S("=SUM(A1:A2)"),
			item.AttrRecordedAt:    item.S("2024-01-01T00:00:00.123Z"),
			item.AttrKind:          item.S("refund"),
		}),
		txn(pkA, sortKey("2024-01-01T00:00:01", 2), map[string]item.Value{
			item.AttrAmount:   item.N("1500"),
			item.AttrCurrency: item.S("JPY"),
		}),
		txn(pkA, sortKey("2024-01-01T00:00:02", 3), map[string]item.Value{
			item.AttrAmount:   item.N("0.001"),
			item.AttrCurrency: item.S("BHD"),
			"extra_big":       item.N("12345678901234567890123456789.123456789"),
			"extra_negative":  item.N("-42.5"),
		}),
	}
	put(t, b, want...)
	got, _ := query(t, b.Source, pkA, "")
	if len(got) != len(want) {
		t.Fatalf("Query returned %d items, want %d: %q", len(got), len(want), keysOf(got))
	}
	for i := range want {
		if got[i].PK != want[i].PK || got[i].SK != want[i].SK {
			t.Errorf("item %d keys = (%q, %q), want (%q, %q)", i, got[i].PK, got[i].SK, want[i].PK, want[i].SK)
		}
		if d := attrsDiff(got[i].Attrs, want[i].Attrs); d != "" {
			t.Errorf("item %d (%s): %s", i, want[i].SK, d)
		}
	}
}

func testQueryOrder(t *testing.T, b Backend) {
	// Same second, suffixes differing only in case and digits, plus
	// neighbouring seconds; written in an order that is not the sorted one.
	sks := []string{
		"2024-01-01T00:00:01.aaaaaaaaaaaaaaaa",
		"2024-01-01T00:00:00.zzzzzzzzzzzzzzzz",
		"2024-01-01T00:00:01.AAAAAAAAAAAAAAAA",
		"2024-01-01T00:00:01.1111111111111111",
		"2024-01-01T00:00:01.Aaaaaaaaaaaaaaab",
		"2024-01-01T00:00:01.Aaaaaaaaaaaaaaaa",
		"2024-01-01T00:00:02.1111111111111111",
		"2024-01-01T00:00:01.9zzzzzzzzzzzzzzz",
	}
	for i := range 40 {
		sks = append(sks, sortKey("2024-01-01T00:00:05", i))
	}
	var items []item.Item
	for _, sk := range sks {
		items = append(items, txn(pkA, sk, nil))
	}
	put(t, b, items...)

	want := slices.Clone(sks)
	slices.Sort(want) // Go compares strings bytewise: UTF-8 byte order
	got, _ := query(t, b.Source, pkA, "")
	if !slices.Equal(keysOf(got), want) {
		t.Fatalf("Query order:\n got  %q\n want %q", keysOf(got), want)
	}
	for _, it := range got {
		if it.PK != pkA {
			t.Errorf("item %s has PK %q, want %q", it.SK, it.PK, pkA)
		}
	}
}

func testQueryAfter(t *testing.T, b Backend) {
	var sks []string
	for i := range 20 {
		sks = append(sks, sortKey("2024-01-01T00:00:0"+strconv.Itoa(i%3), i))
	}
	var items []item.Item
	for _, sk := range sks {
		items = append(items, txn(pkA, sk, nil))
	}
	put(t, b, items...)
	slices.Sort(sks)

	tests := []struct {
		name, after string
		want        []string
	}{
		{"empty", "", sks},
		{"first", sks[0], sks[1:]},
		{"middle", sks[9], sks[10:]},
		{"absent key between two", sks[9] + "0", sks[10:]},
		{"before all", "2024-01-01T00:00:00", sks},
		{"last", sks[len(sks)-1], nil},
		{"after all", "2024-01-01T00:00:09", nil},
	}
	for _, tc := range tests {
		got, pages := query(t, b.Source, pkA, tc.after)
		if !slices.Equal(keysOf(got), tc.want) {
			t.Errorf("%s: Query(after %q) = %q, want %q", tc.name, tc.after, keysOf(got), tc.want)
		}
		if tc.want == nil && pages != 0 {
			t.Errorf("%s: fn called %d times for no items, want 0", tc.name, pages)
		}
	}
}

func testQueryPaging(t *testing.T, b Backend) {
	// 3,000 items of ~1.1 KB: more than one 1 MB DynamoDB page and more
	// than any sensible item-count page.
	const n = 3000
	pad := strings.Repeat("x", 1000)
	var sks []string
	batch := make([]item.Item, 0, 500)
	for i := range n {
		sk := sortKey(fmt.Sprintf("2024-01-01T00:%02d:%02d", i/60%60, i%60), i)
		sks = append(sks, sk)
		batch = append(batch, txn(pkA, sk, map[string]item.Value{"pad": item.S(pad + strconv.Itoa(i))}))
		if len(batch) == cap(batch) {
			put(t, b, batch...)
			batch = batch[:0]
		}
	}
	put(t, b, batch...)
	slices.Sort(sks)

	got, pages := query(t, b.Source, pkA, "")
	if pages < 2 {
		t.Errorf("fn called %d times for %d items of ~1 KB, want pages (> 1)", pages, n)
	}
	if !slices.Equal(keysOf(got), sks) {
		t.Fatalf("paged Query returned %d items, want each of %d exactly once in order", len(got), n)
	}
	for _, it := range got {
		if p := it.Attrs["pad"].Text; !strings.HasPrefix(p, pad) {
			t.Fatalf("item %s: pad attribute is %d bytes, want %d+", it.SK, len(p), len(pad))
		}
	}
	t.Logf("%d items in %d pages", len(got), pages)

	// Resuming after an item in the middle of a page reads the rest once.
	rest, _ := query(t, b.Source, pkA, sks[1234])
	if !slices.Equal(keysOf(rest), sks[1235:]) {
		t.Errorf("Query(after item 1234) returned %d items, want the %d after it", len(rest), n-1235)
	}
}

func testQueryEmptyPartition(t *testing.T, b Backend) {
	// Before anything was written at all.
	for _, after := range []string{"", "2024-01-01T00:00:00"} {
		if got, pages := query(t, b.Source, pkA, after); pages != 0 || len(got) != 0 {
			t.Errorf("empty store: Query(after %q) called fn %d times, want 0", after, pages)
		}
	}
	put(t, b, txn(pkB, sortKey("2024-01-01T00:15:00", 1), nil))
	for _, pk := range []string{pkA, "209912312345", "unknown"} {
		if got, pages := query(t, b.Source, pk, ""); pages != 0 || len(got) != 0 {
			t.Errorf("Query(unknown %q) called fn %d times with %q, want 0", pk, pages, keysOf(got))
		}
	}
}

func testPartitionsIsolated(t *testing.T, b Backend) {
	want := map[string][]string{}
	var items []item.Item
	for i, pk := range []string{pkA, pkA1, pkB, pkA + "#10", pkA1, pkA, pkB, pkA1} {
		sk := sortKey("2024-01-01T00:00:00", i)
		want[pk] = append(want[pk], sk)
		items = append(items, txn(pk, sk, map[string]item.Value{"pk_copy": item.S(pk)}))
	}
	put(t, b, items...)
	for pk, sks := range want {
		slices.Sort(sks)
		got, _ := query(t, b.Source, pk, "")
		if !slices.Equal(keysOf(got), sks) {
			t.Errorf("Query(%q) = %q, want %q", pk, keysOf(got), sks)
		}
		for _, it := range got {
			if it.PK != pk || it.Attrs["pk_copy"].Text != pk {
				t.Errorf("Query(%q) returned an item of partition %q (PK %q)", pk, it.Attrs["pk_copy"].Text, it.PK)
			}
		}
	}
}

func testPutItemsOverwrites(t *testing.T, b Backend) {
	sk := sortKey("2024-01-01T00:00:00", 1)
	other := txn(pkA, sortKey("2024-01-01T00:00:01", 2), nil)
	put(t, b, txn(pkA, sk, map[string]item.Value{"old_only": item.S("gone"), item.AttrAmount: item.N("1.00")}), other)
	newer := txn(pkA, sk, map[string]item.Value{item.AttrAmount: item.N("2.50"), "new_only": item.S("here")})
	put(t, b, newer)

	got, _ := query(t, b.Source, pkA, "")
	if len(got) != 2 {
		t.Fatalf("after overwrite Query returned %d items %q, want 2", len(got), keysOf(got))
	}
	if got[0].SK != sk {
		t.Fatalf("first item %q, want %q", got[0].SK, sk)
	}
	if d := attrsDiff(got[0].Attrs, newer.Attrs); d != "" {
		t.Errorf("overwritten item: %s", d)
	}
	if d := attrsDiff(got[1].Attrs, other.Attrs); d != "" {
		t.Errorf("untouched item: %s", d)
	}
}

func testQueryReturnsFnError(t *testing.T, b Backend) {
	for i := range 5 {
		put(t, b, txn(pkA, sortKey("2024-01-01T00:00:00", i), nil))
	}
	stop := errors.New("stop here")
	calls := 0
	err := b.Source.Query(ctx(t), pkA, "", func([]item.Item) error {
		calls++
		return fmt.Errorf("consumer: %w", stop)
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Query returned %v, want fn's error (errors.Is)", err)
	}
	if calls != 1 {
		t.Errorf("fn called %d times after returning an error, want 1", calls)
	}
}

func testQueryHonoursContext(t *testing.T, b Backend) {
	put(t, b, txn(pkA, sortKey("2024-01-01T00:00:00", 1), nil))
	c, cancel := context.WithCancel(ctx(t))
	cancel()
	calls := 0
	err := b.Source.Query(c, pkA, "", func([]item.Item) error { calls++; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Query with a cancelled context returned %v, want context.Canceled", err)
	}
	if calls != 0 {
		t.Errorf("fn called %d times with a cancelled context, want 0", calls)
	}
}

func testQueryConcurrent(t *testing.T, b Backend) {
	var want []string
	var items []item.Item
	for i := range 200 {
		sk := sortKey("2024-01-01T00:00:00", i)
		want = append(want, sk)
		items = append(items, txn(pkA, sk, nil))
	}
	put(t, b, items...)
	slices.Sort(want)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		wg.Go(func() {
			var got []string
			err := b.Source.Query(ctx(t), pkA, "", func(page []item.Item) error {
				for _, it := range page {
					got = append(got, it.SK)
				}
				return nil
			})
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("reader %d got %d items, want %d in order", i, len(got), len(want))
			}
			errs <- err
		})
	}
	// Writes to another partition meanwhile.
	for i := range 4 {
		wg.Go(func() {
			errs <- b.Writer.PutItems(ctx(t), []item.Item{txn(pkB, sortKey("2024-01-01T00:15:00", i), nil)})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got, _ := query(t, b.Source, pkB, ""); len(got) != 4 {
		t.Errorf("concurrent writers stored %d items, want 4", len(got))
	}
}
