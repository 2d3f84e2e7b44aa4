package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// This file runs one walkthrough of the documentation in one bash process,
// blocks in document order (pages in docPages order), and compares what each
// block prints with the page.

// reporter is the part of *testing.T a walkthrough reports to (a fake in
// the runner's own tests).
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// readmeSubst is a documented substitution of a path the README names by a
// per-test folder, applied to the commands; outputs get the README's path
// back before they are compared.
type readmeSubst struct {
	re     *regexp.Regexp // the README's path, whole
	readme string
	dir    string // what it stands for in this test
}

// readmeWalk is one walkthrough to run.
type readmeWalk struct {
	name  string
	steps []readmeStep
	root  string // the repository: the walkthrough starts there
	home  string // HOME: ~/billing-trial is per test
	out   string // per-block stdout, stderr and exit status files
	subst []readmeSubst
	env   []string

	// update: rewrite an expected output that differs (not a trimmed one,
	// with "..."), into updates, instead of failing (-update-docs).
	update  bool
	updates []docUpdate

	done    chan struct{} // closed when bash has exited
	runErr  error
	elapsed time.Duration
}

// script returns the bash script that runs every step: set -e and
// pipefail per block, each block's stdout and stderr to files, and the
// number of the block in progress in "current" (so a failure names it).
func (w *readmeWalk) script() string {
	var b strings.Builder
	fmt.Fprintf(&b, "set -o pipefail\n__rj=%s\n", shellQuote(w.out))
	for i, st := range w.steps {
		cmd := st.cmd
		for _, s := range w.subst {
			cmd = s.re.ReplaceAllLiteralString(cmd, s.dir)
		}
		out := fmt.Sprintf(`"$__rj/%d.out" 2>"$__rj/%d.err"`, i, i)
		fmt.Fprintf(&b, "\n# %s:%d\necho %d >\"$__rj/current\"\necho %d $EPOCHREALTIME >>\"$__rj/times\"\n", st.page, st.line, i, i)
		switch {
		case st.skip != "":
			continue
		case st.background > 0:
			// Job control puts the block in a process group of its own, where
			// SIGINT is not ignored as it is for a background job of a script.
			fmt.Fprintf(&b, "set -m\n{\n%s} >%s &\n__rj_pid=$!\nset +m\nsleep %d\n", cmd, out, int(st.background.Seconds()))
			fmt.Fprintf(&b, "kill -INT -- -$__rj_pid\nwait $__rj_pid\n__rj_rc=$?\necho $__rj_rc >\"$__rj/%d.rc\"\n[ $__rj_rc = 0 ] || exit 98\n", i)
		case st.hasExit:
			prefix, last := splitLastCommand(cmd)
			fmt.Fprintf(&b, "set -e\n{\n%sset +e\n%s\n__rj_rc=$?\nset -e\n} >%s\nset +e\n", prefix, last, out)
			fmt.Fprintf(&b, "echo $__rj_rc >\"$__rj/%d.rc\"\n[ $__rj_rc = %d ] || exit 97\n", i, st.exit)
		default:
			fmt.Fprintf(&b, "set -e\n{\n%s} >%s\nset +e\n", cmd, out)
			if st.file != "" {
				fmt.Fprintf(&b, "[ -f %s ] || { echo 'the block did not write %s' >\"$__rj/%d.err\"; exit 96; }\n", shellQuote(st.file), st.file, i)
			}
		}
	}
	fmt.Fprintf(&b, "\necho done >\"$__rj/current\"\necho %d $EPOCHREALTIME >>\"$__rj/times\"\n", len(w.steps))
	return b.String()
}

