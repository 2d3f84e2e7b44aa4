package jobstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
)

// acquireTries bounds Acquire's retries when its condition fails but the
// stored lease it then reads is free (it was released in between).
const acquireTries = 3

// stateTries bounds how often Commit and Update read the restated list
// again when another write changed it between their read and their write.
const stateTries = 8

func checkJob(job string) error {
	if job == "" {
		return errors.New("empty job name")
	}
	return nil
}

// Load implements checkpoint.Store with a strongly consistent GetItem.
func (s *State) Load(ctx context.Context, job string) (checkpoint.State, error) {
	if err := checkJob(job); err != nil {
		return checkpoint.State{}, fmt.Errorf("load checkpoint: %w", err)
	}
	st, err := s.load(ctx, job)
	if err != nil {
		return checkpoint.State{}, fmt.Errorf("load checkpoint of job %q: %w", job, err)
	}
	return st, nil
}

func (s *State) load(ctx context.Context, job string) (checkpoint.State, error) {
	item, err := s.getState(ctx, job)
	if err != nil {
		return checkpoint.State{}, err
	}
	st, err := s.parseState(item)
	if err != nil {
		return st, err
	}
	st.Rechecks, err = s.loadRechecks(ctx, job, item, st.Rechecks)
	return st, err
}

// getState returns the job's item as stored (nil when there is none).
func (s *State) getState(ctx context.Context, job string) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            attr.JobKey(job),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// Acquire implements checkpoint.Store with one conditional UpdateItem: the
// lease is granted when the job has no item, no holder, an expired lease
// (lease_expires <= now), or owner already holds it; lease_token grows by
// one.
// Otherwise it returns a *checkpoint.HeldError read from the item as it
// was (ReturnValuesOnConditionCheckFailure ALL_OLD). A retry whose first
// attempt succeeded finds owner holding the lease and takes it again: the
// lease returned is always the one stored (ReturnValues ALL_NEW).
func (s *State) Acquire(ctx context.Context, job, owner string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkJob(job); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	if owner == "" || ttl <= 0 {
		return checkpoint.Lease{}, fmt.Errorf("acquire lease of job %q: want an owner and a positive ttl (owner %q, ttl %s)", job, owner, ttl)
	}
	expires := now.Add(ttl)
	for try := 1; ; try++ {
		out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table),
			Key:       attr.JobKey(job),
			UpdateExpression: aws.String("SET #owner = :me, #exp = :exp, " +
				"#tok = if_not_exists(#tok, :zero) + :one"),
			ConditionExpression: aws.String("attribute_not_exists(#job) OR attribute_not_exists(#owner) OR attribute_not_exists(#exp) " +
				"OR #exp <= :now OR #owner = :me"),
			ExpressionAttributeNames: map[string]string{
				"#job": attr.Job, "#owner": attrLeaseOwner, "#exp": attrLeaseExpires, "#tok": attrLeaseToken,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":me": attr.S(owner), ":exp": attr.Millis(expires), ":now": attr.Millis(now),
				":zero": attr.N(0), ":one": attr.N(1),
			},
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			st, err := s.parseState(out.Attributes)
			if err != nil {
				return checkpoint.Lease{}, fmt.Errorf("acquire lease of job %q: %w", job, err)
			}
			return st.Lease, nil
		}
		old, failed, err := s.conditionFailed(ctx, job, err)
		if !failed {
			return checkpoint.Lease{}, fmt.Errorf("acquire lease of job %q: %w", job, err)
		}
		if old.Lease.Held(now) || try == acquireTries {
			return checkpoint.Lease{}, &checkpoint.HeldError{Owner: old.Lease.Owner, Expires: old.Lease.Expires}
		}
	}
}

// conditionFailed tells whether err is a failed condition and, if so,
// returns the state the condition saw (from the exception's ALL_OLD item,
// or read again when the server did not return it): the job item's, whose
// Rechecks are only those of the old layout (not migrated yet). When failed is false,
// err is returned as is.
func (s *State) conditionFailed(ctx context.Context, job string, err error) (st checkpoint.State, failed bool, _ error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return st, false, err
	}
	item, err := ccf.Item, error(nil)
	if item == nil {
		item, err = s.getState(ctx, job)
	}
	if err == nil {
		// The job item alone: its Rechecks are those of the old layout.
		st, err = s.parseState(item)
	}
	if err != nil {
		return st, false, fmt.Errorf("condition failed, then: %w", err)
	}
	return st, true, nil
}

