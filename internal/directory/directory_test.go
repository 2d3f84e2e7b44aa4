package directory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantGood is what good.csv and good.yaml both hold.
var wantGood = map[string]Entry{
	"agency-0001": {AgencyID: "agency-0001", LegalName: "Voyages Lumière SARL",
		Address: []string{"12 rue de la Paix", "75002 Paris"}, Country: "FR", TaxID: "FR40303265045",
		Emails: []string{"compta@lumiere.example", "direction@lumiere.example"}, Locale: "fr-FR",
		PaymentTermsDays: 15, HasTerms: true},
	"東京トラベル": {AgencyID: "東京トラベル", LegalName: "東京トラベル株式会社",
		Address: []string{"東京都千代田区丸の内1-1", "100-0005"}, Country: "JP", TaxID: "T1234567890123",
		Emails: []string{"keiri@tokyo-travel.example"}, Locale: "ja"},
	"minimal": {AgencyID: "minimal", LegalName: "Minimal Ltd"},
}

func TestParseGood(t *testing.T) {
	for _, name := range []string{"good.csv", "good.yaml"} {
		t.Run(name, func(t *testing.T) {
			d, err := Parse(name, read(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if d.Len() != len(wantGood) || d.Source() != name {
				t.Errorf("Len %d Source %q, want %d %q", d.Len(), d.Source(), len(wantGood), name)
			}
			for id, want := range wantGood {
				if got, ok := d.Lookup(id); !ok || !reflect.DeepEqual(got, want) {
					t.Errorf("Lookup(%q) = %#v, %v; want %#v", id, got, ok, want)
				}
			}
			if _, ok := d.Lookup("unknown"); ok {
				t.Error("Lookup of an unknown agency is ok")
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"bad-email.csv", `directory bad-email.csv: row 5: emails: "bob@": mail: missing '@' or angle-addr`},
		{"bad-fields.csv", `directory bad-fields.csv: row 2: 2 fields, the header has 8`},
		{"bad-header.csv", `directory bad-header.csv: row 1: header: "legal_nam": unknown column; did you mean legal_name?
directory bad-header.csv: row 1: header: "agency_id,legal_nam,address,country,tax_id,emails,locale": missing column(s) legal_name, payment_terms; want agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms`},
		{"bad-quote.csv", `directory bad-quote.csv: line 2, column 18: extraneous or missing " in quoted-field`},
		{"empty.csv", `directory empty.csv: empty file: want a header agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms`},
		{"bad-many.csv", `directory bad-many.csv: row 2: legal_name: "": required
directory bad-many.csv: row 2: country: "fr": must be upper case: FR
directory bad-many.csv: row 2: emails: "Bob <bob@example.com>": must be a bare address such as billing@example.com, without a name or <>
directory bad-many.csv: row 2: locale: "xx-YYYYYYYYY": must be a BCP 47 language tag such as fr-FR or ja: language: tag is not well-formed
directory bad-many.csv: row 2: payment_terms: "15h": must be a whole number of days such as 30d or 0d
directory bad-many.csv: row 3: agency_id: "a1": agency given twice (first at row 2)
directory bad-many.csv: row 3: country: "FRA": must be an ISO 3166-1 alpha-2 code: two letters A-Z, such as FR
directory bad-many.csv: row 3: payment_terms: "-1d": must be a whole number of days such as 30d or 0d
directory bad-many.csv: row 4: agency_id: "": required`},
		{"bad-keys.yaml", `directory bad-keys.yaml: agency "acme" (line 2): email: "[...]": unknown key; did you mean emails?
directory bad-keys.yaml: agency "beta" (line 5): address: "{...}": must be a list
directory bad-keys.yaml: agency "beta" (line 5): legal_name: "": required
directory bad-keys.yaml: agency "beta" (line 5): payment_terms: "30": must be a whole number of days such as 30d or 0d
directory bad-keys.yaml: agency "acme" (line 8): agency_id: "acme": agency given twice (first at line 2)`},
		{"bad-top.yaml", `directory bad-top.yaml: line 1: key: "agency": unknown key`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d, err := Parse(tc.file, read(t, tc.file))
			if d != nil || err == nil {
				t.Fatalf("got %d entries, err %v", d.Len(), err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			if err.Error() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
}

func TestParseInline(t *testing.T) {
	const h = "agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms\n"
	for _, tc := range []struct{ name, data, want string }{
		{"x.txt", "", `directory x.txt: invalid agency directory: the name must end in .csv, .yaml or .yml`},
		{"a.yml", "agencies:\n  a: [x]\n", `directory a.yml: agency "a" (line 2): agencies.a: "[...]": must be a mapping such as {legal_name: Acme Ltd}`},
		{"a.yaml", "agencies: [a]\n", `directory a.yaml: line 1: agencies: "[...]": must be a mapping of agency id to its details`},
		{"a.yaml", "- a\n", `directory a.yaml: line 1: the top level must be a mapping with the key agencies`},
		{"a.yaml", "agencies: {a: {legal_name: [x]}}\n", `directory a.yaml: agency "a" (line 1): legal_name: "[...]": must be a single value, not a list or mapping`},
		{"a.yaml", "agencies: {a: {legal_name: A, legal_name: B}}\n", `directory a.yaml: agency "a" (line 1): legal_name: "B": key given twice`},
		{"a.yaml", "agencies: {a: {legal_name: A, emails: [[x]]}}\n", `directory a.yaml: agency "a" (line 1): emails: "[...]": must be a list of single values`},
		{"a.yaml", "agencies: {a: {legal_name: A, payment_terms: 366d}}\n", `directory a.yaml: agency "a" (line 1): payment_terms: "366d": must be at most 365d`},
		{"a.yaml", "agencies: {\n", `directory a.yaml: line 1: did not find expected node content`},
		{"a.yaml", "", `directory a.yaml: empty file: want a mapping agencies: {ID: {legal_name: ...}}`},
		{"a.csv", h + "a,\"A\x01\",,,,,,\n", `directory a.csv: row 2: legal_name: "A\x01": contains control character U+0001`},
		{"a.csv", h + "a,A,,,,,,\n" + strings.Repeat("x", 129) + ",A,,,,,,\n",
			`directory a.csv: row 3: agency_id: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"...: longer than 128 characters`},
		{"a.csv", h + "a,A,,,,,und-x,\n", `directory a.csv: row 2: locale: "und-x": must be a BCP 47 language tag such as fr-FR or ja: language: tag is not well-formed`},
	} {
		d, err := Parse(tc.name, []byte(tc.data))
		if d != nil || err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s %q: got %d entries, err %v", tc.name, tc.data, d.Len(), err)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s %q:\ngot  %s\nwant %s", tc.name, tc.data, err, tc.want)
		}
	}
	for _, tc := range []struct{ name, data string }{
		{"a.yaml", "agencies:\n"},
		{"a.yaml", "agencies: {}\n"},
		{"a.csv", h},
		{"a.CSV", "\uFEFF" + strings.ReplaceAll(h, ",", " , ")},
	} {
		if d, err := Parse(tc.name, []byte(tc.data)); err != nil || d.Len() != 0 {
			t.Errorf("%s %q: %v, want an empty directory", tc.name, tc.data, err)
		}
	}
}

func TestParseErrorCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms\n")
	for i := range 30 {
		fmt.Fprintf(&b, "a%d,,,,,,,\n", i)
	}
	_, err := Parse("many.csv", []byte(b.String()))
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxErrors+1 || lines[maxErrors] != "directory many.csv: and 10 more errors" {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestLoad(t *testing.T) {
	ctx := context.Background()
	local := filepath.Join("testdata", "good.csv")
	d, err := Load(ctx, local, nil)
	if err != nil || d.Len() != 3 || d.Source() != local {
		t.Fatalf("Load(%s) = %d entries, %v", local, d.Len(), err)
	}
	var asked string
	get := func(_ context.Context, bucket, key string) ([]byte, error) {
		asked = bucket + " " + key
		if key == "missing.yaml" {
			return nil, errors.New("NoSuchKey")
		}
		return read(t, "good.yaml"), nil
	}
	d, err = Load(ctx, "s3://bucket/dir/agencies.yaml", get)
	if err != nil || d.Len() != 3 || asked != "bucket dir/agencies.yaml" || d.Source() != "s3://bucket/dir/agencies.yaml" {
		t.Fatalf("Load from S3 = %d entries, %v (asked %q)", d.Len(), err, asked)
	}
	for _, tc := range []struct {
		source, want string
		is           error
	}{
		{"testdata/none.csv", "directory testdata/none.csv: no such file or directory", fs.ErrNotExist},
		{"s3://bucket/missing.yaml", "directory s3://bucket/missing.yaml: NoSuchKey", nil},
		{"s3://bucket", "directory s3://bucket: invalid agency directory: want s3://BUCKET/KEY", ErrInvalid},
		{"testdata/bad-email.csv", `directory testdata/bad-email.csv: row 5: emails: "bob@": mail: missing '@' or angle-addr`, ErrInvalid},
	} {
		_, err := Load(ctx, tc.source, get)
		if err == nil || err.Error() != tc.want || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("Load(%s) = %v, want %s", tc.source, err, tc.want)
		}
	}
	big := func(context.Context, string, string) ([]byte, error) { return make([]byte, MaxSize+1), nil }
	if _, err := Load(ctx, "s3://bucket/big.csv", big); err == nil || !errors.Is(err, ErrInvalid) ||
		err.Error() != "directory s3://bucket/big.csv: invalid agency directory: larger than 64 MiB" {
		t.Errorf("Load of a large object = %v", err)
	}
	if _, err := Load(ctx, "s3://bucket/a.csv", nil); err == nil {
		t.Error("Load from S3 without a getter: no error")
	}
}

// TestLarge parses 100,000 agencies.
func TestLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	data := large(100_000)
	d, err := Parse("large.csv", data)
	if err != nil || d.Len() != 100_000 {
		t.Fatalf("%d entries, %v", d.Len(), err)
	}
	if e, ok := d.Lookup("agency-099999"); !ok || e.LegalName != "Agency 99999 Ltd" || len(e.Emails) != 2 {
		t.Errorf("Lookup = %#v, %v", e, ok)
	}
}

func large(n int) []byte {
	var b strings.Builder
	b.WriteString("agency_id,legal_name,address,country,tax_id,emails,locale,payment_terms\n")
	for i := range n {
		fmt.Fprintf(&b, "agency-%06d,Agency %d Ltd,\"%d Main Street\nSpringfield\",US,US%09d,a%d@example.com;b%d@example.com,en-US,30d\n",
			i, i, i, i, i, i)
	}
	return []byte(b.String())
}

func BenchmarkParseCSV(b *testing.B) {
	data := large(100_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("large.csv", data); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"good.csv", "good.yaml", "bad-many.csv", "bad-keys.yaml", "bad-quote.csv"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(filepath.Ext(name) == ".csv", b)
	}
	f.Fuzz(func(t *testing.T, csv bool, data []byte) {
		name := "f.yaml"
		if csv {
			name = "f.csv"
		}
		d, err := Parse(name, data)
		if (d == nil) == (err == nil) {
			t.Fatalf("directory %v and error %v", d, err)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("%v does not wrap ErrInvalid", err)
		}
	})
}

func TestParseYAMLTooBig(t *testing.T) {
	data := []byte("agencies:\n" + strings.Repeat("# padding padding padding padding padding padding\n", MaxYAMLSize/50+1))
	_, err := Parse("big.yaml", data)
	if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "write a directory this size as CSV") {
		t.Fatalf("Parse(big.yaml) = %v, want ErrInvalid saying to use CSV", err)
	}
}
