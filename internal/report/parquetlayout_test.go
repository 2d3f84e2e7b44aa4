package report

import (
	"strings"
	"testing"
)

// TestManifestParquetLayout: parquet_layout is read back as written,
// absent is layout 1, a layout this tool does not write is refused, and
// a manifest of layout 1 without the field is SameContent as one with it.
func TestManifestParquetLayout(t *testing.T) {
	old := bigManifest(2, 0)
	body := marshalManifest(t, old)
	if strings.Contains(body, "parquet_layout") {
		t.Fatalf("a manifest without a layout writes parquet_layout:\n%s", body)
	}
	tests := []struct {
		name    string
		set     ParquetLayout
		json    string // the field written, "" when absent
		want    ParquetLayout
		refused bool
	}{
		{name: "absent", set: 0, json: "", want: ParquetLayout1},
		{name: "1", set: ParquetLayout1, json: `"parquet_layout": 1`, want: ParquetLayout1},
		{name: "2", set: ParquetLayout2, json: `"parquet_layout": 2`, want: ParquetLayout2},
		{name: "newer", set: LatestParquetLayout + 1, json: `"parquet_layout": 3`, refused: true},
		{name: "negative", set: -1, json: `"parquet_layout": -1`, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := bigManifest(2, 0)
			m.ParquetLayout = tt.set
			b := marshalManifest(t, m)
			if tt.json != "" && !strings.Contains(b, tt.json) {
				t.Errorf("manifest lacks %s:\n%s", tt.json, b)
			}
			got, err := ParseManifest([]byte(b))
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "parquet_layout") {
					t.Fatalf("ParseManifest = %v, want an error naming parquet_layout", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Layout() != tt.want || LayoutFor(got) != tt.want {
				t.Errorf("Layout() = %d, LayoutFor = %d, want %d", got.Layout(), LayoutFor(got), tt.want)
			}
			if same := got.SameContent(old); same != (tt.want == ParquetLayout1) {
				t.Errorf("SameContent with the manifest without a layout = %v, want %v", same, tt.want == ParquetLayout1)
			}
		})
	}
	if LayoutFor(nil) != LatestParquetLayout {
		t.Errorf("LayoutFor(nil) = %d, want the latest, %d", LayoutFor(nil), LatestParquetLayout)
	}
}

// marshalManifest is m.Marshal as a string; an error fails the test.
func marshalManifest(t *testing.T, m *Manifest) string {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
