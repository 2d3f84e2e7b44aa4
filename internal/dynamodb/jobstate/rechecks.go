package jobstate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
)

// Owed rechecks live in month items of their own (see the package doc), so
// that the job item's size does not depend on how many are owed: a month
// item holds at most one entry per period of its month (2,976 15-minute
// periods, about 125 KB), and the job item lists the months that have one.
const (
	// attrRecheckMonths (SS, on the job item) names the month items.
	attrRecheckMonths = "recheck_months"
	// recheckAttrPrefix starts each entry's attribute name in a month
	// item: "p" + the period start in decimal Unix milliseconds.
	recheckAttrPrefix = "p"
	// monthKeyInfix joins the job name and the month in a month item's
	// key: "<job>#rechecks#2024-03".
	monthKeyInfix = "#rechecks#"
	// maxTransactItems is DynamoDB's limit on a TransactWriteItems.
	maxTransactItems = 100
	// migrateBytes bounds the month items one migration transaction puts
	// (DynamoDB's limit is 4 MB a transaction).
	migrateBytes = 2 << 20
	// batchGetKeys is BatchGetItem's limit.
	batchGetKeys = 100
	// batchGetTries bounds the reads of keys a BatchGetItem left
	// unprocessed.
	batchGetTries = 10
)

// recheckMonth is the month (UTC) whose item holds the recheck of the
// period starting at start.
func recheckMonth(start time.Time) string { return start.UTC().Format("2006-01") }

func monthKey(job, month string) map[string]types.AttributeValue {
	return attr.JobKey(job + monthKeyInfix + month)
}

// recheckMonths returns the months the job item lists.
func (s *State) recheckMonths(item map[string]types.AttributeValue) ([]string, error) {
	v, ok := item[attrRecheckMonths]
	if !ok {
		return nil, nil
	}
	ss, ok := v.(*types.AttributeValueMemberSS)
	if !ok {
		return nil, fmt.Errorf("table %q: attribute %s has type %s, want SS", s.table, attrRecheckMonths, attr.TypeName(v))
	}
	out := slices.Clone(ss.Value)
	slices.Sort(out)
	return out, nil
}

// readMonths returns the month items of job's months (strongly consistent
// BatchGetItem, 100 keys at a time): month -> item; a month without an
// item is absent.
func (s *State) readMonths(ctx context.Context, job string, months []string) (map[string]map[string]types.AttributeValue, error) {
	out := map[string]map[string]types.AttributeValue{}
	for chunk := range slices.Chunk(months, batchGetKeys) {
		keys := make([]map[string]types.AttributeValue, len(chunk))
		for i, m := range chunk {
			keys[i] = monthKey(job, m)
		}
		for try := 0; len(keys) > 0; try++ {
			if try == batchGetTries {
				return nil, fmt.Errorf("read the rechecks' month items: %d keys still unprocessed after %d tries", len(keys), try)
			}
			if try > 0 {
				if err := sleep(ctx, time.Duration(1<<min(try, 6))*10*time.Millisecond); err != nil {
					return nil, err
				}
			}
			res, err := s.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				s.table: {Keys: keys, ConsistentRead: aws.Bool(true)},
			}})
			if err != nil {
				return nil, fmt.Errorf("read the rechecks' month items: %w", err)
			}
			for _, it := range res.Responses[s.table] {
				k, _ := it[attr.Job].(*types.AttributeValueMemberS)
				if k == nil {
					continue
				}
				_, m, _ := strings.Cut(k.Value, monthKeyInfix)
				out[m] = it
			}
			keys = res.UnprocessedKeys[s.table].Keys
		}
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// parseMonth decodes the entries of a month item.
func (s *State) parseMonth(item map[string]types.AttributeValue) ([]checkpoint.Recheck, error) {
	m := map[string]types.AttributeValue{}
	for k, v := range item {
		if ms, ok := strings.CutPrefix(k, recheckAttrPrefix); ok && k != attr.Job {
			m[ms] = v
		}
	}
	return s.parseRechecks(&types.AttributeValueMemberM{Value: m})
}

