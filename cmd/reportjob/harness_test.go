package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/testenv"
)

// harness runs the real CLI (run(), in process) against a config in a temp
// folder, on the embedded default or on DynamoDB Local + versitygw.
type harness struct {
	t       *testing.T
	dir     string
	config  string
	env     []string
	backend string
	bucket  string
}

// harnessOptions shape the config a harness writes.
type harnessOptions struct {
	backend string // "embedded" (default) or "aws": DynamoDB Local + versitygw over HTTPS
	shards  int
	period  string
	start   string
	extra   string // more YAML appended under report: (indented two spaces)
	top     string // more top-level YAML (commission:, metrics: ...)
	// dynamodb names the environment variable of the "aws" backend's
	// DynamoDB endpoint (default testenv.EnvDynamoDB, DynamoDB Local).
	dynamodb string
}

var harnessSeq atomic.Int64

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, config: filepath.Join(dir, "config.yaml"), backend: o.backend}
	if o.backend == "" {
		h.backend = "embedded"
	}
	if o.shards == 0 {
		o.shards = 1
	}
	if o.period == "" {
		o.period = "1h"
	}
	if o.start == "" {
		o.start = "2024-03-01"
	}
	var storeYAML, sinkYAML string
	switch h.backend {
	case "embedded":
		storeYAML = fmt.Sprintf("  backend: embedded\n  embedded: {path: %q}\n", filepath.Join(dir, "data", "reportjob.db"))
		sinkYAML = fmt.Sprintf("  url: %q\n", "file://"+filepath.Join(dir, "reports"))
	case "aws":
		ddbEnv := testenv.EnvDynamoDB
		if o.dynamodb != "" {
			ddbEnv = o.dynamodb
		}
		ddb := testenv.Require(t, ddbEnv, "a DynamoDB server")
		s3 := testenv.RequireS3TLS(t)
		// The SDK's default chain: credentials and the CA bundle from the
		// environment, as in production.
		t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey)
		t.Setenv("AWS_CA_BUNDLE", s3.CAFile)
		t.Setenv("AWS_REGION", "us-east-1")
		n := harnessSeq.Add(1)
		suffix := fmt.Sprintf("%d-%d", time.Now().UnixNano()%1_000_000_000, n)
		h.bucket = "rj-e2e-" + suffix
		storeYAML = fmt.Sprintf("  backend: dynamodb\n  dynamodb: {table: tx-%s, state_table: state-%s, region: us-east-1, endpoint: %q}\n",
			suffix, suffix, ddb)
		sinkYAML = fmt.Sprintf("  url: %q\n  s3: {region: us-east-1, endpoint: %q, path_style: true, sse: AES256}\n",
			"s3://"+h.bucket+"/billing/reports", s3.Endpoint)
	default:
		t.Fatalf("unknown backend %q", o.backend)
	}
	cfg := fmt.Sprintf(`job_name: e2e
store:
%skeys: {shards: %d}
sink:
%sreport:
  period: %s
  lateness: 2m
  start: %q
  concurrency: 4
%s
log: {level: info, format: json}
%s
`, storeYAML, o.shards, sinkYAML, o.period, o.start, o.extra, o.top)
	if err := os.WriteFile(h.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs the CLI and returns stdout, stderr and the exit code.
func (h *harness) run(args ...string) (string, string, int) {
	h.t.Helper()
	return h.runCtx(context.Background(), args...)
}

func (h *harness) runCtx(ctx context.Context, args ...string) (string, string, int) {
	h.t.Helper()
	var out, errb bytes.Buffer
	code := run(ctx, append([]string{"--config", h.config}, args...), h.env, &out, &errb)
	return out.String(), errb.String(), code
}

// mustRun runs the CLI and fails the test unless it exits with want.
func (h *harness) mustRun(want int, args ...string) map[string]any {
	h.t.Helper()
	out, errs, code := h.run(args...)
	if code != want {
		h.t.Fatalf("reportjob %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return lastJSON(h.t, out)
}

// lastJSON parses the JSON summary line stdout ends with.
func lastJSON(t testing.TB, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last stdout line is not JSON: %q: %v", lines[len(lines)-1], err)
	}
	return m
}

// cli returns a cli on the harness config, for opening its store and sink.
func (h *harness) cli() *cli {
	h.t.Helper()
	cfg, err := config.Load(h.config, true, h.env)
	if err != nil {
		h.t.Fatal(err)
	}
	c := &cli{cfg: cfg, env: h.env, stdout: io.Discard, stderr: io.Discard, runID: "test", logOut: io.Discard}
	c.base = newLogger(cfg, io.Discard, false)
	c.log = c.base
	return c
}

// withStore opens the store (the embedded file is locked meanwhile).
func (h *harness) withStore(fn func(*store)) {
	h.t.Helper()
	st, err := openStore(context.Background(), h.cli())
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.close()
	fn(st)
}

func (h *harness) sink() *sink.Bucket {
	h.t.Helper()
	b, err := openBucket(context.Background(), h.cli())
	if err != nil {
		h.t.Fatal(err)
	}
	return b.Bucket
}

// objects returns every object in the sink: key -> sha256.
func (h *harness) objects() map[string]string {
	h.t.Helper()
	ctx := context.Background()
	sk := h.sink()
	infos, err := sk.List(ctx, "")
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range infos {
		sum := sha256.Sum256(h.read(sk, o.Key))
		out[o.Key] = hex.EncodeToString(sum[:])
	}
	return out
}

func (h *harness) read(sk *sink.Bucket, key string) []byte {
	h.t.Helper()
	b, _, err := sk.ReadAll(context.Background(), key, 1<<30)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// writeFile writes a file into the harness folder and returns its path.
func (h *harness) writeFile(name, body string) string {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}