// leaseCond is the condition that l is the current lease; with now, also
// unexpired at now.
func leaseCond(l checkpoint.Lease, now *time.Time) (string, map[string]string, map[string]types.AttributeValue) {
	cond := "#owner = :me AND #tok = :tok"
	names := map[string]string{"#owner": attrLeaseOwner, "#tok": attrLeaseToken}
	vals := map[string]types.AttributeValue{":me": attr.S(l.Owner), ":tok": attr.N(l.Token)}
	if now != nil {
		cond += " AND #exp > :now"
		names["#exp"] = attrLeaseExpires
		vals[":now"] = attr.Millis(*now)
	}
	return cond, names, vals
}

func sameLease(a, b checkpoint.Lease) bool {
	return a.Owner != "" && a.Owner == b.Owner && a.Token == b.Token
}

// leaseLost tells why st's lease is not l unexpired at now (nil when it
// is).
func leaseLost(st checkpoint.State, l checkpoint.Lease, now time.Time) error {
	cur := st.Lease
	switch {
	case !sameLease(cur, l):
		return fmt.Errorf("lease of %q (token %d) is now %q's (token %d): %w",
			l.Owner, l.Token, cur.Owner, cur.Token, checkpoint.ErrLeaseLost)
	case !cur.Held(now):
		return fmt.Errorf("lease of %q (token %d) expired at %s, now is %s: %w",
			l.Owner, l.Token, attr.FormatTime(cur.Expires), attr.FormatTime(now), checkpoint.ErrLeaseLost)
	}
	return nil
}

// Renew implements checkpoint.Store: lease_expires = now+ttl, conditional
// on l being the current lease and unexpired at now. When the condition
// fails on a retry of a renewal that succeeded (the item shows l with an
// expiry at or after now+ttl), the renewal stands.
func (s *State) Renew(ctx context.Context, job string, l checkpoint.Lease, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkJob(job); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	if l.Owner == "" {
		return checkpoint.Lease{}, fmt.Errorf("renew lease of job %q: %w", job, checkpoint.ErrLeaseLost)
	}
	cond, names, vals := leaseCond(l, &now)
	expires := now.Add(ttl)
	if !expires.After(now) {
		return checkpoint.Lease{}, fmt.Errorf("renew lease of job %q: ttl %s is not positive", job, ttl)
	}
	vals[":newexp"] = attr.Millis(expires)
	names["#exp"] = attrLeaseExpires
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 attr.JobKey(job),
		UpdateExpression:                    aws.String("SET #exp = :newexp"),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		l.Expires = attr.FromMillis(expires.UnixMilli())
		return l, nil
	}
	old, failed, err := s.conditionFailed(ctx, job, err)
	if !failed {
		return checkpoint.Lease{}, fmt.Errorf("renew lease of job %q: %w", job, err)
	}
	if cur := old.Lease; sameLease(cur, l) && !cur.Expires.IsZero() && cur.Expires.UnixMilli() >= expires.UnixMilli() {
		return cur, nil
	}
	return checkpoint.Lease{}, fmt.Errorf("renew lease of job %q: %w", job, leaseLost(old, l, now))
}

// Release implements checkpoint.Store: it removes lease_expires (keeping
// lease_owner, so that status can say who released it, and lease_token,
// so that tokens keep growing) when l is the current lease. A lost lease
// is left alone and is not an error; nor is a retry of a release that
// succeeded.
func (s *State) Release(ctx context.Context, job string, l checkpoint.Lease) error {
	if err := checkJob(job); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	if l.Owner == "" {
		return nil
	}
	cond, names, vals := leaseCond(l, nil)
	names["#exp"] = attrLeaseExpires
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       attr.JobKey(job),
		UpdateExpression:          aws.String("REMOVE #exp"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("release lease of job %q: %w", job, err)
	}
	return nil
}

