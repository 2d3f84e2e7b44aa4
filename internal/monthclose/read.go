package monthclose

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// ErrNoStatement is wrapped by Read's error when a month has no
// statement.
var ErrNoStatement = errors.New("no statement")

// Statement is a published month read back.
type Statement struct {
	Manifest *Manifest
	// Rows are the statements dataset file's rows (agency, currency).
	Rows []encode.StatementRow
}

// Read reads month m's manifest and statements file, checked against the
// manifest's SHA-256.
func (c *Closer) Read(ctx context.Context, m string) (*Statement, error) {
	raw, _, err := c.bucket().ReadAll(ctx, report.MonthManifestKey(m), maxManifestBytes)
	if errors.Is(err, sink.ErrNotFound) {
		if err := c.checkNotLost(ctx, m); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w for %s in %s", ErrNoStatement, m, c.bucket())
	}
	if err != nil {
		return nil, fmt.Errorf("read the statements of %s: %w", m, err)
	}
	man, err := c.readManifest(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("read the statements of %s: %w", m, err)
	}
	st := &Statement{Manifest: man}
	for _, f := range man.Files {
		if !strings.HasPrefix(f.Key, report.StatementsPrefix(m)) {
			continue
		}
		file, n, err := c.Periods.Fetch(ctx, f, c.Dir)
		if err != nil {
			return nil, fmt.Errorf("read the statements of %s: %w", m, err)
		}
		st.Rows, err = encode.ReadStatementsParquet(file, n)
		file.Close()
		os.Remove(file.Name())
		if err != nil {
			return nil, err
		}
	}
	return st, nil
}

// Months returns the months the sink has a statement for, ascending.
func (c *Closer) Months(ctx context.Context) ([]string, error) {
	s, err := c.listMonths(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for m, keys := range s.listed {
		if slices.Contains(keys, report.MonthManifestKey(m)) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out, nil
}

// AgencyFiles returns the keys of agency's statement files in man.
func AgencyFiles(man *Manifest, agency string) []string {
	prefix := report.AgencyMonthPrefix(agency, man.Month)
	var out []string
	for _, f := range man.Files {
		if strings.HasPrefix(f.Key, prefix) {
			out = append(out, f.Key)
		}
	}
	return out
}

// MonthStatus is one month's statement as status shows it.
type MonthStatus struct {
	Month    string `json:"month"`
	Status   string `json:"status"`
	Revision int    `json:"statement_revision"`
	ClosesAt string `json:"closes_at,omitempty"`
	// UnlistedAgencies counts the agencies of its latest revision the
	// agency directory lacked (omitted when none).
	UnlistedAgencies int `json:"statements_unlisted_agencies,omitempty"`
}

// Overview returns the months that are not final (oldest first) and the
// last final month (nil when none): it reads month manifests from the
// newest back to the first final one.
func (c *Closer) Overview(ctx context.Context) (open []MonthStatus, lastFinal *MonthStatus, err error) {
	ms, err := c.Months(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := len(ms) - 1; i >= 0; i-- {
		raw, _, err := c.bucket().ReadAll(ctx, report.MonthManifestKey(ms[i]), maxManifestBytes)
		if err != nil {
			return nil, nil, fmt.Errorf("read the statements of %s: %w", ms[i], err)
		}
		man, err := ParseManifest(raw) // the status is in manifest.json itself
		if err != nil {
			return nil, nil, err
		}
		s := MonthStatus{Month: man.Month, Status: man.Status, Revision: man.StatementRevision}
		if man.Document != nil {
			s.UnlistedAgencies = man.Document.UnlistedAgencies
		}
		if man.Final() {
			lastFinal = &s
			break
		}
		s.ClosesAt = man.ClosesAt.UTC().Format("2006-01-02T15:04:05Z07:00")
		open = append([]MonthStatus{s}, open...)
	}
	return open, lastFinal, nil
}
