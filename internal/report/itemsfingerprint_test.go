package report

import (
	"strings"
	"testing"
)

// TestManifestFingerprintVersion: items_fingerprint_version is read back
// as written, absent is version 1, a version this tool does not compute is
// refused, and manifests of different versions are never SameContent.
func TestManifestFingerprintVersion(t *testing.T) {
	old := bigManifest(2, 0)
	if body := marshalManifest(t, old); strings.Contains(body, "items_fingerprint_version") {
		t.Fatalf("a manifest without a version writes items_fingerprint_version:\n%s", body)
	}
	if FingerprintFor(nil) != LatestItemsFingerprint {
		t.Errorf("FingerprintFor(nil) = %d, want %d", FingerprintFor(nil), LatestItemsFingerprint)
	}
	tests := []struct {
		name    string
		set     ItemsFingerprint
		json    string // the field written, "" when absent
		want    ItemsFingerprint
		refused bool
	}{
		{name: "absent", set: 0, json: "", want: ItemsFingerprint1},
		{name: "1", set: ItemsFingerprint1, json: `"items_fingerprint_version": 1`, want: ItemsFingerprint1},
		{name: "2", set: ItemsFingerprint2, json: `"items_fingerprint_version": 2`, want: ItemsFingerprint2},
		{name: "newer", set: LatestItemsFingerprint + 1, json: `"items_fingerprint_version": 3`, refused: true},
		{name: "negative", set: -1, json: `"items_fingerprint_version": -1`, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := bigManifest(2, 0)
			m.ItemsFingerprintVersion = tt.set
			b := marshalManifest(t, m)
			if tt.json != "" && !strings.Contains(b, tt.json) {
				t.Errorf("manifest lacks %s:\n%s", tt.json, b)
			}
			got, err := ParseManifest([]byte(b))
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "items_fingerprint_version") {
					t.Fatalf("ParseManifest = %v, want an error naming items_fingerprint_version", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.FingerprintVersion() != tt.want || FingerprintFor(got) != tt.want {
				t.Errorf("FingerprintVersion() = %d, FingerprintFor = %d, want %d", got.FingerprintVersion(), FingerprintFor(got), tt.want)
			}
			if same := got.SameContent(old); same != (tt.want == ItemsFingerprint1) {
				t.Errorf("SameContent with the manifest without a version = %v, want %v", same, tt.want == ItemsFingerprint1)
			}
		})
	}
}
