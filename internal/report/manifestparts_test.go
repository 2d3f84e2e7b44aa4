package report

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// bigManifest returns a manifest of n agencies (two files each) and
// replaced keys, its Files sorted by key as a publication gives them.
func bigManifest(n, replaced int) *Manifest {
	p := Period{Start: time.Date(2090, 3, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2090, 3, 1, 1, 0, 0, 0, time.UTC)}
	m := &Manifest{Format: ManifestFormat, Job: "billing", PeriodStart: p.Start, PeriodEnd: p.End, Revision: 2,
		Reason: ReasonRecheck, Transactions: int64(n), Partitions: []string{"209003010000"}, Totals: []CurrencyTotal{}}
	m.Files = append(m.Files,
		FileInfo{Key: DatasetPrefix(DatasetSummary, p) + "summary-0123456789abcdef.parquet", Bytes: 10, Rows: int64(n), SHA256: strings.Repeat("a", 64)},
		FileInfo{Key: DatasetPrefix(DatasetTransactions, p) + "transactions-0123456789abcdef.parquet", Bytes: 10, Rows: int64(n), SHA256: strings.Repeat("b", 64)})
	for i := range n {
		for _, name := range []string{"summary-0123456789abcdef.csv", "transactions-0123456789abcdef.csv"} {
			m.Files = append(m.Files, FileInfo{Key: AgencyPrefix(fmt.Sprintf("agency-%06d", i), p) + name, Bytes: 100, Rows: 1, SHA256: strings.Repeat("c", 64)})
		}
	}
	for i := range replaced {
		m.ReplacedFiles = append(m.ReplacedFiles, AgencyPrefix(fmt.Sprintf("gone-%06d", i), p)+"summary-fedcba9876543210.csv")
	}
	slices.SortFunc(m.Files, func(a, b FileInfo) int { return strings.Compare(a.Key, b.Key) })
	return m
}

// store is a map of objects read as a sink would be.
type store map[string][]byte

func (s store) read(_ context.Context, key string) ([]byte, error) {
	b, ok := s[key]
	if !ok {
		return nil, errors.New("object not found")
	}
	return b, nil
}

func encodeTo(t *testing.T, m *Manifest) ([]byte, store) {
	t.Helper()
	body, parts, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	s := store{}
	for _, p := range parts {
		s[p.Key] = p.Body
	}
	return body, s
}

// TestManifestLayouts: a manifest of up to InlineEntries entries is one
// object of the old layout; a bigger one is a small manifest.json and
// parts; ReadManifest gives back exactly the manifest written, whatever
// the layout, and the same manifest gives the same bytes and parts.
func TestManifestLayouts(t *testing.T) {
	tests := []struct {
		name             string
		agencies, gone   int
		format           string
		parts, maxInline int
	}{
		{"small", 10, 3, ManifestFormat, 0, 1 << 20},
		{"at the limit", (InlineEntries - 2) / 2, 0, ManifestFormat, 0, 1 << 20},
		{"one over", (InlineEntries - 2) / 2, 1, ManifestFormatParts, 1, 8 << 10},
		{"big", 25_000, 12_000, ManifestFormatParts, 7, 8 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := bigManifest(tt.agencies, tt.gone)
			want := *m
			body, s := encodeTo(t, m)
			if m.Format != tt.format || len(m.Parts) != tt.parts || len(s) != tt.parts {
				t.Fatalf("format %s, %d parts (%d objects); want %s, %d", m.Format, len(m.Parts), len(s), tt.format, tt.parts)
			}
			if len(body) > tt.maxInline {
				t.Errorf("manifest.json is %d bytes, want at most %d", len(body), tt.maxInline)
			}
			for key := range s {
				if !IsPartKey(key) || !strings.HasPrefix(key, ManifestPrefix(m.Period())) || IsIntentKey(key) {
					t.Errorf("part key %s", key)
				}
			}
			got, err := ReadManifest(t.Context(), body, s.read)
			if err != nil {
				t.Fatal(err)
			}
			want.Format, want.Parts = m.Format, m.Parts
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("read back differs: %d files, %d replaced; want %d, %d", len(got.Files), len(got.ReplacedFiles), len(want.Files), len(want.ReplacedFiles))
			}
			if !got.SameContent(m) {
				t.Error("read back: not SameContent")
			}
			again, s2 := encodeTo(t, got)
			if string(again) != string(body) || !reflect.DeepEqual(s, s2) {
				t.Error("encoding the manifest read back gives other bytes")
			}
		})
	}
}

// TestManifestPartChecked: a part that is missing, altered, or another
// part in its place is refused with ErrManifestPart; a manifest that says
// parts in the old layout (or none in the new) is refused.
func TestManifestPartChecked(t *testing.T) {
	m := bigManifest(15_000, 0)
	body, s := encodeTo(t, m)
	first, second := m.Parts[0].Key, m.Parts[1].Key
	tests := []struct {
		name  string
		alter func(s store)
	}{
		{"missing", func(s store) { delete(s, first) }},
		{"altered", func(s store) { s[first] = append(slices.Clone(s[first][:len(s[first])-2]), ' ', '\n') }},
		{"swapped", func(s store) { s[first], s[second] = s[second], s[first] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := store{}
			for k, v := range s {
				c[k] = v
			}
			tt.alter(c)
			if _, err := ReadManifest(t.Context(), body, c.read); !errors.Is(err, ErrManifestPart) {
				t.Errorf("ReadManifest = %v, want ErrManifestPart", err)
			}
		})
	}
	old := strings.Replace(string(body), ManifestFormatParts, ManifestFormat, 1)
	if _, err := ParseManifest([]byte(old)); err == nil {
		t.Errorf("a %s manifest with parts parsed", ManifestFormat)
	}
	small, _, err := bigManifest(3, 0).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseManifest([]byte(strings.Replace(string(small), ManifestFormat, ManifestFormatParts, 1))); err == nil {
		t.Errorf("a %s manifest without parts parsed", ManifestFormatParts)
	}
}
