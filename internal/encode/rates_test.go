package encode

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestReadLineItemRates: the transaction ids and rates of a transactions
// file come back in file order, over several row groups and pages; an
// empty file has none; a file of another layout is an error.
func TestReadLineItemRates(t *testing.T) {
	for _, n := range []int{0, 3, 2*lineItemRowGroupRows + 17} {
		var b bytes.Buffer
		lw := NewLineItemWriter(&b)
		want := make([]string, n)
		for i := range n {
			li := genLineItem(i, n)
			if err := lw.Write(&li); err != nil {
				t.Fatal(err)
			}
			want[i] = li.Tx.ID + "=" + strconv.Itoa(int(li.BPS))
		}
		if err := lw.Close(); err != nil {
			t.Fatal(err)
		}
		var got []string
		err := ReadLineItemRates(bytes.NewReader(b.Bytes()), int64(b.Len()), func(id []byte, bps int32) error {
			got = append(got, string(id)+"="+strconv.Itoa(int(bps)))
			return nil
		})
		if err != nil {
			t.Fatalf("%d rows: %v", n, err)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%d rows: got %d rates, want %d (first %q)", n, len(got), len(want), got[:min(len(got), 3)])
		}
	}

	var b bytes.Buffer
	if err := WriteSummaryParquet(&b, summaryRows()); err != nil {
		t.Fatal(err)
	}
	err := ReadLineItemRates(bytes.NewReader(b.Bytes()), int64(b.Len()), func([]byte, int32) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "not a transactions file") {
		t.Errorf("summary file read as transactions: %v", err)
	}
}
