package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/checkpoint"
	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/directory"
	"github.com/reportjob/reportjob/internal/embedded"
	"github.com/reportjob/reportjob/internal/job"
	lookups "github.com/reportjob/reportjob/internal/lookup"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/suggest"
)

// version is the tool version written into every manifest; set with
// -ldflags "-X main.version=v1.2.3".
var version = "dev"

// Exit codes (docs/reference.md, "Exit codes"). exitCode maps errors to them; nothing
// else decides an exit code.
const (
	exitOK        = 0 // done, or nothing due
	exitFailed    = 1 // failed
	exitUsage     = 2 // bad usage or config
	exitLeaseHeld = 3 // lease held elsewhere
	exitDiffers   = 4 // verify found differences
	exitRejects   = 5 // run --fail-on-rejects published periods with rejects
	// exitSignal + the signal's number: 130 (SIGINT, Ctrl-C) or 143
	// (SIGTERM): a command stopped by it (interruptError).
	exitSignal = 128
)

// errDiffers is returned by verify when a period differs from its
// manifest.
var errDiffers = errors.New("verify found differences")

// errRejects is returned by run --fail-on-rejects when the periods it
// published have rejects (published all the same: nothing is lost).
var errRejects = errors.New("the periods published have rejects")

// usageError is a bad command line, or (notFound) a flag's value that
// names nothing: a month or agency with no statement. Both exit 2; the
// second has the summary status not_found.
type usageError struct {
	msg      string
	notFound bool
	err      error // the cause, for errors.Is (nil for a plain usage error)
}

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// notFoundf is the usage answer "the flag's value names nothing": exit 2,
// status not_found. The error it wraps (%w) stays visible to errors.Is.
func notFoundf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &usageError{msg: err.Error(), notFound: true, err: errors.Unwrap(err)}
}

func exitCode(err error) int {
	var ue *usageError
	var ce *config.Error
	var ie *interruptError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ie):
		return ie.code()
	case errors.Is(err, errDiffers):
		return exitDiffers
	case errors.Is(err, errRejects):
		return exitRejects
	case errors.As(err, &ue), errors.As(err, &ce), errors.Is(err, report.ErrNoStart), errors.Is(err, job.ErrBadRange),
		errors.Is(err, job.ErrClockAhead), errors.Is(err, monthclose.ErrNotClosable),
		errors.Is(err, monthclose.ErrZoneChanged), errors.Is(err, errSinkHasPeriods), errors.Is(err, lookups.ErrBadCursor),
		// The agency directory is input like the config: invalid, or a
		// local file that is gone.
		errors.Is(err, directory.ErrInvalid), errors.Is(err, monthclose.ErrDocuments) && errors.Is(err, fs.ErrNotExist):
		return exitUsage
	case errors.Is(err, checkpoint.ErrLeaseHeld), errors.Is(err, embedded.ErrLocked):
		return exitLeaseHeld
	default:
		return exitFailed
	}
}

// cli is what every command gets.
type cli struct {
	cfg    *config.Config
	env    []string
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger // base with the job and run id
	base   *slog.Logger
	// bar is the progress bar when stderr is a terminal, else nil; logOut
	// is where logs go: the bar (which keeps them off its line) or stderr.
	bar    *progressBar
	logOut io.Writer
	runID  string
	// printed is set once the command has printed its JSON summary line.
	printed bool
	// interrupt is how run sees SIGINT/SIGTERM (interrupt.go); nil
	// when nothing stops it at a safe point.
	interrupt *interruption
	// lockTimeout is how long openStore waits for the embedded file (0:
	// embedded.DefaultLockTimeout).
	lockTimeout time.Duration
	// allowNewStore lets openStore create the embedded file over a sink
	// that holds periods (init: creating it is what it is for).
	allowNewStore bool
	// delivered is the delivery pass of the last run (nil: none ran).
	delivered *deliverySummary
	// configFlag is the --config the user gave ("" when none): the
	// commands the binary prints to type next carry it (invocation).
	configFlag string
}

// invocation is how to start this binary on this job, for the commands it
// prints to type next ("more: ...", "list them with ..."): "reportjob",
// and --config with its absolute path when the config came from --config,
// so that a line typed as printed, from any folder, reads the same job.
// A config named by REPORTJOB_CONFIG needs nothing: the next command
// inherits the variable.
func (c *cli) invocation() string {
	if c.configFlag == "" {
		return "reportjob"
	}
	return "reportjob --config " + quoteArg(absPath(c.configFlag))
}

type command struct {
	name, args, help string
	run              func(ctx context.Context, c *cli, args []string) error
}

