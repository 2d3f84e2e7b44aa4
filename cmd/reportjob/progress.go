package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/report"
)

// progressBar is the progress bar of a terminal's stderr, and the writer
// the logs go through there: a log line clears the bar, is written, and
// the bar is drawn again under it, so the two never share a line. It is
// safe for concurrent use (the job logs from several goroutines).
type progressBar struct {
	mu      sync.Mutex
	w       io.Writer
	line    string // the bar as last drawn; "" when none is shown
	started time.Time
	now     func() time.Time
}

const (
	barWidth = 20
	// eraseLine returns to the start of the line and erases it (ANSI).
	eraseLine = "\r\x1b[2K"
)

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, now: time.Now}
}

// Write writes one log line (slog writes each record in one call) above
// the bar.
func (b *progressBar) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.line == "" {
		return b.w.Write(p)
	}
	io.WriteString(b.w, eraseLine)
	n, err := b.w.Write(p)
	io.WriteString(b.w, b.line)
	return n, err
}

// set draws the bar for period i (0-based) of n, about to be built:
// "[######..............] period 12/72 20260302T1100Z  ETA 3m10s". The
// ETA is the time per period so far times the periods left; i == 0
// starts the clock.
func (b *progressBar) set(i, n int, what string, p report.Period) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if i == 0 || b.started.IsZero() {
		b.started = now
	}
	done := barWidth * i / max(n, 1)
	line := fmt.Sprintf("[%s%s] %s %d/%d %s", strings.Repeat("#", done), strings.Repeat(".", barWidth-done), what, i+1, n, p.Name())
	if i > 0 {
		eta := now.Sub(b.started) * time.Duration(n-i) / time.Duration(i)
		line += "  ETA " + eta.Round(time.Second).String()
	}
	b.line = line
	io.WriteString(b.w, eraseLine+line)
}

// clear erases the bar: what follows starts on a clean line.
func (b *progressBar) clear() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.line != "" {
		io.WriteString(b.w, eraseLine)
		b.line = ""
	}
}

// newLogger returns the logger writing to w at cfg's log.level: in
// cfg's log.format when it was set (file or environment), otherwise as
// text on a terminal (tty) and as JSON elsewhere.
func newLogger(cfg *config.Config, w io.Writer, tty bool) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level)) // validated by config.Load
	opts := &slog.HandlerOptions{Level: level}
	format := cfg.Log.Format
	if !cfg.Log.FormatSet && tty {
		format = "text"
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// isTerminal reports whether w is a terminal (for the progress bar).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
