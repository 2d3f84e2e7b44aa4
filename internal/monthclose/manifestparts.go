package monthclose

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/reportjob/reportjob/internal/report"
)

// A month of many agencies does not fit in one manifest.json: each agency
// adds its statement files and its entry in Agencies, about 600 bytes of
// JSON, so 10,000 agencies are over the 5 MiB of a conditional put. A
// month manifest with more than inlineEntries entries (Files,
// ReplacedFiles and Agencies together) is therefore written in layout
// FormatParts, as a big period's manifest is (report.Manifest.Encode):
// manifest.json keeps the month's own files (the statements dataset), the
// periods, adjustments and totals, and names its Parts; the agencies'
// files, the replaced keys and the agency entries go, partEntries at a
// time, into part objects manifests/month=M/files-H.json, immutable and
// named by their content hash, which the manifest commits to by size and
// SHA-256. Parts are uploaded before the manifest, so the manifest stays
// the single commit record; a part no published manifest names is deleted
// by the cleanup like any object of the month it does not list.
//
// readManifest is the one way a month manifest is read: every reader gets
// Files, ReplacedFiles and Agencies whole, whatever the layout.

// FormatParts is the layout of a month manifest with Parts. Format (no
// parts) is still written for every manifest that fits inlineEntries.
const FormatParts = "reportjob.statements/2"

// monthPartFormat identifies a month manifest part's layout.
const monthPartFormat = "reportjob.statements-part/1"

// inlineEntries is the most entries a month manifest holds itself;
// partEntries the most of one part (about 2 MB of JSON). Variables for
// the tests.
var (
	inlineEntries = 2_000
	partEntries   = 10_000
)

