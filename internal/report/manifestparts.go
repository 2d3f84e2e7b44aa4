package report

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// A big period's object list does not fit in one manifest.json: at 10,000
// agencies with csv and parquet files it was 9 MB, over the 5 MiB of a
// conditional put (driver.MaxConditionalSize), and every reader of the
// manifest (each run, recheck, verify, status) would parse all of it. So
// a manifest whose Files and ReplacedFiles hold more than InlineEntries
// entries is written in layout ManifestFormatParts: manifest.json keeps
// the dataset objects (summary, transactions, adjustments, rejects), the
// counts and totals, and names its Parts; the agency objects and the
// replaced keys go, PartEntries at a time, into part objects
// manifests/period=P/files-H.json, immutable and named by their content
// hash, which the manifest commits to by size and SHA-256. Parts are
// uploaded before the manifest, so the manifest stays the single commit
// record: a part that no published manifest names is a leftover.
//
// ReadManifest is the one way to read a manifest whole: every reader
// (publish, verify, cleanup, tests) gets Files and ReplacedFiles complete,
// whatever the layout.

// ManifestFormatParts is the layout of a manifest with Parts.
// ManifestFormat (no parts) is still written for every manifest that fits
// InlineEntries, so that such a manifest reads as before.
const ManifestFormatParts = "reportjob.manifest/3"

// partFormat identifies a part object's layout.
const partFormat = "reportjob.manifest-part/1"

const (
	// InlineEntries is the most Files plus ReplacedFiles a manifest holds
	// itself (about 500 KB of JSON); beyond, it is split into parts.
	InlineEntries = 2_000
	// PartEntries is the most entries (files and replaced keys) of one
	// part (about 2 MB of JSON).
	PartEntries = 10_000
	// MaxPartBytes bounds a part read back.
	MaxPartBytes = 64 << 20
)

// ErrManifestPart means a part the manifest names is missing, or is not
// the object the manifest committed to.
var ErrManifestPart = errors.New("manifest part missing or corrupt")

