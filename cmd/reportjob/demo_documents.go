package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"

	"github.com/reportjob/reportjob/internal/config"
)

// demoDirectoryCSV is the demo's agency directory (statements.directory):
// a few of its agencies with their legal names, addresses, tax ids and
// locales, so that their statements look like what a company sends; the
// others are left out, and the close names them by id with a warning.
const demoDirectoryCSV = `agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms
agency-0001,Northwind Travel Ltd,"14 Chandos Place
London WC2N 4HG",GB,GB123456789,accounts@northwind.example,en-GB,
agency-0002,Reisebüro Sonnenschein GmbH,"Friedrichstraße 68
10117 Berlin",DE,DE811234567,buchhaltung@sonnenschein.example,de-DE,14d
agency-0005,Viajes Mediterráneo S.L.,"Calle de Alcalá 21
28014 Madrid",ES,ESB12345678,,es-ES,
Agence Étoile,Agence Étoile SARL,"12 rue de Rivoli
75004 Paris",FR,FR40303265045,compta@etoile.example;direction@etoile.example,fr-FR,45d
東京トラベル,東京トラベル株式会社,"〒100-0005
東京都千代田区丸の内1-9-1",JP,T1234567890123,keiri@tokyo-travel.example,ja,
acme/travel,Acme Travel Inc.,"500 Market Street
San Francisco CA 94105",US,,billing@acme.example,,
`

// demoDocuments writes the demo's agency directory and logo into dir and
// sets them, with an issuer, into cfg's statements (unless the config
// names a directory or an issuer of its own).
func demoDocuments(dir string, cfg *config.Config) error {
	st := &cfg.Statements
	if st.Directory != "" || st.Issuer.LegalName != "" {
		return nil
	}
	path := filepath.Join(dir, "agencies.csv")
	if err := os.WriteFile(path, []byte(demoDirectoryCSV), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	logo := filepath.Join(dir, "logo.png")
	if err := os.WriteFile(logo, demoLogo(), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	st.Directory = path
	st.Issuer.LegalName = "Reportjob Demo Billing Ltd"
	st.Issuer.Address = []string{"1 Example Way", "Dublin D02 X285", "Ireland"}
	st.Issuer.TaxID = "IE1234567T"
	st.Issuer.Contact = "billing@reportjob.example"
	st.Issuer.PaymentTermsDays = 30
	st.Issuer.PaymentInstructions = "Bank transfer to IBAN IE29 AIBK 9311 5212 3456 78 (BIC AIBKIE2D),\nquoting the statement number."
	st.Issuer.Logo = logo
	if len(st.Fonts) == 0 {
		st.Fonts = demoFonts()
	}
	return nil
}

// demoFontPaths are the TrueType fonts Debian's fonts-ipafont-gothic,
// fonts-droid-fallback and fonts-nanum install (scripts/tools.sh installs
// them): the demo's 東京トラベル statement prints in Japanese with the
// first that is there, in English wording without any (docs/statements.md).
var demoFontPaths = []string{
	"/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf",
	"/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
	"/usr/share/fonts/truetype/nanum/NanumGothic.ttf",
}

// demoFonts is those of demoFontPaths on this machine.
func demoFonts() []string {
	var out []string
	for _, p := range demoFontPaths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// demoLogo is a small PNG: a blue square with a white bar, the same bytes
// every time.
func demoLogo() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 96, 96))
	blue, white := color.RGBA{0x1f, 0x4e, 0x99, 0xff}, color.RGBA{0xff, 0xff, 0xff, 0xff}
	for y := range 96 {
		for x := range 96 {
			c := blue
			if y >= 40 && y < 56 && x >= 16 && x < 80 {
				c = white
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img) // into memory: cannot fail
	return b.Bytes()
}
