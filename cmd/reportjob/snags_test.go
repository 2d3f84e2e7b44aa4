//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The first-use snags of issue 18, each through the built binary, run
// from a folder of the test's choosing with a clean environment.

// snagEnv is a minimal environment: PATH, a fresh HOME, nothing of the
// developer's REPORTJOB_ or AWS_ variables; extra is appended.
func snagEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_EC2_METADATA_DISABLED=true"}, extra...)
}

// snagRun runs the binary in dir with env and returns how it ended.
func snagRun(t *testing.T, dir string, env []string, args ...string) procOut {
	t.Helper()
	cmd := exec.Command(procBinary(t), args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return procWait(cmd, started)
}

// mustExit fails the test unless p exited with code, and returns its
// JSON summary line (nil when the output is text: status).
func (p procOut) mustExit(t *testing.T, code int, what string) map[string]any {
	t.Helper()
	if p.code != code {
		t.Fatalf("%s: exit %d, want %d\n%s", what, p.code, code, p)
	}
	if !strings.HasPrefix(p.stdout, "{") {
		return nil
	}
	return lastJSON(t, p.stdout)
}

func snagWrite(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snagEntries lists the names in dir.
func snagEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

const snagTx = `{"transaction_id":"ord-1001","agency_id":"acme-travel","amount":"19.99","currency":"USD","recorded_at":"2026-03-01T10:05:12Z"}
{"transaction_id":"ord-1004","agency_id":"acme-travel","amount":"5.00","currency":"USD","kind":"refund","recorded_at":"2026-03-01T10:50:00Z"}
`

const snagConfig = `job_name: billing-report
store:
  backend: embedded
  embedded: {path: ./data/reportjob.db}
sink:
  url: file://./reports
report:
  period: 1h
  lateness: 2m
  start: "2026-03-01"
`

// TestSnagRelativePaths (issue 18 item 2): relative paths follow the
// config file, status prints them, and a new store over a sink that
// holds periods is refused before anything is created.
func TestSnagRelativePaths(t *testing.T) {
	trial, elsewhere := t.TempDir(), t.TempDir()
	cfg := filepath.Join(trial, "config.yaml")
	snagWrite(t, cfg, snagConfig)
	snagWrite(t, filepath.Join(trial, "tx.jsonl"), snagTx)
	env := snagEnv(t)
	now := "--now=2026-03-01T11:05:00Z"

	// Everything from another folder, through --config.
	snagRun(t, elsewhere, env, "--config", cfg, "ingest", "--file", filepath.Join(trial, "tx.jsonl"), "--allow-late").mustExit(t, 0, "ingest")
	sum := snagRun(t, elsewhere, env, "--config", cfg, "run", now).mustExit(t, 0, "run")
	if sum["periods_processed"] != float64(11) {
		t.Errorf("run: %v periods, want 11", sum["periods_processed"])
	}
	for _, p := range []string{"data/reportjob.db", "reports/manifests/period=20260301T1000Z/manifest.json"} {
		if _, err := os.Stat(filepath.Join(trial, p)); err != nil {
			t.Errorf("not next to the config: %v", err)
		}
	}
	st := snagRun(t, elsewhere, env, "--config", cfg, "status", now)
	st.mustExit(t, 0, "status")
	for _, want := range []string{
		"config:       " + cfg + "\n",
		"store:        " + filepath.Join(trial, "data", "reportjob.db") + "\n",
		"sink:         " + filepath.Join(trial, "reports") + "\n",
		"checkpoint:   2026-03-01T11:00:00Z (lag 5m0s)\n",
	} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, st.stdout)
		}
	}
	if names := snagEntries(t, elsewhere); len(names) != 0 {
		t.Errorf("the working folder got %v", names)
	}

	// A copy of the config elsewhere whose sink is the trial's reports:
	// its store is new, the sink holds 11 periods.
	copyDir := t.TempDir()
	copyCfg := filepath.Join(copyDir, "config.yaml")
	snagWrite(t, copyCfg, strings.Replace(snagConfig, "file://./reports", "file://"+filepath.Join(trial, "reports"), 1))
	for _, args := range [][]string{{"run", now}, {"ingest", "--file", filepath.Join(trial, "tx.jsonl"), "--allow-late"}} {
		out := snagRun(t, elsewhere, env, append([]string{"--config", copyCfg}, args...)...)
		sum := out.mustExit(t, 2, args[0]+" over a sink with periods")
		msg, _ := sum["error"].(string)
		for _, want := range []string{"the store " + filepath.Join(copyDir, "data", "reportjob.db") + " does not exist",
			"holds 11 period(s), 20260301T0000Z to 20260301T1000Z", "set store.embedded.path", "reportjob init"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error lacks %q: %s", args[0], want, msg)
			}
		}
		if sum["status"] != "bad_usage" && sum["status"] != "failed" {
			t.Errorf("%s: status %v", args[0], sum["status"])
		}
	}
	if names := snagEntries(t, copyDir); len(names) != 1 {
		t.Errorf("the refused commands created %v next to the copy", names)
	}
	out := snagRun(t, elsewhere, env, "--config", copyCfg, "status", now)
	out.mustExit(t, 0, "status of the copy")
	if !strings.Contains(out.stdout, "(does not exist yet)") || !strings.Contains(out.stdout, "has never run") {
		t.Errorf("status of the copy:\n%s", out.stdout)
	}
	if names := snagEntries(t, copyDir); len(names) != 1 {
		t.Errorf("status created %v next to the copy", names)
	}
	// init creates the store on purpose; the first run still refuses to
	// deliver the periods again, and continues after them when told to.
	snagRun(t, elsewhere, env, "--config", copyCfg, "init").mustExit(t, 0, "init")
	sum = snagRun(t, elsewhere, env, "--config", copyCfg, "run", now).mustExit(t, 2, "first run of the copy")
	if msg, _ := sum["error"].(string); !strings.Contains(msg, "has never run") || !strings.Contains(msg, "set report.start to 2026-03-01T11:00:00Z") {
		t.Errorf("first run of the copy: %s", msg)
	}
	sum = snagRun(t, elsewhere, append(env, "REPORTJOB_REPORT_START=2026-03-01T11:00:00Z"), "--config", copyCfg, "run", "--now=2026-03-01T12:05:00Z").
		mustExit(t, 0, "run of the copy after the sink's periods")
	if sum["first_period"] != "2026-03-01T11:00:00Z" {
		t.Errorf("run of the copy: first period %v", sum["first_period"])
	}
}

