package fpdf

import (
	"bytes"
	"crypto/sha256"
	"testing"
	"time"

	"golang.org/x/image/font/gofont/goregular"
)

// TestUTF8SubsetProtected: putstream encrypts a stream in place when the
// document is protected; a memoized subset (utf8Subsets) is shared by
// every document, so it must not be what gets encrypted. Two protected
// documents with the same runes have the bytes of one made the upstream
// way, and an unprotected one after them too.
func TestUTF8SubsetProtected(t *testing.T) {
	sum := sha256.Sum256(goregular.TTF)
	render := func(protect, withSum bool) []byte {
		f := New("P", "mm", "A4", "")
		if withSum {
			f.AddUTF8FontFromBytesSum("go", "", bytes.Clone(goregular.TTF), sum)
		} else {
			f.addFontFromBytes("go", "", nil, nil, bytes.Clone(goregular.TTF), nil)
			for _, def := range f.fonts {
				def.utf8File.sum = nil
			}
		}
		if protect {
			f.SetProtection(CnProtectPrint, "user", "owner")
		}
		f.SetCatalogSort(true)
		f.SetCreationDate(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		f.SetModificationDate(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		f.AddPage()
		f.SetFont("go", "", 11)
		f.Cell(100, 8, "protected ЖЖЖ qwz")
		var buf bytes.Buffer
		if err := f.Output(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	wantP, wantU := render(true, false), render(false, false)
	for i := 0; i < 2; i++ {
		if got := render(true, true); !bytes.Equal(got, wantP) {
			t.Errorf("protected document %d: its bytes differ from upstream's", i)
		}
	}
	if got := render(false, true); !bytes.Equal(got, wantU) {
		t.Error("unprotected document after protected ones: its bytes differ from upstream's")
	}
}