// splitLastCommand splits a block into the commands before its last one
// (each line ending in "\n") and its last logical line (continuations
// joined).
func splitLastCommand(cmd string) (prefix, last string) {
	lines := strings.Split(strings.TrimRight(cmd, "\n"), "\n")
	start := len(lines) - 1
	for start > 0 && strings.HasSuffix(lines[start-1], "\\") {
		start--
	}
	if start == 0 {
		return "", strings.Join(lines, "\n")
	}
	return strings.Join(lines[:start], "\n") + "\n", strings.Join(lines[start:], "\n")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// start runs the walkthrough in the background; wait reports its result.
// The walkthroughs mostly wait for the commands they run, so they all run
// at once whatever go test's -parallel.
func (w *readmeWalk) start(timeout time.Duration) error {
	script := filepath.Join(w.out, "walkthrough.sh")
	if err := os.WriteFile(script, []byte(w.script()), 0o644); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(w.out, "bash.log"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir, cmd.Env = w.root, w.env
	// Files, not pipes: servers a block starts in the background keep
	// their descriptors, and Wait must not wait for them.
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	w.done = make(chan struct{})
	started := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		logf.Close()
		return err
	}
	go func() {
		defer close(w.done)
		defer cancel()
		defer logf.Close()
		w.runErr = cmd.Wait()
		if ctx.Err() != nil {
			w.runErr = fmt.Errorf("timed out after %v: %w", timeout, w.runErr)
		}
		w.elapsed = time.Since(started)
	}()
	return nil
}

// wait waits for the walkthrough and reports every difference with the
// README.
func (w *readmeWalk) wait(t reporter) {
	t.Helper()
	<-w.done
	var skipped, compared int
	for _, st := range w.steps {
		if st.skip != "" {
			skipped++
		} else if st.hasExpect {
			compared++
		}
	}
	t.Logf("walkthrough %s: %d blocks (%d skipped, %d outputs compared) in %v; slowest: %s", w.name, len(w.steps), skipped, compared,
		w.elapsed.Round(10*time.Millisecond), w.slowest(3))
	cur, _ := os.ReadFile(filepath.Join(w.out, "current"))
	failed := -1
	if c := strings.TrimSpace(string(cur)); c != "done" {
		failed, _ = strconv.Atoi(c)
		if w.runErr == nil || c == "" {
			t.Errorf("walkthrough %s stopped before its end (%v, block %q): %s", w.name, w.runErr, c, w.read("bash.log"))
			return
		}
	} else if w.runErr != nil {
		t.Errorf("walkthrough %s: bash: %v\n%s", w.name, w.runErr, w.read("bash.log"))
	}
	for i, st := range w.steps {
		if i == failed {
			w.reportFailure(t, i, st, w.runErr)
			return
		}
		if st.skip != "" {
			t.Logf("%s:%d: skipped: %s", st.page, st.line, st.skip)
			continue
		}
		w.check(t, i, st)
	}
}

// slowest names the n blocks that took longest, from the times the script
// wrote ("i EPOCHREALTIME" as each block starts).
func (w *readmeWalk) slowest(n int) string {
	type took struct {
		at string
		d  time.Duration
	}
	var l []took
	var prevIdx int
	var prev float64
	for _, f := range strings.Split(strings.TrimSpace(w.read("times")), "\n") {
		var i int
		var at float64
		if _, err := fmt.Sscanf(f, "%d %f", &i, &at); err != nil {
			continue
		}
		if prev > 0 && prevIdx < len(w.steps) {
			l = append(l, took{fmt.Sprintf("%s:%d", w.steps[prevIdx].page, w.steps[prevIdx].line), time.Duration((at - prev) * float64(time.Second))})
		}
		prevIdx, prev = i, at
	}
	slices.SortFunc(l, func(a, b took) int { return cmp.Compare(b.d, a.d) })
	var out []string
	for _, x := range l[:min(n, len(l))] {
		out = append(out, fmt.Sprintf("%s %v", x.at, x.d.Round(10*time.Millisecond)))
	}
	return strings.Join(out, ", ")
}

func (w *readmeWalk) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(w.out, name))
	return string(b)
}

// reportFailure explains the block the walkthrough stopped in.
func (w *readmeWalk) reportFailure(t reporter, i int, st readmeStep, runErr error) {
	t.Helper()
	why := fmt.Sprintf("a command failed (%v)", runErr)
	rc := strings.TrimSpace(w.read(fmt.Sprintf("%d.rc", i)))
	switch {
	case st.hasExit && rc != "":
		why = fmt.Sprintf("its last command exited %s, want %d", rc, st.exit)
	case st.background > 0 && rc != "":
		why = fmt.Sprintf("after SIGINT it exited %s, want 0", rc)
	}
	t.Errorf("%s:%d: block %s\n%s\nstdout:\n%s\nstderr:\n%s", st.page, st.line, why, indent(st.cmd),
		indent(w.read(fmt.Sprintf("%d.out", i))), indent(w.read(fmt.Sprintf("%d.err", i))))
}

// check compares a block's stdout with the page's.
func (w *readmeWalk) check(t reporter, i int, st readmeStep) {
	t.Helper()
	got := w.read(fmt.Sprintf("%d.out", i))
	if st.background > 0 {
		lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
		var sum map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum["command"] == nil {
			t.Errorf("%s:%d: the background block's last stdout line is not a JSON summary line: %q", st.page, st.line, lines[len(lines)-1])
		}
	}
	if !st.hasExpect {
		return
	}
	got = w.fromTest(got, st.expect)
	want, have := normalizeOutput(st.expect), normalizeOutput(got)
	if !matchLines(want, have) {
		if w.update && !slices.Contains(want, "...") {
			w.updates = append(w.updates, docUpdate{page: st.page, line: st.expectLine, body: keepShown(got, st.expect)})
			t.Logf("%s:%d: -update-docs: the output block is rewritten with what the command printed", st.page, st.expectLine)
			return
		}
		t.Errorf("%s:%d: the output differs from %[1]s:%[3]d\ncommand:\n%[4]s\n%[1]s (normalised):\n%[5]s\nprinted (normalised):\n%[6]s\nstderr:\n%[7]s",
			st.page, st.line, st.expectLine, indent(st.cmd), indent(strings.Join(want, "\n")), indent(strings.Join(have, "\n")),
			indent(w.read(fmt.Sprintf("%d.err", i))))
	}
}

