package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// State table attributes (see the package doc).
const (
	attrCheckpoint   = "checkpoint"
	attrLeaseOwner   = "lease_owner"
	attrLeaseToken   = "lease_token"
	attrLeaseExpires = "lease_expires"
)

// acquireTries bounds Acquire's retries when its condition fails but the
// stored lease it then reads is free (it was released in between).
const acquireTries = 3

func jobKey(job string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrJob: &types.AttributeValueMemberS{Value: job}}
}

func numAV(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func strAV(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// ms is t in Unix milliseconds; the zero time has no such value and is
// never stored.
func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(n int64) time.Time { return time.UnixMilli(n).UTC() }

func checkJob(job string) error {
	if job == "" {
		return errors.New("empty job name")
	}
	return nil
}

// Load implements checkpoint.Store with a strongly consistent GetItem.
func (s *Store) Load(ctx context.Context, job string) (checkpoint.State, error) {
	if err := checkJob(job); err != nil {
		return checkpoint.State{}, fmt.Errorf("load checkpoint: %w", err)
	}
	st, err := s.load(ctx, job)
	if err != nil {
		return checkpoint.State{}, fmt.Errorf("load checkpoint of job %q: %w", job, err)
	}
	return st, nil
}

func (s *Store) load(ctx context.Context, job string) (checkpoint.State, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.opts.StateTable),
		Key:            jobKey(job),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return checkpoint.State{}, err
	}
	return s.parseState(out.Item)
}

// parseState decodes a state item; nil is the zero State.
func (s *Store) parseState(av map[string]types.AttributeValue) (checkpoint.State, error) {
	var st checkpoint.State
	if av == nil {
		return st, nil
	}
	num := func(name string) (int64, bool, error) {
		v, ok := av[name]
		if !ok {
			return 0, false, nil
		}
		n, isN := v.(*types.AttributeValueMemberN)
		if !isN {
			return 0, false, fmt.Errorf("table %q: attribute %s has type %s, want N", s.opts.StateTable, name, avType(v))
		}
		i, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("table %q: attribute %s = %q, want an integer", s.opts.StateTable, name, n.Value)
		}
		return i, true, nil
	}
	if c, ok, err := num(attrCheckpoint); err != nil {
		return st, err
	} else if ok {
		st.Checkpoint = fromMS(c)
	}
	if v, ok := av[attrLeaseOwner]; ok {
		o, isS := v.(*types.AttributeValueMemberS)
		if !isS {
			return st, fmt.Errorf("table %q: attribute %s has type %s, want S", s.opts.StateTable, attrLeaseOwner, avType(v))
		}
		st.Lease.Owner = o.Value
	}
	tok, _, err := num(attrLeaseToken)
	if err != nil {
		return st, err
	}
	st.Lease.Token = tok
	if e, ok, err := num(attrLeaseExpires); err != nil {
		return st, err
	} else if ok {
		st.Lease.Expires = fromMS(e)
	}
	return st, nil
}

