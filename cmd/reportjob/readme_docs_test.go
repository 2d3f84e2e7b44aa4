package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// This file reads the documentation TestREADME checks (README.md and the
// pages of docs/, in the order their walkthroughs run) and checks its
// pages and links.

// docPages are the pages of the documentation TestREADME checks and runs,
// in the order their walkthroughs run: a walkthrough may go on from one
// page into a later one (the tutorial's folder is where docs/reports.md's
// queries run), in one shell. Every docs/*.md must be listed here.
var docPages = []string{
	"README.md",
	"docs/tutorial.md",
	"docs/producers.md",
	"docs/reports.md",
	"docs/statements.md",
	"docs/delivery.md",
	"docs/operations.md",
	"docs/reference.md",
	"docs/aws.md",
	"docs/development.md",
}

// docLinkedPages are pages whose links (and headings, for anchors) are
// checked, but that hold no walkthrough.
var docLinkedPages = []string{"RELIABILITY.md", "PERFORMANCE.md", "deploy/kubernetes/README.md"}

// docSet is the documentation, parsed: the pages in docPages order.
type docSet struct {
	root   string
	pages  []*readmeDoc
	linked []*readmeDoc
}

// loadDocs reads and parses the pages. edit, when not nil, may change a
// page's text first (the checks' own tests break a page on purpose).
func loadDocs(root string, edit func(file, text string) string) (*docSet, error) {
	s := &docSet{root: root}
	for _, list := range []struct {
		files []string
		into  *[]*readmeDoc
	}{{docPages, &s.pages}, {docLinkedPages, &s.linked}} {
		for _, f := range list.files {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
			if err != nil {
				return nil, fmt.Errorf("documentation page %s: %w", f, err)
			}
			text := string(b)
			if edit != nil {
				text = edit(f, text)
			}
			*list.into = append(*list.into, parseDoc(f, text))
		}
	}
	return s, nil
}

// steps returns every page's steps, pages in docPages order.
func (s *docSet) steps() []readmeStep {
	var out []readmeStep
	for _, d := range s.pages {
		out = append(out, d.steps...)
	}
	return out
}

// walkthroughs returns the steps of each walkthrough, pages in docPages
// order and each page in document order.
func (s *docSet) walkthroughs() map[string][]readmeStep {
	out := map[string][]readmeStep{}
	for _, st := range s.steps() {
		if st.walkthrough != "" {
			out[st.walkthrough] = append(out[st.walkthrough], st)
		}
	}
	return out
}

// section returns the page and the heading whose text is heading.
func (s *docSet) section(heading string) (*readmeDoc, mdHeading, error) {
	for _, d := range s.pages {
		for _, h := range d.headings {
			if h.text == heading {
				return d, h, nil
			}
		}
	}
	return nil, mdHeading{}, fmt.Errorf("no page of %v has a section %q", docPages, heading)
}

// page returns the parsed page file (relative to the repository, with
// "/"), nil when it is not one of docPages or docLinkedPages.
func (s *docSet) page(file string) *readmeDoc {
	for _, d := range append(slices.Clip(s.pages), s.linked...) {
		if d.file == file {
			return d
		}
	}
	return nil
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// checkDocPages checks that docPages names every page of docs/, and that
// README.md links to each one (a newcomer reaches every page from it).
func checkDocPages(s *docSet) (problems []string) {
	files, err := filepath.Glob(filepath.Join(s.root, "docs", "*.md"))
	if err != nil {
		return []string{err.Error()}
	}
	for i, f := range files {
		files[i] = "docs/" + filepath.Base(f)
	}
	return docPageProblems(s, files)
}

// docPageProblems is checkDocPages for the pages files (paths relative to
// the repository) found in docs/.
func docPageProblems(s *docSet, files []string) (problems []string) {
	linked := map[string]bool{}
	readme := s.page("README.md")
	for _, l := range readme.links() {
		path, _, _ := strings.Cut(l.target, "#")
		linked[path] = true
	}
	for _, f := range files {
		if !slices.Contains(docPages, f) {
			problems = append(problems, fmt.Sprintf("%s is not in docPages (readme_test.go): add it where its walkthroughs belong in the order", f))
		}
		if !linked[f] {
			problems = append(problems, fmt.Sprintf("README.md does not link to %s", f))
		}
	}
	return problems
}

// mdLink is a link of a page, outside code blocks.
type mdLink struct {
	line   int
	target string
}

// links returns the page's links, code blocks left out.
func (d *readmeDoc) links() []mdLink {
	var out []mdLink
	inFence := false
	for i, line := range d.lines {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, mdLink{i + 1, m[1]})
		}
	}
	return out
}

// anchors returns the GitHub anchors of the page's headings.
func (d *readmeDoc) anchors() map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, h := range d.headings {
		s := headingSlug(h.text)
		if n := seen[s]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	}
	return anchors
}

// checkDocLinks checks that every relative link of every page (and of
// RELIABILITY.md and PERFORMANCE.md) names a file of the repository, and
// every #anchor a heading of the page it names.
func checkDocLinks(s *docSet) (problems []string) {
	for _, d := range append(slices.Clip(s.pages), s.linked...) {
		for _, l := range d.links() {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			path, anchor, hasAnchor := strings.Cut(l.target, "#")
			file := d.file
			if path != "" {
				file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(d.file), path)))
				if strings.HasPrefix(file, "../") {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: outside the repository", d.file, l.line, l.target))
					continue
				}
				if _, err := os.Stat(filepath.Join(s.root, filepath.FromSlash(file))); err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: %v", d.file, l.line, l.target, err))
					continue
				}
			}
			if !hasAnchor {
				continue
			}
			target := s.page(file)
			if target == nil && strings.HasSuffix(file, ".md") {
				b, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(file)))
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: link %s: %v", d.file, l.line, l.target, err))
					continue
				}
				target = parseDoc(file, string(b))
			}
			if target == nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link %s: an anchor into a file that is not Markdown", d.file, l.line, l.target))
			} else if !target.anchors()[anchor] {
				problems = append(problems, fmt.Sprintf("%s:%d: link %s: %s has no such heading", d.file, l.line, l.target, file))
			}
		}
	}
	return problems
}

// headingSlug is GitHub's anchor of a heading: lower case, spaces to "-",
// punctuation other than "-" and "_" dropped.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
