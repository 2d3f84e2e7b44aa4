package money

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/testenv"
)

func TestLookupCurrency(t *testing.T) {
	tests := []struct {
		code   string
		digits int // -1: ErrUnknownCurrency
	}{
		// ISO 4217 list one, where CLDR's display digits differ or are missing.
		{"COP", 2}, {"IQD", 3}, {"ALL", 2}, {"IRR", 2}, {"LBP", 2}, {"RSD", 2}, {"MMK", 2}, {"YER", 2},
		{"VES", 2}, {"SLE", 2}, {"ZWG", 2}, {"VED", 2}, {"HUF", 2}, {"TWD", 2},
		// Funds.
		{"CLF", 4}, {"UYW", 4}, {"UYI", 0}, {"USN", 2}, {"CHE", 2}, {"MXV", 2},
		{"CLP", 0}, {"JPY", 0}, {"KRW", 0}, {"ISK", 0}, {"BHD", 3}, {"KWD", 3}, {"TND", 3}, {"OMR", 3},
		{"USD", 2}, {"EUR", 2}, {"GBP", 2},
		{"XOF", 0}, {"XAF", 0}, {"XCD", 2}, {"XPF", 0}, // regional currencies
		// Minor unit N.A.: not money of a country.
		{"XAU", -1}, {"XAG", -1}, {"XPT", -1}, {"XPD", -1}, {"XXX", -1}, {"XTS", -1},
		{"XDR", -1}, {"XSU", -1}, {"XUA", -1}, {"XBA", -1}, {"XBD", -1},
		// Not on list one: unassigned or withdrawn.
		{"ABC", -1}, {"DEM", -1}, {"VEF", -1}, {"HRK", -1}, {"SLL", -1}, {"ZWL", -1},
		// Not exactly 3 uppercase ASCII letters.
		{"usd", -1}, {"Usd", -1}, {"US", -1}, {"USDD", -1}, {"", -1}, {"U$D", -1}, {" USD", -1}, {"ÜSD", -1},
	}
	for _, tt := range tests {
		c, err := LookupCurrency(tt.code)
		if tt.digits < 0 {
			if !errors.Is(err, ErrUnknownCurrency) {
				t.Errorf("LookupCurrency(%q) = %+v, %v; want ErrUnknownCurrency", tt.code, c, err)
			} else if !strings.Contains(err.Error(), `"`+tt.code+`"`) {
				t.Errorf("LookupCurrency(%q) error %q does not name the code", tt.code, err)
			}
			continue
		}
		if err != nil || c != (Currency{Code: tt.code, Digits: tt.digits}) {
			t.Errorf("LookupCurrency(%q) = %+v, %v; want digits %d", tt.code, c, err, tt.digits)
		}
	}
}

func TestLookupCurrencyMessages(t *testing.T) {
	for code, want := range map[string]string{
		"XAU": `currency "XAU": ISO 4217 gives it no minor unit (not money of a country): unknown currency`,
		"DEM": `currency "DEM": not in ISO 4217 list one (` + ISO4217Published + `): unknown currency`,
		"usd": `currency "usd": not 3 uppercase letters (write "USD"): unknown currency`,
		"uSd": `currency "uSd": not 3 uppercase letters (write "USD"): unknown currency`,
		"us1": `currency "us1": not 3 uppercase letters: unknown currency`,
	} {
		if _, err := LookupCurrency(code); err == nil || err.Error() != want {
			t.Errorf("LookupCurrency(%q) error %v, want %s", code, err, want)
		}
	}
}

func TestISO4217Table(t *testing.T) {
	if !slices.IsSortedFunc(iso4217Digits[:], func(a, b codeDigits) int { return strings.Compare(a.code, b.code) }) ||
		!slices.IsSorted(iso4217NoMinorUnit[:]) {
		t.Fatal("generated tables are not sorted: binary search would miss codes")
	}
	for _, e := range iso4217Digits {
		if c, err := LookupCurrency(e.code); err != nil || c.Digits != int(e.digits) {
			t.Errorf("LookupCurrency(%q) = %+v, %v; table says %d", e.code, c, err, e.digits)
		}
		if e.digits > 4 {
			t.Errorf("%s has %d digits: DECIMAL(38,4) and Scale4 take at most 4", e.code, e.digits)
		}
	}
	for _, code := range iso4217NoMinorUnit {
		if _, err := LookupCurrency(code); !errors.Is(err, ErrUnknownCurrency) {
			t.Errorf("LookupCurrency(%q) = %v, want ErrUnknownCurrency", code, err)
		}
	}
}

