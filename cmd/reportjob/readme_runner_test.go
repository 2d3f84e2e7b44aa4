package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The README test's own tests: the grammar errors it must report, and a
// small walkthrough run through bash whose differences it must find.

// recorder is a reporter that keeps what it was told.
type recorder struct{ errs, logs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}
func (r *recorder) Logf(format string, a ...any) { r.logs = append(r.logs, fmt.Sprintf(format, a...)) }

const fence = "```"

func TestReadmeGrammar(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string
	}{
		{"sh outside walkthroughs", "# A\n" + fence + "sh\necho\n" + fence + "\n", "outside every walkthrough"},
		{"walkthrough ends with its section", "## A\n<!-- walkthrough: w -->\n## B\n" + fence + "sh\necho\n" + fence + "\n", "outside every walkthrough"},
		{"unknown marker", "<!-- walkthru: w -->\n" + fence + "sh\necho\n" + fence + "\n", "unknown marker"},
		{"marker without block", "## A\n<!-- walkthrough: w -->\n<!-- exit 1 -->\ntext\n", "not followed by a code block"},
		{"bash block", "## A\n<!-- walkthrough: w -->\n" + fence + "bash\necho\n" + fence + "\n", "write commands as"},
		{"bad background", "## A\n<!-- walkthrough: w -->\n<!-- background: 3s -->\n" + fence + "sh\necho\n" + fence + "\n", "background marker"},
		{"exit with heredoc", "## A\n<!-- walkthrough: w -->\n<!-- exit 1 -->\n" + fence + "sh\ncat <<EOF\nx\nEOF\n" + fence + "\n", "here-document"},
		{"head", "## A\n<!-- walkthrough: w -->\n" + fence + "sh\nseq 3 | head -1\n" + fence + "\n", "SIGPIPE"},
		{"unclosed", "## A\n<!-- walkthrough: w -->\n" + fence + "sh\necho\n", "never closed"},
	} {
		d := parseReadme(c.doc)
		if len(d.errs) == 0 || !strings.Contains(strings.Join(d.errs, "\n"), c.want) {
			t.Errorf("%s: errors %q, want one with %q", c.name, d.errs, c.want)
		}
	}
	ok := "## A\n<!-- walkthrough: w -->\n### sub\n" + fence + "sh\necho hi\n" + fence + "\n\n" + fence + "text\nhi\n" + fence + "\n" +
		"<!-- skip: no -->\n" + fence + "sh\nfalse\n" + fence + "\n## B\n<!-- skip: elsewhere -->\n" + fence + "sh\nx\n" + fence + "\n"
	d := parseReadme(ok)
	if len(d.errs) > 0 {
		t.Fatalf("errors: %q", d.errs)
	}
	w := d.walkthroughs()["w"]
	if len(w) != 2 || w[0].expect != "hi\n" || w[1].skip != "no" || len(d.steps) != 3 || d.steps[2].walkthrough != "" {
		t.Errorf("steps: %+v", d.steps)
	}
}

func TestReadmeMatch(t *testing.T) {
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"a\n...\nd", "a\nb\nc\nd", true},
		{"a\n...\nd", "a\nd", true},
		{"a\n...", "a", true},
		{"a\n...\nd", "a\nb\nc", false},
		{"a\nb", "a\nb\nc", false},
		{`{"run_id":"5727fed64698","duration_ms":3}`, `{"run_id":"0123456789ab","duration_ms":12345}`, true},
		{"lease:        free (released by vm/4502/dba836f424c6)", "lease:        free (released by host-1/77/0123456789ab)", true},
		{"20260301T1000Z  ok (revision 2, 5 items)", "20260301T1000Z  ok (revision 1, 5 items)", false},
	} {
		if got := matchLines(normalizeOutput(c.want), normalizeOutput(c.got)); got != c.ok {
			t.Errorf("match(%q, %q) = %v, want %v", c.want, c.got, got, c.ok)
		}
	}
	if p, l := splitLastCommand("a \\\n  b\nc \\\n  d\n"); p != "a \\\n  b\n" || l != "c \\\n  d" {
		t.Errorf("splitLastCommand: %q, %q", p, l)
	}
	// The demo reports on yesterday: its day, month and the statement file
	// named by its content are put back as the README shows them.
	w := &readmeWalk{home: "/h"}
	shown := `{"day":"2026-11-21"} period=20261121T0000Z month=2026-11/statement-77c4c9dea7072287.csv`
	printed := `{"day":"2027-01-01"} period=20270101T0000Z month=2027-01/statement-0123456789abcdef.csv`
	if got := w.fromTest(printed, shown); got != shown {
		t.Errorf("fromTest: %q, want %q", got, shown)
	}
	if s := headingSlug("1. Build the binary, and `go`"); s != "1-build-the-binary-and-go" {
		t.Errorf("slug %q", s)
	}
}

