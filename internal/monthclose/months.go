package monthclose

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/statement"
)

// maxManifestBytes bounds a month manifest read back.
const maxManifestBytes = 64 << 20

// ErrZoneChanged is wrapped by the error of a close whose
// statements.timezone differs from the zone the sink's statements were
// built in.
var ErrZoneChanged = errors.New("statements.timezone changed")

// current is what the sink holds of a month.
type current struct {
	month   string
	m       *Manifest // nil when the month has no statement yet
	raw     []byte
	etag    string
	intents []string // pending publications' intents
	// named are the parts of the intent of the publication that wrote m
	// (agencyput.go): every key they name is a file m lists, so its
	// cleanup deletes them without reading them.
	named []string
}

// hasFile reports whether key is a file of cur's statement (false when
// there is none).
func (cur *current) hasFile(key string) bool { return cur != nil && cur.m != nil && cur.m.hasFile(key) }

// final reports whether cur holds a final statement.
func (cur *current) final() bool { return cur != nil && cur.m != nil && cur.m.Final() }

// monthSet is the months the sink has statements (or intents) for, read
// once per Update.
type monthSet struct {
	listed map[string][]string // month -> keys under manifests/month=M/
	cur    map[string]*current
	// light: the manifests are read for a close, which needs of their
	// agency entries only the id, revision, digest and number (lighten).
	light bool
}

// listMonths lists manifests/month=*/: one LIST, O(months).
func (c *Closer) listMonths(ctx context.Context) (*monthSet, error) {
	objs, err := c.bucket().List(ctx, report.MonthManifestsPrefix)
	if err != nil {
		return nil, fmt.Errorf("list the month manifests: %w", err)
	}
	s := &monthSet{listed: map[string][]string{}, cur: map[string]*current{}}
	for _, o := range objs {
		if m, ok := report.MonthOfKey(o.Key); ok {
			s.listed[m] = append(s.listed[m], o.Key)
		}
	}
	return s, nil
}

