package directory

import (
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reportjob/reportjob/internal/item"
	"golang.org/x/text/language"
)

// maxErrors is how many errors Parse reports before "and N more".
const maxErrors = 20

// MaxTermsDays bounds payment_terms (as it bounds the issuer's,
// statements.issuer.payment_terms).
const MaxTermsDays = 365

// Error is one bad value of a directory file: the file, where in it
// (Row: "row 4" in a CSV, `agency "acme" (line 7)` in a YAML file; "" for
// the file as a whole), the field, the value and why it is refused. It
// wraps ErrInvalid.
type Error struct {
	File, Row, Field, Value, Reason string
}

// Error returns e.g. `directory agencies.csv: row 4: emails: "bob@": mail: missing '@' or angle-addr`.
func (e *Error) Error() string {
	s := "directory " + e.File + ": "
	if e.Row != "" {
		s += e.Row + ": "
	}
	if e.Field != "" {
		s += e.Field + ": " + quote(e.Value) + ": "
	}
	return s + e.Reason
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// quote quotes v for a message, cut to 80 characters.
func quote(v string) string {
	if utf8.RuneCountInString(v) > 80 {
		r := []rune(v)
		return strconv.Quote(string(r[:77])) + "..."
	}
	return strconv.Quote(v)
}

// collector gathers a file's entries and errors.
type collector struct {
	file    string
	entries map[string]Entry
	// rows is where each agency id was first given, for duplicates.
	rows map[string]string
	errs []error
	more int
}

func newCollector(file string) *collector {
	return &collector{file: file, entries: map[string]Entry{}, rows: map[string]string{}}
}

func (c *collector) fail(row, field, value, reason string) {
	if len(c.errs) >= maxErrors {
		c.more++
		return
	}
	c.errs = append(c.errs, &Error{File: c.file, Row: row, Field: field, Value: value, Reason: reason})
}

// result returns the directory, or every error joined.
func (c *collector) result() (*Directory, error) {
	if len(c.errs) == 0 {
		return newDirectory(c.file, c.entries), nil
	}
	errs := c.errs
	if c.more > 0 {
		errs = append(errs, &Error{File: c.file, Reason: fmt.Sprintf("and %d more errors", c.more)})
	}
	return nil, errors.Join(errs...)
}

// raw is one row as read, before checking: text fields trimmed, lists
// split.
type raw struct {
	id, legalName, country, taxID, locale, terms string
	address, emails                              []string
}

// add checks r, read at row (at, shorter, names it in a duplicate's
// message), and adds it to the directory.
func (c *collector) add(row, at string, r raw) {
	n := len(c.errs) + c.more
	if r.id == "" {
		c.fail(row, "agency_id", r.id, "required")
	} else if reason := item.AgencyIDProblem(r.id); reason != "" {
		c.fail(row, "agency_id", r.id, reason)
	} else if first, dup := c.rows[r.id]; dup {
		c.fail(row, "agency_id", r.id, "agency given twice (first at "+first+")")
	}
	e := Entry{AgencyID: r.id, LegalName: r.legalName, Address: r.address, Country: r.country,
		TaxID: r.taxID, Emails: r.emails}
	if r.legalName == "" {
		c.fail(row, "legal_name", r.legalName, "required")
	}
	c.text(row, "legal_name", r.legalName)
	c.text(row, "tax_id", r.taxID)
	for _, l := range r.address {
		c.text(row, "address", l)
	}
	if r.country != "" && !countryRE.MatchString(r.country) {
		reason := "must be an ISO 3166-1 alpha-2 code: two letters A-Z, such as FR"
		if countryRE.MatchString(strings.ToUpper(r.country)) {
			reason = "must be upper case: " + strings.ToUpper(r.country)
		}
		c.fail(row, "country", r.country, reason)
	}
	for _, m := range r.emails {
		if reason := emailProblem(m); reason != "" {
			c.fail(row, "emails", m, reason)
		}
	}
	if r.locale != "" {
		tag, err := language.Parse(r.locale)
		if err != nil {
			c.fail(row, "locale", r.locale, "must be a BCP 47 language tag such as fr-FR or ja: "+err.Error())
		} else {
			e.Locale = tag.String()
		}
	}
	if r.terms != "" {
		days, reason := parseTerms(r.terms)
		if reason != "" {
			c.fail(row, "payment_terms", r.terms, reason)
		}
		e.PaymentTermsDays, e.HasTerms = days, true
	}
	if _, seen := c.rows[r.id]; !seen {
		c.rows[r.id] = at
	}
	if len(c.errs)+c.more == n {
		c.entries[r.id] = e
	}
}

// text reports a control character or invalid UTF-8 in a text field.
func (c *collector) text(row, field, v string) {
	if !utf8.ValidString(v) {
		c.fail(row, field, v, "not valid UTF-8")
		return
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(v[i:])
		c.fail(row, field, v, fmt.Sprintf("contains control character %U", r))
	}
}

var (
	countryRE = regexp.MustCompile(`^[A-Z]{2}$`)
	termsRE   = regexp.MustCompile(`^([0-9]{1,6})d$`)
)

// parseTerms reads payment terms in whole days ("15d", "0d").
func parseTerms(s string) (int, string) {
	m := termsRE.FindStringSubmatch(s)
	if m == nil {
		return 0, "must be a whole number of days such as 30d or 0d"
	}
	n, _ := strconv.Atoi(m[1])
	if n > MaxTermsDays {
		return 0, fmt.Sprintf("must be at most %dd", MaxTermsDays)
	}
	return n, ""
}

// emailProblem returns why m is not a bare e-mail address, or "".
func emailProblem(m string) string {
	a, err := mail.ParseAddress(m)
	switch {
	case err != nil:
		return err.Error()
	case a.Name != "" || a.Address != m:
		return "must be a bare address such as billing@example.com, without a name or <>"
	}
	return ""
}

// splitList splits s at sep, trimming each item and dropping empty ones;
// nil when none is left.
func splitList(s, sep string) []string {
	var l []string
	for f := range strings.SplitSeq(s, sep) {
		if f = strings.TrimSpace(f); f != "" {
			l = append(l, f)
		}
	}
	return l
}
