package lookup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/report"
)

// Reject is one line of a period's rejects file (README "Rejects").
type Reject struct {
	Period   report.Period `json:"-"`
	Revision int           `json:"-"`
	Key      string        `json:"-"` // the rejects file
	// Line is the line's number in the file, from 1.
	Line         int                                   `json:"-"`
	PartitionKey string                                `json:"partition_key"`
	SortKey      string                                `json:"sort_key"`
	Field        string                                `json:"field,omitempty"`
	Value        string                                `json:"value,omitempty"`
	Reason       string                                `json:"reason"`
	Item         map[string]map[string]json.RawMessage `json:"item"`
	// tie orders rejects of the same item keys (one item rejected twice
	// cannot happen today; the order stays total whatever the file holds).
	tie int
}

// Attr returns the text of the item's attribute name ("" when absent or
// not a string or number).
func (r *Reject) Attr(name string) string {
	for _, v := range r.Item[name] {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	}
	return ""
}

func (r *Reject) pos() position {
	return position{SK: r.SortKey, ID: r.PartitionKey + "\x00" + fmt.Sprintf("%08d", r.tie)}
}

// periodRejects reads the rejects file m lists, in file order; none when
// the period has no rejects.
func (r *Reader) periodRejects(ctx context.Context, m *report.Manifest) ([]Reject, error) {
	if m.Rejects == 0 {
		return nil, nil
	}
	f, ok := datasetFile(m, report.DatasetRejects)
	if !ok {
		return nil, nil
	}
	b, err := r.readAll(ctx, f.Key)
	if err != nil {
		return nil, err
	}
	var out []Reject
	seen := map[[2]string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		rj := Reject{Period: m.Period(), Revision: m.Revision, Key: f.Key, Line: n}
		if err := json.Unmarshal(sc.Bytes(), &rj); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", f.Key, n, err)
		}
		k := [2]string{rj.PartitionKey, rj.SortKey}
		rj.tie = seen[k]
		seen[k]++
		out = append(out, rj)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Key, err)
	}
	return out, nil
}

// Rejects returns a page of the rejects of the periods in [q.From, q.To),
// newest first, only q.Agency's when it is set (the item's agency_id). It
// reads each period's manifest and the rejects file of each period that
// has rejects.
func (r *Reader) Rejects(ctx context.Context, q Query) (Page[Reject], error) {
	var pg Page[Reject]
	ps, cur, err := r.resume(q, KindRejects)
	if err != nil {
		return pg, err
	}
	limit := q.limit()
	var last *Reject
	more := false
	err = r.manifests(ctx, ps, func(i int, m *report.Manifest) (bool, error) {
		if m == nil {
			return true, nil
		}
		pg.Periods++
		all, err := r.periodRejects(ctx, m)
		if err != nil {
			return false, err
		}
		rs := all[:0:0]
		for _, rj := range all {
			if q.Agency == "" || rj.Attr("agency_id") == q.Agency {
				rs = append(rs, rj)
			}
		}
		slices.SortFunc(rs, func(a, b Reject) int { return a.pos().compareNewest(b.pos()) })
		if cur != nil && m.PeriodStart.Equal(cur.Period) {
			if m.Revision != cur.Rev {
				pg.Restated = append(pg.Restated, m.Period())
			}
			at := position{SK: cur.SK, ID: cur.ID}
			k, _ := slices.BinarySearchFunc(rs, at, func(x Reject, at position) int {
				if c := x.pos().compareNewest(at); c != 0 {
					return c
				}
				return -1
			})
			rs = rs[k:]
		}
		n := min(len(rs), limit-len(pg.Rows))
		pg.Rows = append(pg.Rows, rs[:n]...)
		if len(pg.Rows) < limit {
			return true, nil
		}
		last = &pg.Rows[len(pg.Rows)-1]
		more = n < len(rs) || i+1 < len(ps)
		return false, nil
	})
	if err != nil {
		return Page[Reject]{}, err
	}
	if more {
		p := last.pos()
		pg.Next = Cursor{Kind: KindRejects, Scope: q.Agency, Period: last.Period.Start, SK: p.SK, ID: p.ID, Rev: last.Revision}.Encode()
	}
	return pg, nil
}

// RejectCount is a period's count of rejects, from its manifest.
type RejectCount struct {
	Period   report.Period
	Revision int
	Rejects  int64
}

// CountRejects returns the periods in [from, to) that have rejects, newest
// first, from their manifests alone.
func (r *Reader) CountRejects(ctx context.Context, from, to time.Time) ([]RejectCount, error) {
	var out []RejectCount
	err := r.manifests(ctx, r.newestFirst(from, to), func(_ int, m *report.Manifest) (bool, error) {
		if m != nil && m.Rejects > 0 {
			out = append(out, RejectCount{Period: m.Period(), Revision: m.Revision, Rejects: m.Rejects})
		}
		return true, nil
	})
	return out, err
}
