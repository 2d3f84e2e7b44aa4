package fpdf

import (
	"bytes"
	"math"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
)

// textUpstream is upstream's Text for a UTF-8 font, left to right, not
// underlined or struck out: the line it writes, and the used runes.
func textUpstream(f *Fpdf, x, y float64, txtStr string) string {
	txt2 := f.escape(utf8toutf16(txtStr, false))
	for _, uni := range txtStr {
		f.currentFont.usedRunes[int(uni)] = int(uni)
	}
	s := sprintf("BT %.2f %.2f Td (%s) Tj ET", x*f.k, (f.h-y)*f.k, txt2)
	if f.colorFlag {
		s = sprintf("q %s %s Q", f.color.text.str, s)
	}
	return s + "\n"
}

// randomText is a string of runes from ASCII (with the escaped ones),
// Latin-1, Greek, CJK and above the Basic Multilingual Plane.
func randomText(rng *rand.Rand) string {
	pool := []rune("a Z09\\()\r\n\t\x00é€ΣЖ東京\U0001F600\uFFFD\u00AD")
	var b strings.Builder
	for n := rng.Intn(12); n > 0; n-- {
		b.WriteRune(pool[rng.Intn(len(pool))])
	}
	return b.String()
}

// TestTextSameBytes: Text writes upstream's line and used runes, for
// random texts, coordinates (negative, huge, not finite) and colours, text
// after text in one document (the used runes and their bitset grow).
func TestTextSameBytes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	coords := []float64{0, -0.0, 1.005, -3.14159, 12.345, 297, 1e9, -1e-9, 0.125, math.Inf(1), math.NaN()}
	var docs [2]*Fpdf
	for k := range docs {
		f := New("P", "mm", "A4", "")
		f.AddUTF8FontFromBytes("go", "", goregular.TTF)
		f.AddPage()
		f.SetFont("go", "", 10)
		docs[k] = f
	}
	up, pa := docs[0], docs[1]
	for i := 0; i < 3000; i++ {
		text := randomText(rng)
		x, y := coords[rng.Intn(len(coords))], coords[rng.Intn(len(coords))]
		if rng.Intn(2) == 0 {
			x, y = rng.Float64()*400-100, rng.Float64()*400-100
		}
		if i%7 == 0 {
			grey := rng.Intn(2) * 100
			up.SetTextColor(grey, grey, grey)
			pa.SetTextColor(grey, grey, grey)
		}
		before := pa.pages[pa.page].Len()
		want := textUpstream(up, x, y, text)
		pa.Text(x, y, text)
		if got := pa.pages[pa.page].String()[before:]; got != want {
			t.Fatalf("Text(%v, %v, %q) = %q, upstream %q", x, y, text, got, want)
		}
		if !mapsEqual(up.currentFont.usedRunes, pa.currentFont.usedRunes) {
			t.Fatalf("Text(%q): used runes differ", text)
		}
	}
}

// TestFontOpSameBytes: SetFont, SetFontSize and SetFontUnitSize write
// upstream's operator.
func TestFontOpSameBytes(t *testing.T) {
	f := New("P", "mm", "A4", "")
	f.AddUTF8FontFromBytes("go", "", goregular.TTF)
	f.AddPage()
	for _, size := range []float64{7.5, 8.125, 0.004, 11.5, 1e7, -2, math.Inf(1)} {
		for _, set := range []func(){
			func() { f.SetFont("go", "", size) },
			func() { f.SetFontSize(size) },
			func() { f.SetFontUnitSize(size / f.k) },
		} {
			before := f.pages[f.page].Len()
			set()
			want := sprintf("BT /F%s %.2f Tf ET\n", f.currentFont.i, f.fontSizePt)
			if got := f.pages[f.page].String()[before:]; got != want {
				t.Errorf("size %v: %q, upstream %q", size, got, want)
			}
		}
	}
}

// TestUTF16Escaped: appendUTF16Escaped is escape(utf8toutf16(s, false)),
// also for invalid UTF-8 that does not end inside a sequence.
func TestUTF16Escaped(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	f := New("P", "mm", "A4", "")
	for i := 0; i < 5000; i++ {
		b := []byte(randomText(rng))
		if rng.Intn(4) == 0 && len(b) > 0 {
			b[rng.Intn(len(b))] = byte(rng.Intn(256))
		}
		s := string(b)
		want, ok := func() (w string, ok bool) {
			defer func() { ok = recover() == nil }()
			return f.escape(utf8toutf16(s, false)), true
		}()
		if !ok {
			continue // a sequence cut at the end: upstream panics too
		}
		if got := appendUTF16Escaped([]byte("x"), s); !bytes.Equal(got, []byte("x"+want)) {
			t.Fatalf("%q: %q, upstream %q", s, got[1:], want)
		}
	}
}

