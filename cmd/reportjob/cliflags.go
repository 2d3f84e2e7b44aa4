package main

import (
	"fmt"
	"strings"

	"github.com/reportjob/reportjob/internal/config"
)

// globalFlagsAfter takes the global flags (--config) out of a command's
// arguments, so that `reportjob status --config X` works as `reportjob
// --config X status` does. It returns the other arguments in their order
// and the flag's value ("" when absent). Arguments after "--" are the
// command's.
func globalFlagsAfter(args []string) (rest []string, configPath string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i:]...), configPath, nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, "", usagef("flag needs an argument: --config")
			}
			i++
			value = args[i]
		}
		if configPath != "" && configPath != value {
			return nil, "", usagef("--config given twice: %q and %q", configPath, value)
		}
		configPath = value
	}
	return rest, configPath, nil
}

// commandsWithoutConfig need no config file: they say nothing when none
// was found.
var commandsWithoutConfig = map[string]bool{"demo": true, "version": true}

// noConfigNote says that no config file was found and where it was looked
// for: the built-in defaults (and any REPORTJOB_* variables) are what the
// command runs on. Every command but demo and version prints it on stderr
// before it starts, and a failed one puts it in its summary's error too,
// where it most often explains the failure. It is "" when a config file
// was read.
func (c *cli) noConfigNote(command string) string {
	if c.cfg.File != "" || commandsWithoutConfig[command] {
		return ""
	}
	return fmt.Sprintf("no config file found: looked for %s (the default; neither --config nor %s is set), "+
		"so the built-in defaults were used (store %s, sink %s)",
		absPath(config.DefaultPath), config.EnvConfigPath, storeWhere(c.cfg), sinkURL(c.cfg))
}

// withNoConfig returns err with noConfigNote in front of it, when there
// is one: the summary line says it first too.
func (c *cli) withNoConfig(command string, err error) error {
	note := c.noConfigNote(command)
	if note == "" || err == nil {
		return err
	}
	return &noConfigError{note: note, err: err}
}

// noConfigError is an error of a command that ran without a config file.
// It keeps err's exit code (errors.Is and errors.As see through it).
type noConfigError struct {
	note string
	err  error
}

func (e *noConfigError) Error() string { return e.note + "; then: " + e.err.Error() }
func (e *noConfigError) Unwrap() error { return e.err }