// TestSnagRunEmptyFolder (item 10): run with the defaults in an empty
// folder refuses for report.start and creates nothing.
func TestSnagRunEmptyFolder(t *testing.T) {
	dir := t.TempDir()
	sum := snagRun(t, dir, snagEnv(t), "run").mustExit(t, 2, "run in an empty folder")
	if msg, _ := sum["error"].(string); sum["status"] != "bad_usage" || !strings.Contains(msg, "report.start") {
		t.Errorf("summary %v", sum)
	}
	if names := snagEntries(t, dir); len(names) != 0 {
		t.Errorf("run created %v", names)
	}
}

// TestSnagSummaries: ingest of a missing file (item 4), the dry run's log
// (item 5) and status's lag in days (item 11).
func TestSnagSummaries(t *testing.T) {
	dir := t.TempDir()
	snagWrite(t, filepath.Join(dir, "config.yaml"), snagConfig)
	snagWrite(t, filepath.Join(dir, "tx.jsonl"), snagTx)
	env := snagEnv(t)

	missing := filepath.Join(t.TempDir(), "missing", "tx.jsonl")
	sum := snagRun(t, dir, env, "ingest", "--file", missing).mustExit(t, 2, "ingest of a missing file")
	if msg, _ := sum["error"].(string); sum["status"] != "bad_usage" || !strings.Contains(msg, missing+": no such file or directory") {
		t.Errorf("ingest of a missing file: summary %v", sum)
	}
	if names := snagEntries(t, dir); len(names) != 2 {
		t.Errorf("ingest of a missing file created %v", names)
	}

	snagRun(t, dir, env, "ingest", "--file", "tx.jsonl", "--allow-late").mustExit(t, 0, "ingest")
	out := snagRun(t, dir, env, "run", "--dry-run", "--now=2026-03-01T11:05:00Z")
	out.mustExit(t, 0, "dry run")
	if strings.Contains(out.stderr, `"period published"`) || strings.Contains(out.stderr, `"uploaded"`) {
		t.Errorf("the dry run logs a publication:\n%s", out.stderr)
	}
	if !strings.Contains(out.stderr, `"msg":"dry run: period would be published"`) || !strings.Contains(out.stderr, `"would_upload":4`) {
		t.Errorf("the dry run does not log what it would publish:\n%s", out.stderr)
	}

	snagRun(t, dir, env, "run", "--now=2026-03-01T11:05:00Z").mustExit(t, 0, "run")
	out = snagRun(t, dir, env, "status", "--now=2026-11-24T14:05:00Z")
	out.mustExit(t, 0, "status")
	if !strings.Contains(out.stdout, "checkpoint:   2026-03-01T11:00:00Z (lag 268d 3h)\n") {
		t.Errorf("status lag:\n%s", out.stdout)
	}
	sum = snagRun(t, dir, env, "status", "--json", "--now=2026-11-24T14:05:00Z").mustExit(t, 0, "status --json")
	if sum["lag_seconds"] != float64(268*86400+3*3600+5*60) {
		t.Errorf("status --json: lag_seconds %v", sum["lag_seconds"])
	}
}