// loadRechecks returns the rechecks of the job item (those of an item
// written before month items, not migrated yet) and of its month items,
// by start; a month item's entry wins over the job item's (it was written
// later: a migration copies, then removes).
func (s *State) loadRechecks(ctx context.Context, job string, item map[string]types.AttributeValue, legacy []checkpoint.Recheck) ([]checkpoint.Recheck, error) {
	months, err := s.recheckMonths(item)
	if err != nil || len(months) == 0 {
		return legacy, err
	}
	items, err := s.readMonths(ctx, job, months)
	if err != nil {
		return nil, err
	}
	byStart := map[int64]checkpoint.Recheck{}
	for _, r := range legacy {
		byStart[r.Start.UnixMilli()] = r
	}
	for _, m := range months {
		rs, err := s.parseMonth(items[m])
		if err != nil {
			return nil, fmt.Errorf("month item %s: %w", m, err)
		}
		for _, r := range rs {
			byStart[r.Start.UnixMilli()] = r
		}
	}
	out := slices.Collect(maps.Values(byStart))
	slices.SortFunc(out, func(a, b checkpoint.Recheck) int { return a.Start.Compare(b.Start) })
	if out == nil {
		out = []checkpoint.Recheck{}
	}
	return out, nil
}

// monthUpdates are the month item updates of u: SET and REMOVE of one
// entry each, one Update per month touched.
func monthUpdates(table, job string, u checkpoint.Update) []types.TransactWriteItem {
	type change struct {
		set, remove []string
		names       map[string]string
		vals        map[string]types.AttributeValue
	}
	byMonth := map[string]*change{}
	get := func(m string) *change {
		if byMonth[m] == nil {
			byMonth[m] = &change{names: map[string]string{}, vals: map[string]types.AttributeValue{}}
		}
		return byMonth[m]
	}
	if r := u.SetRecheck; r != nil {
		c := get(recheckMonth(r.Start))
		c.names["#pk"] = recheckAttrPrefix + msKey(r.Start)
		c.vals[":rc"] = recheckAV(*r)
		c.set = append(c.set, "#pk = :rc")
	}
	if !u.DropRecheck.IsZero() && (u.SetRecheck == nil || !sameMS(u.SetRecheck.Start, u.DropRecheck)) {
		c := get(recheckMonth(u.DropRecheck))
		c.names["#dk"] = recheckAttrPrefix + msKey(u.DropRecheck)
		c.remove = append(c.remove, "#dk")
	}
	var out []types.TransactWriteItem
	for _, m := range slices.Sorted(maps.Keys(byMonth)) {
		c := byMonth[m]
		var expr []string
		if len(c.set) > 0 {
			expr = append(expr, "SET "+strings.Join(c.set, ", "))
		}
		if len(c.remove) > 0 {
			expr = append(expr, "REMOVE "+strings.Join(c.remove, ", "))
		}
		up := &types.Update{TableName: aws.String(table), Key: monthKey(job, m), UpdateExpression: aws.String(strings.Join(expr, " ")),
			ExpressionAttributeNames: c.names}
		if len(c.vals) > 0 {
			up.ExpressionAttributeValues = c.vals
		}
		out = append(out, types.TransactWriteItem{Update: up})
	}
	return out
}

// transact runs a TransactWriteItems whose first action is on the job
// item. A cancellation because that action's condition failed is returned
// as a *types.ConditionalCheckFailedException carrying the item as it was
// (when the server returned it), as UpdateItem returns it; any other
// error as it is.
func (s *State) transact(ctx context.Context, items []types.TransactWriteItem) error {
	_, err := s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var unknown interface{ ErrorCode() string }
	if errors.As(err, &unknown) && unknown.ErrorCode() == "UnknownOperationException" {
		return s.oneByOne(ctx, items)
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && len(tce.CancellationReasons) > 0 && aws.ToString(tce.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
		return &types.ConditionalCheckFailedException{Message: tce.Message, Item: tce.CancellationReasons[0].Item}
	}
	return err
}

// oneByOne writes items one after the other, the job item's (fenced by
// the lease) first: for a server without transactions (dynalite, a test
// stand-in; DynamoDB has them). Not atomic: a process that dies between
// the writes leaves the job item written without its month item's.
func (s *State) oneByOne(ctx context.Context, items []types.TransactWriteItem) error {
	for _, it := range items {
		var err error
		switch {
		case it.ConditionCheck != nil:
			c := it.ConditionCheck
			// A write of nothing, under the same condition.
			_, err = s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: c.TableName, Key: c.Key,
				UpdateExpression: aws.String("SET #owner = #owner"), ConditionExpression: c.ConditionExpression,
				ExpressionAttributeNames: c.ExpressionAttributeNames, ExpressionAttributeValues: c.ExpressionAttributeValues,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
		case it.Update != nil:
			u := it.Update
			_, err = s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key,
				UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
				ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
		case it.Put != nil:
			_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: it.Put.TableName, Item: it.Put.Item})
		case it.Delete != nil:
			_, err = s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: it.Delete.TableName, Key: it.Delete.Key})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// migrate moves the rechecks of a job item written before month items
