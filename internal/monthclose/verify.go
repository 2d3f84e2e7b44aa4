package monthclose

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/encode"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/statement"
)

// MonthCheck is what Verify found of one month's statements.
type MonthCheck struct {
	Month    string   `json:"month"`
	Status   string   `json:"status"` // the statement's: draft, final, or "" when there is none
	Revision int      `json:"statement_revision,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// Repaired says what --repair did.
	Repaired string `json:"repaired,omitempty"`
	// NotRepairable is set by --repair when a final month's lost or
	// corrupt objects cannot be rebuilt with the bytes its manifest lists
	// (a renderer that gives other bytes): which, and how to get them back.
	// The month still differs.
	NotRepairable string `json:"not_repairable,omitempty"`
}

// Differs reports whether mc found a problem.
func (mc MonthCheck) Differs() bool { return len(mc.Problems) > 0 }

// MonthsOf returns the months (in loc) that periods touch, ascending.
func MonthsOf(periods []report.Period, loc *time.Location) []string {
	var out []string
	for _, p := range periods {
		out = append(out, statement.MonthOf(p.Start, loc))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Verify checks the statements of months against the record: every
// object the month manifest lists (exists, size, SHA-256), no unlisted
// object under statements/month=M/ or manifests/month=M/, and that the
// statement equals its periods plus its prior-period adjustments: a
// rebuild from the periods' current revisions gives the same periods,
// totals and bytes. A period of a final month restated since the close
// must be booked as an adjustment in a later month. With repair it
// publishes a new revision of a draft that differs, books a missing
// adjustment, and restores a final month's missing objects (same bytes).
func (c *Closer) Verify(ctx context.Context, rec Record, months []string, repair bool) ([]MonthCheck, error) {
	set, err := c.listMonths(ctx)
	if err != nil {
		return nil, err
	}
	var out []MonthCheck
	for _, m := range months {
		mc, err := c.verifyMonth(ctx, set, rec, m)
		if err != nil {
			return out, fmt.Errorf("verify the statements of %s: %w", m, err)
		}
		out = append(out, mc)
	}
	if !repair {
		return out, nil
	}
	return out, c.repair(ctx, rec, out)
}

func (c *Closer) verifyMonth(ctx context.Context, set *monthSet, rec Record, m string) (MonthCheck, error) {
	mc := MonthCheck{Month: m}
	start, end, err := statement.Bounds(m, c.Loc)
	if err != nil {
		return mc, err
	}
	to := end
	if rec.Grid.Checkpoint.Before(to) {
		to = rec.Grid.Checkpoint
	}
	periods := rec.Grid.Between(start, to)
	cur, err := set.read(ctx, c, m)
	if err != nil {
		return mc, err
	}
	if cur == nil || cur.m == nil {
		if len(periods) > 0 {
			mc.Problems = append(mc.Problems, fmt.Sprintf("no statement, though %d period(s) of the month are delivered", len(periods)))
		}
		return mc, nil
	}
	man := cur.m
	mc.Status, mc.Revision = man.Status, man.StatementRevision
	// An interrupted publication: its cleanup is pending (the next run,
	// or --repair, finishes it). An intent that cannot be read stops
	// every run: verify says so too.
	for _, key := range cur.intents {
		if _, err := c.readIntent(ctx, key); err != nil {
			return mc, err
		}
		mc.Problems = append(mc.Problems, key+": an interrupted publication's intent: its cleanup is pending")
	}
	// The objects.
	adjLost := false // the adjustments file: a rebuild reads it back
	for _, f := range man.Files {
		file, _, err := c.Periods.Fetch(ctx, f, c.Dir)
		if err != nil {
			mc.Problems = append(mc.Problems, fmt.Sprintf("%s: %v", f.Key, err))
			adjLost = adjLost || strings.HasPrefix(f.Key, report.MonthManifestPrefix(m)+adjustmentsBase+"-")
			continue
		}
		file.Close()
		removeFiles([]encode.File{{Path: file.Name()}})
	}
	stray, err := c.unlisted(ctx, man)
	if err != nil {
		return mc, err
	}
	for _, k := range stray {
		mc.Problems = append(mc.Problems, k+": not listed by the month manifest")
	}
	keep := man.Keys()
	// The periods: restated since the statement was built?
	restated := false
	for _, pe := range man.Periods {
		pcur, err := c.Periods.Current(ctx, report.Period{Start: pe.Start.UTC(), End: pe.End.UTC()})
		if err != nil {
			return mc, err
		}
		switch {
		case pcur.Manifest == nil:
			mc.Problems = append(mc.Problems, fmt.Sprintf("period %s: the statement lists revision %d, and the period has no manifest", pe.Key, pe.Revision))
			restated = true
		case !pe.Is(pcur.Manifest, pcur.Raw):
			restated = true
			if !man.Final() {
				mc.Problems = append(mc.Problems, fmt.Sprintf("period %s is at revision %d; the draft statement has revision %d", pe.Key, pcur.Manifest.Revision, pe.Revision))
				continue
			}
			booked, err := set.booked(ctx, c, report.Period{Start: pe.Start.UTC(), End: pe.End.UTC()}, m, lastMonth(set, m))
			if err != nil {
				return mc, err
			}
			if booked < pcur.Manifest.Revision {
				mc.Problems = append(mc.Problems, fmt.Sprintf("period %s (final month) is at revision %d; the statements account for revision %d: the restatement is not booked as a prior-period adjustment",
					pe.Key, pcur.Manifest.Revision, booked))
			}
		}
	}
	if len(periods) != len(man.Periods) {
		mc.Problems = append(mc.Problems, fmt.Sprintf("the statement covers %d period(s); %d of the month are delivered", len(man.Periods), len(periods)))
		restated = true
	}
	if restated || adjLost {
		// Not rebuilt from its periods, which changed since: its totals
		// are checked against its own statements file.
		if !adjLost {
			if err := c.checkOwnTotals(ctx, &mc, m, man); err != nil {
				return mc, err
			}
		}
		return mc, nil
	}
	// Rebuild and compare, with the files it was published with: same
	// periods, adjustments, totals and bytes.
	c = c.as(man)
	w := &monthWork{changed: true, final: man.Final(), reason: man.Reason, legacyChain: man.LegacyChain(), record: true}
	bt, err := c.build(ctx, set, rec, m, w, man, man.StatementRevision)
	if err != nil {
		return mc, err
	}
	if !slices.Equal(bt.man.Totals, man.Totals) {
		a, _ := json.Marshal(man.Totals)
		b, _ := json.Marshal(bt.man.Totals)
		mc.Problems = append(mc.Problems, fmt.Sprintf("totals %s; its periods and adjustments add up to %s", a, b))
	}
	files, err := c.encode(m, bt, nil)
	defer removeFiles(files)
	if err != nil {
		return mc, err
	}
	for _, f := range files {
		if !keep[f.Key] {
			mc.Problems = append(mc.Problems, fmt.Sprintf("%s: a rebuild from the record gives this object, which the month manifest does not list", f.Key))
		}
	}
	return mc, nil
}

// queueUnbooked writes a due marker for each period of final month man
// whose current revision the statements do not account for yet (the close
// books it), and returns how many it wrote.
func (c *Closer) queueUnbooked(ctx context.Context, set *monthSet, man *Manifest) (int, error) {
	n := 0
	for _, pe := range man.Periods {
		p := report.Period{Start: pe.Start.UTC(), End: pe.End.UTC()}
		pcur, err := c.Periods.Current(ctx, p)
		if err != nil {
			return n, err
		}
		if pcur.Manifest == nil || pe.Is(pcur.Manifest, pcur.Raw) {
			continue
		}
		booked, err := set.booked(ctx, c, p, man.Month, lastMonth(set, man.Month))
		if err != nil {
			return n, err
		}
		if booked >= pcur.Manifest.Revision {
			continue
		}
		if err := c.fence(); err != nil {
			return n, err
		}
		if _, err := c.bucket().PutBytes(ctx, report.StatementDueKey(p), []byte("{}\n"), sink.PutOptions{ContentType: encode.TypeJSON}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// lastMonth returns the newest month listed (at least m).
func lastMonth(set *monthSet, m string) string {
	if ns := set.names(); len(ns) > 0 && ns[len(ns)-1] > m {
		return ns[len(ns)-1]
	}
	return m
}

// repair makes what Verify found right: drafts are published again from
// the record; a final month's unbooked restatements get a due marker (the
// close books them); its missing or corrupt objects are uploaded again
// from a rebuild when it gives the same bytes.
func (c *Closer) repair(ctx context.Context, rec Record, checks []MonthCheck) error {
	set, err := c.listMonths(ctx)
	if err != nil {
		return err
	}
	for i := range checks {
		mc := &checks[i]
		if !mc.Differs() {
			continue
		}
		cur, err := set.read(ctx, c, mc.Month)
		if err != nil {
			return err
		}
		if !cur.final() {
			// A draft (or a month without a statement) is rebuilt and
			// published again, all of its objects anew.
			mr, err := c.rebuild(ctx, set, rec, mc.Month, &monthWork{changed: true, force: true})
			if err != nil {
				return err
			}
			delete(set.cur, mc.Month)
			mc.Repaired = fmt.Sprintf("statement revision %d published", mr.Revision)
			continue
		}
		// A final month: finish a pending cleanup, book what is
		// unbooked, restore lost objects, delete what it does not list:
		// that is no part of the month's statements, which never change,
		// and a reader that globs the month must not see it.
		stray, err := c.unlisted(ctx, cur.m)
		if err != nil {
			return err
		}
		if err := c.finishCleanup(ctx, cur); err != nil {
			return err
		}
		queued, err := c.queueUnbooked(ctx, set, cur.m)
		if err != nil {
			return err
		}
		n, lost, err := c.restore(ctx, set, rec, cur)
		if err != nil {
			return err
		}
		if err := c.deleteAll(ctx, stray); err != nil {
			return fmt.Errorf("delete the objects the final manifest of %s does not list: %w", mc.Month, err)
		}
		mc.Repaired = fmt.Sprintf("%d object(s) restored; %d unlisted object(s) deleted", n, len(stray))
		if queued > 0 {
			mc.Repaired = fmt.Sprintf("%d restatement(s) queued for booking; %s", queued, mc.Repaired)
		}
		if len(lost) > 0 {
			advice := "restore them from a copy of the objects"
			if cur.m.ToolVersion != c.Version {
				advice += fmt.Sprintf(", or run verify --repair with the reportjob that wrote them (tool_version %q)", cur.m.ToolVersion)
			}
			mc.NotRepairable = fmt.Sprintf("%d lost or corrupt object(s) cannot be made again with the bytes the final manifest lists "+
				"from what the month still holds (an agency's PDF and Parquet are made from its statement CSV, the statements "+
				"Parquet from the agencies' CSVs or Parquet files) (%s): %s",
				len(lost), strings.Join(lost, ", "), advice)
		}
	}
	return nil
}

// as returns a copy of c that writes the agency files man records and
// builds its statements with man's close time.
func (c *Closer) as(man *Manifest) *Closer {
	d := *c
	d.Formats = ParseFormats(man.AgencyFiles)
	d.CloseAfter = man.ClosesAt.Sub(man.MonthEnd)
	return &d
}

// checkOwnTotals adds a problem to mc when the totals month manifest man
// records are not those of its own statements file (the rows it lists):
// the check of a month whose periods were restated since, which cannot be
// rebuilt from them. A statements file that cannot be read is reported
// with the objects already.
func (c *Closer) checkOwnTotals(ctx context.Context, mc *MonthCheck, m string, man *Manifest) error {
	st, err := c.Read(ctx, m)
	if err != nil {
		return nil
	}
	lines := make([]statement.Line, len(st.Rows))
	for i, r := range st.Rows {
		lines[i] = r.Line
	}
	var tt totals
	tt.add(&statement.Agency{Lines: lines})
	own, err := tt.result()
	if err != nil {
		return err
	}
	if !slices.Equal(own, man.Totals) {
		a, _ := json.Marshal(man.Totals)
		b, _ := json.Marshal(own)
		mc.Problems = append(mc.Problems, fmt.Sprintf("totals %s; its statements file adds up to %s", a, b))
	}
	return nil
}
