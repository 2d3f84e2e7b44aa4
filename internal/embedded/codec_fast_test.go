package embedded

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/item"
)

// generalEncode is encodeAttrs's general path: names sorted, then encoded.
func generalEncode(attrs map[string]item.Value) []byte {
	buf := []byte{codecVersion}
	buf = binary.AppendUvarint(buf, uint64(len(attrs)))
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[name]
		buf = binary.AppendUvarint(buf, uint64(len(name)))
		buf = append(buf, name...)
		buf = append(buf, byte(v.Type))
		buf = binary.AppendUvarint(buf, uint64(len(v.Text)))
		buf = append(buf, v.Text...)
	}
	return buf
}

// TestEncodeContractAttrs: the unsorted encoding of contract-only maps
// gives the sorted encoding's bytes (what is stored must not depend on
// the path), maps with other names take the general path, and both decode
// back to the map.
func TestEncodeContractAttrs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for n := range 3000 {
		attrs := map[string]item.Value{}
		for _, name := range item.ContractAttrs {
			if r.IntN(3) > 0 {
				attrs[name] = item.Value{Type: item.Type(1 + r.IntN(3)), Text: string(rune('a' + r.IntN(26)))}
			}
		}
		if n%5 == 0 {
			attrs["zz_extra"] = item.S("x")
		}
		if n%7 == 0 {
			attrs["aa_extra"] = item.N("1")
		}
		got := encodeAttrs(attrs)
		if want := generalEncode(attrs); !bytes.Equal(got, want) {
			t.Fatalf("%v:\n got %x\nwant %x", attrs, got, want)
		}
		_, fast := encodeContractAttrs(attrs)
		if extra := n%5 == 0 || n%7 == 0; fast == extra {
			t.Fatalf("%v: fast path %v", attrs, fast)
		}
		back, err := decodeAttrs(got)
		if err != nil || !maps.Equal(back, attrs) {
			t.Fatalf("round trip of %v: %v %v", attrs, back, err)
		}
	}
}

// TestDecodeRecord: decodeRecord gives what decodeItem gives (the same
// item, or the same error), for contract-only items, items with other
// attributes, and corrupted encodings; contract-only items have no map.
func TestDecodeRecord(t *testing.T) {
	for i, name := range item.ContractAttrs {
		if got := contractPos([]byte(name)); got != i {
			t.Fatalf("contractPos(%q) = %d, want %d", name, got, i)
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	var rec item.Record
	for n := range 5000 {
		attrs := map[string]item.Value{}
		for _, name := range item.ContractAttrs {
			if r.IntN(3) > 0 {
				text := string(rune('a' + r.IntN(26)))
				if r.IntN(8) == 0 { // a length of two varint bytes
					text = strings.Repeat(text, 100+r.IntN(200))
				}
				attrs[name] = item.Value{Type: item.Type(1 + r.IntN(3)), Text: text}
			}
		}
		if n%5 == 0 {
			attrs["zz_extra"] = item.S("x")
		}
		v := encodeAttrs(attrs)
		if n%3 == 0 && len(v) > 1 { // corrupt a byte, or cut the end
			v = bytes.Clone(v)
			if r.IntN(2) == 0 {
				v[r.IntN(len(v))] = byte(r.IntN(256))
			} else {
				v = v[:r.IntN(len(v))]
			}
		}
		k := []byte(fmt.Sprintf("sk-%d", n))
		sk, want, werr := decodeItem(k, v)
		gerr := decodeRecord("pk", k, v, &rec, nil) // over the previous record
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			t.Fatalf("%x: decodeRecord error %v, decodeItem %v", v, gerr, werr)
		}
		if werr != nil {
			continue
		}
		got := rec.Item()
		if got.PK != "pk" || got.SK != sk || !maps.Equal(got.Attrs, want) {
			t.Fatalf("%x: decodeRecord %v, decodeItem %q %v", v, got, sk, want)
		}
		if extra := len(want) != bits.OnesCount16(rec.Present); extra != (rec.Others != nil) {
			t.Fatalf("%x: Others %v for %v", v, rec.Others, want)
		}
	}
}