// names returns the months listed, ascending.
func (s *monthSet) names() []string {
	out := make([]string, 0, len(s.listed))
	for m := range s.listed {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// read returns what the sink holds of month m (nil when nothing),
// reading its manifest the first time.
func (s *monthSet) read(ctx context.Context, c *Closer, m string) (*current, error) {
	if cur, ok := s.cur[m]; ok {
		return cur, nil
	}
	cur, err := c.readMonth(ctx, m, s.listed[m])
	if err != nil {
		return nil, err
	}
	if s.light && cur != nil && cur.m != nil {
		cur.m.lighten()
	}
	s.cur[m] = cur
	return cur, nil
}

// readMonth reads month m's manifest; keys are the month's listed keys.
func (c *Closer) readMonth(ctx context.Context, m string, keys []string) (*current, error) {
	if len(keys) == 0 {
		return nil, c.checkNotLost(ctx, m)
	}
	cur := &current{month: m}
	has := false
	for _, k := range keys {
		switch {
		case k == report.MonthManifestKey(m):
			has = true
		case report.IsMonthIntentKey(m, k) && !report.IsRunMonthIntentKey(m, c.RunID, k):
			cur.intents = append(cur.intents, k)
		}
	}
	if !has && len(cur.intents) == 0 {
		if err := c.checkNotLost(ctx, m); err != nil {
			return nil, err
		}
	}
	if has {
		raw, attrs, err := c.bucket().ReadAll(ctx, report.MonthManifestKey(m), maxManifestBytes)
		switch {
		case errors.Is(err, sink.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("read the statements of %s: %w", m, err)
		default:
			man, err := c.readManifest(ctx, raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.bucket().URL(report.MonthManifestKey(m)), err)
			}
			if man.Month != m || man.Job != c.Job {
				return nil, fmt.Errorf("%s: the manifest is of job %q month %s", c.bucket().URL(report.MonthManifestKey(m)), man.Job, man.Month)
			}
			if man.Timezone != c.Loc.String() {
				return nil, fmt.Errorf("%w: %s: the statements were built in time zone %s, and statements.timezone is %s: "+
					"a month's bounds must not move under its statements; set statements.timezone back to %s",
					ErrZoneChanged, c.bucket().URL(report.MonthManifestKey(m)), man.Timezone, c.Loc, man.Timezone)
			}
			cur.m, cur.raw, cur.etag = man, raw, attrs.ETag
		}
	}
	return cur, nil
}

// ErrManifestLost is wrapped by the error of a close or verify that finds a
// month's statements in the sink without the month manifest that lists
// them.
var ErrManifestLost = errors.New("month manifest lost")

// checkNotLost returns an error wrapping ErrManifestLost when month m has
// statement objects but no manifest (and no publication in progress, whose
// intent the caller found): the manifest was deleted. Such a month is never
// built again from its periods, which may have been restated since: a final
// statement never changes, and its restatements are booked in later months
// already. One LIST of the month's statements folder.
//
// The month's other objects beside its manifest (the manifest's parts, the
// adjustments, the logo; not a publication's intent) tell the same, with a
// second LIST: so the month is not numbered anew when its statements
// dataset was deleted with its manifest. What is left unseen: a month with
// both deleted and nothing else under manifests/month=M/ (RELIABILITY.md).
func (c *Closer) checkNotLost(ctx context.Context, m string) error {
	objs, err := c.bucket().List(ctx, report.StatementsPrefix(m))
	if err != nil {
		return fmt.Errorf("list the statements of %s: %w", m, err)
	}
	if len(objs) == 0 {
		others, err := c.bucket().List(ctx, report.MonthManifestPrefix(m))
		if err != nil {
			return fmt.Errorf("list the manifests of %s: %w", m, err)
		}
		for _, o := range others {
			if o.Key != report.MonthManifestKey(m) && !strings.HasPrefix(path.Base(o.Key), "pending-") {
				objs = append(objs, o)
			}
		}
	}
	if len(objs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s is missing, though the month's statements are in the sink (%s): its statements are not built "+
		"again from the periods (a final statement never changes, and restatements of its periods are booked in later months); "+
		"restore the month manifest from a copy of the sink",
		ErrManifestLost, c.bucket().URL(report.MonthManifestKey(m)), c.bucket().URL(objs[0].Key))
}

// firstOpenAfter returns the first month after m that is not final: where
// a restatement of a period of final month m is booked.
func (s *monthSet) firstOpenAfter(ctx context.Context, c *Closer, m string) (string, error) {
	for n := statement.Next(m); ; n = statement.Next(n) {
		cur, err := s.read(ctx, c, n)
		if err != nil {
			return "", err
		}
		if !cur.final() {
			return n, nil
		}
	}
}

// booked returns the revision of period p (of month pm) that the
// statements account for: the revision pm's statement was built from, or
// the latest revision an adjustment booked in a later month (up to and
// including upTo) leads to.
func (s *monthSet) booked(ctx context.Context, c *Closer, p report.Period, pm, upTo string) (int, error) {
	r := 0
	for m := pm; m <= upTo; m = statement.Next(m) {
		cur, err := s.read(ctx, c, m)
		if err != nil {
			return 0, err
		}
		if cur != nil && cur.m != nil {
			r = max(r, cur.m.Booked(p.Start))
		}
	}
	return r, nil
}

// Booked returns the latest revision of period p that the statements in
// the sink account for (0 when none names it): the revision its month's
// statement was built from, or that an adjustment booked in a later month
// leads to.
func (c *Closer) Booked(ctx context.Context, p report.Period) (int, error) {
	set, err := c.listMonths(ctx)
	if err != nil {
		return 0, err
	}
	pm := statement.MonthOf(p.Start, c.Loc)
	return set.booked(ctx, c, p, pm, lastMonth(set, pm))
}