// ManifestPart names a part object and what it holds.
type ManifestPart struct {
	Key    string `json:"key"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Files and ReplacedFiles count its entries of each list.
	Files         int `json:"files"`
	ReplacedFiles int `json:"replaced_files"`
}

// partBody is a part object's JSON.
type partBody struct {
	Format        string     `json:"format"`
	Files         []FileInfo `json:"files"`
	ReplacedFiles []string   `json:"replaced_files"`
}

// EncodedPart is a part object to upload before its manifest.
type EncodedPart struct {
	Key  string
	Body []byte
}

// partBase is the name of a part object: files-H.json.
const partBase = "files"

// IsPartKey reports whether key names a manifest part (under manifests/).
func IsPartKey(key string) bool {
	rest, ok := strings.CutPrefix(key, DirManifests+"/")
	if !ok {
		return false
	}
	name := rest[strings.LastIndexByte(rest, '/')+1:]
	return strings.HasPrefix(name, partBase+"-") && strings.HasSuffix(name, ".json")
}

// PartKeys returns the keys of m's parts.
func (m *Manifest) PartKeys() map[string]bool {
	out := make(map[string]bool, len(m.Parts))
	for _, p := range m.Parts {
		out[p.Key] = true
	}
	return out
}

// Encode returns manifest.json's bytes and, for a manifest of more than
// InlineEntries entries, the parts to upload before it. It sets m.Format
// and m.Parts to the layout written; m.Files and m.ReplacedFiles stay
// whole. The same manifest always gives the same bytes and parts.
func (m *Manifest) Encode() ([]byte, []EncodedPart, error) {
	var parts []EncodedPart
	body, err := m.EncodeTo(func(p EncodedPart) error {
		parts = append(parts, p)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return body, parts, nil
}

// EncodeTo is Encode handing each part to put as soon as it is encoded,
// in order, instead of holding them all (a period of 100,000 agencies has
// 40 parts, 78 MB): the same parts and manifest.json bytes as Encode. An
// error of put stops it and is returned.
func (m *Manifest) EncodeTo(put func(EncodedPart) error) ([]byte, error) {
	m.Format, m.Parts = ManifestFormat, nil
	if len(m.Files)+len(m.ReplacedFiles) <= InlineEntries {
		return m.marshal(m.Files, m.ReplacedFiles)
	}
	var inline []FileInfo
	var infos []ManifestPart
	replaced := m.ReplacedFiles
	batch := make([]FileInfo, 0, min(len(m.Files), PartEntries))
	// emit writes the part of batch and, in the room left, replaced keys.
	emit := func() error {
		b := partBody{Format: partFormat, Files: batch, ReplacedFiles: []string{}}
		k := min(len(replaced), PartEntries-len(batch))
		b.ReplacedFiles, replaced = append(b.ReplacedFiles, replaced[:k]...), replaced[k:]
		body, err := json.Marshal(&b)
		if err != nil {
			return fmt.Errorf("marshal manifest part: %w", err)
		}
		part, sum := NewPart(ManifestPrefix(m.Period()), body)
		infos = append(infos, ManifestPart{Key: part.Key, Bytes: int64(len(part.Body)), SHA256: sum,
			Files: len(b.Files), ReplacedFiles: len(b.ReplacedFiles)})
		batch = batch[:0]
		return put(part)
	}
	for _, f := range m.Files {
		if _, ok := AgencySegment(f.Key); !ok {
			inline = append(inline, f)
			continue
		}
		batch = append(batch, f)
		if len(batch) == PartEntries {
			if err := emit(); err != nil {
				return nil, err
			}
		}
	}
	for len(batch) > 0 || len(replaced) > 0 {
		if err := emit(); err != nil {
			return nil, err
		}
	}
	m.Format, m.Parts = ManifestFormatParts, infos
	body, err := m.marshal(inline, nil)
	if err != nil {
		m.Format, m.Parts = ManifestFormat, nil
		return nil, err
	}
	return body, nil
}

// NewPart returns the part object of JSON body under prefix (a newline is
// appended), named by its content hash (files-H.json), and its SHA-256 in
// hex: what the manifest that names it commits to, with its size.
func NewPart(prefix string, body []byte) (EncodedPart, string) {
	body = append(body, '\n')
	sum := sha256.Sum256(body)
	return EncodedPart{Key: prefix + HashedName(partBase, "json", sum), Body: body}, hex.EncodeToString(sum[:])
}

// CheckPart checks raw, read back from key, against the size and SHA-256
// a manifest committed to; the error wraps ErrManifestPart. Every part,
// of a period's manifest or a month's, is read through it.
func CheckPart(key string, raw []byte, size int64, sha string) error {
	if sum := SHA256Hex(raw); int64(len(raw)) != size || sum != sha {
		return fmt.Errorf("%w: %s is %d bytes, sha256 %s; the manifest says %d, %s",
			ErrManifestPart, key, len(raw), sum, size, sha)
	}
	return nil
}

// PartReader reads the whole object at key (at most MaxPartBytes).
type PartReader func(ctx context.Context, key string) ([]byte, error)

// partReads is how many parts ReadManifest reads at once.
const partReads = 8

// ReadManifest decodes manifest.json's bytes raw and reads its parts with
// read, each checked against the size and SHA-256 the manifest names
// (else an error wrapping ErrManifestPart): the manifest it returns has
// Files and ReplacedFiles whole, in the order they were written. It is the
// one function through which a published manifest is read.
func ReadManifest(ctx context.Context, raw []byte, read PartReader) (*Manifest, error) {
	m, err := ParseManifest(raw)
	if err != nil || len(m.Parts) == 0 {
		return m, err
	}
	bodies := make([]partBody, len(m.Parts))
	errs := make([]error, len(m.Parts))
	sem := make(chan struct{}, partReads)
	var wg sync.WaitGroup
	for i, p := range m.Parts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			bodies[i], errs[i] = readPart(ctx, p, read)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	files, replaced := len(m.Files), len(m.ReplacedFiles)
	for _, p := range m.Parts {
		files, replaced = files+p.Files, replaced+p.ReplacedFiles
	}
	m.Files, m.ReplacedFiles = slices.Grow(m.Files, files-len(m.Files)), slices.Grow(m.ReplacedFiles, replaced-len(m.ReplacedFiles))
	for i := range bodies {
		m.Files = append(m.Files, bodies[i].Files...)
		m.ReplacedFiles = append(m.ReplacedFiles, bodies[i].ReplacedFiles...)
		bodies[i] = partBody{}
	}
	slices.SortStableFunc(m.Files, func(a, b FileInfo) int { return strings.Compare(a.Key, b.Key) })
	if len(m.ReplacedFiles) == 0 {
		m.ReplacedFiles = nil
	}
	return m, nil
}

func readPart(ctx context.Context, p ManifestPart, read PartReader) (partBody, error) {
	var b partBody
	raw, err := read(ctx, p.Key)
	if err != nil {
		return b, fmt.Errorf("%w: %s: %w", ErrManifestPart, p.Key, err)
	}
	if err := CheckPart(p.Key, raw, p.Bytes, p.SHA256); err != nil {
		return b, err
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return b, fmt.Errorf("%w: %s: %w", ErrManifestPart, p.Key, err)
	}
	if b.Format != partFormat || len(b.Files) != p.Files || len(b.ReplacedFiles) != p.ReplacedFiles {
		return b, fmt.Errorf("%w: %s: format %q, %d files and %d replaced; the manifest says %q, %d and %d",
			ErrManifestPart, p.Key, b.Format, len(b.Files), len(b.ReplacedFiles), partFormat, p.Files, p.ReplacedFiles)
	}
	return b, nil
}
