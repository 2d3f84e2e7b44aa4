package dedupeindex

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb/attr"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/storetest/indextest"
)

// TestIndexReadsClaimsWithoutPeriodEnd: a claim item written before claims
// recorded their period's end (no period_end) is still read, with no End,
// and still dedupes once the window is raised (its period is read as one
// of the current report.period's length).
func TestIndexReadsClaimsWithoutPeriodEnd(t *testing.T) {
	s := newIndex(t, nil)
	expires := ixP0.Add(time.Hour + 2*24*time.Hour) // written under a 1d window
	fp := indextest.FP("tx-1", 0)
	_, err := s.api.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: map[string]types.AttributeValue{
		attr.Job: attr.S(claimKey(ixJob, "tx-1")), attrPeriod: attr.Millis(ixP0), attrFP: attr.B(fp[:]),
		attrExpiresAt: attr.N(expires.Unix()),
	}})
	if err != nil {
		t.Fatal(err)
	}
	claims, err := s.Lookup(t.Context(), ixJob, []string{"tx-1"})
	if err != nil || len(claims) != 1 {
		t.Fatalf("Lookup = %v, %v; want the old claim", claims, err)
	}
	cl := claims[0]
	if !cl.Period.Equal(ixP0) || !cl.End.IsZero() || cl.FP != fp || !cl.Expires.Equal(expires) {
		t.Errorf("claim = %+v, want period %s, no end, expires %s", cl, ixP0, expires)
	}
	next := report.Period{Start: ixP0.Add(time.Hour), End: ixP0.Add(2 * time.Hour)}
	if !cl.Counts(next, 3*24*time.Hour) {
		t.Error("the old claim does not count for the next hour with a 3d window")
	}
}
