package collect_test

import (
	"context"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/report"
)

// expiryIndex records the expiry each claim writer is given.
type expiryIndex struct {
	collect.Index
	expires []time.Time
}

// wallIndex is an expiryIndex whose store deletes by the wall clock, as
// DynamoDB's does.
type wallIndex struct{ *expiryIndex }

func (wallIndex) ExpiresByWallClock() {}

func (x *expiryIndex) NewClaimWriter(ctx context.Context, job string, p report.Period, expires, sweep time.Time) (collect.ClaimWriter, error) {
	x.expires = append(x.expires, expires)
	return x.Index.NewClaimWriter(ctx, job, p, expires, sweep)
}

// TestClaimExpiry: claims are kept ClaimRetention after their period's
// end, or after the report clock when that is later. A backfill of a
// period older than the retention wrote claims that had already expired:
// DynamoDB's Time to Live (wall clock) could delete them before the
// backfill's next periods, within the window, looked them up, and a
// producer retry in those periods was billed twice.
func TestClaimExpiry(t *testing.T) {
	retention := collect.ClaimRetention(week)
	wall := p10.End.AddDate(0, 6, 0)
	for _, tc := range []struct {
		name      string
		now, wall time.Time
		wallIndex bool // the store deletes by the wall clock (DynamoDB)
		want      time.Time
	}{
		{"delivery", p10.End.Add(2 * time.Minute), p10.End.Add(2 * time.Minute), false, p10.End.Add(2*time.Minute + retention)},
		{"backfill a year later", p10.End.AddDate(1, 0, 0), p10.End.AddDate(1, 0, 0), false, p10.End.AddDate(1, 0, 0).Add(retention)},
		{"report clock before the period's end", p10.Start, time.Time{}, false, p10.End.Add(retention)},
		// run --now in the past: the embedded store sweeps by the report
		// clock, so the report clock decides; DynamoDB deletes by the wall
		// clock, so its claims are kept from the wall clock.
		{"report clock in the past, swept by the report clock", p10.End.Add(time.Hour), wall, false, p10.End.Add(time.Hour + retention)},
		{"report clock in the past, deleted by the wall clock", p10.End.Add(time.Hour), wall, true, wall.Add(retention)},
		{"wall clock behind the report clock", p10.End.Add(time.Hour), p10.Start, true, p10.End.Add(time.Hour + retention)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			put(t, s, tx("id-1", "a", 100, p10.Start.Add(time.Minute)))
			ctx := context.Background()
			c, err := collect.Read(ctx, collect.Config{Concurrency: 2, Dir: t.TempDir()}, s, p10)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			x := &expiryIndex{Index: s}
			var index collect.Index = x
			if tc.wallIndex {
				index = wallIndex{x}
			}
			if _, err := c.Dedupe(ctx, collect.DedupeOptions{Job: "job", Index: index, Window: week, Write: true, Now: tc.now, Wall: tc.wall},
				func(*item.Transaction) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if len(x.expires) != 1 || !x.expires[0].Equal(tc.want) {
				t.Errorf("claims expire at %v, want %v", x.expires, tc.want)
			}
			claims, err := s.Lookup(ctx, "job", []string{"id-1"})
			if err != nil {
				t.Fatal(err)
			}
			if len(claims) != 1 || !claims[0].Expires.Equal(tc.want) {
				t.Errorf("stored claim %+v, want expiry %v", claims, tc.want)
			}
		})
	}
}
