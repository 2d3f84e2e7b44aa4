package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/reportjob/reportjob/internal/ingest"
)

// demoDirectoryCSV is the head of the demo's agency directory
// (statements.directory): a few of its agencies with their legal names,
// addresses, tax ids and locales, so that their statements look like what
// a company sends. demoDirectory adds a plain row for each other agency
// the demo generates, so that its close has nobody missing to warn about.
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

// demoDocuments writes the demo's agency directory and logo into dir
// and returns the statements section of the demo's config.yaml that names
// them, with an issuer and the CJK fonts found on this machine (paths
// relative to dir, fonts absolute): the demo and every later command run
// on the config the folder holds, so a later `run` there changes nothing
// a statement prints.
func demoDocuments(dir string, agencies int) (string, error) {
	if err := os.WriteFile(filepath.Join(dir, "agencies.csv"), demoDirectory(agencies), 0o640); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "logo.png"), demoLogo(), 0o640); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	var fonts []string
	for _, f := range demoFonts() {
		fonts = append(fonts, strconv.Quote(f))
	}
	return `statements:
  directory: ./agencies.csv      # who each agency is: legal name, address, tax id, e-mails, locale
  issuer:
    legal_name: Reportjob Demo Billing Ltd
    address: [1 Example Way, Dublin D02 X285, Ireland]
    tax_id: IE1234567T
    contact: billing@reportjob.example
    payment_terms: 30d
    payment_instructions: |-
      Bank transfer to IBAN IE29 AIBK 9311 5212 3456 78 (BIC AIBKIE2D),
      quoting the statement number.
    logo: ./logo.png
  fonts: [` + strings.Join(fonts, ", ") + `]   # Debian's CJK fonts found here (scripts/tools.sh installs them)
`, nil
}

// demoDirectory is the directory CSV of the demo's agencies agencies:
// demoDirectoryCSV's rows, then "Demo Agency N" in GB for each other id
// ingest.Generate draws from.
func demoDirectory(agencies int) []byte {
	var b bytes.Buffer
	b.WriteString(demoDirectoryCSV)
	w := csv.NewWriter(&b)
	for i, id := range ingest.AgencyIDs(agencies) {
		if strings.Contains(demoDirectoryCSV, "\n"+id+",") {
			continue
		}
		// Write to a bytes.Buffer cannot fail.
		_ = w.Write([]string{id, fmt.Sprintf("Demo Agency %04d Ltd", i+1), fmt.Sprintf("%d Example Street", i+1), "GB", "", "", "en-GB", ""})
	}
	w.Flush()
	return b.Bytes()
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