var (
	dayRE       = regexp.MustCompile(`"day":"(\d{4})-(\d{2})-(\d{2})"`)
	statementRE = regexp.MustCompile(`statement-[0-9a-f]{16}\.`)
)

// fromTest puts the README's own names back into what a block printed:
// the substituted folders, /home/you for HOME, and the demo's day and month
// (the demo reports on yesterday) as the README shows them, with the name
// of the statement file it shows (its content, so its hash, has the day).
func (w *readmeWalk) fromTest(got, expect string) string {
	for _, s := range w.subst {
		got = strings.ReplaceAll(got, s.dir, s.readme)
	}
	got = strings.ReplaceAll(got, w.home, "/home/you")
	if g, e := dayRE.FindStringSubmatch(got), dayRE.FindStringSubmatch(expect); g != nil && e != nil {
		got = strings.NewReplacer(g[1]+"-"+g[2]+"-"+g[3], e[1]+"-"+e[2]+"-"+e[3],
			g[1]+g[2]+g[3], e[1]+e[2]+e[3], g[1]+"-"+g[2], e[1]+"-"+e[2]).Replace(got)
		if m := statementRE.FindString(expect); m != "" {
			got = statementRE.ReplaceAllLiteralString(got, m)
		}
	}
	return got
}

// readmeNormal is everything a README output may show differently from a
// run, each replaced by a placeholder on both sides. Anything else,
// content hashes in object names included, must match exactly.
var readmeNormal = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`"run_id":"[0-9a-f]+"`), `"run_id":"RUN_ID"`},          // random per run
	{regexp.MustCompile(`"(duration_ms|ingest_ms)":\d+`), `"$1":N`},            // durations
	{regexp.MustCompile(`released by [^\s)]+`), `released by HOST/PID/RUN_ID`}, // lease owner
}

// normalizeOutput applies readmeNormal and returns the lines, trailing
// blanks and blank lines at the end dropped.
func normalizeOutput(s string) []string {
	for _, n := range readmeNormal {
		s = n.re.ReplaceAllString(s, n.repl)
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return lines
}

// matchLines reports whether got matches want, where a want line "..."
// matches any number of lines.
func matchLines(want, got []string) bool {
	memo := map[[2]int]bool{}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if i == len(want) {
			return j == len(got)
		}
		k := [2]int{i, j}
		if v, ok := memo[k]; ok {
			return v
		}
		var ok bool
		if want[i] == "..." {
			ok = match(i+1, j) || (j < len(got) && match(i, j+1))
		} else {
			ok = j < len(got) && want[i] == got[j] && match(i+1, j+1)
		}
		memo[k] = ok
		return ok
	}
	return match(0, 0)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (empty)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// docUpdate is an expected output to rewrite: the ```text block that
// opens at line of page gets body.
type docUpdate struct {
	page string
	line int
	body string
}

// keepShown returns what a block printed, with the values readmeNormal
// masks (run ids, durations, lease holders) put back as the page showed
// them, in order, so that a rewrite changes only what really changed.
func keepShown(got, shown string) string {
	for _, n := range readmeNormal {
		old := n.re.FindAllString(shown, -1)
		i := 0
		got = n.re.ReplaceAllStringFunc(got, func(m string) string {
			if i < len(old) {
				i++
				return old[i-1]
			}
			return m
		})
	}
	return got
}

// applyDocUpdates rewrites the expected outputs of ups in the pages under
// root.
func applyDocUpdates(root string, ups []docUpdate) error {
	byPage := map[string][]docUpdate{}
	for _, u := range ups {
		byPage[u.page] = append(byPage[u.page], u)
	}
	for page, ups := range byPage {
		path := filepath.Join(root, filepath.FromSlash(page))
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(b), "\n")
		// Bottom up, so that the earlier blocks' line numbers hold.
		slices.SortFunc(ups, func(a, b docUpdate) int { return cmp.Compare(b.line, a.line) })
		for _, u := range ups {
			end := u.line // lines[u.line-1] is the opening fence
			for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
				end++
			}
			if u.line < 1 || end == len(lines) || !strings.HasPrefix(lines[u.line-1], "```text") {
				return fmt.Errorf("%s:%d: no ```text block to rewrite", page, u.line)
			}
			body := strings.Split(strings.TrimRight(u.body, "\n"), "\n")
			lines = slices.Concat(lines[:u.line], body, lines[end:])
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			return err
		}
	}
	return nil
}
