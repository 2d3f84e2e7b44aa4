package pdf

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/statement"
)

// TestLayoutMemoSameBytes: documents laid out with the memo (filled by
// the documents before them, concurrently) have the bytes of the same
// documents laid out without it: scripts, configured fonts (Japanese,
// Hebrew right to left), long wrapping names and instructions, draft and
// final.
func TestLayoutMemoSameBytes(t *testing.T) {
	cjk := []string{requireFont(t, fontJa, "fonts-ipafont-gothic"), requireFont(t, fontKo, "fonts-nanum")}
	withDejaVu := append(append([]string(nil), cjk...), requireFont(t, fontDejaVu, "fonts-dejavu-core"))
	type tc struct {
		s     *statement.Agency
		fonts []string
	}
	var cases []tc
	for _, c := range docCases(t) {
		cases = append(cases, tc{c.s, c.fonts})
	}
	long := document(t, "de", strings.Repeat("Reisebüro mit sehr langem Namen ", 6), strings.Repeat("Straße (Hof) ", 20))
	long.Doc.PaymentInstructions = strings.Repeat("Zahlung per Überweisung. ", 25) + "\nIBAN DE00 0000"
	long.Status = statement.Final
	cases = append(cases, tc{long, nil},
		tc{document(t, "en", "סוכנות נסיעות", "רחוב הרצל 12, תל אביב"), withDejaVu},
		tc{document(t, "ja", "東京トラベル", "東京都千代田区丸の内1-1-1"), cjk},
		tc{document(t, "fr", "Voyages Éloïse", "8 cours"), withDejaVu})
	render := func(c tc, memo bool) []byte {
		r, err := NewRenderer(c.fonts)
		if err != nil {
			t.Fatal(err)
		}
		month, _ := time.Parse("2006-01", c.s.Month)
		fonts, err := loadDocFonts()
		if err != nil {
			t.Fatal(err)
		}
		d := newSheet(c.s, month, fonts, r.extras)
		if !memo {
			d.memo = nil
		}
		var buf bytes.Buffer
		if err := d.render(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	want := make([][]byte, len(cases))
	for i, c := range cases {
		want[i] = render(c, false)
	}
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for k := range cases {
				i := (k + g) % len(cases)
				if !bytes.Equal(render(cases[i], true), want[i]) {
					t.Errorf("case %d (%s): other bytes with the layout memo", i, cases[i].s.Doc.Recipient.LegalName)
				}
			}
		})
	}
	wg.Wait()
}

// TestLayoutMemoBounded: a memo fed texts that never repeat (one per
// agency) holds at most about twice memoBytes, and keeps a text used
// again and again.
func TestLayoutMemoBounded(t *testing.T) {
	var m layoutMemo
	kept := layoutKey{kind: kindWrap, text: "a note every document prints"}
	m.put(kept, &layout{lines: []string{kept.text}})
	for i := range 100000 {
		k := layoutKey{kind: kindWrap, family: familyDoc, size: 9, w: 100, text: fmt.Sprintf("Agency %d, %s", i, strings.Repeat("x", i%200))}
		m.put(k, &layout{lines: []string{k.text}, events: make([]fontEvent, i%3)})
		if i%50 != 0 {
			continue
		}
		if m.get(kept) == nil {
			t.Fatalf("after %d texts the constant one is gone", i)
		}
		total := 0
		for _, g := range []map[layoutKey]*layout{m.cur, m.prev} {
			for k, l := range g {
				total += l.bytes(k)
			}
		}
		if total > 2*memoBytes+4096 {
			t.Fatalf("after %d texts the memo holds %d bytes (bound %d)", i, total, 2*memoBytes)
		}
	}
}
