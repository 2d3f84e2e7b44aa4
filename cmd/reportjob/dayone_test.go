//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The first-day snags of issue 34, through the built binary (snags_test.go
// has the helpers).

// TestDayOneNoConfig (issue 34 item 5): run in a folder with no config
// file says first that none was found and where it looked, then why it
// cannot run.
func TestDayOneNoConfig(t *testing.T) {
	dir := t.TempDir()
	out := snagRun(t, dir, snagEnv(t), "run")
	sum := out.mustExit(t, 2, "run without a config")
	msg, _ := sum["error"].(string)
	looked := "no config file found: looked for " + filepath.Join(dir, "config.yaml")
	if !strings.HasPrefix(msg, looked) || !strings.Contains(msg, "REPORTJOB_CONFIG") || !strings.Contains(msg, "report.start is unset") {
		t.Errorf("summary error %q, want it to start with %q and end with the report.start refusal", msg, looked)
	}
	if !strings.HasPrefix(out.stderr, "reportjob: "+looked) {
		t.Errorf("stderr does not start with the note:\n%s", out.stderr)
	}
	// A command that ran on a config file says nothing of the kind.
	snagWrite(t, filepath.Join(dir, "config.yaml"), strings.Replace(snagConfig, "  start: \"2026-03-01\"\n", "", 1))
	out = snagRun(t, dir, snagEnv(t), "run")
	out.mustExit(t, 2, "run with a config and no start")
	if strings.Contains(out.stdout+out.stderr, "no config file found") {
		t.Errorf("with a config file:\n%s", out)
	}
}

// TestDayOneFlagsAfterCommand (item 6): --config is accepted after the
// command too, in both forms, for every command; given twice with two
// values, it is refused.
func TestDayOneFlagsAfterCommand(t *testing.T) {
	trial, elsewhere := t.TempDir(), t.TempDir()
	cfg := filepath.Join(trial, "config.yaml")
	snagWrite(t, cfg, snagConfig)
	snagWrite(t, filepath.Join(trial, "tx.jsonl"), snagTx)
	env := snagEnv(t)
	now := "--now=2026-03-01T11:05:00Z"
	snagRun(t, elsewhere, env, "init", "--config", cfg).mustExit(t, 0, "init --config")
	snagRun(t, elsewhere, env, "ingest", "--file", filepath.Join(trial, "tx.jsonl"), "--allow-late", "--config="+cfg).mustExit(t, 0, "ingest --config=")
	sum := snagRun(t, elsewhere, env, "run", now, "--config", cfg).mustExit(t, 0, "run --config")
	if sum["periods_processed"] != float64(11) {
		t.Errorf("run: %v periods, want 11", sum["periods_processed"])
	}
	for _, args := range [][]string{
		{"status", "--config", cfg, now},
		{"status", "-config", cfg, "--json", now},
		{"transactions", "--agency", "acme-travel", "--config", cfg},
		{"rejects", "--config", cfg},
		{"statement", "--config", cfg, "--month", "2026-03", now},
		{"verify", "--from", "2026-03-01T10:00:00Z", "--to", "2026-03-01T11:00:00Z", "--config", cfg, now},
		{"version", "--config", cfg},
	} {
		snagRun(t, elsewhere, env, args...).mustExit(t, 0, strings.Join(args, " "))
	}
	if names := snagEntries(t, elsewhere); len(names) != 0 {
		t.Errorf("the working folder got %v", names)
	}
	out := snagRun(t, elsewhere, env, "--config", cfg, "status", "--config", filepath.Join(elsewhere, "other.yaml"))
	sum = out.mustExit(t, 2, "--config twice")
	if msg, _ := sum["error"].(string); !strings.Contains(msg, "--config given twice") {
		t.Errorf("--config twice: %v", sum)
	}
	sum = snagRun(t, elsewhere, env, "status", "--config").mustExit(t, 2, "--config without a value")
	if msg, _ := sum["error"].(string); !strings.Contains(msg, "needs an argument: --config") {
		t.Errorf("--config without a value: %v", sum)
	}
}

