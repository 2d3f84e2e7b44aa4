package monthclose

import (
	"bytes"
	"fmt"
	"testing"
)

// TestRecipientsFromDirectory: a manifest whose listed entries leave their
// recipient to Manifest.recipient (a close of many agencies) encodes to the
// bytes and parts of the one that holds them, inline and in parts.
func TestRecipientsFromDirectory(t *testing.T) {
	for _, limits := range [][2]int{{2_000, 10_000}, {3, 4}} {
		restore := SetPartLimits(limits[0], limits[1])
		whole := &Manifest{Format: Format, Job: "j", Month: "2026-01", Status: "draft", StatementRevision: 1, Document: &DocumentRecord{}}
		lean := &Manifest{Format: Format, Job: "j", Month: "2026-01", Status: "draft", StatementRevision: 1, Document: &DocumentRecord{}}
		recs := map[string]*PartyRecord{}
		for i := range 9 {
			id := fmt.Sprintf("a%d", i)
			e := AgencyEntry{AgencyID: id, Revision: 1, Digest: "d" + id, Number: "N-" + id, Locale: "en"}
			if i%3 != 0 {
				r := &PartyRecord{LegalName: "Agency " + id, Address: []string{"1 Street", "Town"}, Country: "FR", Emails: []string{id + "@x.fr"}}
				recs[id] = r
				e.Listed, e.Recipient = true, r
			}
			whole.Agencies = append(whole.Agencies, e)
			e.Recipient = nil
			lean.Agencies = append(lean.Agencies, e)
		}
		lean.recipient = func(id string) *PartyRecord { return recs[id] }
		wb, wp, err := whole.Encode()
		if err != nil {
			t.Fatal(err)
		}
		lb, lp, err := lean.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(wb, lb) || len(wp) != len(lp) {
			t.Fatalf("limits %v: manifest differs or %d parts, want %d:\n%s\nwant\n%s", limits, len(lp), len(wp), lb, wb)
		}
		for i := range wp {
			if wp[i].Key != lp[i].Key || !bytes.Equal(wp[i].Body, lp[i].Body) {
				t.Errorf("limits %v: part %d differs:\n%s\nwant\n%s", limits, i, lp[i].Body, wp[i].Body)
			}
		}
		if lean.Agencies[1].Recipient != nil {
			t.Error("Encode filled the lean manifest's own entries")
		}
		restore()
	}
}