func mapsEqual(a, b map[int]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestPageBuffersReused: documents whose pages and document buffer reuse
// the buffers of documents written before (pageBuffers, docBuffers), one
// after the other and concurrently, have the bytes they have when
// written first; a second Output writes nothing (upstream's drained
// buffer).
func TestPageBuffersReused(t *testing.T) {
	doc := func(lines int) []byte {
		f := New("P", "mm", "A4", "")
		f.AddUTF8FontFromBytes("go", "", goregular.TTF)
		f.SetCompression(lines%2 == 0)
		f.SetCatalogSort(true)
		f.SetCreationDate(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		f.SetModificationDate(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		f.SetFont("go", "", 9)
		for i := 0; i < lines; i++ {
			if i%60 == 0 {
				f.AddPage()
			}
			f.Text(10, 10+float64(i%60)*4, strings.Repeat("line (x) ", i%7+1))
		}
		var buf bytes.Buffer
		if err := f.Output(&buf); err != nil {
			t.Error(err)
		}
		var again bytes.Buffer
		if err := f.Output(&again); err != nil || again.Len() != 0 {
			t.Errorf("a second Output: %d bytes, %v", again.Len(), err)
		}
		return buf.Bytes()
	}
	sizes := []int{1, 200, 7, 130, 2, 61, 400, 3}
	want := make([][]byte, len(sizes))
	for i, n := range sizes {
		want[i] = doc(n)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := range sizes {
				i := (k + g) % len(sizes)
				if got := doc(sizes[i]); !bytes.Equal(got, want[i]) {
					t.Errorf("document of %d lines: other bytes when written again", sizes[i])
				}
			}
		}(g)
	}
	wg.Wait()
}

// TestSubsetKey: two used-rune maps have the same subset key exactly
// when they are equal.
func TestSubsetKey(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	var sum [32]byte
	random := func() map[int]int {
		m := makeSubsetRange(57)
		for n := rng.Intn(40); n > 0; n-- {
			k := []int{rng.Intn(128), rng.Intn(0x900), 0x7FF, 0x800, rng.Intn(0x20000), -rng.Intn(3)}[rng.Intn(6)]
			m[k] = []int{k, 0, rng.Intn(0x900)}[rng.Intn(3)]
		}
		for n := rng.Intn(3); n > 0; n-- {
			delete(m, rng.Intn(60))
		}
		return m
	}
	maps := make([]map[int]int, 300)
	for i := range maps {
		maps[i] = random()
	}
	for i := 0; i < 100; i++ { // equal maps filled in another order
		c := map[int]int{}
		for k, v := range maps[i] {
			c[k] = v
		}
		maps = append(maps, c)
	}
	for i := range maps {
		for j := range maps {
			if same, eq := subsetKey(&sum, maps[i]) == subsetKey(&sum, maps[j]), mapsEqual(maps[i], maps[j]); same != eq {
				t.Fatalf("maps %v and %v: same key %v, equal %v", maps[i], maps[j], same, eq)
			}
		}
	}
}

// TestRuneMapsReused: a document's used-rune maps go back to runeMaps
// once it is written, and documents that use other runes, made after it
// or beside it, have the bytes they have when made first.
func TestRuneMapsReused(t *testing.T) {
	texts := []string{"Statement 2026-01", "Größe · ½ · Ωmega", "12345", "日本語 (not in the font)", "zzz qqq", ""}
	doc := func(text string) ([]byte, *Fpdf) {
		f := New("P", "mm", "A4", "")
		f.AddUTF8FontFromBytes("go", "", goregular.TTF)
		f.AddUTF8FontFromBytes("go", "B", gobold.TTF)
		f.SetCatalogSort(true)
		f.SetCreationDate(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		f.SetModificationDate(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		f.AddPage()
		f.SetFont("go", "", 9)
		f.Text(10, 10, text)
		f.SetFont("go", "B", 9)
		f.Text(10, 20, strings.ToUpper(text)+"!")
		var buf bytes.Buffer
		if err := f.Output(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), f
	}
	want := make([][]byte, len(texts))
	for i, text := range texts {
		var f *Fpdf
		want[i], f = doc(text)
		for key, def := range f.fonts {
			if def.usedRunes != nil {
				t.Fatalf("font %s keeps its used runes after Output", key)
			}
		}
	}
	if m := makeSubsetRange(57); len(m) != 57 {
		t.Fatalf("a map from runeMaps holds %d runes, want the 57 put", len(m))
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := range texts {
				i := (k + g) % len(texts)
				if got, _ := doc(texts[i]); !bytes.Equal(got, want[i]) {
					t.Errorf("document %q: other bytes when made again", texts[i])
				}
			}
		}(g)
	}
	wg.Wait()
}