// TestDayOnePathsAbsolute (item 7): with --config ../conf/config.yaml and
// relative paths in it, init, status and statement print the store and
// the sink as absolute paths (file:// URLs for the sink's objects).
func TestDayOnePathsAbsolute(t *testing.T) {
	root := t.TempDir()
	conf, work := filepath.Join(root, "conf"), filepath.Join(root, "work")
	snagWrite(t, filepath.Join(conf, "config.yaml"), snagConfig)
	snagWrite(t, filepath.Join(conf, "tx.jsonl"), snagTx)
	if err := os.MkdirAll(work, 0o750); err != nil {
		t.Fatal(err)
	}
	env := snagEnv(t)
	rel := filepath.Join("..", "conf", "config.yaml")
	sum := snagRun(t, work, env, "--config", rel, "init").mustExit(t, 0, "init")
	if want := "file://" + filepath.Join(conf, "reports"); sum["sink"] != want {
		t.Errorf("init: sink %v, want %s", sum["sink"], want)
	}
	if want := filepath.Join(conf, "data", "reportjob.db"); sum["store"] != want {
		t.Errorf("init: store %v, want %s", sum["store"], want)
	}
	snagRun(t, work, env, "--config", rel, "ingest", "--file", filepath.Join(conf, "tx.jsonl"), "--allow-late").mustExit(t, 0, "ingest")
	snagRun(t, work, env, "--config", rel, "run", "--now=2026-03-01T11:05:00Z").mustExit(t, 0, "run")
	out := snagRun(t, work, env, "--config", rel, "statement", "--agency", "acme-travel", "--now=2026-03-01T11:05:00Z")
	out.mustExit(t, 0, "statement --agency")
	sum = lastJSON(t, out.stdout)
	prefix := "file://" + filepath.Join(conf, "reports") + "/"
	if m, _ := sum["manifest"].(string); !strings.HasPrefix(m, prefix) {
		t.Errorf("statement: manifest %q, want it under %s", m, prefix)
	}
	files, _ := sum["files"].([]any)
	if len(files) == 0 {
		t.Errorf("statement --agency: no files in %v", sum)
	}
	for _, f := range files {
		if s, _ := f.(string); !strings.HasPrefix(s, prefix) {
			t.Errorf("statement: file %q, want it under %s", s, prefix)
		}
	}
	for _, line := range strings.Split(out.stdout, "\n") {
		if strings.HasPrefix(line, "file: ") && !strings.HasPrefix(line, "file: "+prefix) {
			t.Errorf("statement: %q, want it under %s", line, prefix)
		}
	}
}

// TestDayOneDemoFolder (items 1-3): without --dir the demo's folder is
// under the user's own data folder; it prints progress on stderr, says
// how to explore the folder, and the folder is a working job that status,
// statement, transactions, verify and run accept as it is, from inside
// it or with --config.
func TestDayOneDemoFolder(t *testing.T) {
	home, elsewhere := t.TempDir(), t.TempDir()
	env := append(snagEnv(t), "HOME="+home) // the later HOME wins
	out := snagRun(t, elsewhere, env, "demo", "--transactions", "500", "--top", "2")
	out.mustExit(t, 0, "demo")
	sum := lastJSON(t, out.stdout)
	dir := filepath.Join(home, ".local", "share", "reportjob", "demo")
	if sum["dir"] != dir {
		t.Errorf("demo folder %v, want %s", sum["dir"], dir)
	}
	cfg := filepath.Join(dir, "config.yaml")
	for _, want := range []string{"explore it: " + dir + " is a working job", " --config " + cfg + " status\n"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.stdout)
		}
	}
	for _, want := range []string{"demo: generating 500 transactions", "demo: period 1/24", "demo: period 24/24"} {
		if !strings.Contains(out.stderr, want) {
			t.Errorf("demo progress lacks %q:\n%s", want, out.stderr)
		}
	}
	if names := snagEntries(t, elsewhere); len(names) != 0 {
		t.Errorf("the working folder got %v", names)
	}
	xdg := filepath.Join(t.TempDir(), "data")
	out = snagRun(t, elsewhere, append(env, "XDG_DATA_HOME="+xdg), "demo", "--transactions", "50", "--top", "1")
	out.mustExit(t, 0, "demo with XDG_DATA_HOME")
	sum = lastJSON(t, out.stdout)
	if want := filepath.Join(xdg, "reportjob", "demo"); sum["dir"] != want {
		t.Errorf("demo folder with XDG_DATA_HOME: %v, want %s", sum["dir"], want)
	}

	for _, args := range [][]string{
		{"status"}, {"statement"}, {"transactions", "--agency", "agency-0001", "--limit", "3"}, {"verify", "--last", "2d"}, {"rejects"},
	} {
		snagRun(t, dir, env, args...).mustExit(t, 0, strings.Join(args, " ")+" in the demo folder")
		snagRun(t, elsewhere, env, append([]string{"--config", cfg}, args...)...).mustExit(t, 0, strings.Join(args, " ")+" --config")
	}
	sum = snagRun(t, dir, env, "run").mustExit(t, 0, "run in the demo folder")
	if sum["status"] != "ok" && sum["status"] != "nothing_due" {
		t.Errorf("run in the demo folder: %v", sum)
	}
	// The next demo recreates the folder it made.
	snagRun(t, elsewhere, env, "demo", "--transactions", "50", "--top", "1").mustExit(t, 0, "demo again")
}
