package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	fp "github.com/reportjob/reportjob/internal/faultproxy"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/s3sink"
	"github.com/reportjob/reportjob/internal/testenv"
)

// TestFaultsMultipart: a period whose agency CSV of line items is larger
// than the multipart threshold (5 MiB here, RJTEST_S3_PART_SIZE), so that
// it is uploaded in parts.
//   - Every UploadPart fails (503): the run exits 1 naming the upload, the
//     multipart upload is aborted (none left in the bucket), the checkpoint
//     has not moved, no manifest is written.
//   - The rerun meets parts failing (up to twice each), then the answer to
//     CompleteMultipartUpload lost after the server completed the object:
//     it succeeds, and the job equals a reference run without faults.
func TestFaultsMultipart(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads about 12 MB per run")
	}
	s := newFaultSuite(t, harnessOptions{period: "1h", start: "2024-03-01",
		extra: "  line_items: true\n  agency_files: [csv]\n  recheck_after: []\n  dedupe_window: 0"})
	s.ddb.SetQueryLimit(0)
	s.knob = append(s.knob, fmt.Sprintf("%s=%d", envTestPartSize, s3sink.MinPartSize))
	const now = "2024-03-01T01:05:00Z"
	start := time.Now()
	s.ingestJSONL("big.jsonl", bigItems(6500), now)
	t.Logf("ingest: %s", time.Since(start).Round(time.Millisecond))
	periods := []report.Period{{Start: faultDay, End: faultDay.Add(time.Hour)}}

	r := s.run("mp-ref", nil, nil, nil, "run", "--now", now)
	if r.code != exitOK {
		t.Fatalf("reference run: exit %d: %v", r.code, r.summary["error"])
	}
	ref, p := s.inspect("mp-ref", true, nil, periods)
	if len(p) > 0 {
		t.Fatalf("reference: %s", strings.Join(p, "\n"))
	}
	t.Logf("reference: %d objects, %d requests, %s", len(ref.objects), r.requests, r.took.Round(time.Millisecond))

	// Every part fails.
	r = s.run("mp", rule(fp.Always(fp.SlowDown, fp.Ops("UploadPart")))(), nil, nil, "run", "--now", now)
	msg, _ := r.summary["error"].(string)
	if r.code != exitFailed || !strings.Contains(msg, "UploadPart") || !strings.Contains(msg, "SlowDown") {
		t.Fatalf("every part failing: exit %d, error %q; want 1 naming UploadPart and SlowDown", r.code, msg)
	}
	t.Logf("every part failing (%s): %s", r.took.Round(time.Millisecond), msg)
	if parts, aborts := countOp(r.s3Events, "UploadPart"), countOp(r.s3Events, "AbortMultipartUpload"); parts == 0 || aborts == 0 {
		t.Errorf("%d UploadPart, %d AbortMultipartUpload requests; want both", parts, aborts)
	}
	if ids := s.multipartUploads(); len(ids) > 0 {
		t.Errorf("multipart uploads left in the bucket: %v", ids)
	}
	if cp := s.checkpointOf("mp"); !cp.IsZero() {
		t.Errorf("checkpoint %s after the failed run, want none", cp)
	}
	if _, p := s.inspect("mp", false, &ref, periods); len(p) > 0 {
		t.Errorf("after the failed run: %s", strings.Join(p, "\n"))
	}

	// Parts fail (at most twice in a row each), then the answer to
	// CompleteMultipartUpload is lost.
	rl := fp.First(fp.Once(fp.LostAnswer, fp.Ops("CompleteMultipartUpload")),
		fp.Transient(1, 0.3, 2, fp.Ops("UploadPart"), fp.S3InternalError))
	r = s.run("mp", rl, nil, nil, "run", "--now", now)
	t.Logf("rerun: %d of %d requests faulted (%v), %s", r.injected, r.requests, r.byFault, r.took.Round(time.Millisecond))
	if r.code != exitOK {
		t.Fatalf("rerun with parts failing and a lost CompleteMultipartUpload answer: exit %d: %v", r.code, r.summary["error"])
	}
	if r.byFault["S3 lost"] != 1 || countOp(r.s3Events, "CompleteMultipartUpload") < 2 {
		t.Errorf("CompleteMultipartUpload: %d requests, %d answers lost; want it retried after a lost answer",
			countOp(r.s3Events, "CompleteMultipartUpload"), r.byFault["S3 lost"])
	}
	got, p := s.inspect("mp", true, &ref, periods)
	if len(p) > 0 {
		t.Errorf("after the rerun: %s", strings.Join(p, "\n"))
	}
	if d := got.diff(ref); d != "" {
		t.Errorf("differs from the reference: %s", d)
	}
	if ids := s.multipartUploads(); len(ids) > 0 {
		t.Errorf("multipart uploads left in the bucket: %v", ids)
	}
}

// bigItems are n transactions of one agency in the first hour, each with
// 256-character random transaction, customer and product ids: about 870
// bytes per CSV line.
func bigItems(n int) []ingest.Record {
	recs := make([]ingest.Record, n)
	id := func(kind string, i int) string {
		var b strings.Builder
		for k := 0; b.Len() < 256; k++ {
			sum := sha256.Sum256([]byte(fmt.Sprintf("%s-%d-%d", kind, i, k)))
			fmt.Fprintf(&b, "%x", sum)
		}
		return b.String()[:256]
	}
	for i := range recs {
		recs[i] = ingest.Record{
			TransactionID: id("tx", i), AgencyID: "mp", Amount: fmt.Sprintf("%d.%02d", 1+i%500, i%100), Currency: "EUR",
			CustomerID: id("cust", i), ProductID: id("prod", i),
			RecordedAt: faultDay.Add(time.Duration(i) * time.Hour / time.Duration(n)),
		}
	}
	return recs
}

func countOp(events []fp.Event, op string) int {
	n := 0
	for _, e := range events {
		if e.Op == op {
			n++
		}
	}
	return n
}

// multipartUploads lists the multipart uploads in progress in the suite's
// bucket, directly.
func (s *faultSuite) multipartUploads() []string {
	s.t.Helper()
	srv := testenv.RequireS3TLS(s.t)
	ctx := context.Background()
	c, err := s3sink.NewClient(ctx, s3sink.ClientConfig{Region: "us-east-1", Endpoint: srv.Endpoint, PathStyle: true})
	if err != nil {
		s.t.Fatal(err)
	}
	out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(s.h.bucket)})
	if err != nil {
		s.t.Fatal(err)
	}
	var ids []string
	for _, u := range out.Uploads {
		ids = append(ids, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
	}
	return ids
}
