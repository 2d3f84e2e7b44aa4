package jobstate

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/dynamodb/ddbtest"
)

// maxRecheckEntries is config's maxRecheckSpan (report.recheck_after's
// longest delay over report.period, at most 10,000 periods): the steady
// state's number of rechecks entries.
const maxRecheckEntries = 10000

// worstState is a job item at the bound: maxRecheckEntries 15-minute
// periods owed a recheck, read at an instant with every millisecond digit
// significant, and checkpoint.MaxRestated restatements with the longest
// reason and item counts.
func worstState(entries int) map[string]types.AttributeValue {
	base := time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)
	m := map[string]types.AttributeValue{}
	for i := range entries {
		s := base.Add(-time.Duration(i) * 15 * time.Minute)
		m[msKey(s)] = recheckAV(checkpoint.Recheck{Start: s, End: s.Add(15 * time.Minute), Read: s.Add(16*time.Minute + 123457*time.Millisecond)})
	}
	rs := make([]checkpoint.Restatement, checkpoint.MaxRestated)
	for i := range rs {
		rs[i] = checkpoint.Restatement{Start: base, End: base.Add(24 * time.Hour), Revision: 1 << 30, Reason: "verify --repair",
			At: base.Add(123457 * time.Millisecond), ItemsBefore: 1 << 50, ItemsAfter: 1 << 50}
	}
	return map[string]types.AttributeValue{
		"job": attr.S("billing-report-with-a-long-job-name"), attrCheckpoint: attr.Millis(base),
		attrLeaseOwner: attr.S("a-long-host-name.example.internal/4194304/0123456789ab"), attrLeaseToken: attr.N(1 << 50),
		attrLeaseExpires: attr.Millis(base.Add(123457 * time.Millisecond)),
		attrRechecks:     &types.AttributeValueMemberM{Value: m}, attrRestated: restatedAV(rs),
	}
}

// TestStateItemWorstCase: the job item at the configuration's bound fits
// DynamoDB's 400 KB item limit (as DynamoDB Local computes it); 10% more
// rechecks entries do not, which is how little room a backlog of overdue
// rechecks has at that bound (see the report of issue 15).
func TestStateItemWorstCase(t *testing.T) {
	c := testClient(t)
	table := ddbtest.StateTable(t)
	put := func(entries int) error {
		_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: worstState(entries)})
		return err
	}
	if err := put(maxRecheckEntries); err != nil {
		t.Fatalf("%d rechecks entries: %v", maxRecheckEntries, err)
	}
	if err := put(maxRecheckEntries * 11 / 10); err == nil {
		t.Logf("%d rechecks entries fit too", maxRecheckEntries*11/10)
	}
}
