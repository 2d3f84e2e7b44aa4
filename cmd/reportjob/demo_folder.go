package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/report"
)

// defaultDemoDir is the demo's folder when --dir is not given: under the
// user's own data folder, $XDG_DATA_HOME/reportjob/demo (by default
// ~/.local/share/reportjob/demo), never a shared path another user's demo
// would delete. Without a home folder it is ./reportjob-demo.
func defaultDemoDir(env []string) string {
	if d := getenv(env, "XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "reportjob", "demo")
	}
	home := getenv(env, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return "reportjob-demo"
	}
	return filepath.Join(home, ".local", "share", "reportjob", "demo")
}

// demoConfigName is the config the demo writes in its folder: with it,
// the folder is a working job that every command accepts as it is.
const demoConfigName = "config.yaml"

// writeDemoConfig writes the demo folder's config.yaml (paths relative to
// it) for a demo day and loads it, with env's REPORTJOB_* overrides: the
// demo runs on what the file says, so the commands that read it later see
// the job the demo ran.
func writeDemoConfig(dir string, day time.Time, agencies int, env []string) (*config.Config, error) {
	path := filepath.Join(dir, demoConfigName)
	statements, err := demoDocuments(dir, agencies)
	if err != nil {
		return nil, err
	}
	body := fmt.Sprintf(`# Written by reportjob demo: this folder is a working job on the embedded store.
# From this folder, or with --config %s:
#   reportjob status | statement | transactions --agency agency-0001 | verify --last 2d | run
# Relative paths are relative to this file's folder.
job_name: billing-report
store:
  backend: embedded
  embedded: {path: ./reportjob.db}
sink:
  url: file://./reports
report:
  start: %q
%s`, path, day.Format(time.DateOnly), statements)
	if err := os.WriteFile(path, []byte(body), 0o640); err != nil {
		return nil, fmt.Errorf("demo config: %w", err)
	}
	return config.Load(path, true, env)
}

// demoCommand is how the demo names the program in its hints: as it was
// invoked (bin/reportjob), or reportjob for a go run or test binary.
func demoCommand() string {
	p := os.Args[0]
	if p == "" || strings.Contains(p, "go-build") || strings.HasSuffix(p, ".test") || strings.Contains(p, string(filepath.Separator)+"_test") {
		return "reportjob"
	}
	return p
}

// printDemoExplore prints how to explore the demo folder with the other
// commands.
func (c *cli) printDemoExplore(dir string) {
	abs := absPath(dir)
	prog := demoCommand()
	fmt.Fprintf(c.stdout, "explore it: %s is a working job (config.yaml, store, reports):\n", abs)
	fmt.Fprintf(c.stdout, "  %s --config %s status\n", prog, filepath.Join(abs, demoConfigName))
	fmt.Fprintf(c.stdout, "  (also statement, transactions --agency agency-0001, verify --last 2d, run; or cd there and leave out --config)\n")
}

// demoProgress reports the demo's steps on stderr, which the table on
// stdout never mixes with: the bar on a terminal, else a line at each
// quarter of the periods.
func (c *cli) demoProgress() func(i, total int, what string, p report.Period) {
	if c.bar != nil {
		return c.bar.set
	}
	return func(i, total int, what string, p report.Period) {
		if total > 0 && (i == 0 || (i+1)*4/total != i*4/total) {
			fmt.Fprintf(c.stderr, "demo: %s %d/%d %s\n", what, i+1, total, p.Name())
		}
	}
}