// Part names a month manifest part and what it holds.
type Part struct {
	Key    string `json:"key"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Files, ReplacedFiles and Agencies count its entries of each list.
	Files         int `json:"files"`
	ReplacedFiles int `json:"replaced_files"`
	Agencies      int `json:"agencies"`
}

// monthPart is a part object's JSON.
type monthPart struct {
	Format        string            `json:"format"`
	Files         []report.FileInfo `json:"files"`
	ReplacedFiles []string          `json:"replaced_files"`
	Agencies      []AgencyEntry     `json:"agencies"`
}

// Encode returns manifest.json's bytes and, for a manifest of more than
// inlineEntries entries, the parts to upload before it. It sets m.Format
// and m.Parts to the layout written; m's lists stay whole. The same
// manifest always gives the same bytes and parts.
func (m *Manifest) Encode() ([]byte, []report.EncodedPart, error) {
	var parts []report.EncodedPart
	body, err := m.EncodeTo(func(p report.EncodedPart) error {
		parts = append(parts, p)
		return nil
	})
	return body, parts, err
}

// parted reports whether m is written in layout FormatParts.
func (m *Manifest) parted() bool {
	return len(m.Files)+len(m.ReplacedFiles)+len(m.Agencies) > inlineEntries
}

// EncodeTo is Encode handing each part to put as soon as it is encoded,
// in order, instead of holding them all (a month of 100,000 agencies has
// about 40 parts, 100 MB): the same parts and manifest.json bytes. An
// error of put stops it and is returned.
func (m *Manifest) EncodeTo(put func(report.EncodedPart) error) ([]byte, error) {
	m.Format, m.Parts = Format, nil
	if !m.parted() {
		return m.Marshal()
	}
	var inline, files []report.FileInfo
	for i, f := range m.Files {
		if _, ok := report.AgencySegment(f.Key); ok {
			if files == nil {
				files = make([]report.FileInfo, 0, len(m.Files)-i)
			}
			files = append(files, f)
		} else {
			inline = append(inline, f)
		}
	}
	replaced, agencies := m.ReplacedFiles, m.Agencies
	var infos []Part
	for len(files) > 0 || len(replaced) > 0 || len(agencies) > 0 {
		p := monthPart{Format: monthPartFormat, Files: []report.FileInfo{}, ReplacedFiles: []string{}, Agencies: []AgencyEntry{}}
		room := partEntries
		n := min(len(files), room)
		p.Files, files, room = files[:n:n], files[n:], room-n
		n = min(len(replaced), room)
		p.ReplacedFiles, replaced, room = append(p.ReplacedFiles, replaced[:n]...), replaced[n:], room-n
		n = min(len(agencies), room)
		p.Agencies, agencies = append(p.Agencies, m.withRecipients(agencies[:n])...), agencies[n:]
		if len(p.Files) == 0 {
			p.Files = []report.FileInfo{}
		}
		body, err := json.Marshal(&p)
		if err != nil {
			return nil, fmt.Errorf("marshal month manifest part: %w", err)
		}
		part, sum := report.NewPart(report.MonthManifestPrefix(m.Month), body)
		infos = append(infos, Part{Key: part.Key, Bytes: int64(len(part.Body)), SHA256: sum,
			Files: len(p.Files), ReplacedFiles: len(p.ReplacedFiles), Agencies: len(p.Agencies)})
		if err := put(part); err != nil {
			return nil, err
		}
	}
	c := *m
	c.Format, c.Parts = FormatParts, infos
	c.Files, c.ReplacedFiles, c.Agencies = inline, nil, nil
	body, err := c.Marshal()
	if err != nil {
		return nil, err
	}
	m.Format, m.Parts = FormatParts, infos
	return body, nil
}

// Keys returns the keys of every object of m's revision but manifest.json:
// its files and its parts. What a month's cleanup keeps, and what verify
// expects to find, is this set.
func (m *Manifest) Keys() map[string]bool {
	keep := keySet(m.Files)
	for _, p := range m.Parts {
		keep[p.Key] = true
	}
	return keep
}

// hasFile reports whether m lists the object key among its Files (sorted
// by key, as every manifest lists them).
func (m *Manifest) hasFile(key string) bool {
	_, ok := slices.BinarySearchFunc(m.Files, key, func(f report.FileInfo, k string) int { return cmp.Compare(f.Key, k) })
	return ok
}

// hasKey reports whether key is one of m.Keys(), without building the set.
func (m *Manifest) hasKey(key string) bool {
	if m.hasFile(key) {
		return true
	}
	for _, p := range m.Parts {
		if p.Key == key {
			return true
		}
	}
	return false
}

// readManifest decodes a month manifest's bytes and reads its parts, each
// checked against the size and SHA-256 the manifest names (else an error
// wrapping report.ErrManifestPart): the manifest it returns has its lists
// whole, in the order they were written.
func (c *Closer) readManifest(ctx context.Context, raw []byte) (*Manifest, error) {
	m, err := ParseManifest(raw)
	if err != nil || len(m.Parts) == 0 {
		return m, err
	}
	for _, p := range m.Parts {
		b, err := c.readPart(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("%w (the statements of %s cannot be read or published again until this part is "+
				"restored with the bytes manifest.json names, e.g. from the bucket's versions)", err, m.Month)
		}
		m.Files = append(m.Files, b.Files...)
		m.ReplacedFiles = append(m.ReplacedFiles, b.ReplacedFiles...)
		m.Agencies = append(m.Agencies, b.Agencies...)
	}
	slices.SortStableFunc(m.Files, func(a, b report.FileInfo) int { return cmp.Compare(a.Key, b.Key) })
	if len(m.ReplacedFiles) == 0 {
		m.ReplacedFiles = nil
	}
	if len(m.Agencies) == 0 {
		m.Agencies = nil
	}
	return m, nil
}

func (c *Closer) readPart(ctx context.Context, p Part) (monthPart, error) {
	var b monthPart
	raw, _, err := c.bucket().ReadAll(ctx, p.Key, report.MaxPartBytes)
	if err != nil {
		return b, fmt.Errorf("%w: %s: %w", report.ErrManifestPart, p.Key, err)
	}
	if err := report.CheckPart(p.Key, raw, p.Bytes, p.SHA256); err != nil {
		return b, err
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, fmt.Errorf("%w: %s: %w", report.ErrManifestPart, p.Key, err)
	}
	if b.Format != monthPartFormat || len(b.Files) != p.Files || len(b.ReplacedFiles) != p.ReplacedFiles || len(b.Agencies) != p.Agencies {
		return b, fmt.Errorf("%w: %s: format %q, %d files, %d replaced, %d agencies; the month manifest says %q, %d, %d and %d",
			report.ErrManifestPart, p.Key, b.Format, len(b.Files), len(b.ReplacedFiles), len(b.Agencies),
			monthPartFormat, p.Files, p.ReplacedFiles, p.Agencies)
	}
	return b, nil
}