// Commit implements checkpoint.Store with one conditional UpdateItem:
// checkpoint = to and u's changes, when l is the current lease unexpired at
// now and the stored checkpoint equals from (is absent when from is zero).
// to must be after from, checked before the write. When the condition
// fails, the item as it was (ALL_OLD) tells a retry of this very Commit
// that succeeded (checkpoint already at to under l: nil) from ErrLeaseLost
// and ErrConflict. Times are stored in whole milliseconds.
func (s *State) Commit(ctx context.Context, job string, l checkpoint.Lease, now time.Time, from, to time.Time, u checkpoint.Update) error {
	if err := checkJob(job); err != nil {
		return fmt.Errorf("commit checkpoint: %w", err)
	}
	if to.IsZero() || (!from.IsZero() && to.UnixMilli() <= from.UnixMilli()) {
		return fmt.Errorf("commit checkpoint of job %q from %s to %s: not forward: %w",
			job, attr.FormatTime(from), attr.FormatTime(to), checkpoint.ErrConflict)
	}
	if err := u.Validate(); err != nil {
		return fmt.Errorf("commit checkpoint of job %q: %w", job, err)
	}
	if l.Owner == "" {
		return fmt.Errorf("commit checkpoint of job %q: %w", job, checkpoint.ErrLeaseLost)
	}
	if err := s.writeState(ctx, job, l, now, &move{from: from, to: to}, u); err != nil {
		return fmt.Errorf("commit checkpoint of job %q: %w", job, err)
	}
	return nil
}

// Update implements checkpoint.Store with one conditional UpdateItem of
// u's changes, when l is the current lease unexpired at now. It is
// idempotent: a recheck entry is set or removed whole, and a restatement
// already recorded (same period start and revision) is not recorded again.
func (s *State) Update(ctx context.Context, job string, l checkpoint.Lease, now time.Time, u checkpoint.Update) error {
	if err := checkJob(job); err != nil {
		return fmt.Errorf("update state: %w", err)
	}
	if err := u.Validate(); err != nil {
		return fmt.Errorf("update state of job %q: %w", job, err)
	}
	if l.Owner == "" {
		return fmt.Errorf("update state of job %q: %w", job, checkpoint.ErrLeaseLost)
	}
	if err := s.writeState(ctx, job, l, now, nil, u); err != nil {
		return fmt.Errorf("update state of job %q: %w", job, err)
	}
	return nil
}

// move is a checkpoint move from `from` to `to`.
type move struct{ from, to time.Time }

