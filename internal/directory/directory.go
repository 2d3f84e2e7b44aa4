// Package directory is the agency directory of the statements
// (statements.directory, docs/statements.md): per agency id, the legal
// name, address, country, tax id, billing e-mail addresses, locale and
// payment terms that a statement prints. Parse reads a .csv or .yaml file
// and checks every row (an error names the file, the row, the field and
// the value); Load reads it from a local path or an s3:// object.
//
// An agency missing from the directory is not an error here: the caller
// prints its id as its name (Lookup reports ok false).
package directory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// ErrInvalid is wrapped by every error Parse returns for a file that is
// not a valid directory.
var ErrInvalid = errors.New("invalid agency directory")

// Entry is one agency of the directory. Only AgencyID and LegalName are
// always set.
type Entry struct {
	AgencyID  string
	LegalName string
	// Address is the address lines, in order; nil when none.
	Address []string
	// Country is an ISO 3166-1 alpha-2 code (two letters A-Z), or "".
	Country string
	TaxID   string
	// Emails are bare addresses (no display name), in order; nil when none.
	Emails []string
	// Locale is a well-formed BCP 47 tag in its canonical form ("fr-FR"
	// for "fr-fr", "ja"), or "".
	Locale string
	// PaymentTermsDays is the agency's own payment terms in days, when
	// HasTerms; else the issuer's apply.
	PaymentTermsDays int
	HasTerms         bool
}

// Directory is a parsed directory: agency id -> Entry. The zero value and
// nil are empty directories.
type Directory struct {
	source string
	// arena and index hold the entries compact (compact.go).
	arena []byte
	index []uint32
}

// newDirectory returns the directory of entries read from source.
func newDirectory(source string, entries map[string]Entry) *Directory {
	d := &Directory{source: source}
	d.arena, d.index = compact(entries)
	return d
}

// Lookup returns the agency's entry, ok false when the directory has none
// (or d is nil).
func (d *Directory) Lookup(agencyID string) (Entry, bool) {
	if d == nil {
		return Entry{}, false
	}
	return lookup(d.arena, d.index, agencyID)
}

// Len returns the number of agencies.
func (d *Directory) Len() int {
	if d == nil {
		return 0
	}
	return len(d.index)
}

// Source returns where the directory was read from: the name given to
// Parse, or the source given to Load.
func (d *Directory) Source() string {
	if d == nil {
		return ""
	}
	return d.source
}

// MaxSize is the largest directory file Load reads: 64 MiB, some 500,000
// agencies in CSV. A Getter should refuse larger objects (s3sink.GetObjectBytes
// with max MaxSize).
const MaxSize = 64 << 20

// Getter reads an S3 object's bytes. The caller builds it on its S3
// client; this package does not depend on the AWS SDK.
type Getter func(ctx context.Context, bucket, key string) ([]byte, error)

// Load reads and parses the directory at source: a local path, or
// s3://BUCKET/KEY read with get. Errors name the source.
func Load(ctx context.Context, source string, get Getter) (*Directory, error) {
	var data []byte
	if rest, ok := strings.CutPrefix(source, "s3://"); ok {
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" || key == "" {
			return nil, fmt.Errorf("directory %s: %w: want s3://BUCKET/KEY", source, ErrInvalid)
		}
		if get == nil {
			return nil, fmt.Errorf("directory %s: no S3 client to read it with", source)
		}
		b, err := get(ctx, bucket, key)
		if err != nil {
			return nil, fmt.Errorf("directory %s: %w", source, err)
		}
		data = b
	} else {
		b, err := readFile(source)
		if pe, ok := err.(*fs.PathError); ok {
			err = pe.Err // the path is the source
		}
		if err != nil {
			return nil, fmt.Errorf("directory %s: %w", source, err)
		}
		data = b
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("directory %s: %w: larger than %d MiB", source, ErrInvalid, MaxSize>>20)
	}
	d, err := Parse(source, data)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// readFile reads the file p, refusing one larger than MaxSize before
// reading it.
func readFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	return b, nil
}