// noMinorUnit is, written out by hand, every code ISO 4217 list one
// (2024-06-25) gives the minor unit "N.A.".
var noMinorUnit = []string{"XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XDR", "XPD", "XPT", "XSU", "XTS", "XUA", "XXX"}

// TestISO4217AgainstCurrencyCodes checks the generated table, code by
// code and both ways, against an independent reading of ISO 4217 list
// one: data.js of npm currency-codes@2.2.0, which scripts/tools.sh
// installs. Its ingest script turns "N.A." into 0, so a code data.js has
// and the table has not must be one of the N.A. codes, at 0.
func TestISO4217AgainstCurrencyCodes(t *testing.T) {
	dataJS := testenv.Require(t, testenv.EnvISO4217, "ISO 4217 reference data (npm currency-codes data.js)")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s is set but node is missing: %v", testenv.EnvISO4217, err)
	}
	const script = `const path = require("path");
const file = path.resolve(process.argv[1]);
const data = require(file);
const published = require(path.join(path.dirname(file), "iso-4217-publish-date.js"));
process.stdout.write(JSON.stringify({published, currencies: data.map(c => ({code: c.code, digits: c.digits}))}));`
	out, err := exec.Command(node, "-e", script, dataJS).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node %s: %v: %s", dataJS, err, ee.Stderr)
		}
		t.Fatalf("node %s: %v", dataJS, err)
	}
	var ref struct {
		Published  string
		Currencies []struct {
			Code   string
			Digits json.Number // must be an integer: any other JSON value fails below
		}
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatalf("data.js as JSON: %v", err)
	}
	if ref.Published != ISO4217Published {
		t.Errorf("%s is list one of %s, the table of %s: replace testdata/iso4217-list-one.xml, go generate, and pin the same edition in scripts/tools.sh",
			filepath.Base(filepath.Dir(dataJS)), ref.Published, ISO4217Published)
	}
	if len(ref.Currencies) < 150 {
		t.Fatalf("data.js lists %d currencies, want the whole list", len(ref.Currencies))
	}

	seen := map[string]bool{}
	for _, c := range ref.Currencies {
		if seen[c.Code] {
			t.Errorf("data.js lists %s twice", c.Code)
		}
		seen[c.Code] = true
		digits, err := c.Digits.Int64()
		if err != nil {
			t.Errorf("data.js %s: digits %q is not an integer", c.Code, c.Digits)
			continue
		}
		got, err := LookupCurrency(c.Code)
		switch {
		case slices.Contains(noMinorUnit, c.Code):
			if err == nil || digits != 0 {
				t.Errorf("%s: minor unit N.A.: LookupCurrency = %+v, %v (want unknown); data.js digits %d (want its 0)", c.Code, got, err, digits)
			}
		case err != nil:
			t.Errorf("%s: data.js gives %d digits, LookupCurrency: %v", c.Code, digits, err)
		case int64(got.Digits) != digits:
			t.Errorf("%s: data.js gives %d digits, LookupCurrency %d", c.Code, digits, got.Digits)
		}
	}
	for _, e := range iso4217Digits {
		if !seen[e.code] {
			t.Errorf("%s (%d digits) is in the table but not in data.js", e.code, e.digits)
		}
	}
	if !slices.Equal(iso4217NoMinorUnit[:], noMinorUnit) {
		t.Errorf("N.A. codes of the XML %v, want %v", iso4217NoMinorUnit, noMinorUnit)
	}
	for _, code := range noMinorUnit {
		if !seen[code] {
			t.Errorf("N.A. code %s is not in data.js", code)
		}
	}
	if n := len(iso4217Digits) + len(iso4217NoMinorUnit); n != len(ref.Currencies) {
		t.Errorf("table has %d codes (%d with a minor unit), data.js %d", n, len(iso4217Digits), len(ref.Currencies))
	}
}

// TestKnownCurrency: KnownCurrency accepts exactly what LookupCurrency
// accepts, with the same currency, for every 3-letter code and others.
func TestKnownCurrency(t *testing.T) {
	codes := []string{"", "usd", "Usd", "US", "USDX", "U$D", "XXX", "XTS", "DEM", "ÜSD"}
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			for c := 'A'; c <= 'Z'; c++ {
				codes = append(codes, string([]rune{a, b, c}))
			}
		}
	}
	for _, code := range codes {
		want, err := LookupCurrency(code)
		got, ok := KnownCurrency(code)
		if ok != (err == nil) || got != want {
			t.Errorf("KnownCurrency(%q) = %v, %v; LookupCurrency: %v, %v", code, got, ok, want, err)
		}
	}
}
