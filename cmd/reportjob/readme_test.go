package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/testenv"
)

var updateDocs = flag.Bool("update-docs", false,
	"TestREADME: rewrite the expected outputs of the pages' command blocks that differ (not the trimmed ones, with ...) with what the commands print")

// TestREADME checks that README.md and the pages of docs/ are true: their
// walkthroughs run as written (readme_parse_test.go has the marker
// grammar) and print what they show, their links lead somewhere, and the
// command and configuration tables match the binary. The walkthroughs take
// ~40 s; -short skips them.
func TestREADME(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := loadDocs(root, nil)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("grammar", func(t *testing.T) {
		for _, d := range docs.pages {
			for _, e := range d.errs {
				t.Error(e)
			}
		}
	})
	for _, c := range []struct {
		name  string
		check func(*docSet) []string
	}{
		{"pages", checkDocPages}, {"links", checkDocLinks}, {"commands", checkReadmeCommands},
		{"config", checkReadmeConfig}, {"queries", checkReadmeQueries},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range c.check(docs) {
				t.Error(p)
			}
		})
	}

	var (
		mu      sync.Mutex
		updates []docUpdate
	)
	if *updateDocs {
		// After every walkthrough subtest, parallel ones included.
		t.Cleanup(func() {
			if err := applyDocUpdates(root, updates); err != nil {
				t.Errorf("-update-docs: %v", err)
			}
		})
	}

	walks := docs.walkthroughs()
	for name := range walks {
		if _, ok := readmeWalkthroughs[name]; !ok {
			t.Errorf("walkthrough %q (%s:%d) is unknown to the test: add it to readmeWalkthroughs", name, walks[name][0].page, walks[name][0].line)
		}
	}
	// Each walkthrough starts before its subtest pauses for t.Parallel, so
	// all of them run at once whatever go test's -parallel: they mostly
	// wait for the commands they run.
	_, errBash := exec.LookPath("bash")
	for _, name := range slices.Sorted(maps.Keys(readmeWalkthroughs)) {
		t.Run("walkthrough/"+name, func(t *testing.T) {
			spec := readmeWalkthroughs[name]
			if len(walks[name]) == 0 {
				t.Fatalf("no page of %v has a walkthrough %q", docPages, name)
			}
			if testing.Short() {
				t.Skip("-short: the walkthroughs run commands for ~40 s")
			}
			if errBash != nil {
				t.Skipf("no bash: %v", errBash)
			}
			for _, v := range spec.needs {
				testenv.Require(t, v, "the tools and servers scripts/test.sh provides")
			}
			w := startReadmeWalkthrough(t, root, name, walks[name], spec)
			t.Parallel()
			w.wait(t)
			mu.Lock()
			updates = append(updates, w.updates...)
			mu.Unlock()
		})
	}
}

// readmeWalkSpec is what a walkthrough needs from the test.
type readmeWalkSpec struct {
	// needs are the RJTEST_ variables whose absence skips it (fails it
	// under CI): the tools and servers scripts/test.sh provides.
	needs []string
	// subst are paths the README names that the test replaces by folders
	// of its own (see readmeSubst).
	subst []string
	// servers are substituted folders the walkthrough starts the test
	// servers in (scripts/servers.sh start DIR): the test stops them even
	// when the walkthrough fails.
	servers []string
}

// readmeWalkthroughs lists the README's walkthroughs. The demo's folder
// is under HOME, a fresh folder per walkthrough. The documented
// substitution: /tmp/rj, where the AWS walkthrough starts its servers,
// becomes a per-test folder, so that two test processes on one machine,
// or a leftover /tmp/rj (whose S3 data would survive into the next
// start), cannot change what they print.
var readmeWalkthroughs = map[string]readmeWalkSpec{
	"quick-start": {needs: []string{testenv.EnvDuckDB}},
	"local":       {needs: []string{testenv.EnvDuckDB}},
	"aws-local": {needs: []string{testenv.EnvDynamoDB, testenv.EnvS3},
		subst: []string{"/tmp/rj"}, servers: []string{"/tmp/rj"}},
}

