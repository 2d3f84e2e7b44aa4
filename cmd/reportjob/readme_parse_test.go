package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// This file reads a page of the documentation (README.md, docs/*.md) into
// what readme_test.go checks and runs: its headings, code blocks and the
// walkthrough markers (HTML comments, invisible when rendered):
//
//	<!-- walkthrough: NAME -->  the ```sh blocks that follow belong to the
//	                            walkthrough NAME (continued when NAME was used
//	                            before), until the next walkthrough marker or
//	                            the next heading at or above the level of the
//	                            section the marker is in, or the end of the
//	                            page. A walkthrough may go on in a later page
//	                            (docPages orders them): its blocks run in one
//	                            shell, page after page, so the later page's
//	                            blocks start in the folder, with the variables,
//	                            the earlier page's left
//	<!-- skip: REASON -->       the next ```sh block is not run
//	<!-- exit N -->             the next block's last command must exit N
//	<!-- background: stop with SIGINT after Ns -->
//	                            the next block runs in the background, gets
//	                            SIGINT after N seconds, must exit 0 and end its
//	                            stdout with a JSON summary line
//	<!-- file: NAME -->         informational: the next block writes NAME
//	<!-- run: COMMAND -->       the next ```text block is COMMAND's stdout
//
// A ```text block right after a ```sh block (only blank lines between) is
// that block's expected stdout. An unknown marker, a block marker not
// followed by a code block, and a ```sh block outside every walkthrough
// that is not skipped are errors.

// mdHeading is a Markdown heading.
type mdHeading struct {
	line  int
	level int
	text  string
}

// mdBlock is a fenced code block.
type mdBlock struct {
	line    int    // line of the opening fence
	lang    string // the info string: sh, text, sql...
	body    string // the lines between the fences, each ending in "\n"
	section string // text of the nearest heading above
}

// readmeStep is a command the README shows: a ```sh block, or the COMMAND
// of a run marker.
type readmeStep struct {
	page        string // the page, relative to the repository
	line        int    // line of the block (or of the run marker)
	walkthrough string
	cmd         string
	skip        string // reason, when marked skip
	exit        int    // what the last command must exit with
	hasExit     bool
	background  time.Duration // > 0: run in the background, SIGINT after it
	file        string        // informational: the file the block writes
	expect      string        // expected stdout, when hasExpect
	hasExpect   bool
	expectLine  int
}

// readmeDoc is one page of the documentation, parsed.
type readmeDoc struct {
	file     string // relative to the repository, with "/"
	lines    []string
	headings []mdHeading
	blocks   []mdBlock
	steps    []readmeStep
	errs     []string // grammar errors (line: message)
}

var (
	markerRE     = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)
	headingRE    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	exitRE       = regexp.MustCompile(`^exit\s+(\d+)$`)
	backgroundRE = regexp.MustCompile(`^stop with SIGINT after (\d+)s$`)
	headPipeRE   = regexp.MustCompile(`\|\s*head\b`)
)

// parseReadme parses the README's text.
func parseReadme(text string) *readmeDoc { return parseDoc("README.md", text) }

