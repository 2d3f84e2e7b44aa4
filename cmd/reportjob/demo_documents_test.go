package main

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/reportjob/reportjob/internal/directory"
	"github.com/reportjob/reportjob/internal/ingest"
)

// The demo's directory is a valid one, with the agencies it shows off
// (a Japanese, a French, a German one and one without a locale) and every
// other agency the demo generates (the awkward ids quoted as CSV needs),
// and its logo a PNG.
func TestDemoDirectory(t *testing.T) {
	d, err := directory.Parse("agencies.csv", demoDirectory(ingest.DefaultAgencies))
	if err != nil {
		t.Fatal(err)
	}
	ids := ingest.AgencyIDs(ingest.DefaultAgencies)
	if d.Len() != len(ids) {
		t.Errorf("%d agencies in the directory, want %d", d.Len(), len(ids))
	}
	for _, id := range ids {
		if _, ok := d.Lookup(id); !ok {
			t.Errorf("%q is not in the demo's directory", id)
		}
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
