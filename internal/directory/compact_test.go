package directory

import (
	"fmt"
	"reflect"
	"testing"
)

// TestCompactLookup: every entry packed into the arena is looked up as it
// was given (nil lists stay nil, terms of 0 days stay set), and an id the
// directory lacks, or one that only prefixes a listed id, is not found.
func TestCompactLookup(t *testing.T) {
	entries := map[string]Entry{
		"a":   {AgencyID: "a", LegalName: "A"},
		"a-b": {AgencyID: "a-b", LegalName: "株式会社サクラ旅行", Address: []string{"1-1 Chiyoda", "", "Tokyo"}, Country: "JP", Locale: "ja"},
		"b":   {AgencyID: "b", LegalName: "B SARL", TaxID: "FR123", Emails: []string{"x@b.fr", "y@b.fr"}, PaymentTermsDays: 0, HasTerms: true},
		"c":   {AgencyID: "c", LegalName: "C", PaymentTermsDays: 45, HasTerms: true, Locale: "en-GB"},
	}
	for i := range 300 {
		id := fmt.Sprintf("agency-%04d", i)
		entries[id] = Entry{AgencyID: id, LegalName: "Agency " + id, Address: []string{id}}
	}
	d := newDirectory("test.csv", entries)
	if d.Len() != len(entries) {
		t.Fatalf("Len %d, want %d", d.Len(), len(entries))
	}
	for id, want := range entries {
		got, ok := d.Lookup(id)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Lookup(%q) = %#v, %v; want %#v", id, got, ok, want)
		}
	}
	for _, id := range []string{"", "agency-", "d", "a-", "agency-0300"} {
		if e, ok := d.Lookup(id); ok {
			t.Errorf("Lookup(%q) found %#v", id, e)
		}
	}
	if _, ok := (*Directory)(nil).Lookup("a"); ok {
		t.Error("a nil directory found an entry")
	}
}
