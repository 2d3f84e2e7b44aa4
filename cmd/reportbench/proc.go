package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procResult is what one run of the reportjob binary cost.
type procResult struct {
	Args []string `json:"args"`
	// WallMS is the wall time from start to exit.
	WallMS float64 `json:"wall_ms"`
	// UserMS and SysMS are the CPU times (getrusage of the child).
	UserMS float64 `json:"user_ms"`
	SysMS  float64 `json:"sys_ms"`
	// PeakAnonKB and PeakFileKB are the highest RssAnon and RssFile seen
	// in /proc/PID/status, sampled every 10 ms: anonymous memory (heap,
	// stacks) and file pages mapped (the bbolt file, the binary).
	PeakAnonKB int64 `json:"peak_rss_anon_kb"`
	PeakFileKB int64 `json:"peak_rss_file_kb"`
	// MaxRSSKB is getrusage's ru_maxrss: the peak of anonymous and file
	// pages together.
	MaxRSSKB int64 `json:"maxrss_kb"`
	Samples  int   `json:"samples"`
	// Summary is the JSON line the command ended with.
	Summary map[string]any `json:"summary"`
	// PeriodMS is the duration_ms of the periods' "period published"
	// and "period unchanged" log lines (logged at level info): the
	// periods' part of the run, the month's statements left out.
	PeriodMS float64 `json:"period_ms,omitempty"`
}

// runProc runs bin with args and env (added to this process's), sampling
// its memory until it exits. A non-zero exit is an error carrying stderr.
func runProc(ctx context.Context, bin string, env []string, args ...string) (procResult, error) {
	res := procResult{Args: args}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start %s: %w", bin, err)
	}
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		path := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if anon, file, ok := readStatus(path); ok {
				res.PeakAnonKB = max(res.PeakAnonKB, anon)
				res.PeakFileKB = max(res.PeakFileKB, file)
				res.Samples++
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	res.WallMS = float64(time.Since(start).Microseconds()) / 1000
	close(done)
	<-sampled
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.UserMS = float64(time.Duration(ru.Utime.Nano()).Microseconds()) / 1000
		res.SysMS = float64(time.Duration(ru.Stime.Nano()).Microseconds()) / 1000
		res.MaxRSSKB = ru.Maxrss
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if last := lines[len(lines)-1]; strings.HasPrefix(last, "{") {
		_ = json.Unmarshal([]byte(last), &res.Summary)
	}
	for line := range strings.SplitSeq(stderr.String(), "\n") {
		if !strings.Contains(line, `"msg":"period published"`) && !strings.Contains(line, `"msg":"period unchanged"`) {
			continue
		}
		var l struct {
			DurationMS float64 `json:"duration_ms"`
		}
		if json.Unmarshal([]byte(line), &l) == nil {
			res.PeriodMS += l.DurationMS
		}
	}
	if err != nil {
		return res, fmt.Errorf("%s %s: %w\nstdout: %s\nstderr: %s", bin, strings.Join(args, " "), err,
			tail(stdout.String()), tail(stderr.String()))
	}
	return res, nil
}

// readStatus returns RssAnon and RssFile (kB) from a /proc status file.
func readStatus(path string) (anon, file int64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "RssAnon:"):
			anon, ok = kb(line), true
		case strings.HasPrefix(line, "RssFile:"):
			file = kb(line)
		}
	}
	return anon, file, ok
}

func kb(line string) int64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	v, _ := strconv.ParseInt(f[1], 10, 64)
	return v
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// num reads a number from a command's JSON summary.
func (r procResult) num(key string) float64 {
	v, _ := r.Summary[key].(float64)
	return v
}
