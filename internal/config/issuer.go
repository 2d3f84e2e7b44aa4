package config

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxTermsDays bounds statements.issuer.payment_terms (and an agency's
// own, in the directory).
const maxTermsDays = 365

// Text limits of statements.issuer, in characters.
const (
	maxIssuerText         = 500
	maxIssuerInstructions = 2000
)

var numberPrefixRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,32}$`)

// pngSignature starts every PNG file.
var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// directory checks statements.directory: "", s3://BUCKET/KEY or a path,
// named .csv, .yaml or .yml.
func (d *decoder) directory() string {
	const key = "statements.directory"
	s := d.str(key)
	if s == "" {
		return s
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		d.fail(key, s, "contains a control character")
		return s
	}
	if rest, ok := strings.CutPrefix(s, "s3://"); ok {
		bucket, objKey, _ := strings.Cut(rest, "/")
		if reason := bucketProblem(bucket); reason != "" {
			d.fail(key, s, "bad bucket name "+fmt.Sprintf("%q", bucket)+": "+reason)
			return s
		}
		if objKey == "" || strings.HasSuffix(objKey, "/") {
			d.fail(key, s, "must name an object: s3://BUCKET/KEY")
			return s
		}
	} else if strings.Contains(s, "://") {
		d.fail(key, s, "must be a local path or s3://BUCKET/KEY")
		return s
	}
	switch strings.ToLower(path.Ext(s)) {
	case ".csv", ".yaml", ".yml":
	default:
		d.fail(key, s, "must be a .csv, .yaml or .yml file")
	}
	return s
}

func (d *decoder) decodeIssuer(c *Config) {
	is := &c.Statements.Issuer
	is.LegalName = d.text("statements.issuer.legal_name", maxIssuerText, false)
	is.Address = d.strs("statements.issuer.address")
	for _, l := range is.Address {
		if reason := textProblem(l, maxIssuerText, false); reason != "" {
			d.fail("statements.issuer.address", l, reason)
		}
	}
	is.TaxID = d.text("statements.issuer.tax_id", maxIssuerText, false)
	is.Contact = d.text("statements.issuer.contact", maxIssuerText, false)
	v := d.str("statements.issuer.payment_terms")
	switch t, err := ParseDuration(v); {
	case err != nil || t%day != 0:
		d.fail("statements.issuer.payment_terms", v, "must be a whole number of days such as 30d or 0d")
	case t < 0 || t > maxTermsDays*day:
		d.fail("statements.issuer.payment_terms", v, fmt.Sprintf("must be between 0d and %dd", maxTermsDays))
	default:
		is.PaymentTermsDays = int(t / day)
	}
	is.PaymentInstructions = d.text("statements.issuer.payment_instructions", maxIssuerInstructions, true)
	is.Logo = d.str("statements.issuer.logo")
	is.NumberPrefix = d.str("statements.issuer.number_prefix")
	if is.NumberPrefix == "" {
		is.NumberPrefix = DefaultNumberPrefix(c.JobName)
	} else if !numberPrefixRE.MatchString(is.NumberPrefix) {
		d.fail("statements.issuer.number_prefix", is.NumberPrefix, "must be 1 to 32 of A-Z a-z 0-9 -")
	}
}

// DefaultNumberPrefix is the statement number prefix of a job that sets
// none: its name with every character other than A-Z a-z 0-9 - made "-",
// cut to 32 characters.
func DefaultNumberPrefix(jobName string) string {
	b := []byte(jobName)
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 32 {
		b = b[:32]
	}
	if len(b) == 0 {
		return "statement"
	}
	return string(b)
}

// text reads a free-text key: valid UTF-8, no control character (line
// breaks when multiline), at most max characters.
func (d *decoder) text(key string, max int, multiline bool) string {
	s := d.str(key)
	if reason := textProblem(s, max, multiline); reason != "" {
		d.fail(key, s, reason)
	}
	return s
}

func textProblem(s string, max int, multiline bool) string {
	switch {
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	case utf8.RuneCountInString(s) > max:
		return fmt.Sprintf("longer than %d characters", max)
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && r == '\n') {
			return fmt.Sprintf("contains control character %U", r)
		}
	}
	return ""
}

// checkStatementFiles checks, once the paths are resolved, that the local
// statements.directory, logo and fonts exist (and that the logo is a PNG).
// The directory is not parsed here: it is read at the close.
func (d *decoder) checkStatementFiles(c *Config) {
	s := &c.Statements
	if strings.HasPrefix(s.Directory, "s3://") && c.Sink.Bucket == "" && !d.failed("statements.directory") {
		// It is read with the sink's S3 client and credentials.
		d.fail("statements.directory", d.str("statements.directory"), "an s3:// directory needs an s3:// sink (it is read with the sink's S3 client); with a file:// sink give a local path")
	}
	if s.Directory != "" && !strings.HasPrefix(s.Directory, "s3://") && !d.failed("statements.directory") {
		d.checkFile("statements.directory", d.str("statements.directory"), s.Directory, nil)
	}
	if s.Issuer.Logo != "" {
		d.checkFile("statements.issuer.logo", d.str("statements.issuer.logo"), s.Issuer.Logo, pngSignature)
	}
	written := d.strs("statements.fonts")
	for i, f := range s.Fonts {
		d.checkFile("statements.fonts", written[i], f, nil)
		if !d.failed("statements.fonts") {
			d.checkTrueType(written[i], f)
		}
	}
}

// checkTrueType reports a font file the statement PDF cannot embed: fpdf
// takes single TrueType (glyf) fonts, not a collection (.ttc, "ttcf") or
// CFF outlines ("OTTO", most .otf files). The renderer checks the tables
// again when it loads the font; this makes a wrong file a config error that
// stops every command before it touches anything.
func (d *decoder) checkTrueType(value, p string) {
	b, err := os.ReadFile(p)
	if err != nil || len(b) < 4 {
		d.fail("statements.fonts", value, "not a font file")
		return
	}
	switch string(b[:4]) {
	case "\x00\x01\x00\x00", "true":
	case "ttcf":
		d.fail("statements.fonts", value, "a font collection (.ttc): give one TrueType font file (.ttf) of it")
	case "OTTO":
		d.fail("statements.fonts", value, "an OpenType font with CFF outlines: the PDF writer takes TrueType (glyf) fonts only, e.g. /usr/share/fonts/opentype/ipafont-gothic/ipag.ttf from Debian's fonts-ipafont-gothic")
	default:
		d.fail("statements.fonts", value, "not a TrueType font file (it does not start with a TrueType signature)")
	}
}

// failed reports whether key already has an error.
func (d *decoder) failed(key string) bool {
	for _, e := range d.errs {
		if ce, ok := e.(*Error); ok && ce.Key == key {
			return true
		}
	}
	return false
}

// checkFile reports a file p (written as value) that is not a readable
// regular file, or that does not start with magic.
func (d *decoder) checkFile(key, value, p string, magic []byte) {
	where := ""
	if p != value {
		where = " " + p
	}
	f, err := os.Open(p)
	if err != nil {
		reason := err.Error()
		if pe, ok := err.(*os.PathError); ok {
			reason = pe.Err.Error()
		}
		d.fail(key, value, "cannot read"+where+": "+reason)
		return
	}
	defer f.Close()
	switch st, err := f.Stat(); {
	case err != nil:
		d.fail(key, value, "cannot read"+where+": "+err.Error())
		return
	case !st.Mode().IsRegular():
		d.fail(key, value, "not a regular file"+where)
		return
	}
	if magic != nil {
		head := make([]byte, len(magic))
		if n, _ := f.Read(head); n < len(magic) || !bytes.Equal(head, magic) {
			d.fail(key, value, "not a PNG file"+where+" (it does not start with the PNG signature)")
		}
	}
}
