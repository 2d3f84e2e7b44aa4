package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	fp "github.com/reportjob/reportjob/internal/faultproxy"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// Requests the trials aim at.
var (
	s3Writes = fp.Ops("PutObject", "DeleteObject")
	s3Puts   = fp.Ops("PutObject")
	ddbWrite = fp.Ops("UpdateItem", "PutItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")
	ddbBatch = fp.Ops("BatchWriteItem", "BatchGetItem")
)

// isManifest: the conditional manifest write (If-None-Match or If-Match)
// of a period (not of a month's statements).
func isManifest(r *fp.Request) bool {
	return r.Op == "PutObject" && strings.HasSuffix(r.Key, "/manifest.json") && strings.Contains(r.Key, "/"+report.DirManifests+"/period=")
}

// isMonthManifest: the conditional write (If-None-Match or If-Match) of a
// month's statements manifest.
func isMonthManifest(r *fp.Request) bool {
	return r.Op == "PutObject" && strings.HasSuffix(r.Key, "/manifest.json") && strings.Contains(r.Key, "/"+report.MonthManifestsPrefix)
}

// The state writes, told apart by their update expressions
// (internal/dynamodb/jobstate/checkpoint.go, internal/dynamodb/dedupeindex).
// A commit or update that sets or drops a recheck is a TransactWriteItems
// (the job item's update and the month item's).
func isStateWrite(r *fp.Request) bool {
	return r.Op == "UpdateItem" || r.Op == "TransactWriteItems"
}
func isCommit(r *fp.Request) bool  { return isStateWrite(r) && r.Has("#cp = :to") }
func isAcquire(r *fp.Request) bool { return r.Op == "UpdateItem" && r.Has("if_not_exists(#tok") }
func isRenew(r *fp.Request) bool   { return r.Op == "UpdateItem" && r.Has("SET #exp = :newexp") }
func isRelease(r *fp.Request) bool { return r.Op == "UpdateItem" && r.Has("REMOVE #exp") }
func isRestatementUpdate(r *fp.Request) bool {
	return isStateWrite(r) && r.Has("#rs = :rs") && !r.Has("#cp = :to")
}
func isIndexHead(r *fp.Request) bool { return r.Op == "PutItem" && r.Has(`"gen"`) }

// isLaterPage: a Query for the second or a later page of a partition.
func isLaterPage(r *fp.Request) bool { return r.Op == "Query" && r.Has("ExclusiveStartKey") }

func rule(r fp.Rule) func() fp.Rule { return func() fp.Rule { return r } }

// Request deadlines of the trials that stall requests past them: the
// transient ones leave other requests a margin on a loaded machine; the
// persistent ones, whose every attempt times out, are shorter.
const (
	faultTimeout      = "700ms"
	faultStall        = 1200 * time.Millisecond
	faultShortTimeout = "400ms"
	faultShortStall   = 800 * time.Millisecond
)

var (
	timeoutEnv      = []string{envTestRequestTimeout + "=" + faultTimeout}
	shortTimeoutEnv = []string{envTestRequestTimeout + "=" + faultShortTimeout}
)