func commands() []command {
	return []command{
		{"run", "[--backfill --from T --to T] [--dry-run] [--fail-on-rejects] [--now T]", "process due periods, then due rechecks, once and exit", cmdRun},
		{"schedule", "[--grace D]", "run on schedule.cron until SIGTERM/SIGINT", cmdSchedule},
		{"verify", "--from T --to T | --last D; [--repair [--reprice]] [--now T]", "compare delivered periods with their items and objects", cmdVerify},
		{"ingest", "--file F | --generate N [--agencies K] [--seed S] [--from T --to T] [--allow-late] [--now T]", "write transactions", cmdIngest},
		{"statement", "[--month YYYY-MM] [--agency A | --number N] [--json] [--close] [--send | --resend] [--now T]", "print a month's statements and where their files are; --number finds one by its number; --close finalises it; --send / --resend e-mail them", cmdStatement},
		{"events", "replay --since T", "send the signed events timestamped at or after T again, with the same ids", cmdEvents},
		{"status", "[--json] [--now T]", "checkpoint, how far behind, lease holder, rechecks, restatements", cmdStatus},
		{"transactions", "--agency A | --id TX; [--from T] [--to T] [--limit N] [--cursor C] [--json]", "an agency's billed lines newest first, or where one transaction was billed or rejected", cmdTransactions},
		{"rejects", "[--from T] [--to T] [--agency A] [--limit N] [--cursor C] [--json]", "the rejects of the delivered periods, newest first, with their reasons", cmdRejects},
		{"init", "", "create the tables (or the embedded file) and the bucket (or folder)", cmdInit},
		{"demo", "[--dir DIR] [--transactions N] [--agencies K] [--seed S] [--top N]", "generate a day of transactions, run, print a summary", cmdDemo},
		{"version", "", "print the version", cmdVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: reportjob [--config FILE] COMMAND [flags]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.help)
		if c.args != "" {
			fmt.Fprintf(w, "            %s\n", c.args)
		}
	}
	fmt.Fprintf(w, "\nT is RFC 3339 (2024-05-01T13:00:00Z) or YYYY-MM-DD (UTC).\n"+
		"The config file defaults to ./config.yaml (env REPORTJOB_CONFIG); --config may also follow the command.\nAny key can be overridden "+
		"with REPORTJOB_<KEY_PATH>, e.g. REPORTJOB_SINK_URL. Run 'reportjob COMMAND -h' for a command's flags.\n"+
		"Exit codes: 0 done, 1 failed, 2 bad usage or config, 3 lease held elsewhere, 4 verify found differences,\n"+
		"5 run --fail-on-rejects published periods with rejects, 130 interrupted by SIGINT (Ctrl-C) at a safe point\n"+
		"(143 by SIGTERM).\n")
}

// run is the whole program: main only wires the process to it.
func run(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reportjob", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(stderr) }
	configPath := fs.String("config", "", "config file (default ./config.yaml, env REPORTJOB_CONFIG)")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		printFailure(stdout, "", "", "", err)
		return exitUsage
	}
	if fs.NArg() == 0 {
		usage(stderr)
		printFailure(stdout, "", "", "", usagef("no command"))
		return exitUsage
	}
	name := fs.Arg(0)
	if name == "help" {
		usage(stdout)
		return exitOK
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == name {
			cmd = &c
		}
	}
	if cmd == nil {
		var names []string
		for _, c := range commands() {
			names = append(names, c.name)
		}
		err := usagef("unknown command %q", name)
		if best := suggest.Closest(name, names); best != "" {
			err = usagef("unknown command %q; did you mean %s?", name, best)
		}
		fmt.Fprintf(stderr, "reportjob: %v\n\n", err)
		usage(stderr)
		printFailure(stdout, name, "", "", err)
		return exitUsage
	}

	// The global flags may also follow the command (reportjob status
	// --config X): they are taken out of its arguments here.
	cmdArgs, after, err := globalFlagsAfter(fs.Args()[1:])
	if err != nil {
		printFailure(stdout, name, "", "", err)
		return exitCode(err)
	}
	if after != "" {
		if *configPath != "" && *configPath != after {
			err := usagef("--config given twice: %q before the command and %q after it", *configPath, after)
			printFailure(stdout, name, "", "", err)
			return exitCode(err)
		}
		*configPath = after
	}
	path, explicit := *configPath, *configPath != ""
	if !explicit {
		if v := getenv(env, config.EnvConfigPath); v != "" {
			path, explicit = v, true
		}
	}
	cfg, err := config.Load(path, explicit, env)
	if err != nil {
		fmt.Fprintf(stderr, "reportjob: %v\n", err)
		printFailure(stdout, name, "", "", err)
		return exitCode(err)
	}
	c := &cli{cfg: cfg, env: env, stdout: stdout, stderr: stderr, runID: newRunID(), logOut: stderr, configFlag: *configPath}
	if isTerminal(stderr) {
		c.bar = newProgressBar(stderr)
		c.logOut = c.bar
	}
	c.base = newLogger(cfg, c.logOut, c.bar != nil)
	c.log = c.base.With(job.LogJob, cfg.JobName, job.LogRunID, c.runID)
	// Said first, whatever follows: a command on the built-in defaults
	// reads or creates ./data/reportjob.db and ./reports, which is rarely
	// what a user in the wrong folder, or without --config, meant.
	if note := c.noConfigNote(name); note != "" {
		fmt.Fprintf(stderr, "reportjob: %s\n", note)
	}
	err = cmd.run(ctx, c, cmdArgs)
	// A command a signal cut short where it was is interrupted too.
	err = cutShort(ctx, err, "run the same command again")
	var interrupted *interruptError
	if errors.As(err, &interrupted) {
		fmt.Fprintf(stderr, "reportjob: %v\n", err)
	} else if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errDiffers) && !errors.Is(err, errRejects) {
		c.log.Error(name+" failed", "err", err)
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil && !c.printed {
		printFailure(stdout, name, cfg.JobName, c.runID, c.withNoConfig(name, err))
	}
	return exitCode(err)
}

