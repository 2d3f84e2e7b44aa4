package main

import (
	"fmt"
	"io"
	"strings"
)

// table is a terminal table: columns padded to their widest cell, text
// left-aligned and truncated to max runes with "…", numbers
// right-aligned.
type table struct {
	cols []column
	rows [][]string
}

type column struct {
	head  string
	right bool
	max   int // 0: no limit
}

func (t *table) add(cells ...string) {
	for i, c := range t.cols {
		cells[i] = strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return '?' // no control character reaches the terminal
			}
			return r
		}, cells[i])
		if rs := []rune(cells[i]); c.max > 0 && len(rs) > c.max {
			cells[i] = string(rs[:c.max-1]) + "…"
		}
	}
	t.rows = append(t.rows, cells)
}

func (t *table) print(w io.Writer) {
	width := make([]int, len(t.cols))
	for i, c := range t.cols {
		width[i] = len([]rune(c.head))
		for _, r := range t.rows {
			width[i] = max(width[i], len([]rune(r[i])))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range t.cols {
			pad := strings.Repeat(" ", width[i]-len([]rune(cells[i])))
			if i > 0 {
				b.WriteString("  ")
			}
			if c.right {
				b.WriteString(pad + cells[i])
			} else if i < len(t.cols)-1 {
				b.WriteString(cells[i] + pad)
			} else {
				b.WriteString(cells[i])
			}
		}
		fmt.Fprintln(w, b.String())
	}
	heads := make([]string, len(t.cols))
	for i, c := range t.cols {
		heads[i] = c.head
	}
	line(heads)
	for _, r := range t.rows {
		line(r)
	}
}

// quoteArg quotes s for a POSIX shell when it needs it.
func quoteArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/=:", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