// faultTrials returns the trials. With n > 0 (the long mode) every
// randomised trial runs with seeds 1..n, and each fault also has a trial
// of its own; the short mode mixes the randomised faults of each service
// into one trial per phase.
func faultTrials(s *faultSuite, n int) []*faultTrial {
	var out []*faultTrial
	// random adds a randomised transient trial per seed: one of faults
	// injected with probability prob, at most maxInRow times in a row to
	// one request.
	random := func(name, fault string, phase int, s3 bool, prob float64, maxInRow int, match func(*fp.Request) bool, env []string, seed uint64, faults ...fp.Fault) {
		seeds := []uint64{seed}
		if n > 0 {
			seeds = nil
			for i := range n {
				seeds = append(seeds, seed*1000+uint64(i))
			}
		}
		for _, seed := range seeds {
			tr := &faultTrial{name: fmt.Sprintf("%s-p%d-s%d", name, phase, seed), fault: fault, phase: phase, env: env}
			mk := func() fp.Rule { return fp.Transient(seed, prob, maxInRow, match, faults...) }
			if s3 {
				tr.s3 = mk
			} else {
				tr.ddb = mk
			}
			out = append(out, tr)
		}
	}
	stall := fp.Fault{Kind: fp.Slow, Delay: faultStall}
	shortStall := fp.Fault{Kind: fp.Slow, Delay: faultShortStall}
	lost500 := fp.Fault{Kind: fp.LostFail, Status: http.StatusInternalServerError, Code: "InternalError"}
	ddbLost500 := fp.Fault{Kind: fp.LostFail, Status: http.StatusInternalServerError, Code: "InternalServerError"}

	// S3, transient. The SDK makes 3 attempts: at most 2 faults in a row.
	const s3Mix = "S3 503 SlowDown, 500, connection reset, lost response (mixed)"
	s3Faults := []fp.Fault{fp.SlowDown, fp.S3InternalError, fp.ConnReset, fp.LostAnswer}
	random("s3-mixed", s3Mix, 0, true, 0.2, 2, nil, nil, 1, s3Faults...)
	random("s3-mixed", s3Mix, 1, true, 0.2, 2, nil, nil, 2, s3Faults...)
	if n > 0 {
		for i, f := range []struct {
			name, fault string
			f           fp.Fault
		}{
			{"s3-503", "S3 503 SlowDown", fp.SlowDown},
			{"s3-500", "S3 500 InternalError", fp.S3InternalError},
			{"s3-reset", "S3 connection reset", fp.ConnReset},
			{"s3-lost", "S3 lost response", fp.LostAnswer},
		} {
			for phase := range 2 {
				random(f.name, f.fault, phase, true, 0.2, 2, nil, nil, uint64(10+2*i+phase), f.f)
			}
		}
	}
	random("s3-slow-put", "S3 slow PUT past the request deadline", 0, true, 0.05, 1, s3Puts, timeoutEnv, 3, stall)
	out = append(out,
		&faultTrial{name: "s3-manifest-lost-p0", fault: "S3 lost response to the If-None-Match manifest write", phase: 0,
			s3: func() fp.Rule { return fp.Nth(2, fp.LostAnswer, isManifest) }},
		&faultTrial{name: "s3-manifest-lost500-p1", fault: "S3 lost response (500) to the If-Match manifest write", phase: 1,
			s3: func() fp.Rule { return fp.Nth(2, lost500, isManifest) }}, // the 1st is period 03's
		// The close's own conditional write: March's first statement
		// (phase 0), then its next revision (phase 1).
		&faultTrial{name: "s3-month-manifest-lost-p0", fault: "S3 lost response to the If-None-Match month manifest write", phase: 0,
			s3: func() fp.Rule { return fp.Nth(1, fp.LostAnswer, isMonthManifest) }},
		&faultTrial{name: "s3-month-manifest-lost500-p1", fault: "S3 lost response (500) to the If-Match month manifest write", phase: 1,
			s3: func() fp.Rule { return fp.Nth(1, lost500, isMonthManifest) }},
	)
	// S3, persistent.
	out = append(out,
		&faultTrial{name: "s3-412-manifest-p0", fault: "S3 412 on the If-None-Match manifest write", phase: 0,
			s3:   rule(fp.Always(fp.Precondition, isManifest)),
			fail: []string{"period 20240301T0000Z", "manifest was replaced by another publisher", "PreconditionFailed"}},
		&faultTrial{name: "s3-412-other-publisher-p0", fault: "S3 412 on the manifest write: another publisher's manifest", phase: 0,
			s3:    func() fp.Rule { return s.otherPublisher("s3-412-other-publisher-p0", "ref") },
			check: saw412, fail: []string{"period 20240301T0000Z", "manifest was replaced by another publisher"}},
		&faultTrial{name: "s3-412-manifest-p1", fault: "S3 412 on the If-Match manifest write", phase: 1,
			s3:   func() fp.Rule { return fp.Nth(2, fp.Precondition, isManifest) }, // the restatement's
			fail: []string{"recheck 20240301T0200Z", "manifest was replaced by another publisher"}, moved: true},
		&faultTrial{name: "s3-503-put-always-p0", fault: "S3 503 SlowDown on every PUT", phase: 0,
			s3: rule(fp.Always(fp.SlowDown, s3Puts)), fail: []string{"period 20240301T0000Z", "PutObject", "SlowDown"}},
		&faultTrial{name: "s3-slow-put-always-p0", fault: "S3 every PUT past the request deadline", phase: 0,
			s3: rule(fp.Always(shortStall, s3Puts)), env: shortTimeoutEnv,
			fail: []string{"period 20240301T0000Z", "PutObject", "deadline exceeded|Client.Timeout"}},
		&faultTrial{name: "s3-delete-reset-always-p1", fault: "S3 connection reset on every DELETE", phase: 1,
			s3: rule(fp.Always(fp.ConnReset, fp.Ops("DeleteObject"))), fail: []string{"clean", "DeleteObject", "connection reset"}},
	)

	// DynamoDB, transient. The SDK makes 8 attempts: at most 4 in a row.
	const ddbMix = "DynamoDB ThrottlingException, ProvisionedThroughputExceeded, 500, connection reset, lost response (mixed)"
	ddbFaults := []fp.Fault{fp.Throttling, fp.ThroughputExceed, fp.DDBInternalError, fp.ConnReset, fp.LostAnswer}
	random("ddb-mixed", ddbMix, 0, false, 0.25, 4, nil, nil, 4, ddbFaults...)
	random("ddb-mixed", ddbMix, 1, false, 0.25, 4, nil, nil, 5, ddbFaults...)
	if n > 0 {
		for i, f := range []struct {
			name, fault string
			f           fp.Fault
		}{
			{"ddb-throttle", "DynamoDB 400 ThrottlingException", fp.Throttling},
			{"ddb-throughput", "DynamoDB 400 ProvisionedThroughputExceeded", fp.ThroughputExceed},
			{"ddb-500", "DynamoDB 500 InternalServerError", fp.DDBInternalError},
			{"ddb-reset", "DynamoDB connection reset", fp.ConnReset},
			{"ddb-lost", "DynamoDB lost response", fp.LostAnswer},
		} {
			for phase := range 2 {
				random(f.name, f.fault, phase, false, 0.25, 4, nil, nil, uint64(20+2*i+phase), f.f)
			}
		}
	}
	// Unprocessed items and keys: the store, not the SDK, retries them,
	// each time with what is left (a new body): at most 2 faulted calls in
	// a row per operation.
	for phase, keep := range []int{12, 5} {
		seeds := []uint64{uint64(6 + phase)}
		if n > 0 {
			seeds = nil
			for i := range n {
				seeds = append(seeds, uint64(6+phase)*1000+uint64(i))
			}
		}
		for _, seed := range seeds {
			out = append(out, &faultTrial{name: fmt.Sprintf("ddb-unprocessed-p%d-s%d", phase, seed), phase: phase,
				fault: "DynamoDB UnprocessedItems/UnprocessedKeys",
				ddb: func() fp.Rule {
					return fp.TransientBy(func(r *fp.Request) string { return r.Op }, seed, 0.5, 2, ddbBatch,
						fp.Fault{Kind: fp.Unprocessed, Keep: keep}, fp.Fault{Kind: fp.Unprocessed, Keep: 0})
				}})
		}
	}
	pages := []int{3}
	if n > 0 {
		pages = []int{1, 3, 6, 10}
	}
	for _, nth := range pages {
		out = append(out, &faultTrial{name: fmt.Sprintf("ddb-query-timeout-page-%d-p0", nth),
			fault: "DynamoDB timeout in the middle of Query pagination", phase: 0, env: timeoutEnv,
			ddb: func() fp.Rule { return fp.Nth(nth, stall, isLaterPage) }})
	}
	// Lost responses to the conditional writes: the lease (acquire, renew,
	// release), the dedupe index head, the checkpoint commit, the
	// restatement's state update. In phase 0 a 5 s lease is renewed every
	// 1.7 s, and the first Query is stalled for 2 s so that one renewal
	// happens.
	out = append(out,
		&faultTrial{name: "ddb-lost-conditional-p0", phase: 0, env: []string{"REPORTJOB_REPORT_LEASE_TTL=5s"},
			fault: "DynamoDB lost response to conditional writes (acquire, renew, index head, commit)",
			ddb: func() fp.Rule {
				return fp.First(fp.Once(fp.LostAnswer, isAcquire), fp.Once(fp.LostAnswer, isRenew), fp.Once(fp.LostAnswer, isIndexHead),
					fp.Nth(2, ddbLost500, isIndexHead), fp.Once(fp.LostAnswer, isCommit), fp.Nth(3, ddbLost500, isCommit),
					fp.Once(fp.Fault{Kind: fp.Slow, Delay: 2 * time.Second}, fp.Ops("Query")))
			}},
		&faultTrial{name: "ddb-lost-conditional-p1", phase: 1,
			fault: "DynamoDB lost response to conditional writes (commit, index head, restatement, release)",
			ddb: func() fp.Rule {
				return fp.First(fp.Once(ddbLost500, isCommit), fp.Once(fp.LostAnswer, isIndexHead),
					fp.Once(fp.LostAnswer, isRestatementUpdate), fp.Once(fp.LostAnswer, isRelease))
			}},
	)

	// DynamoDB, persistent.
	out = append(out,
		&faultTrial{name: "ddb-query-throttle-always-p0", fault: "DynamoDB ThrottlingException on every Query", phase: 0,
			ddb: rule(fp.Always(fp.Throttling, fp.Ops("Query"))), fail: []string{"period 20240301T0000Z", "query table", "ThrottlingException"}},
		&faultTrial{name: "ddb-commit-500-always-p0", fault: "DynamoDB 500 on every checkpoint commit", phase: 0,
			ddb: rule(fp.Always(fp.DDBInternalError, isCommit)), fail: []string{"commit checkpoint", "InternalServerError"}},
		&faultTrial{name: "ddb-claims-unprocessed-always-p0", fault: "DynamoDB UnprocessedItems forever (claims)", phase: 0,
			ddb:  rule(fp.Always(fp.Fault{Kind: fp.Unprocessed}, fp.Ops("BatchWriteItem"))),
			fail: []string{"dedupe index", "gave up after " + faultBatchDeadline, "items unprocessed"}},
		&faultTrial{name: "ddb-lookup-unprocessed-always-p1", fault: "DynamoDB UnprocessedKeys forever (lookup)", phase: 1,
			// The index's look-ups (claims), not the job state's read of
			// its rechecks' month items.
			ddb:  rule(fp.Always(fp.Fault{Kind: fp.Unprocessed}, func(r *fp.Request) bool { return r.Op == "BatchGetItem" && r.Has("#claim#") })),
			fail: []string{"recheck 20240301T0200Z", "gave up after " + faultBatchDeadline, "keys unprocessed"}, moved: true},
		&faultTrial{name: "ddb-query-timeout-always-p0", fault: "DynamoDB every later Query page past the request deadline", phase: 0,
			ddb: rule(fp.Always(shortStall, isLaterPage)), env: shortTimeoutEnv,
			fail: []string{"query table", "deadline exceeded|Client.Timeout"}},
	)
	return out
}