// writeState writes mv (when not nil) and u, conditional on l being the
// current lease unexpired at now, with mv on the checkpoint being
// mv.from, and on the job item holding no rechecks of the old layout
// (migrated first, then written: see the package doc). The job item's
// part is
//
//	SET #cp = :to, #rs = :rs, #grid = :grid ADD #months :m
//
// one UpdateItem when u sets or drops no recheck, else the first action of
// a TransactWriteItems whose others set or remove the entry in its month
// item.
//
// The restated list is computed from the item as read just before (read,
// prepend, trim), set whole, and conditional on the stored list being the
// one read: when another write changed it in between, writeState reads it
// again (at most stateTries times).
func (s *State) writeState(ctx context.Context, job string, l checkpoint.Lease, now time.Time, mv *move, u checkpoint.Update) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for try := 1; ; try++ {
		cond, names, vals := leaseCond(l, &now)
		cond += " AND (attribute_not_exists(#rc) OR size(#rc) = :zero)"
		names["#rc"], vals[":zero"] = attrRechecks, attr.N(0)
		var set, add []string
		if mv != nil {
			names["#cp"] = attrCheckpoint
			vals[":to"] = attr.Millis(mv.to)
			set = append(set, "#cp = :to")
			if mv.from.IsZero() {
				cond += " AND attribute_not_exists(#cp)"
			} else {
				cond += " AND #cp = :from"
				vals[":from"] = attr.Millis(mv.from)
			}
		}
		if r := u.SetRecheck; r != nil {
			names["#months"] = attrRecheckMonths
			vals[":m"] = &types.AttributeValueMemberSS{Value: []string{recheckMonth(r.Start)}}
			add = append(add, "#months :m")
		}
		if u.Grid != nil {
			names["#grid"] = attrGrid
			vals[":grid"] = gridAV(u.Grid)
			set = append(set, "#grid = :grid")
		}
		months := monthUpdates(s.table, job, u)
		var read *checkpoint.State
		if u.Restated != nil {
			item, err := s.getState(ctx, job)
			if err != nil {
				return err
			}
			st, err := s.parseState(item)
			if err != nil {
				return err
			}
			read = &st
			if list, changed := prependRestated(st.Restated, *u.Restated); changed {
				names["#rs"] = attrRestated
				vals[":rs"] = restatedAV(list)
				set = append(set, "#rs = :rs")
				if old, ok := item[attrRestated]; ok {
					cond += " AND #rs = :oldrs"
					vals[":oldrs"] = old
				} else {
					cond += " AND attribute_not_exists(#rs)"
				}
			}
		}
		if len(set) == 0 && len(add) == 0 && len(months) == 0 {
			// Nothing to write (a zero Update, or a restatement already
			// recorded): only the lease is checked.
			if read == nil {
				st, err := s.load(ctx, job)
				if err != nil {
					return err
				}
				read = &st
			}
			return leaseLost(*read, l, now)
		}
		var expr []string
		if len(set) > 0 {
			expr = append(expr, "SET "+strings.Join(set, ", "))
		}
		if len(add) > 0 {
			expr = append(expr, "ADD "+strings.Join(add, ", "))
		}
		var err error
		switch {
		case len(months) == 0:
			_, err = s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                           aws.String(s.table),
				Key:                                 attr.JobKey(job),
				UpdateExpression:                    aws.String(strings.Join(expr, " ")),
				ConditionExpression:                 aws.String(cond),
				ExpressionAttributeNames:            names,
				ExpressionAttributeValues:           vals,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
		case len(expr) == 0:
			err = s.transact(ctx, append([]types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{
				TableName: aws.String(s.table), Key: attr.JobKey(job), ConditionExpression: aws.String(cond),
				ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}}}, months...))
		default:
			err = s.transact(ctx, append([]types.TransactWriteItem{{Update: &types.Update{
				TableName: aws.String(s.table), Key: attr.JobKey(job), UpdateExpression: aws.String(strings.Join(expr, " ")),
				ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}}}, months...))
		}
		if err == nil {
			if d := u.DropRecheck; !d.IsZero() && (u.SetRecheck == nil || recheckMonth(u.SetRecheck.Start) != recheckMonth(d)) {
				s.dropEmptyMonth(ctx, job, l, now, recheckMonth(d))
			}
			return nil
		}
		old, failed, err := s.conditionFailed(ctx, job, err)
		if !failed {
			if isConflict(err) && try < stateTries {
				continue
			}
			return err
		}
		switch {
		case mv != nil && sameLease(old.Lease, l) && sameMS(old.Checkpoint, mv.to):
			// This Commit's own earlier attempt moved the checkpoint (with
			// u, atomically); its response was lost and this is a retry.
			return nil
		case leaseLost(old, l, now) != nil:
			return leaseLost(old, l, now)
		case mv != nil && !sameMS(old.Checkpoint, mv.from):
			return fmt.Errorf("from %s to %s: stored checkpoint is %s: %w",
				attr.FormatTime(mv.from), attr.FormatTime(mv.to), attr.FormatTime(old.Checkpoint), checkpoint.ErrConflict)
		case len(old.Rechecks) > 0 && try < stateTries:
			// An item of the old layout: move its rechecks out, then write.
			if err := s.migrate(ctx, job, l, now, old.Rechecks); err != nil {
				return err
			}
			continue
		case try == stateTries:
			return fmt.Errorf("the restated list changed under each of %d tries", stateTries)
		}
		// Only the restated list can have failed the condition: it changed
		// since it was read. Read it again.
	}
}

// isConflict reports whether err is a transaction cancelled by another
// one in flight on the same items (retried).
func isConflict(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			return true
		}
	}
	return false
}

// prependRestated returns list with r in front, keeping MaxRestated, and
// true; or list and false when it already holds r's revision of r's
// period (an Update retried after it was applied).
func prependRestated(list []checkpoint.Restatement, r checkpoint.Restatement) ([]checkpoint.Restatement, bool) {
	for _, e := range list {
		if sameMS(e.Start, r.Start) && e.Revision == r.Revision {
			return list, false
		}
	}
	out := make([]checkpoint.Restatement, 0, min(len(list)+1, checkpoint.MaxRestated))
	out = append(out, r)
	return append(out, list[:min(len(list), checkpoint.MaxRestated-1)]...), true
}

// sameMS reports whether a and b are the same millisecond (or both zero).
func sameMS(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() && b.IsZero()
	}
	return a.UnixMilli() == b.UnixMilli()
}