// (legacy, read from it) into month items, in transactions of at most 100
// actions and migrateBytes each, every one fenced by the lease (l
// unexpired at now) and setting the job item's rechecks to what is left
// (removing them with the last). A month item that exists already keeps
// its own entries over the job item's. It is idempotent: a migration cut
// short is finished by the next write.
func (s *State) migrate(ctx context.Context, job string, l checkpoint.Lease, now time.Time, legacy []checkpoint.Recheck) error {
	byMonth := map[string][]checkpoint.Recheck{}
	for _, r := range legacy {
		byMonth[recheckMonth(r.Start)] = append(byMonth[recheckMonth(r.Start)], r)
	}
	months := slices.Sorted(maps.Keys(byMonth))
	existing, err := s.readMonths(ctx, job, months)
	if err != nil {
		return err
	}
	rest := map[string]types.AttributeValue{}
	for _, r := range legacy {
		rest[msKey(r.Start)] = recheckAV(r)
	}
	for len(months) > 0 {
		var puts []types.TransactWriteItem
		var moved []string
		size := 0
		for len(months) > 0 && len(puts) < maxTransactItems-1 && (size == 0 || size+60*len(byMonth[months[0]]) <= migrateBytes) {
			m := months[0]
			months = months[1:]
			item := maps.Clone(existing[m])
			if item == nil {
				item = monthKey(job, m)
			}
			for _, r := range byMonth[m] {
				name := recheckAttrPrefix + msKey(r.Start)
				if _, ok := item[name]; !ok {
					item[name] = recheckAV(r)
				}
				delete(rest, msKey(r.Start))
			}
			size += 60 * len(item)
			puts = append(puts, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}})
			moved = append(moved, m)
		}
		cond, names, vals := leaseCond(l, &now)
		names["#rc"], names["#months"] = attrRechecks, attrRecheckMonths
		vals[":ms"] = &types.AttributeValueMemberSS{Value: moved}
		expr := "ADD #months :ms REMOVE #rc"
		if len(rest) > 0 {
			expr = "SET #rc = :rest ADD #months :ms"
			vals[":rest"] = &types.AttributeValueMemberM{Value: maps.Clone(rest)}
		}
		main := types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.table), Key: attr.JobKey(job),
			UpdateExpression: aws.String(expr), ConditionExpression: aws.String(cond), ExpressionAttributeNames: names,
			ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
		if err := s.transact(ctx, append([]types.TransactWriteItem{main}, puts...)); err != nil {
			old, failed, err := s.conditionFailed(ctx, job, err)
			if failed {
				if lost := leaseLost(old, l, now); lost != nil {
					return lost
				}
				return errors.New("move the owed rechecks into month items: the job item changed under the migration")
			}
			return fmt.Errorf("move the owed rechecks into month items: %w", err)
		}
	}
	return nil
}

// dropEmptyMonth deletes month's item and takes it off the job item's list
// when it holds no entry any more (a recheck dropped was its last), fenced
// by the lease. It is best effort: a month item left empty costs a read
// of nothing, and the next drop in that month tries again.
func (s *State) dropEmptyMonth(ctx context.Context, job string, l checkpoint.Lease, now time.Time, month string) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: monthKey(job, month), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return
	}
	for k := range out.Item {
		if k != attr.Job && strings.HasPrefix(k, recheckAttrPrefix) {
			return
		}
	}
	cond, names, vals := leaseCond(l, &now)
	names["#months"] = attrRecheckMonths
	vals[":m"] = &types.AttributeValueMemberSS{Value: []string{month}}
	_ = s.transact(ctx, []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(s.table), Key: attr.JobKey(job), UpdateExpression: aws.String("DELETE #months :m"),
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals}},
		{Delete: &types.Delete{TableName: aws.String(s.table), Key: monthKey(job, month)}},
	})
}
