package jobstate

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
)

// Attributes of a job's item (see the package doc for the layout).
const (
	attrCheckpoint   = "checkpoint"
	attrLeaseOwner   = "lease_owner"
	attrLeaseToken   = "lease_token"
	attrLeaseExpires = "lease_expires"
	attrRechecks     = "rechecks"
	attrRestated     = "restated"
	attrGrid         = "grid"
)

// Fields of a rechecks entry and of a restated element.
const (
	fieldStart       = "start"
	fieldEnd         = "end"
	fieldRead        = "read"
	fieldRevision    = "revision"
	fieldReason      = "reason"
	fieldAt          = "at"
	fieldItemsBefore = "items_before"
	fieldItemsAfter  = "items_after"
	fieldFrom        = "from"
	fieldPeriod      = "period"
)

// msKey is the rechecks key of the period starting at t.
func msKey(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func recheckAV(r checkpoint.Recheck) types.AttributeValue {
	m := map[string]types.AttributeValue{fieldEnd: attr.Millis(r.End)}
	if !r.Read.IsZero() {
		m[fieldRead] = attr.Millis(r.Read)
	}
	return &types.AttributeValueMemberM{Value: m}
}

func restatedAV(list []checkpoint.Restatement) types.AttributeValue {
	l := make([]types.AttributeValue, len(list))
	for i, r := range list {
		m := map[string]types.AttributeValue{
			fieldStart: attr.Millis(r.Start), fieldEnd: attr.Millis(r.End),
			fieldRevision: attr.N(int64(r.Revision)), fieldReason: attr.S(r.Reason),
			fieldItemsBefore: attr.N(r.ItemsBefore), fieldItemsAfter: attr.N(r.ItemsAfter),
		}
		if !r.At.IsZero() {
			m[fieldAt] = attr.Millis(r.At)
		}
		l[i] = &types.AttributeValueMemberM{Value: m}
	}
	return &types.AttributeValueMemberL{Value: l}
}

func gridAV(grid []checkpoint.Epoch) types.AttributeValue {
	l := make([]types.AttributeValue, len(grid))
	for i, e := range grid {
		l[i] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			fieldFrom: attr.Millis(e.From), fieldPeriod: attr.N(e.Period.Milliseconds()),
		}}
	}
	return &types.AttributeValueMemberL{Value: l}
}

func (s *State) parseGrid(v types.AttributeValue) ([]checkpoint.Epoch, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		return nil, fmt.Errorf("table %q: attribute %s has type %s, want L", s.table, attrGrid, attr.TypeName(v))
	}
	var out []checkpoint.Epoch
	for i, e := range l.Value {
		path := fmt.Sprintf("%s[%d]", attrGrid, i)
		em, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			return nil, fmt.Errorf("table %q: attribute %s has type %s, want M", s.table, path, attr.TypeName(e))
		}
		from, _, err := s.intField(em.Value, path, fieldFrom, true)
		if err != nil {
			return nil, err
		}
		ms, _, err := s.intField(em.Value, path, fieldPeriod, true)
		if err != nil {
			return nil, err
		}
		if ms <= 0 {
			return nil, fmt.Errorf("table %q: attribute %s.%s = %d, want a positive number of milliseconds", s.table, path, fieldPeriod, ms)
		}
		out = append(out, checkpoint.Epoch{From: attr.FromMillis(from), Period: time.Duration(ms) * time.Millisecond})
	}
	return out, nil
}

// parseState decodes a state item; nil is the zero State. Rechecks and
// Restated are never nil.
func (s *State) parseState(av map[string]types.AttributeValue) (checkpoint.State, error) {
	st := checkpoint.State{Rechecks: []checkpoint.Recheck{}, Restated: []checkpoint.Restatement{}}
	if av == nil {
		return st, nil
	}
	if c, ok, err := s.intField(av, "", attrCheckpoint, false); err != nil {
		return st, err
	} else if ok {
		st.Checkpoint = attr.FromMillis(c)
	}
	if v, ok := av[attrLeaseOwner]; ok {
		o, isS := v.(*types.AttributeValueMemberS)
		if !isS {
			return st, fmt.Errorf("table %q: attribute %s has type %s, want S", s.table, attrLeaseOwner, attr.TypeName(v))
		}
		st.Lease.Owner = o.Value
	}
	tok, _, err := s.intField(av, "", attrLeaseToken, false)
	if err != nil {
		return st, err
	}
	st.Lease.Token = tok
	if e, ok, err := s.intField(av, "", attrLeaseExpires, false); err != nil {
		return st, err
	} else if ok {
		st.Lease.Expires = attr.FromMillis(e)
	}
	if st.Rechecks, err = s.parseRechecks(av[attrRechecks]); err != nil {
		return st, err
	}
	if st.Restated, err = s.parseRestated(av[attrRestated]); err != nil {
		return st, err
	}
	if st.Grid, err = s.parseGrid(av[attrGrid]); err != nil {
		return st, err
	}
	return st, nil
}

