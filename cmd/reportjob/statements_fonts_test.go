package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/statement"
	"github.com/reportjob/reportjob/internal/statement/pdf"
)

// TestPDFRendererFonts: statements.fonts reaches the renderer; a font the
// PDF writer cannot use makes every statement PDF fail naming the file.
func TestPDFRendererFonts(t *testing.T) {
	s := &statement.Agency{Job: "j", AgencyID: "東京", Month: "2026-02", Status: statement.Draft, Revision: 1,
		Doc: statement.Document{Number: "N-1", Recipient: statement.Party{LegalName: "東京トラベル"}, Locale: "ja"}}
	ttc := filepath.Join(t.TempDir(), "fonts.ttc")
	if err := os.WriteFile(ttc, append([]byte("ttcf"), make([]byte, 64)...), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pdfRenderer([]string{ttc})(&buf, s); !errors.Is(err, pdf.ErrFont) || !strings.Contains(err.Error(), ttc) {
		t.Errorf("a .ttc in statements.fonts: %v, want pdf.ErrFont naming it", err)
	}
	if err := pdfRenderer(nil)(&buf, s); err != nil {
		t.Errorf("no statements.fonts: %v", err)
	}
	const ipa = "/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf"
	if _, err := os.Stat(ipa); err != nil {
		return // the pdf package's tests require it
	}
	buf.Reset()
	if err := pdfRenderer([]string{ipa})(&buf, s); err != nil || buf.Len() == 0 {
		t.Errorf("statements.fonts %s: %v", ipa, err)
	}
}
