package fpdf

// Tests of the reportjob patch (see README.md): each patched function gives
// what the upstream code gave.

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"math/rand"
	"reflect"
	"sync"
	"testing"
	"time"

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

// renderWith renders a small document with the UTF-8 fonts added by add,
// and returns its bytes.
func renderWith(t *testing.T, text string, add func(f *Fpdf, family, style string, ttf []byte)) []byte {
	t.Helper()
	f := New("P", "mm", "A4", "")
	add(f, "go", "", bytes.Clone(goregular.TTF))
	add(f, "go", "B", bytes.Clone(gobold.TTF))
	f.SetCatalogSort(true)
	f.SetCompression(true)
	f.SetCreationDate(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f.SetModificationDate(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f.AddPage()
	f.SetFont("go", "", 11)
	f.Cell(100, 8, text)
	f.SetFont("go", "B", 11)
	f.Cell(100, 8, "Σύνολο "+text)
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Error(err) // not Fatal: called from goroutines
	}
	return buf.Bytes()
}

// TestUTF8FontSumAndCMaps: a document whose fonts are added with their
// sum (AddUTF8FontFromBytesSum), and whose subset cuts read the memoized
// cmap dictionaries (utf8CMaps), has the bytes of one made the upstream
// way, for texts whose subsets differ, concurrently.
func TestUTF8FontSumAndCMaps(t *testing.T) {
	sums := map[string][sha256.Size]byte{"": sha256.Sum256(goregular.TTF), "B": sha256.Sum256(gobold.TTF)}
	upstream := func(f *Fpdf, family, style string, ttf []byte) {
		// No sum: no cmap memo either (utf8File.sum is set from it).
		f.addFontFromBytes(fontFamilyEscape(family), style, nil, nil, ttf, nil)
		for _, def := range f.fonts {
			def.utf8File.sum = nil
		}
	}
	withSum := func(f *Fpdf, family, style string, ttf []byte) {
		f.AddUTF8FontFromBytesSum(family, style, ttf, sums[style])
	}
	// The second text has the runes of the first: its subsets are taken
	// from utf8Subsets.
	texts := []string{"Ivan Petrov — Київ", "Київ — Petrov Ivan", "Agence Étoile 1 234,56 €", "plain ascii 0123456789", "ÆØÅ æøå ßẞ"}
	var wg sync.WaitGroup
	for _, text := range texts {
		for i := 0; i < 3; i++ {
			wg.Add(1)
			go func(text string) {
				defer wg.Done()
				want := renderWith(t, text, upstream)
				if got := renderWith(t, text, withSum); !bytes.Equal(got, want) {
					t.Errorf("%q: %d bytes with the sum and memoized cmaps, %d without: they differ", text, len(got), len(want))
				}
			}(text)
		}
	}
	wg.Wait()
	if _, ok := utf8CMaps.Load(sums[""]); !ok {
		t.Error("the regular font's cmap dictionaries were not memoized")
	}
	// The subsets kept are bounded.
	for i := 0; i < utf8SubsetCap+10; i++ {
		renderWith(t, string(rune(0x400+i)), withSum)
	}
	utf8Subsets.mu.Lock()
	n, order := len(utf8Subsets.m), len(utf8Subsets.order)
	utf8Subsets.mu.Unlock()
	if n != utf8SubsetCap || order != n {
		t.Errorf("%d subsets kept (%d in order), want %d", n, order, utf8SubsetCap)
	}
}

// getMetricsUpstream is upstream's getMetrics over font bytes arr (which
// it writes into) whose hmtx table starts at start.
func getMetricsUpstream(arr []byte, start, metricCount, gid int) []byte {
	var metrics []byte
	if gid < metricCount {
		metrics = arr[start+gid*4 : start+gid*4+4]
	} else {
		p := start + (metricCount-1)*4
		metrics = arr[p : p+2]
		q := start + metricCount*2 + gid*2
		metrics = append(metrics, arr[q:q+2]...)
	}
	return metrics
}

// TestCutFontSharedBytes: getMetrics gives upstream's bytes on a fresh
// copy of the font for any order of glyphs (the last long metric's glyph
// after glyphs past it included) without writing into the font, and
// concurrent subset cuts over one shared copy of the bytes leave them as
// they were and cut what a cut over a private copy cuts.
func TestCutFontSharedBytes(t *testing.T) {
	for _, ttf := range [][]byte{goregular.TTF, gobold.TTF} {
		shared := bytes.Clone(ttf)
		utf := newUTF8Font(&fileReader{array: shared})
		if err := utf.parseFile(); err != nil {
			t.Fatal(err)
		}
		start := utf.tableDescriptions["hmtx"].position
		numGlyphs := utf.tableDescriptions["hmtx"].size / 4
		rng := rand.New(rand.NewSource(2))
		for trial := 0; trial < 300; trial++ {
			// A metric count below the glyph count, as in fonts whose last
			// glyphs share an advance (IPA Gothic: 12,572 of 12,728).
			mc := 1 + rng.Intn(numGlyphs-1)
			fresh := bytes.Clone(ttf)
			utf.cutLSB = nil
			for i := 0; i < 40; i++ {
				gid := rng.Intn(numGlyphs)
				switch rng.Intn(4) {
				case 0:
					gid = mc - 1
				case 1:
					gid = mc + rng.Intn(numGlyphs-mc)
				}
				want := bytes.Clone(getMetricsUpstream(fresh, start, mc, gid))
				if got := utf.getMetrics(mc, gid); !bytes.Equal(got, want) {
					t.Fatalf("trial %d: getMetrics(%d, %d) = %x, upstream %x", trial, mc, gid, got, want)
				}
			}
		}
		if !bytes.Equal(shared, ttf) {
			t.Fatal("getMetrics wrote into the font's bytes")
		}
		runeSets := []string{"Agence Étoile 1 234,56 €", "Київ — Petrov", "ÆØÅ æøå ßẞ ǼǻǾ", "0123456789 -"}
		var wg sync.WaitGroup
		for _, text := range runeSets {
			for i := 0; i < 3; i++ {
				wg.Add(1)
				go func(text string) {
					defer wg.Done()
					used := map[int]int{}
					for _, r := range text {
						used[int(r)] = int(r)
					}
					cut := func(b []byte) []byte {
						u := newUTF8Font(&fileReader{array: b})
						if err := u.parseFile(); err != nil {
							t.Error(err)
						}
						return u.GenerateCutFont(used)
					}
					if got, want := cut(shared), cut(bytes.Clone(ttf)); !bytes.Equal(got, want) {
						t.Errorf("%q: the cut over the shared bytes differs from one over a copy", text)
					}
				}(text)
			}
		}
		wg.Wait()
		if !bytes.Equal(shared, ttf) {
			t.Error("a subset cut wrote into the font's bytes")
		}
	}
}