// TestReadmeRunner runs a small walkthrough through bash: state carries
// over between blocks, exit N and background blocks behave as the README
// test's grammar says, and a wrong expected output, a failing block and a
// wrong exit code are each reported.
func TestReadmeRunner(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	run := func(doc string) *recorder {
		t.Helper()
		d := parseReadme(doc)
		if len(d.errs) > 0 {
			t.Fatalf("grammar: %q", d.errs)
		}
		return runTestWalk(t, d.walkthroughs()["w"])
	}
	sh := func(body string) string { return fence + "sh\n" + body + "\n" + fence + "\n" }
	text := func(body string) string { return "\n" + fence + "text\n" + body + "\n" + fence + "\n" }
	head := "## A\n<!-- walkthrough: w -->\n"

	good := head + sh("X=1; mkdir -p /tmp/x && cd /tmp/x && pwd") + text("/tmp/x") +
		sh(`echo "x=$X ~=$HOME"`) + text("x=1 ~=/home/you") +
		"<!-- exit 3 -->\n" + sh("true\nsh -c 'echo no; exit 3'") + text("no") +
		"<!-- background: stop with SIGINT after 1s -->\n" + sh(`trap 'echo '"'"'{"command":"bg"}'"'"'; exit 0' INT; while :; do sleep 0.1; done`) +
		"<!-- run: echo a; echo b; echo c -->\n" + text("a\n...")
	if r := run(good); len(r.errs) > 0 {
		t.Errorf("a good walkthrough: %q", r.errs)
	}
	for _, c := range []struct{ name, doc, want string }{
		{"wrong output", head + sh("echo 1") + text("2"), "the output differs"},
		{"failing block", head + sh("false\necho after") + sh("echo never"), "a command failed"},
		{"failing pipeline", head + sh("false | cat"), "a command failed"},
		{"wrong exit", head + "<!-- exit 4 -->\n" + sh("sh -c 'exit 3'"), "exited 3, want 4"},
		{"earlier command of an exit block", head + "<!-- exit 4 -->\n" + sh("false\nsh -c 'exit 4'"), "a command failed"},
		{"background without summary", head + "<!-- background: stop with SIGINT after 1s -->\n" + sh("sleep 5"), "want 0"},
	} {
		r := run(c.doc)
		if !strings.Contains(strings.Join(r.errs, "\n"), c.want) {
			t.Errorf("%s: errors %q, want one with %q", c.name, r.errs, c.want)
		}
	}
}

// runTestWalk runs steps as the walkthrough "w" in a temp folder, /tmp/x
// standing for a folder of its own, and returns what it reported.
func runTestWalk(t *testing.T, steps []readmeStep) *recorder {
	t.Helper()
	tmp := t.TempDir()
	w := &readmeWalk{name: "w", steps: steps, root: tmp, home: filepath.Join(tmp, "home"),
		out: filepath.Join(tmp, "out"), env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(tmp, "home")}}
	w.subst = []readmeSubst{{re: regexp.MustCompile(`/tmp/x\b`), readme: "/tmp/x", dir: filepath.Join(tmp, "x")}}
	for _, p := range []string{w.home, w.out} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.start(time.Minute); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	w.wait(r)
	return r
}

// TestDocsWalkthroughAcrossPages: a walkthrough that goes on in a later
// page runs in one shell, pages in docPages order: the later page's blocks
// start in the folder, with the variables, the earlier page left; a page
// ends the walkthrough its marker started (a block after the end of the
// walkthrough's section on the same page is outside it); and a failure
// names the page and line.
func TestDocsWalkthroughAcrossPages(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	sh := func(body string) string { return fence + "sh\n" + body + "\n" + fence + "\n" }
	text := func(body string) string { return "\n" + fence + "text\n" + body + "\n" + fence + "\n" }
	docs := &docSet{pages: []*readmeDoc{
		parseDoc("README.md", "# R\n<!-- walkthrough: w -->\n"+sh("V=first; mkdir -p /tmp/x/a && cd /tmp/x/a")),
		parseDoc("docs/one.md", "# One\n## Q\n<!-- walkthrough: w -->\n"+sh(`echo "$V $(basename "$PWD")"`)+text("first a")+
			"## Other\n<!-- skip: not part of w -->\n"+sh("exit 1")),
		parseDoc("docs/two.md", "# Two\n<!-- walkthrough: w -->\n"+sh("false")),
	}}
	for _, d := range docs.pages {
		if len(d.errs) > 0 {
			t.Fatalf("grammar: %q", d.errs)
		}
	}
	steps := docs.walkthroughs()["w"]
	var at []string
	for _, st := range steps {
		at = append(at, fmt.Sprintf("%s:%d", st.page, st.line))
	}
	if want := []string{"README.md:3", "docs/one.md:4", "docs/two.md:3"}; !slices.Equal(at, want) {
		t.Fatalf("steps at %v, want %v", at, want)
	}
	if r := runTestWalk(t, steps[:2]); len(r.errs) > 0 {
		t.Errorf("across two pages: %q", r.errs)
	}
	r := runTestWalk(t, steps)
	if got := strings.Join(r.errs, "\n"); !strings.Contains(got, "docs/two.md:3: block a command failed") {
		t.Errorf("a failing block of the second page: errors %q, want one naming docs/two.md:3", got)
	}
}

