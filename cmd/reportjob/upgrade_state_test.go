package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb"
)

// TestUpgradeStateRechecksAWS (issue 31): the DynamoDB job item of the
// previous release holds the owed rechecks inside it (a map that grew with
// every recheck owed, up to the 400 KB item limit). Such an item, made
// here from a run's state, is read as it is (status counts its rechecks);
// the next run's first fenced write moves them into month items, does the
// due rechecks from them and leaves none in the job item.
func TestUpgradeStateRechecksAWS(t *testing.T) {
	h := newHarness(t, harnessOptions{backend: "aws", start: "2024-03-01", extra: "  recheck_after: [2h]"})
	h.mustRun(0, "init")
	var lines []string
	for i := range 4 {
		lines = append(lines, fmt.Sprintf(`{"transaction_id":"u-%d","agency_id":"acme","amount":"10.00","currency":"USD","recorded_at":"2024-03-01T0%d:10:00Z"}`, i, i))
	}
	h.mustRun(0, "ingest", "--file", h.writeFile("tx.jsonl", strings.Join(lines, "\n")+"\n"), "--allow-late", "--now", "2024-03-01T04:05:00Z")
	h.mustRun(0, "run", "--now", "2024-03-01T04:05:00Z")
	// 00:00 and 01:00 were delivered past their recheck time: 02:00 and
	// 03:00 owe one.
	if st := h.mustRun(0, "status", "--json", "--now", "2024-03-01T04:05:00Z"); st["rechecks_owed"] != float64(2) {
		t.Fatalf("status after the first run: %v", st)
	}

	// The state as the previous release wrote it: the rechecks in the job
	// item, no month items.
	ctx := context.Background()
	cfg := h.cli().cfg
	client, err := dynamodb.NewClient(ctx, dynamodb.ClientConfig{Region: "us-east-1", Endpoint: cfg.Store.DynamoDB.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	table := aws.String(cfg.Store.DynamoDB.StateTable)
	get := func(key string) map[string]types.AttributeValue {
		out, err := client.GetItem(ctx, &awsddb.GetItemInput{TableName: table, ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"job": &types.AttributeValueMemberS{Value: key}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	job := get("e2e")
	ms, _ := job["recheck_months"].(*types.AttributeValueMemberSS)
	if ms == nil || len(ms.Value) != 1 || job["rechecks"] != nil {
		t.Fatalf("job item after the first run: %v", job)
	}
	legacy := map[string]types.AttributeValue{}
	for _, m := range ms.Value {
		for k, v := range get("e2e#rechecks#" + m) {
			if start, ok := strings.CutPrefix(k, "p"); ok {
				legacy[start] = v
			}
		}
		if _, err := client.DeleteItem(ctx, &awsddb.DeleteItemInput{TableName: table,
			Key: map[string]types.AttributeValue{"job": &types.AttributeValueMemberS{Value: "e2e#rechecks#" + m}}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(legacy) != 2 {
		t.Fatalf("month items hold %d rechecks, want 2", len(legacy))
	}
	if _, err := client.UpdateItem(ctx, &awsddb.UpdateItemInput{TableName: table,
		Key:                       map[string]types.AttributeValue{"job": &types.AttributeValueMemberS{Value: "e2e"}},
		UpdateExpression:          aws.String("SET #rc = :rc REMOVE #ms"),
		ExpressionAttributeNames:  map[string]string{"#rc": "rechecks", "#ms": "recheck_months"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":rc": &types.AttributeValueMemberM{Value: legacy}}}); err != nil {
		t.Fatal(err)
	}
	if st := h.mustRun(0, "status", "--json", "--now", "2024-03-01T04:05:00Z"); st["rechecks_owed"] != float64(2) {
		t.Fatalf("status of the old layout: %v", st)
	}

	// The next run: the two rechecks are due (2 h after their periods),
	// and the two periods it delivers owe one each.
	sum := h.mustRun(0, "run", "--now", "2024-03-01T06:05:00Z")
	if sum["rechecks"] != float64(2) || sum["periods_processed"] != float64(2) {
		t.Fatalf("run after the upgrade: %v", sum)
	}
	job = get("e2e")
	if job["rechecks"] != nil {
		t.Errorf("the job item still holds rechecks after the run: %v", job["rechecks"])
	}
	if st := h.mustRun(0, "status", "--json", "--now", "2024-03-01T06:05:00Z"); st["rechecks_owed"] != float64(2) {
		t.Fatalf("status after the run: %v", st)
	}
}
