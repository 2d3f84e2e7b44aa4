package dedupeindex

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
)

// Sightings (collect.SightingIndex) are one item per transaction id in the
// state table:
//
//	job = "<job>#seen#<id>"
//	    seen        SS  "<start ms>#<kind>#<expires s>" per sighting
//	    expires_at  N   the latest expiry written (Time to Live)
//
// A sighting is added with one UpdateItem (ADD to the set: idempotent);
// the item's expires_at only moves forward. Reads are one strongly
// consistent GetItem. Sightings are rare (a copy across periods, a
// conflict): they add nothing to the billing of the other transactions.

var _ collect.SightingIndex = (*Index)(nil)

const attrSeen = "seen"

func sightingKey(job, id string) string { return job + "#seen#" + id }

// RecordSightings implements collect.SightingIndex: one UpdateItem per
// sighting (two when an older expiry is written after a newer one); sweep
// is not used, expired items are left to Time to Live.
func (ix *Index) RecordSightings(ctx context.Context, job string, ss []collect.Sighting, sweep time.Time) error {
	if err := collect.CheckJob(job); err != nil {
		return fmt.Errorf("record sightings: %w", err)
	}
	for _, s := range ss {
		if err := collect.CheckID(s.ID); err != nil {
			return fmt.Errorf("record sightings of job %q: %w", job, err)
		}
		if s.Kind != collect.SightingDropped && s.Kind != collect.SightingRejected {
			return fmt.Errorf("record sightings of job %q: kind %q", job, s.Kind)
		}
	}
	for _, s := range ss {
		v := strconv.FormatInt(s.Period.UnixMilli(), 10) + "#" + s.Kind + "#" + strconv.FormatInt(s.Expires.Unix(), 10)
		exp := strconv.FormatInt(s.Expires.Unix(), 10)
		in := &dynamodb.UpdateItemInput{
			TableName:                aws.String(ix.table),
			Key:                      attr.JobKey(sightingKey(job, s.ID)),
			UpdateExpression:         aws.String("ADD #s :v SET #e = :e"),
			ConditionExpression:      aws.String("attribute_not_exists(#e) OR #e <= :e"),
			ExpressionAttributeNames: map[string]string{"#s": attrSeen, "#e": attrExpiresAt},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":v": &types.AttributeValueMemberSS{Value: []string{v}},
				":e": &types.AttributeValueMemberN{Value: exp},
			},
		}
		_, err := ix.api.UpdateItem(ctx, in)
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			// The item is kept longer already: only add the sighting.
			in.UpdateExpression, in.ConditionExpression = aws.String("ADD #s :v"), nil
			in.ExpressionAttributeNames = map[string]string{"#s": attrSeen}
			delete(in.ExpressionAttributeValues, ":e")
			_, err = ix.api.UpdateItem(ctx, in)
		}
		if err != nil {
			return fmt.Errorf("record sightings of job %q: table %q: %w", job, ix.table, err)
		}
	}
	return nil
}

// Sightings implements collect.SightingIndex with one strongly consistent
// GetItem.
func (ix *Index) Sightings(ctx context.Context, job, id string) ([]collect.Sighting, error) {
	if err := collect.CheckJob(job); err != nil {
		return nil, fmt.Errorf("read sightings: %w", err)
	}
	if err := collect.CheckID(id); err != nil {
		return nil, fmt.Errorf("read sightings of job %q: %w", job, err)
	}
	out, err := ix.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(ix.table), Key: attr.JobKey(sightingKey(job, id)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read sightings of job %q: table %q: %w", job, ix.table, err)
	}
	set, _ := out.Item[attrSeen].(*types.AttributeValueMemberSS)
	if set == nil {
		return nil, nil
	}
	// One per (period, kind): the latest expiry.
	byKey := map[string]int{}
	var ss []collect.Sighting
	for _, v := range set.Value {
		parts := strings.Split(v, "#")
		if len(parts) != 3 {
			return nil, fmt.Errorf("read sightings of job %q: sighting %q of %q: want start#kind#expires", job, v, id)
		}
		start, err1 := strconv.ParseInt(parts[0], 10, 64)
		exp, err2 := strconv.ParseInt(parts[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("read sightings of job %q: sighting %q of %q: %w", job, v, id, err)
		}
		s := collect.Sighting{ID: id, Period: attr.FromMillis(start), Kind: parts[1], Expires: time.Unix(exp, 0).UTC()}
		k := parts[0] + "#" + parts[1]
		if i, ok := byKey[k]; ok {
			if s.Expires.After(ss[i].Expires) {
				ss[i] = s
			}
			continue
		}
		byKey[k] = len(ss)
		ss = append(ss, s)
	}
	return ss, nil
}