func (s *State) parseRechecks(v types.AttributeValue) ([]checkpoint.Recheck, error) {
	out := []checkpoint.Recheck{}
	if v == nil {
		return out, nil
	}
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return nil, fmt.Errorf("table %q: attribute %s has type %s, want M", s.table, attrRechecks, attr.TypeName(v))
	}
	for k, e := range m.Value {
		path := attrRechecks + "." + k
		start, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("table %q: attribute %s: key %q is not Unix milliseconds", s.table, attrRechecks, k)
		}
		em, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			return nil, fmt.Errorf("table %q: attribute %s has type %s, want M", s.table, path, attr.TypeName(e))
		}
		end, _, err := s.intField(em.Value, path, fieldEnd, true)
		if err != nil {
			return nil, err
		}
		r := checkpoint.Recheck{Start: attr.FromMillis(start), End: attr.FromMillis(end)}
		if read, ok, err := s.intField(em.Value, path, fieldRead, false); err != nil {
			return nil, err
		} else if ok {
			r.Read = attr.FromMillis(read)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b checkpoint.Recheck) int { return a.Start.Compare(b.Start) })
	return out, nil
}

func (s *State) parseRestated(v types.AttributeValue) ([]checkpoint.Restatement, error) {
	out := []checkpoint.Restatement{}
	if v == nil {
		return out, nil
	}
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		return nil, fmt.Errorf("table %q: attribute %s has type %s, want L", s.table, attrRestated, attr.TypeName(v))
	}
	for i, e := range l.Value {
		path := fmt.Sprintf("%s[%d]", attrRestated, i)
		em, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			return nil, fmt.Errorf("table %q: attribute %s has type %s, want M", s.table, path, attr.TypeName(e))
		}
		var n [5]int64
		for j, f := range []string{fieldStart, fieldEnd, fieldRevision, fieldItemsBefore, fieldItemsAfter} {
			var err error
			if n[j], _, err = s.intField(em.Value, path, f, true); err != nil {
				return nil, err
			}
		}
		r := checkpoint.Restatement{Start: attr.FromMillis(n[0]), End: attr.FromMillis(n[1]), Revision: int(n[2]),
			ItemsBefore: n[3], ItemsAfter: n[4]}
		if at, ok, err := s.intField(em.Value, path, fieldAt, false); err != nil {
			return nil, err
		} else if ok {
			r.At = attr.FromMillis(at)
		}
		if rv, ok := em.Value[fieldReason]; ok {
			rs, isS := rv.(*types.AttributeValueMemberS)
			if !isS {
				return nil, fmt.Errorf("table %q: attribute %s.%s has type %s, want S", s.table, path, fieldReason, attr.TypeName(rv))
			}
			r.Reason = rs.Value
		}
		out = append(out, r)
	}
	return out, nil
}

// intField decodes the integer N attribute name of m, whose path (for
// errors) is path ("" at the top). ok is false when it is absent, which
// is an error when required.
func (s *State) intField(m map[string]types.AttributeValue, path, name string, required bool) (_ int64, ok bool, _ error) {
	if path != "" {
		path += "."
	}
	path += name
	v, ok := m[name]
	if !ok {
		if required {
			return 0, false, fmt.Errorf("table %q: attribute %s is missing", s.table, path)
		}
		return 0, false, nil
	}
	n, isN := v.(*types.AttributeValueMemberN)
	if !isN {
		return 0, false, fmt.Errorf("table %q: attribute %s has type %s, want N", s.table, path, attr.TypeName(v))
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("table %q: attribute %s = %q, want an integer", s.table, path, n.Value)
	}
	return i, true, nil
}