// Acquire implements checkpoint.Store with one conditional UpdateItem: the
// lease is granted when the job has no item, no holder, an expired lease
// (lease_expires <= now), or owner already holds it; lease_token grows by
// one. Otherwise it returns a *checkpoint.HeldError read from the item as
// it was (ReturnValuesOnConditionCheckFailure ALL_OLD).
func (s *Store) Acquire(ctx context.Context, job, owner string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	if err := checkJob(job); err != nil {
		return checkpoint.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	if owner == "" || ttl <= 0 {
		return checkpoint.Lease{}, fmt.Errorf("acquire lease of job %q: want an owner and a positive ttl (owner %q, ttl %s)", job, owner, ttl)
	}
	expires := now.Add(ttl)
	for try := 1; ; try++ {
		out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.opts.StateTable),
			Key:       jobKey(job),
			UpdateExpression: aws.String("SET #owner = :me, #exp = :exp, " +
				"#tok = if_not_exists(#tok, :zero) + :one"),
			ConditionExpression: aws.String("attribute_not_exists(#job) OR attribute_not_exists(#owner) " +
				"OR #exp <= :now OR #owner = :me"),
			ExpressionAttributeNames: map[string]string{
				"#job": attrJob, "#owner": attrLeaseOwner, "#exp": attrLeaseExpires, "#tok": attrLeaseToken,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":me": strAV(owner), ":exp": numAV(ms(expires)), ":now": numAV(ms(now)),
				":zero": numAV(0), ":one": numAV(1),
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
// or read again when the server did not return it). When failed is false,
// err is returned as is.
func (s *Store) conditionFailed(ctx context.Context, job string, err error) (st checkpoint.State, failed bool, _ error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return st, false, err
	}
	if ccf.Item != nil {
		st, err = s.parseState(ccf.Item)
	} else {
		st, err = s.load(ctx, job)
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
	vals := map[string]types.AttributeValue{":me": strAV(l.Owner), ":tok": numAV(l.Token)}
	if now != nil {
		cond += " AND #exp > :now"
		names["#exp"] = attrLeaseExpires
		vals[":now"] = numAV(ms(*now))
	}
	return cond, names, vals
}

// Renew implements checkpoint.Store: lease_expires = now+ttl, conditional
// on l being the current lease and unexpired at now.
func (s *Store) Renew(ctx context.Context, job string, l checkpoint.Lease, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
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
	vals[":newexp"] = numAV(ms(expires))
	names["#exp"] = attrLeaseExpires
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.opts.StateTable),
		Key:                       jobKey(job),
		UpdateExpression:          aws.String("SET #exp = :newexp"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return checkpoint.Lease{}, fmt.Errorf("renew lease of job %q: %w", job, checkpoint.ErrLeaseLost)
	case err != nil:
		return checkpoint.Lease{}, fmt.Errorf("renew lease of job %q: %w", job, err)
	}
	l.Expires = fromMS(ms(expires))
	return l, nil
}

// Release implements checkpoint.Store: it removes lease_owner and
// lease_expires (keeping lease_token, so that tokens keep growing) when l
// is the current lease. A lost lease is left alone and is not an error.
func (s *Store) Release(ctx context.Context, job string, l checkpoint.Lease) error {
	if err := checkJob(job); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	if l.Owner == "" {
		return nil
	}
	cond, names, vals := leaseCond(l, nil)
	names["#exp"] = attrLeaseExpires
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.opts.StateTable),
		Key:                       jobKey(job),
		UpdateExpression:          aws.String("REMOVE #owner, #exp"),
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
// checkpoint = to, when l is the current lease unexpired at now and the
// stored checkpoint equals from (is absent when from is zero). to must be
// after from, checked before the write. When the condition fails, the item
// as it was tells ErrLeaseLost (checked first) from ErrConflict.
// Times are stored in whole milliseconds.
func (s *Store) Commit(ctx context.Context, job string, l checkpoint.Lease, now time.Time, from, to time.Time) error {
	if err := checkJob(job); err != nil {
		return fmt.Errorf("commit checkpoint: %w", err)
	}
	if to.IsZero() || (!from.IsZero() && ms(to) <= ms(from)) {
		return fmt.Errorf("commit checkpoint of job %q from %s to %s: not forward: %w",
			job, fmtTime(from), fmtTime(to), checkpoint.ErrConflict)
	}
	if l.Owner == "" {
		return fmt.Errorf("commit checkpoint of job %q: %w", job, checkpoint.ErrLeaseLost)
	}
	cond, names, vals := leaseCond(l, &now)
	names["#cp"] = attrCheckpoint
	vals[":to"] = numAV(ms(to))
	if from.IsZero() {
		cond += " AND attribute_not_exists(#cp)"
	} else {
		cond += " AND #cp = :from"
		vals[":from"] = numAV(ms(from))
	}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.opts.StateTable),
		Key:                                 jobKey(job),
		UpdateExpression:                    aws.String("SET #cp = :to"),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil
	}
	old, failed, err := s.conditionFailed(ctx, job, err)
	if !failed {
		return fmt.Errorf("commit checkpoint of job %q: %w", job, err)
	}
	cur := old.Lease
	if cur.Owner != l.Owner || cur.Token != l.Token || !cur.Held(now) {
		return fmt.Errorf("commit checkpoint of job %q: %w", job, checkpoint.ErrLeaseLost)
	}
	return fmt.Errorf("commit checkpoint of job %q from %s to %s: stored checkpoint is %s: %w",
		job, fmtTime(from), fmtTime(to), fmtTime(old.Checkpoint), checkpoint.ErrConflict)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