// TestReadmeChecks: each table, page and link check finds a change to the
// real documentation that makes it wrong.
func TestReadmeChecks(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	for _, c := range []struct {
		name, page, old, new string
		check                func(*docSet) []string
		want                 string
	}{
		{"flag", "docs/reference.md", "`[--json] [--now T]`", "`[--json]`", checkReadmeCommands, "docs/reference.md: status flags"},
		{"command", "docs/reference.md", "| `version` |", "| `versions` |", checkReadmeCommands, `"versions" is not in`},
		{"config default", "docs/reference.md", "| `report.lateness` | `2m` | wait", "| `report.lateness` | `5m` | wait", checkReadmeConfig, "report.lateness defaults to 5m"},
		{"config key", "docs/reference.md", "| `report.concurrency` |", "| `report.parallelism` |", checkReadmeConfig, "report.concurrency is not in"},
		{"anchor in the page", "docs/reports.md", "(#granting-an-agency-its-folder)", "(#granting-an-agency)", checkDocLinks, "docs/reports.md:"},
		{"anchor in another page", "docs/tutorial.md", "(reference.md#exit-codes)", "(reference.md#exit-code)", checkDocLinks, "link reference.md#exit-code: docs/reference.md has no such heading"},
		{"anchor from the README", "README.md", "(docs/reports.md#money)", "(docs/reports.md#monies)", checkDocLinks, "link docs/reports.md#monies: docs/reports.md has no such heading"},
		{"anchor into RELIABILITY.md", "docs/reference.md", "(../RELIABILITY.md#config-change-matrix)", "(../RELIABILITY.md#config-changes)", checkDocLinks, "RELIABILITY.md has no such heading"},
		{"RELIABILITY.md into a moved README section", "RELIABILITY.md", "| README drifting from the binary |", "| README drifting from the binary ([money](README.md#money)) |", checkDocLinks, "link README.md#money: README.md has no such heading"},
		{"page", "docs/tutorial.md", "(reference.md#exit-codes)", "(referenc.md#exit-codes)", checkDocLinks, "docs/referenc.md"},
		{"file", "README.md", "(scripts/versions.sh)", "(scripts/version.sh)", checkDocLinks, "scripts/version.sh"},
		{"code from a page", "docs/producers.md", "(../internal/money/iso4217.go)", "(../internal/money/iso4217s.go)", checkDocLinks, "internal/money/iso4217s.go"},
		{"not linked from the README", "README.md", "(docs/aws.md)", "(RELIABILITY.md)", checkDocPages, "README.md does not link to docs/aws.md"},
		{"sql", "docs/reports.md", "were not run against them", "were checked", checkReadmeQueries, "docs/reports.md:"},
	} {
		found := false
		docs, err := loadDocs(root, func(file, text string) string {
			if file != c.page {
				return text
			}
			found = strings.Contains(text, c.old)
			return strings.Replace(text, c.old, c.new, 1)
		})
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			t.Errorf("%s: %s has no %q", c.name, c.page, c.old)
			continue
		}
		got := strings.Join(c.check(docs), "\n")
		if got == "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want one with %q", c.name, got, c.want)
		}
	}

	// A page of docs/ that docPages does not list, and that the README
	// does not link to.
	docs, err := loadDocs(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(docPageProblems(docs, []string{"docs/tutorial.md", "docs/extra.md"}), "\n")
	for _, want := range []string{"docs/extra.md is not in docPages", "README.md does not link to docs/extra.md"} {
		if !strings.Contains(got, want) {
			t.Errorf("an unlisted page: problems %q, want one with %q", got, want)
		}
	}
	if strings.Contains(got, "docs/tutorial.md") {
		t.Errorf("a listed page: problems %q", got)
	}
}

// TestDocsUpdate: -update-docs rewrites a differing output block with what
// was printed, keeping the page's run ids and durations, and leaves the
// rest of the page as it was.
func TestDocsUpdate(t *testing.T) {
	got := keepShown(`{"run_id":"0123456789ab","n":2,"duration_ms":7}`+"\n", `{"run_id":"5727fed64698","n":1,"duration_ms":3}`)
	if want := `{"run_id":"5727fed64698","n":2,"duration_ms":3}` + "\n"; got != want {
		t.Errorf("keepShown: %q, want %q", got, want)
	}
	root := t.TempDir()
	page := "# A\n" + fence + "sh\necho 1\n" + fence + "\n\n" + fence + "text\nold\nlines\n" + fence + "\n" +
		fence + "sh\necho 2\n" + fence + "\n\n" + fence + "text\nkept\n" + fence + "\n"
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	d := parseDoc("docs/a.md", page)
	if err := applyDocUpdates(root, []docUpdate{{page: "docs/a.md", line: d.steps[0].expectLine, body: "new\n"}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "docs", "a.md"))
	want := strings.Replace(page, "old\nlines\n", "new\n", 1)
	if string(b) != want {
		t.Errorf("page:\n%s\nwant:\n%s", b, want)
	}
	if err := applyDocUpdates(root, []docUpdate{{page: "docs/a.md", line: 2, body: "x"}}); err == nil {
		t.Error("a rewrite of a line that is no ```text block: no error")
	}
}
