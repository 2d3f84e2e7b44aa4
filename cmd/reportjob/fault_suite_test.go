package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/faultproxy"
	"github.com/reportjob/reportjob/internal/ingest"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/testenv"
)

// The fault suite runs the real CLI (run(), in process) on DynamoDB Local
// and versitygw over HTTPS, each behind a fault proxy on loopback
// (internal/faultproxy). Every trial is a job of its own (job name and sink
// prefix) over one shared data table, so that a faulted job's outputs,
// state and dedupe index can be compared with those of a reference job run
// without faults over the same items.

// faultSuite is the shared setup of the fault tests.
type faultSuite struct {
	t    *testing.T
	h    *harness
	s3   *faultproxy.Proxy
	ddb  *faultproxy.Proxy
	knob []string // RJTEST_ tuning of every faulted run
}

// Tuning of the faulted runs (cmd/reportjob/testknobs.go): retries wait
// at most faultBackoff, a DynamoDB batch is retried for faultBatchDeadline.
const (
	faultBackoff       = "20ms"
	faultBatchDeadline = "2s"
	faultQueryLimit    = 7 // items per Query page: every partition is read in several pages
)

func newFaultSuite(t *testing.T, o harnessOptions) *faultSuite {
	t.Helper()
	o.backend = "aws"
	h := newHarness(t, o)
	ddbURL := testenv.Require(t, testenv.EnvDynamoDB, "DynamoDB Local")
	s3srv := testenv.RequireS3TLS(t)
	s3p, err := faultproxy.Start(faultproxy.Options{Service: faultproxy.S3, Target: s3srv.Endpoint, TargetCA: s3srv.CAFile, TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s3p.Close() })
	ddbp, err := faultproxy.Start(faultproxy.Options{Service: faultproxy.DynamoDB, Target: ddbURL, QueryLimit: faultQueryLimit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ddbp.Close() })
	// The SDK trusts versitygw's certificate and the S3 proxy's.
	ca, err := os.ReadFile(s3srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(h.dir, "ca-bundle.pem")
	if err := os.WriteFile(bundle, append(append(ca, '\n'), s3p.CertPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	h.mustRun(exitOK, "init")
	return &faultSuite{t: t, h: h, s3: s3p, ddb: ddbp, knob: []string{
		envTestMaxBackoff + "=" + faultBackoff,
		envTestBatchDeadline + "=" + faultBatchDeadline,
	}}
}

// directEnv is the environment of job: its name and sink prefix, servers
// reached directly.
func (s *faultSuite) directEnv(job string) []string {
	return []string{
		"REPORTJOB_JOB_NAME=" + job,
		"REPORTJOB_SINK_URL=s3://" + s.h.bucket + "/billing/" + job,
	}
}

// proxiedEnv is job's environment with both servers behind the proxies
// and the suite's tuning.
func (s *faultSuite) proxiedEnv(job string, extra ...string) []string {
	env := append(s.directEnv(job),
		"REPORTJOB_STORE_DYNAMODB_ENDPOINT="+s.ddb.URL,
		"REPORTJOB_SINK_S3_ENDPOINT="+s.s3.URL)
	env = append(env, s.knob...)
	return append(env, extra...)
}

// faultRun is what one CLI run did.
type faultRun struct {
	stdout, stderr string
	code           int
	summary        map[string]any
	injected       int // requests the proxies faulted
	requests       int
	byFault        map[string]int // injected, by service and fault
	s3Events       []faultproxy.Event
	took           time.Duration
}

// run runs the CLI for job through the proxies with the rules given (nil
// passes everything).
func (s *faultSuite) run(job string, s3Rule, ddbRule faultproxy.Rule, extraEnv []string, args ...string) faultRun {
	s.t.Helper()
	s.s3.SetRule(s3Rule)
	s.ddb.SetRule(ddbRule)
	defer func() {
		s.s3.SetRule(nil)
		s.ddb.SetRule(nil)
	}()
	var out, errb bytes.Buffer
	start := time.Now()
	code := run(context.Background(), append([]string{"--config", s.h.config}, args...), s.proxiedEnv(job, extraEnv...), &out, &errb)
	r := faultRun{stdout: out.String(), stderr: errb.String(), code: code, took: time.Since(start)}
	r.byFault = map[string]int{}
	r.s3Events = s.s3.Events()
	for svc, p := range map[string]*faultproxy.Proxy{"S3": s.s3, "DynamoDB": s.ddb} {
		for _, e := range p.Events() {
			r.requests++
			if e.Fault == faultproxy.Pass {
				continue
			}
			r.injected++
			label := svc + " " + e.Fault.String()
			if e.Code != "" {
				label += " " + e.Code
			}
			r.byFault[label]++
		}
	}
	r.summary = lastJSON(s.t, r.stdout)
	return r
}

// cliFor returns a cli for job with direct access to the servers.
func (s *faultSuite) cliFor(job string) *cli {
	s.t.Helper()
	env := s.directEnv(job)
	cfg, err := config.Load(s.h.config, true, env)
	if err != nil {
		s.t.Fatal(err)
	}
	c := &cli{cfg: cfg, env: env, runID: "check"}
	c.base = newLogger(cfg, &bytes.Buffer{}, false)
	c.log = c.base
	return c
}

// ingestJSONL writes records through `reportjob ingest` (directly).
func (s *faultSuite) ingestJSONL(name string, recs []ingest.Record, now string) {
	s.t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			s.t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	file := s.h.writeFile(name, b.String())
	sum := s.h.mustRun(exitOK, "ingest", "--file", file, "--now", now, "--allow-late")
	if sum["written"] != float64(len(recs)) {
		s.t.Fatalf("ingest %s: %v, want %d written", name, sum, len(recs))
	}
}

// jobState is what a job left: its objects, state and dedupe index, for
// comparison with the reference job.
type jobState struct {
	// objects: key -> identity: "size etag" (versitygw's ETag of a
	// single-part object is the MD5 of its content, which inspect checks
	// on the reference), "size sha256:..." for a multipart object, or for
	// a manifest the SHA-256 of its normalised JSON.
	objects map[string]string
	// statements: month manifest key -> the month's statement by content
	// (statementContent): a fault can change how many statement revisions
	// were published, and with them the statement objects' names.
	statements map[string]string
	state      checkpoint.State
	index      map[string][]string // period -> ids billed
}

// periodRE finds the period of an object key.
var periodRE = regexp.MustCompile(`(?:^|/)period=([0-9]{8}T[0-9]{4}Z)/`)

// inspect reads what job left and checks its sink:
//   - every manifest's objects exist with their size and SHA-256 (no
//     manifest of an incomplete period);
//   - every other object is listed by its period's manifest or, unless
//     strict, lies in a period an intent covers (an interrupted
//     publication, which the next run of the period cleans up);
//   - strict: no intent is left;
//   - the statements' objects (kept apart from objects): each month
//     manifest lists its objects with their SHA-256; every other statement
//     object is listed by its month's manifest or, unless strict, lies in
//     a month an intent covers; strict: no month intent, no due marker
//     (statementProblems).
//
// With ref nil (the reference job) it reads every object and checks that
// its ETag is its MD5; else it reads only manifests and intents, and the
// objects whose size and ETag the reference does not vouch for.
func (s *faultSuite) inspect(job string, strict bool, ref *jobState, periods []report.Period) (jobState, []string) {
	s.t.Helper()
	ctx := context.Background()
	c := s.cliFor(job)
	b, err := openBucket(ctx, c)
	if err != nil {
		s.t.Fatal(err)
	}
	infos, err := b.List(ctx, "")
	if err != nil {
		s.t.Fatal(err)
	}
	js := jobState{objects: map[string]string{}, statements: map[string]string{}, index: map[string][]string{}}
	var problems []string
	stmtObjs := map[string]string{} // key -> sha256: the statements' objects and the period manifests
	intents := map[string]bool{}    // period names
	var manifests []string
	for _, o := range infos {
		switch {
		case report.IsStatementKey(o.Key):
			sum := sha256.Sum256(s.h.read(b.Bucket, o.Key))
			stmtObjs[o.Key] = hex.EncodeToString(sum[:])
		case strings.HasSuffix(o.Key, "/manifest.json"):
			manifests = append(manifests, o.Key)
		case report.IsIntentKey(o.Key):
			intents[periodOf(o.Key)] = true
			if strict {
				problems = append(problems, "intent left: "+o.Key)
			}
		case strings.Contains(o.ETag, "-"):
			// A multipart upload's ETag is not the content's MD5.
			sum := sha256.Sum256(s.h.read(b.Bucket, o.Key))
			js.objects[o.Key] = fmt.Sprintf("%d sha256:%x", o.Size, sum)
		default:
			js.objects[o.Key] = fmt.Sprintf("%d %s", o.Size, strings.Trim(o.ETag, `"`))
			if ref == nil {
				data := s.h.read(b.Bucket, o.Key)
				if sum := md5.Sum(data); hex.EncodeToString(sum[:]) != strings.Trim(o.ETag, `"`) {
					s.t.Fatalf("%s: ETag %s is not the MD5 of the content: objects cannot be compared by ETag", o.Key, o.ETag)
				}
			}
		}
	}
	listed := map[string]bool{}
	for _, key := range manifests {
		raw := s.h.read(b.Bucket, key)
		sum := sha256.Sum256(normaliseManifest(s.t, raw))
		js.objects[key] = hex.EncodeToString(sum[:])
		rawSum := sha256.Sum256(raw)
		stmtObjs[key] = hex.EncodeToString(rawSum[:]) // what a draft's periods name
		m, err := report.ParseManifest(raw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		for _, f := range m.Files {
			listed[f.Key] = true
			id, ok := js.objects[f.Key]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s lists %s, which is missing", key, f.Key))
				continue
			case id != fmt.Sprintf("%d %s", f.Bytes, strings.Fields(id)[1]):
				problems = append(problems, fmt.Sprintf("%s lists %s with %d bytes: %s", key, f.Key, f.Bytes, id))
				continue
			case ref != nil && ref.objects[f.Key] == id:
				continue // the reference's object, whose SHA-256 was checked
			}
			data := s.h.read(b.Bucket, f.Key)
			if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != f.SHA256 {
				problems = append(problems, fmt.Sprintf("%s lists %s with another sha256", key, f.Key))
			}
		}
	}
	for key := range js.objects {
		if !listed[key] && !strings.HasSuffix(key, "/manifest.json") && (strict || !intents[periodOf(key)]) {
			problems = append(problems, "object listed by no manifest: "+key)
		}
	}
	months := readStatements(s.t, stmtObjs, func(key string) []byte { return s.h.read(b.Bucket, key) })
	problems = append(problems, statementProblems(stmtObjs, months, strict)...)
	for key, ms := range months {
		js.statements[key] = statementContent(ms)
	}
	slices.Sort(problems)

	st, err := openStore(ctx, c)
	if err != nil {
		s.t.Fatal(err)
	}
	defer st.close()
	if js.state, err = st.Load(ctx, c.cfg.JobName); err != nil {
		s.t.Fatal(err)
	}
	for _, p := range periods {
		var ids []string
		for id, err := range st.PeriodIDs(ctx, c.cfg.JobName, p.Start) {
			if err != nil {
				s.t.Fatal(err)
			}
			ids = append(ids, id)
		}
		js.index[p.Name()] = ids
	}
	return js, problems
}

// normaliseManifest drops what differs between two jobs publishing the
// same items: the job, the sink, when it was generated, and the hash of
// the manifest replaced (which holds those).
func normaliseManifest(t *testing.T, data []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	for _, k := range []string{"job", "sink", "generated_at", "previous_sha256"} {
		delete(m, k)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diff describes how got differs from the reference want ("" when equal).
// Lease fields are not compared: each run holds its own.
func (got jobState) diff(want jobState) string {
	var d []string
	for k, v := range want.objects {
		switch g, ok := got.objects[k]; {
		case !ok:
			d = append(d, "missing "+k)
		case g != v:
			d = append(d, "differs "+k)
		}
	}
	for k := range got.objects {
		if _, ok := want.objects[k]; !ok {
			d = append(d, "extra "+k)
		}
	}
	for k, v := range want.statements {
		switch g, ok := got.statements[k]; {
		case !ok:
			d = append(d, "missing "+k)
		case g != v:
			d = append(d, fmt.Sprintf("statement %s differs:\n got %s\nwant %s", k, g, v))
		}
	}
	for k := range got.statements {
		if _, ok := want.statements[k]; !ok {
			d = append(d, "extra "+k)
		}
	}
	if !got.state.Checkpoint.Equal(want.state.Checkpoint) {
		d = append(d, fmt.Sprintf("checkpoint %s, want %s", got.state.Checkpoint, want.state.Checkpoint))
	}
	if fmt.Sprint(got.state.Rechecks) != fmt.Sprint(want.state.Rechecks) {
		d = append(d, fmt.Sprintf("rechecks %v, want %v", got.state.Rechecks, want.state.Rechecks))
	}
	if fmt.Sprint(got.state.Restated) != fmt.Sprint(want.state.Restated) {
		d = append(d, fmt.Sprintf("restated %v, want %v", got.state.Restated, want.state.Restated))
	}
	for p, ids := range want.index {
		if !slices.Equal(got.index[p], ids) {
			d = append(d, fmt.Sprintf("dedupe index of %s: %d ids, want %d", p, len(got.index[p]), len(ids)))
		}
	}
	slices.Sort(d)
	return strings.Join(d, "; ")
}

func periodOf(key string) string {
	if m := periodRE.FindStringSubmatch(key); m != nil {
		return m[1]
	}
	return ""
}

// checkpointOf reads job's checkpoint directly.
func (s *faultSuite) checkpointOf(job string) time.Time {
	s.t.Helper()
	ctx := context.Background()
	c := s.cliFor(job)
	st, err := openStore(ctx, c)
	if err != nil {
		s.t.Fatal(err)
	}
	defer st.close()
	state, err := st.Load(ctx, c.cfg.JobName)
	if err != nil {
		s.t.Fatal(err)
	}
	return state.Checkpoint
}
