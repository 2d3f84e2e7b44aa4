package fpdf

// Tests of the reportjob patch (see README.md): each patched function gives
// what the upstream code gave.

import (
	"bytes"
	"compress/zlib"
	"math/rand"
	"reflect"
	"sync"
	"testing"

	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
)

// nextIntKeyUpstream is upstream's put(nil, v) key search.
func nextIntKeyUpstream(pa *untypedKeyMap) int {
	for n := 0; ; n++ {
		if pa.getIndex(n) < 0 {
			return n
		}
	}
}

func TestNextIntKey(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		pa := &untypedKeyMap{}
		for j := rng.Intn(300); j > 0; j-- {
			switch rng.Intn(10) {
			case 0:
				pa.put("interval", 1)
			case 1:
				if len(pa.keySet) > 0 {
					pa.pop()
				}
			case 2:
				pa.delete(rng.Intn(len(pa.keySet) + 1))
			case 3:
				pa.put(rng.Intn(50), 7)
			default:
				want := nextIntKeyUpstream(pa)
				if got := pa.nextIntKey(); got != want {
					t.Fatalf("nextIntKey() = %d, upstream %d, keys %v", got, want, pa.keySet)
				}
				pa.put(nil, j)
			}
		}
	}
}

func TestCompressSameBytes(t *testing.T) {
	data := bytes.Repeat([]byte("reportjob statement \x00\x00\x00\x01"), 5000)
	var want bytes.Buffer
	zw, err := zlib.NewWriterLevel(&want, zlib.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(data)
	zw.Close()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				mem := xmem.compress(data[:len(data)-j])
				if j == 0 && !bytes.Equal(mem.bytes(), want.Bytes()) {
					t.Error("pooled writer: other bytes than a new zlib writer")
				}
				mem.release()
			}
		}()
	}
	wg.Wait()
}

// TestUTF8FontID adds a TrueType font from bytes to new documents,
// concurrently: each gets the id upstream computes (generateFontID), and a
// font with other bytes or another key gets another.
func TestUTF8FontID(t *testing.T) {
	ttf := goregular.TTF
	id := func(family string, b []byte) string {
		f := New("P", "mm", "A4", "")
		f.AddUTF8FontFromBytes(family, "", append([]byte(nil), b...))
		if f.Err() {
			t.Fatal(f.Error())
		}
		def := f.fonts[getFontKey(family, "")]
		want, err := generateFontID(def)
		if err != nil {
			t.Fatal(err)
		}
		if def.i != want {
			t.Errorf("font id %s, generateFontID %s", def.i, want)
		}
		fresh := newUTF8Font(&fileReader{array: append([]byte(nil), b...)})
		if err := fresh.parseFile(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(def.Cw, fresh.CharWidths) || def.Desc.Ascent != fresh.Ascent || def.Desc.MissingWidth != round(fresh.DefaultWidth) {
			t.Error("the shared parse's metrics differ from a parse of the font")
		}
		return def.i
	}
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Add(1)
		go func(i int) { defer wg.Done(); ids[i] = id("go", ttf) }(i)
	}
	wg.Wait()
	for _, got := range ids[1:] {
		if got != ids[0] {
			t.Errorf("ids %v differ", ids)
		}
	}
	if id("other", ttf) == ids[0] {
		t.Error("another font key, the same id")
	}
	if id("go", gobold.TTF) == ids[0] {
		t.Error("other bytes under the same font key, the same id")
	}
}