func TestFormatLag(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute:               "5m0s",
		23*time.Hour + 59*time.Minute: "23h59m0s",
		24 * time.Hour:                "1d 0h",
		268*24*time.Hour + 3*time.Hour + 33*time.Minute: "268d 3h",
	} {
		if got := formatLag(d); got != want {
			t.Errorf("formatLag(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestSnagDidYouMean (item 8): a mistyped flag or command gets the
// closest one, and a JSON summary line like every other failure.
func TestSnagDidYouMean(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args            []string
		command, stderr string
	}{
		{[]string{"run", "--dryrun"}, "run", "reportjob: run: flag provided but not defined: -dryrun; did you mean --dry-run?\nusage: reportjob [--config FILE] run "},
		{[]string{"status", "-jsn"}, "status", "did you mean --json?"},
		{[]string{"runn"}, "runn", "reportjob: unknown command \"runn\"; did you mean run?\n"},
		{[]string{"--confg", "x.yaml", "run"}, "", "did you mean --config?"},
		{[]string{"frobnicate"}, "frobnicate", "reportjob: unknown command \"frobnicate\"\n"},
	} {
		out := snagRun(t, dir, snagEnv(t), tc.args...)
		sum := out.mustExit(t, 2, strings.Join(tc.args, " "))
		if !strings.Contains(out.stderr, tc.stderr) {
			t.Errorf("%v: stderr lacks %q:\n%s", tc.args, tc.stderr, out.stderr)
		}
		want := strings.TrimPrefix(strings.SplitN(tc.stderr, "\n", 2)[0], "reportjob: ")
		if msg, _ := sum["error"].(string); sum["command"] != tc.command || sum["status"] != "bad_usage" || !strings.Contains(msg, want) {
			t.Errorf("%v: summary %v, want command %q and an error with %q", tc.args, sum, tc.command, want)
		}
	}
	if names := snagEntries(t, dir); len(names) != 0 {
		t.Errorf("created %v", names)
	}
}

// TestSnagErrorsSayWhatToDo (item 9): the refusals of a lower-case
// currency, a negative amount and a percentage rate say what to write.
func TestSnagErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	snagWrite(t, filepath.Join(dir, "config.yaml"), snagConfig)
	snagWrite(t, filepath.Join(dir, "bad.jsonl"),
		`{"transaction_id":"a","agency_id":"acme-travel","amount":"19.99","currency":"usd","recorded_at":"2026-03-01T10:05:12Z"}
{"transaction_id":"b","agency_id":"acme-travel","amount":"-3.00","currency":"USD","recorded_at":"2026-03-01T10:05:12Z"}
`)
	out := snagRun(t, dir, snagEnv(t), "ingest", "--file", "bad.jsonl", "--allow-late")
	out.mustExit(t, 1, "ingest of bad lines")
	for _, want := range []string{
		`bad.jsonl: line 1: currency "usd": unknown ISO 4217 currency: codes are upper case, write "USD"`,
		`bad.jsonl: line 2: amount "-3.00": must be > 0: a refund is a positive amount with kind "refund"`,
	} {
		if !strings.Contains(out.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out.stderr)
		}
	}

	snagWrite(t, filepath.Join(dir, "config.yaml"), snagConfig+"commission:\n  agencies: {acme-travel: 12%}\n")
	out = snagRun(t, dir, snagEnv(t), "status")
	sum := out.mustExit(t, 2, "status with a percentage rate")
	want := `config: commission.agencies[acme-travel] "12%" (config.yaml:12): must be basis points, an integer between 0 and 10000 (100 = 1 %): 12% is 1200`
	if msg, _ := sum["error"].(string); msg != want || !strings.Contains(out.stderr, want) {
		t.Errorf("error %q, want %q; stderr:\n%s", msg, want, out.stderr)
	}
}