// otherPublisher returns a rule that, when job's first manifest write
// reaches the proxy, first writes the manifest of the same period as
// another publisher of the job would: the reference job's, with this job's
// name and sink and another generated_at. The server then answers the
// write 412 itself.
func (s *faultSuite) otherPublisher(job, ref string) fp.Rule {
	s.t.Helper()
	ctx := context.Background()
	p := report.Period{Start: faultDay, End: faultDay.Add(time.Hour)}
	key := report.ManifestKey(p)
	refBucket, err := openBucket(ctx, s.cliFor(ref))
	if err != nil {
		s.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(s.h.read(refBucket.Bucket, key), &m); err != nil {
		s.t.Fatal(err)
	}
	m["job"], m["sink"], m["generated_at"] = job, "s3://"+s.h.bucket+"/billing/"+job, "2024-03-01T03:04:59Z"
	body, err := json.Marshal(m)
	if err != nil {
		s.t.Fatal(err)
	}
	b, err := openBucket(ctx, s.cliFor(job))
	if err != nil {
		s.t.Fatal(err)
	}
	done := false
	return func(r *fp.Request) fp.Fault {
		if !done && isManifest(r) && strings.HasSuffix(r.Key, "/"+key) {
			done = true
			if _, err := b.PutBytes(ctx, key, body, sink.PutOptions{ContentType: "application/json"}); err != nil {
				s.t.Errorf("the other publisher's manifest: %v", err)
			}
		}
		return fp.Fault{}
	}
}

// saw412 checks that the server answered a manifest write 412.
func saw412(r faultRun) error {
	for _, e := range r.s3Events {
		if e.Op == "PutObject" && strings.HasSuffix(e.Key, "/manifest.json") && e.Status == http.StatusPreconditionFailed {
			return nil
		}
	}
	return errors.New("the server answered no manifest write 412")
}