// printFailure prints the summary line of a command that failed before it
// could print its own (bad flags or config, a store that cannot be opened).
func printFailure(w io.Writer, command, job, runID string, err error) {
	b, _ := json.Marshal(map[string]string{"command": command, "job": job, "run_id": runID, "status": failureStatus(err), "error": err.Error()})
	fmt.Fprintf(w, "%s\n", b)
}

// failureStatus is the summary status of a command that failed with err:
// not_found or bad_usage (exit 2), lease_held (3), differs (4) or failed (1).
func failureStatus(err error) string {
	var ue *usageError
	if errors.As(err, &ue) && ue.notFound {
		return "not_found"
	}
	if ie := (*interruptError)(nil); errors.As(err, &ie) {
		return "interrupted"
	}
	status := map[int]string{exitUsage: "bad_usage", exitLeaseHeld: "lease_held", exitDiffers: "differs", exitRejects: "rejects"}[exitCode(err)]
	if status == "" {
		status = "failed"
	}
	return status
}

func newRunID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func getenv(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// newFlags returns a command's flag set; its parse errors are usage errors.
// newFlags returns the flag set of command name, whose usage line is the
// synopsis in commands().
func newFlags(c *cli, name string) *flag.FlagSet {
	var args string
	for _, cmd := range commands() {
		if cmd.name == name {
			args = cmd.args
		}
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "usage: reportjob [--config FILE] %s %s\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs. On an error it prints the error, with
// the closest flag for an unknown one ("did you mean --dry-run?"), and the
// usage to fs's output; -h prints the usage and returns flag.ErrHelp.
// The top-level flag set (named "reportjob") may leave arguments: the
// command and its own.
func parseFlags(fs *flag.FlagSet, args []string) error {
	// The error and the usage are printed below, the error with its
	// suggestion.
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			if fs.Name() != "reportjob" {
				names = append(names, "config") // also taken after the command (cliflags.go)
			}
			if best := suggest.Closest(strings.TrimPrefix(name, "-"), names); best != "" {
				msg += "; did you mean --" + best + "?"
			}
		}
		if fs.Name() != "reportjob" {
			msg = fs.Name() + ": " + msg
		}
		fmt.Fprintf(out, "reportjob: %s\n", msg)
		fs.Usage()
		return &usageError{msg: msg}
	case fs.NArg() > 0 && fs.Name() != "reportjob":
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// timeFlag is a flag holding a UTC instant: RFC 3339 or YYYY-MM-DD.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(s string) error {
	t, err := config.ParseInstant(s)
	if err != nil {
		return err
	}
	f.t = t
	return nil
}

// printJSON writes v as one line on stdout: every command ends with one.
func (c *cli) printJSON(v any) {
	c.printed = true
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	fmt.Fprintf(c.stdout, "%s\n", b)
}

// printLine writes one JSON Lines row of a command's output (not its
// summary line, which printJSON writes last).
func (c *cli) printLine(v any) {
	printed := c.printed
	c.printJSON(v)
	c.printed = printed
}

func cmdVersion(ctx context.Context, c *cli, args []string) error {
	if err := parseFlags(newFlags(c, "version"), args); err != nil {
		return err
	}
	c.printJSON(map[string]string{"command": "version", "version": version})
	return nil
}