// startReadmeWalkthrough prepares the walkthrough's folders, environment
// and substitutions, and starts it.
func startReadmeWalkthrough(t *testing.T, root, name string, steps []readmeStep, spec readmeWalkSpec) *readmeWalk {
	tmp := t.TempDir()
	w := &readmeWalk{name: name, steps: steps, root: root, update: *updateDocs,
		home: filepath.Join(tmp, "home"), out: filepath.Join(tmp, "out")}
	for _, d := range []string{w.home, w.out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range spec.subst {
		w.subst = append(w.subst, readmeSubst{
			re: regexp.MustCompile(regexp.QuoteMeta(p) + `\b`), readme: p, dir: filepath.Join(tmp, filepath.Base(p)),
		})
	}
	for _, p := range spec.servers {
		dir := filepath.Join(tmp, filepath.Base(p))
		t.Cleanup(func() {
			if _, err := os.Stat(filepath.Join(dir, "pids")); err == nil {
				out, err := exec.Command(filepath.Join(root, "scripts", "servers.sh"), "stop", dir).CombinedOutput()
				if err != nil {
					t.Errorf("servers.sh stop %s: %v\n%s", dir, err, out)
				}
			}
		})
	}
	w.env = readmeEnv(t, w.home)
	if err := w.start(5 * time.Minute); err != nil {
		t.Fatalf("walkthrough %s: %v", name, err)
	}
	t.Cleanup(func() { <-w.done }) // before its folders are removed
	return w
}

// readmeEnv is the walkthrough's environment: HOME a fresh folder (so
// ~/billing-trial is per test), PATH, TMPDIR, the Go variables (GOCACHE,
// GOMODCACHE and GOPATH pinned, since their defaults live under HOME), the
// RJTEST_ variables and the developer's git config. Nothing else: no
// locale, no AWS or REPORTJOB_ variables of the developer's.
func readmeEnv(t *testing.T, home string) []string {
	env := []string{"HOME=" + home}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "TMPDIR" || k == "GIT_CONFIG_GLOBAL" || strings.HasPrefix(k, "GO") || strings.HasPrefix(k, "RJTEST_") {
			env = append(env, kv)
		}
	}
	// The developer's git settings (safe.directory...) are not under the
	// new HOME: go build's VCS stamping may need them.
	if _, ok := os.LookupEnv("GIT_CONFIG_GLOBAL"); !ok {
		if h, err := os.UserHomeDir(); err == nil {
			if _, err := os.Stat(filepath.Join(h, ".gitconfig")); err == nil {
				env = append(env, "GIT_CONFIG_GLOBAL="+filepath.Join(h, ".gitconfig"))
			}
		}
	}
	vars := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS", "GOTOOLCHAIN"}
	out, err := exec.Command("go", append([]string{"env"}, vars...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	for i, v := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if i < len(vars) && v != "" {
			env = append(env, vars[i]+"="+v)
		}
	}
	return env
}

// readmeTable returns the rows (cells trimmed, `\|` unescaped) of the
// first table in the section under heading whose first header cell is
// first, and the page it is in.
func readmeTable(s *docSet, heading, first string) ([][]string, *readmeDoc, error) {
	for _, doc := range s.pages {
		if rows := doc.table(heading, first); rows != nil {
			return rows, doc, nil
		}
	}
	return nil, nil, fmt.Errorf("no page of %v has a table with a %q column under %q", docPages, first, heading)
}

// table is readmeTable for one page: nil when it has no such table.
func (doc *readmeDoc) table(heading, first string) [][]string {
	for _, h := range doc.headings {
		if h.text != heading {
			continue
		}
		var rows [][]string
		for _, line := range strings.Split(doc.sectionProse(h), "\n") {
			if !strings.HasPrefix(line, "|") {
				if len(rows) > 0 {
					break
				}
				continue
			}
			line = strings.ReplaceAll(strings.Trim(line, "|"), `\|`, "\x00")
			var cells []string
			for _, c := range strings.Split(line, "|") {
				cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")))
			}
			if len(rows) == 0 && cells[0] != first {
				continue
			}
			rows = append(rows, cells)
		}
		if len(rows) > 2 {
			return rows[2:] // after the header and the |---| line
		}
	}
	return nil
}

var flagRE = regexp.MustCompile(`(?m)(?:^|[\s\[(` + "`" + `])--?([a-z][a-z-]*)`)

func flagSet(s string) []string {
	var out []string
	for _, m := range flagRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkReadmeCommands checks the "Command line reference" table against
// `reportjob help` and each command's -h: the same commands, and for each
// the same flags in the table, in help and in the flag set.
func checkReadmeCommands(s *docSet) (problems []string) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"help"}, nil, &out, &errb); code != 0 {
		return []string{fmt.Sprintf("reportjob help: exit %d: %s", code, errb.String())}
	}
	helpArgs := map[string]string{}
	lines := strings.Split(out.String(), "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   ") && i+1 < len(lines) {
			helpArgs[f[0]] = lines[i+1]
		}
	}
	rows, doc, err := readmeTable(s, "Command line reference", "command")
	if err != nil {
		return []string{err.Error()}
	}
	table := map[string]string{}
	for _, row := range rows {
		table[strings.Trim(row[0], "`")] = row[1]
	}
	for name, args := range table {
		h, ok := helpArgs[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: command %q is not in `reportjob help`", doc.file, name))
			continue
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{name, "-h"}, nil, &stdout, &stderr); code != 0 {
			problems = append(problems, fmt.Sprintf("reportjob %s -h: exit %d: %s", name, code, stderr.String()))
		}
		var defined []string
		for _, l := range strings.Split(stderr.String(), "\n") {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  -") {
				defined = append(defined, strings.TrimPrefix(f[0], "-"))
			}
		}
		slices.Sort(defined)
		if got := flagSet(args); !slices.Equal(got, defined) {
			problems = append(problems, fmt.Sprintf("%s: %s flags %v, the command's %v", doc.file, name, got, defined))
		}
		if got := flagSet(h); !slices.Equal(got, defined) {
			problems = append(problems, fmt.Sprintf("`reportjob help` shows %s flags %v, the command has %v", name, got, defined))
		}
	}
	for name := range helpArgs {
		if _, ok := table[name]; !ok {
			problems = append(problems, fmt.Sprintf("`reportjob help` lists %q, the command table of %s does not", name, doc.file))
		}
	}
	return problems
}