// TestSnagQueryS3Hint (item 12): scripts/query.sh on s3:// paths says
// that DuckDB downloads httpfs, and what to do without it, before it does
// anything else (here it then fails: no node or npm on PATH).
func TestSnagQueryS3Hint(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "dirname", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "query.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stdin := range []bool{false, true} {
		sql := "SELECT count(*) FROM read_parquet('s3://billing-reports/reportjob/summary/*/*.parquet')"
		cmd := exec.Command(filepath.Join(bin, "bash"), script)
		if stdin {
			cmd.Stdin = strings.NewReader(sql)
		} else {
			cmd.Args = append(cmd.Args, sql)
		}
		cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir()}
		out, _ := cmd.CombinedOutput()
		for _, want := range []string{"httpfs extension", "downloads from extensions.duckdb.org on first use",
			"aws s3 sync s3://BUCKET/PREFIX ./reports-copy", "read_parquet('reports-copy/summary/*/*.parquet')", "Athena"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("stdin %v: output lacks %q:\n%s", stdin, want, out)
			}
		}
	}
	cmd := exec.Command(filepath.Join(bin, "bash"), script, "SELECT 1")
	cmd.Env = []string{"PATH=" + bin}
	if out, _ := cmd.CombinedOutput(); strings.Contains(string(out), "httpfs") {
		t.Errorf("a local query got the S3 hint:\n%s", out)
	}
}

// TestSnagDynamoDBUnreachable (item 7): each retry is logged with the
// endpoint, and missing credentials say where the SDK looks.
func TestSnagDynamoDBUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close() // a closed loopback port: connection refused
	dir := t.TempDir()
	snagWrite(t, filepath.Join(dir, "config.yaml"),
		fmt.Sprintf("store: {backend: dynamodb, dynamodb: {endpoint: %q}}\nreport: {start: \"2026-03-01\"}\n", endpoint))

	out := snagRun(t, dir, snagEnv(t, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "RJTEST_AWS_MAX_BACKOFF=20ms"),
		"run", "--now=2026-03-01T05:05:00Z")
	out.mustExit(t, 1, "run against a closed port")
	retries := strings.Count(out.stderr, `"msg":"DynamoDB request failed; retrying","job":"billing-report"`)
	if retries != 7 || !strings.Contains(out.stderr, `"endpoint":"`+endpoint+`","attempt":1,"max_attempts":8`) {
		t.Errorf("%d retries logged, want 7 naming %s:\n%s", retries, endpoint, out.stderr)
	}

	// No credentials anywhere: no AWS_ variables, a HOME without ~/.aws,
	// no instance metadata.
	out = snagRun(t, dir, snagEnv(t), "run", "--now=2026-03-01T05:05:00Z")
	sum := out.mustExit(t, 1, "run without credentials")
	msg, _ := sum["error"].(string)
	for _, want := range []string{"no AWS credentials found", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "default chain"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "IMDS") {
		t.Errorf("error still has the IMDS text: %s", msg)
	}
}
