package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestStatementsDocumentKeys: statements.directory, statements.issuer.*
// and statements.fonts, read from a file whose paths are relative to its
// folder.
func TestStatementsDocumentKeys(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(t.TempDir())
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("agencies.csv", []byte("agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms\n"))
	write("img/logo.png", append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13))
	write("fonts/a.ttf", []byte("\x00\x01\x00\x00\x00\x10"))
	write("fonts/c.ttc", []byte("ttcf\x00\x02"))
	write("fonts/d.otf", []byte("OTTO\x00\x0a"))
	write("fonts/e.ttf", []byte("GIF89a"))
	write("notpng.png", []byte("GIF89a......"))
	file := write("config.yaml", []byte(`job_name: billing_report.eu
statements:
  directory: agencies.csv
  issuer:
    legal_name: Billing Example SAS
    address: [1 place de l'Opéra, 75009 Paris]
    tax_id: FR12345678901
    contact: billing@example.com
    payment_terms: 45d
    payment_instructions: |
      IBAN FR76 3000 6000 0112 3456 7890 189
      Quote the statement number
    logo: img/logo.png
    number_prefix: BE-1
  fonts: [fonts/a.ttf, /usr/share/fonts/none.ttf]
`))
	// The second font does not exist: one error, naming the key.
	_, err := Load(file, true, nil)
	errs := configErrors(t, err)
	if len(errs) != 1 || errs[0].Key != "statements.fonts" || !strings.Contains(errs[0].Error(), `"/usr/share/fonts/none.ttf"`) ||
		!strings.HasSuffix(errs[0].Error(), "cannot read: no such file or directory") {
		t.Fatalf("err = %v", err)
	}
	write("none.ttf", []byte("true\x00\x10"))
	c, err := Load(file, true, []string{"REPORTJOB_STATEMENTS_FONTS=" + filepath.Join(dir, "none.ttf")})
	if err != nil {
		t.Fatal(err)
	}
	want := Issuer{LegalName: "Billing Example SAS", Address: []string{"1 place de l'Opéra", "75009 Paris"},
		TaxID: "FR12345678901", Contact: "billing@example.com", PaymentTermsDays: 45,
		PaymentInstructions: "IBAN FR76 3000 6000 0112 3456 7890 189\nQuote the statement number\n",
		Logo:                filepath.Join(dir, "img/logo.png"), NumberPrefix: "BE-1"}
	if s := c.Statements; !reflect.DeepEqual(s.Issuer, want) || s.Directory != filepath.Join(dir, "agencies.csv") ||
		!reflect.DeepEqual(s.Fonts, []string{filepath.Join(dir, "none.ttf")}) {
		t.Errorf("got directory %q, fonts %q, issuer\n%+v\nwant\n%+v", s.Directory, s.Fonts, s.Issuer, want)
	}

	for _, tc := range []struct {
		name, file string
		env        []string
		key, msg   string // msg: the whole message, the file's folder written DIR
	}{
		{"directory missing", "statements: {directory: nope.yaml}", nil, "statements.directory",
			`config: statements.directory "nope.yaml" (DIR/c.yaml:1): cannot read DIR/nope.yaml: no such file or directory`},
		{"directory a folder", "statements: {directory: img.csv}", nil, "statements.directory", ""},
		{"directory extension", "statements: {directory: agencies.json}", nil, "statements.directory",
			`config: statements.directory "agencies.json" (DIR/c.yaml:1): must be a .csv, .yaml or .yml file`},
		{"directory http", "statements: {directory: 'https://x/a.csv'}", nil, "statements.directory",
			`config: statements.directory "https://x/a.csv" (DIR/c.yaml:1): must be a local path or s3://BUCKET/KEY`},
		{"directory bucket", "statements: {directory: 's3://B/a.csv'}", nil, "statements.directory", ""},
		{"directory no key", "statements: {directory: 's3://bucket/'}", nil, "statements.directory",
			`config: statements.directory "s3://bucket/" (DIR/c.yaml:1): must name an object: s3://BUCKET/KEY`},
		{"directory from env, relative to the working folder", "", []string{"REPORTJOB_STATEMENTS_DIRECTORY=agencies.csv"},
			"statements.directory", `config: statements.directory "agencies.csv" (REPORTJOB_STATEMENTS_DIRECTORY): cannot read: no such file or directory`},
		{"unknown issuer key", "statements: {issuer: {legal_nam: X}}", nil, "statements.issuer.legal_nam",
			`config: statements.issuer.legal_nam "X" (DIR/c.yaml:1): unknown key; did you mean statements.issuer.legal_name?`},
		{"legal name control", "statements: {issuer: {legal_name: \"A\\tB\"}}", nil, "statements.issuer.legal_name",
			`config: statements.issuer.legal_name "A\tB" (DIR/c.yaml:1): contains control character U+0009`},
		{"legal name long", "statements: {issuer: {legal_name: " + strings.Repeat("é", 501) + "}}", nil, "statements.issuer.legal_name", ""},
		{"address mapping", "statements: {issuer: {address: {a: b}}}", nil, "statements.issuer.address", ""},
		{"address line", "statements: {issuer: {address: [\"a\\nb\"]}}", nil, "statements.issuer.address",
			`config: statements.issuer.address "a\nb" (DIR/c.yaml:1): contains control character U+000A`},
		{"instructions control", "statements: {issuer: {payment_instructions: \"a\\u0007\"}}", nil, "statements.issuer.payment_instructions", ""},
		{"terms hours", "statements: {issuer: {payment_terms: 36h}}", nil, "statements.issuer.payment_terms",
			`config: statements.issuer.payment_terms "36h" (DIR/c.yaml:1): must be a whole number of days such as 30d or 0d`},
		{"terms number", "statements: {issuer: {payment_terms: 30}}", nil, "statements.issuer.payment_terms", ""},
		{"terms too long", "statements: {issuer: {payment_terms: 366d}}", nil, "statements.issuer.payment_terms",
			`config: statements.issuer.payment_terms "366d" (DIR/c.yaml:1): must be between 0d and 365d`},
		{"terms negative", "statements: {issuer: {payment_terms: -1d}}", nil, "statements.issuer.payment_terms", ""},
		{"logo missing", "statements: {issuer: {logo: /nonexistent/logo.png}}", nil, "statements.issuer.logo",
			`config: statements.issuer.logo "/nonexistent/logo.png" (DIR/c.yaml:1): cannot read: no such file or directory`},
		{"logo not png", "statements: {issuer: {logo: notpng.png}}", nil, "statements.issuer.logo",
			`config: statements.issuer.logo "notpng.png" (DIR/c.yaml:1): not a PNG file DIR/notpng.png (it does not start with the PNG signature)`},
		{"prefix underscore", "statements: {issuer: {number_prefix: a_b}}", nil, "statements.issuer.number_prefix",
			`config: statements.issuer.number_prefix "a_b" (DIR/c.yaml:1): must be 1 to 32 of A-Z a-z 0-9 -`},
		{"prefix long", "statements: {issuer: {number_prefix: " + strings.Repeat("A", 33) + "}}", nil, "statements.issuer.number_prefix", ""},
		{"fonts missing", "statements: {fonts: [fonts/a.ttf, fonts/b.ttf]}", nil, "statements.fonts",
			`config: statements.fonts "fonts/b.ttf" (DIR/c.yaml:1): cannot read DIR/fonts/b.ttf: no such file or directory`},
		{"fonts a folder", "statements: {fonts: [fonts]}", nil, "statements.fonts",
			`config: statements.fonts "fonts" (DIR/c.yaml:1): not a regular file DIR/fonts`},
		{"s3 directory file sink", "statements: {directory: \"s3://bucket/agencies.csv\"}", nil, "statements.directory",
			`config: statements.directory "s3://bucket/agencies.csv" (DIR/c.yaml:1): an s3:// directory needs an s3:// sink (it is read with the sink's S3 client); with a file:// sink give a local path`},
		{"fonts collection", "statements: {fonts: [fonts/c.ttc]}", nil, "statements.fonts",
			`config: statements.fonts "fonts/c.ttc" (DIR/c.yaml:1): a font collection (.ttc): give one TrueType font file (.ttf) of it`},
		{"fonts cff", "statements: {fonts: [fonts/d.otf]}", nil, "statements.fonts", "the PDF writer takes TrueType (glyf) fonts only, e.g. /usr/share/fonts/opentype/ipafont-gothic/ipag.ttf from Debian's fonts-ipafont-gothic"},
		{"fonts not a font", "statements: {fonts: [fonts/e.ttf]}", nil, "statements.fonts",
			`config: statements.fonts "fonts/e.ttf" (DIR/c.yaml:1): not a TrueType font file (it does not start with a TrueType signature)`},
		{"fonts mapping", "statements: {fonts: {a: b}}", nil, "statements.fonts", "must be a list, such as [a, b]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "directory a folder" {
				write("img.csv/x", nil)
			}
			_, err := Load(write("c.yaml", []byte(tc.file)), true, tc.env)
			if err == nil {
				t.Fatal("no error")
			}
			errs := configErrors(t, err)
			msg := strings.ReplaceAll(errs[0].Error(), dir, "DIR")
			if len(errs) != 1 || errs[0].Key != tc.key || (tc.msg != "" && msg != tc.msg && !strings.HasSuffix(msg, tc.msg)) {
				t.Errorf("got %v\nwant %s: %s", err, tc.key, tc.msg)
			}
		})
	}
}

func TestDefaultNumberPrefix(t *testing.T) {
	for job, want := range map[string]string{
		"billing-report":        "billing-report",
		"billing.report-eu_1":   "billing-report-eu-1",
		strings.Repeat("a", 64): strings.Repeat("a", 32),
		"":                      "statement",
	} {
		if got := DefaultNumberPrefix(job); got != want || !numberPrefixRE.MatchString(got) {
			t.Errorf("DefaultNumberPrefix(%q) = %q, want %q", job, got, want)
		}
	}
	c, err := Parse([]byte("job_name: a.b\nstatements: {issuer: {number_prefix: ''}}"), "c.yaml", nil)
	if err != nil || c.Statements.Issuer.NumberPrefix != "a-b" {
		t.Errorf("number_prefix '' with job_name a.b: %v, %v", c, err)
	}
}
