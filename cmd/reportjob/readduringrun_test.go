//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/crashpoint"
)

// TestReadDuringRun (issue 34 item 8): while a run works, with the
// embedded store (whose file the run holds) and with DynamoDB, status,
// transactions, rejects, statement and verify answer with what the last
// commit held, through the built binary.
func TestReadDuringRun(t *testing.T) {
	for _, backend := range []string{"embedded", "aws"} {
		t.Run(backend, func(t *testing.T) {
			h := procHarness(t, backend, harnessOptions{})
			bin := procBinary(t)
			ok := func(what string, p procOut) procOut {
				t.Helper()
				if p.code != 0 {
					t.Fatalf("%s: %s", what, p)
				}
				return p
			}
			ok("init", procRun(t, bin, h, nil, "init"))
			ok("ingest", procRun(t, bin, h, nil, "ingest", "--generate", "3000", "--from", "2024-03-01", "--to", "2024-03-02T12:00:00Z",
				"--allow-late", "--now", "2024-03-05"))
			ok("first run", procRun(t, bin, h, nil, "run", "--now=2024-03-01T06:05:00Z"))

			// The second run delivers 30 periods, pausing after each commit
			// (14 on DynamoDB Local, where a period takes longer.)
			now := "--now=2024-03-02T12:05:00Z"
			if backend == "aws" {
				now = "--now=2024-03-01T20:05:00Z"
			}
			cmd := procCmd(bin, h, []string{crashpoint.SlowEnvVar + "=" + string(crashpoint.AfterCheckpoint) + "=400ms"}, "run", now)
			cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
			started := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan procOut, 1)
			go func() { exited <- procWait(cmd, started) }()
			var last time.Time
			seen := 0
			for seen < 3 {
				st := ok("status during the run", procRun(t, bin, h, nil, "status", "--json", "--now=2024-03-02T12:05:00Z"))
				var s struct {
					Checkpoint time.Time `json:"checkpoint"`
					Lease      struct {
						Owner string `json:"owner"`
					} `json:"lease"`
				}
				if err := json.Unmarshal([]byte(strings.TrimSpace(st.stdout)), &s); err != nil {
					t.Fatalf("status --json: %v\n%s", err, st.stdout)
				}
				if s.Checkpoint.Before(last) {
					t.Fatalf("status: checkpoint %s went back from %s", s.Checkpoint, last)
				}
				if s.Checkpoint.After(last) && s.Checkpoint.After(time.Date(2024, 3, 1, 6, 0, 0, 0, time.UTC)) {
					seen++
				}
				last = s.Checkpoint
				select {
				case p := <-exited:
					t.Fatalf("the run ended before the reads were done (%d checkpoints seen): %s", seen, p)
				default:
				}
			}
			for _, args := range [][]string{
				{"transactions", "--agency", "agency-0001", "--limit", "5"},
				{"rejects"},
				{"statement", "--month", "2024-03", "--now=2024-03-02T12:05:00Z"},
			} {
				ok(strings.Join(args, " ")+" during the run", procRun(t, bin, h, nil, args...))
			}
			// verify checks the periods as committed; the month's draft
			// statement lags the periods until the run's monthly close, which
			// verify reports as a month difference (exit 4) meanwhile.
			v := procRun(t, bin, h, nil, "verify", "--from", "2024-03-01", "--to", "2024-03-01T06:00:00Z", "--now=2024-03-02T12:05:00Z")
			if sum := lastJSON(t, v.stdout); (v.code != 0 && v.code != 4) || sum["ok"] != float64(6) || sum["differ"] != float64(0) {
				t.Fatalf("verify during the run: %s", v)
			}
			select {
			case p := <-exited:
				t.Fatalf("the run ended before the reads were done: %s", p)
			default:
			}
			if p := <-exited; p.code != 0 {
				t.Fatalf("the slow run: %s", p)
			}
			if h.backend == "embedded" {
				// No socket, no snapshot left behind.
				sock := filepath.Join(h.dir, "data", "reportjob.db.sock")
				if _, err := os.Stat(sock); err == nil {
					t.Errorf("%s left behind", sock)
				}
				if m, _ := filepath.Glob(filepath.Join(os.TempDir(), "reportjob-snapshot-*")); len(m) > 0 {
					t.Logf("snapshot folders in %s (other tests' too): %v", os.TempDir(), m)
				}
			}
		})
	}
}