// parseDoc parses the text of the page file (a path relative to the
// repository).
func parseDoc(file, text string) *readmeDoc {
	d := &readmeDoc{file: file, lines: strings.Split(text, "\n")}
	var (
		walk      string // current walkthrough, "" outside
		walkLevel int    // level of the section its marker is in
		level     int    // level of the current section
		section   string
		pending   []string // block markers waiting for their block, as "line: marker"
		pendLine  int
		pend      readmeStep // the modifiers they set
		pendRun   string     // a run marker's command
		lastSh    = -1       // index in steps of the ```sh block just closed, until other text
		inFence   bool
		cur       mdBlock
		body      strings.Builder
		errf      = func(line int, format string, a ...any) {
			d.errs = append(d.errs, fmt.Sprintf("%s:%d: ", d.file, line)+fmt.Sprintf(format, a...))
		}
		knownWalks = map[string]bool{}
	)
	for i, raw := range d.lines {
		n := i + 1
		line := strings.TrimRight(raw, " \t\r")
		if inFence {
			if strings.TrimSpace(line) == "```" {
				inFence = false
				cur.body = body.String()
				d.blocks = append(d.blocks, cur)
				lastSh = d.closeBlock(cur, walk, pendLine, pend, pendRun, lastSh, errf)
				pending, pend, pendRun = nil, readmeStep{}, ""
				continue
			}
			body.WriteString(raw + "\n")
			continue
		}
		switch {
		case strings.TrimSpace(line) == "":
			continue
		case strings.HasPrefix(line, "```"):
			inFence = true
			body.Reset()
			cur = mdBlock{line: n, lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), section: section}
			if len(pending) == 0 {
				pendLine = n
			}
			continue
		}
		// Any other text ends the "right after a sh block" window.
		lastSh = -1
		if m := headingRE.FindStringSubmatch(line); m != nil {
			if len(pending) > 0 {
				errf(pendLine, "%s is not followed by a code block", pending[0])
				pending, pend, pendRun = nil, readmeStep{}, ""
			}
			level, section = len(m[1]), m[2]
			d.headings = append(d.headings, mdHeading{line: n, level: level, text: section})
			if walk != "" && level <= walkLevel {
				walk = ""
			}
			continue
		}
		m := markerRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			if len(pending) > 0 {
				errf(pendLine, "%s is not followed by a code block", pending[0])
				pending, pend, pendRun = nil, readmeStep{}, ""
			}
			continue
		}
		name, value, _ := strings.Cut(m[1], ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if name == "walkthrough" {
			if value == "" {
				errf(n, "walkthrough marker without a name")
			}
			walk, walkLevel = value, level
			knownWalks[value] = true
			continue
		}
		if len(pending) == 0 {
			pendLine = n
		}
		pending = append(pending, fmt.Sprintf("marker %q (line %d)", m[1], n))
		switch {
		case name == "skip":
			pend.skip = value
			if value == "" {
				pend.skip = "(no reason given)"
			}
		case exitRE.MatchString(name):
			pend.hasExit = true
			pend.exit, _ = strconv.Atoi(exitRE.FindStringSubmatch(name)[1])
		case name == "background":
			bm := backgroundRE.FindStringSubmatch(value)
			if bm == nil {
				errf(n, "background marker %q: want \"background: stop with SIGINT after Ns\"", m[1])
				continue
			}
			secs, _ := strconv.Atoi(bm[1])
			pend.background = time.Duration(secs) * time.Second
		case name == "file":
			pend.file = value
		case name == "run":
			pendRun = value
		default:
			errf(n, "unknown marker %q (known: walkthrough, skip, exit N, background, file, run)", m[1])
		}
	}
	if inFence {
		errf(cur.line, "code block never closed")
	}
	if len(pending) > 0 {
		errf(pendLine, "%s is not followed by a code block", pending[0])
	}
	return d
}

// closeBlock records a closed code block's step, or attaches it as the
// expected output of the step before. It returns the new lastSh.
func (d *readmeDoc) closeBlock(b mdBlock, walk string, markLine int, pend readmeStep, runCmd string, lastSh int,
	errf func(int, string, ...any)) int {
	switch b.lang {
	case "sh":
		if runCmd != "" {
			errf(markLine, "a run marker must precede a ```text block")
		}
		st := pend
		st.page, st.line, st.walkthrough, st.cmd = d.file, b.line, walk, b.body
		if walk == "" && st.skip == "" {
			errf(b.line, "```sh block outside every walkthrough: mark it with <!-- walkthrough: NAME --> or <!-- skip: reason -->")
		}
		if st.skip == "" && headPipeRE.MatchString(st.cmd) {
			errf(b.line, "a pipe into head: under pipefail the command before it can die of SIGPIPE (exit 141) when head stops reading; use sed -n 1,Np")
		}
		if st.hasExit && strings.Contains(st.cmd, "<<") {
			errf(b.line, "an exit marker cannot apply to a block with a here-document")
		}
		if st.background > 0 && st.hasExit {
			errf(b.line, "a block cannot be both background and exit N")
		}
		d.steps = append(d.steps, st)
		return len(d.steps) - 1
	case "text":
		if runCmd != "" {
			st := pend
			st.page, st.line, st.walkthrough, st.cmd = d.file, markLine, walk, runCmd+"\n"
			st.expect, st.hasExpect, st.expectLine = b.body, true, b.line
			if walk == "" {
				errf(markLine, "run marker outside every walkthrough")
			}
			d.steps = append(d.steps, st)
			return -1
		}
		if lastSh >= 0 {
			d.steps[lastSh].expect, d.steps[lastSh].hasExpect, d.steps[lastSh].expectLine = b.body, true, b.line
		}
	case "bash", "shell", "console", "zsh", "":
		errf(b.line, "code block with info string %q: write commands as ```sh (the README test runs them)", b.lang)
	}
	if pend != (readmeStep{}) || runCmd != "" {
		errf(markLine, "markers before a ```%s block: they apply to ```sh blocks (run: to ```text)", b.lang)
	}
	return -1
}

// walkthroughs returns the steps of each walkthrough, in document order.
func (d *readmeDoc) walkthroughs() map[string][]readmeStep {
	out := map[string][]readmeStep{}
	for _, s := range d.steps {
		if s.walkthrough != "" {
			out[s.walkthrough] = append(out[s.walkthrough], s)
		}
	}
	return out
}

// sectionProse returns the text lines (code blocks left out) of the section
// under the heading h, up to the next heading at its level or above.
func (d *readmeDoc) sectionProse(h mdHeading) string {
	var b strings.Builder
	inFence := false
	for i := h.line; i < len(d.lines); i++ {
		line := d.lines[i]
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil && len(m[1]) <= h.level {
			break
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
