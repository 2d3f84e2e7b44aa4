//go:build linux

package main

import (
	"context"
	"hash/fnv"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/dynamodb"
)

// TestDeliveryStaleIndexAWS: a sent delivery whose id is still in the
// DynamoDB pending index (what dynalite's one-by-one writes leave when the
// process dies between a Record's entry update and its index delete, or an
// earlier binary that knows one pending set) is not pending: the next run
// neither sends it again nor counts it, and status no longer counts it.
func TestDeliveryStaleIndexAWS(t *testing.T) {
	t.Parallel()
	bin := procBinary(t)
	d := newDlv(t, bin, "aws")
	if dl := d.r.run(dlvNow, nil)["delivery"].(map[string]any); dl["pending"] != 1.0 {
		t.Fatalf("first run's delivery %v: want gamma (no address) pending", dl)
	}
	const sent = "mail/2026-01/acme/1"
	ctx := context.Background()
	cfg := d.r.h.cli().cfg
	client, err := dynamodb.NewClient(ctx, dynamodb.ClientConfig{Region: "us-east-1", Endpoint: cfg.Store.DynamoDB.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New32a()
	h.Write([]byte(sent))
	key := cfg.JobName + "#outbox#p#" + strconv.Itoa(int(h.Sum32()%512))
	if _, err := client.UpdateItem(ctx, &awsddb.UpdateItemInput{TableName: aws.String(cfg.Store.DynamoDB.StateTable),
		Key: map[string]types.AttributeValue{"job": &types.AttributeValueMemberS{Value: key}}, UpdateExpression: aws.String("ADD pending :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberSS{Value: []string{sent}}}}); err != nil {
		t.Fatal(err)
	}
	dl := d.r.run(dlvNow, nil)["delivery"].(map[string]any)
	if dl["pending"] != 1.0 || dl["sent"] != 0.0 {
		t.Errorf("run after the stale index entry: delivery %v, want 1 pending (gamma), nothing sent", dl)
	}
	if n := len(d.mails(t)["acme"].ids); n != 1 {
		t.Errorf("acme got %d messages, want 1", n)
	}
	st, _ := d.r.cli(0, "status", "--json", "--now", dlvNow)
	if sd := st["delivery"].(map[string]any); sd["pending"] != 1.0 {
		t.Errorf("status delivery %v, want 1 pending (gamma)", sd)
	}
}
