package main

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/reportjob/reportjob/internal/directory"
)

// The demo's directory is a valid one, with the agencies it shows off
// (a Japanese, a French, a German one and one without a locale), and its
// logo a PNG.
func TestDemoDirectory(t *testing.T) {
	d, err := directory.Parse("agencies.csv", []byte(demoDirectoryCSV))
	if err != nil {
		t.Fatal(err)
	}
	for id, locale := range map[string]string{"東京トラベル": "ja", "Agence Étoile": "fr-FR", "agency-0002": "de-DE", "acme/travel": ""} {
		if e, ok := d.Lookup(id); !ok || e.Locale != locale {
			t.Errorf("%s: %+v %v, want locale %q", id, e, ok, locale)
		}
	}
	if _, err := png.Decode(bytes.NewReader(demoLogo())); err != nil {
		t.Errorf("demo logo: %v", err)
	}
}