// checkReadmeConfig checks the "Configuration reference" table against
// the keys of internal/config and their defaults.
func checkReadmeConfig(s *docSet) (problems []string) {
	rows, doc, err := readmeTable(s, "Configuration reference", "key")
	if err != nil {
		return []string{err.Error()}
	}
	table := map[string]string{}
	for _, row := range rows {
		table[strings.Trim(row[0], "`")] = strings.Trim(row[1], "`")
	}
	for _, k := range config.Keys() {
		def, ok := table[k.Path]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("config key %s is not in the configuration table of %s", k.Path, doc.file))
		case def != k.Default:
			problems = append(problems, fmt.Sprintf("%s: %s defaults to %s; internal/config: %s", doc.file, k.Path, def, k.Default))
		}
		delete(table, k.Path)
	}
	for k := range table {
		problems = append(problems, fmt.Sprintf("the configuration table of %s has %s, which is not a key of internal/config", doc.file, k))
	}
	return problems
}

// checkReadmeQueries checks that every ```sql block of "Querying the
// reports" is run through scripts/query.sh by a walkthrough, or that the
// section says it was not run.
func checkReadmeQueries(s *docSet) (problems []string) {
	collapse := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	var run []string
	for _, st := range s.steps() {
		if st.walkthrough != "" && st.skip == "" && strings.Contains(st.cmd, "query.sh") {
			run = append(run, collapse(st.cmd))
		}
	}
	doc, section, err := s.section("Querying the reports")
	if err != nil {
		return []string{err.Error()}
	}
	saysNotRun := regexp.MustCompile(`(?i)\bnot\s+run\b`).MatchString(doc.sectionProse(section))
	for _, b := range doc.blocks {
		if b.lang != "sql" || b.section != section.text {
			continue
		}
		sql := collapse(b.body)
		if !slices.ContainsFunc(run, func(c string) bool { return strings.Contains(c, sql) }) && !saysNotRun {
			problems = append(problems, fmt.Sprintf("%s:%d: this SQL is not run by a walkthrough, and the section does not say it was not run", doc.file, b.line))
		}
	}
	return problems
}
