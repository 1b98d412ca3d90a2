// Package cli wires longhaul's commands: one file per command with its
// flags, help and output. Domain logic lives in the other packages; this
// package parses, calls and prints. Intended output goes to stdout,
// diagnostics to stderr.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/termsafe"
	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1 // the command could not do its work
	exitUsage    = 2 // bad flags or input values
	exitFindings = 3 // audit --fail-on: findings at or above the level
	exitDrift    = 4 // audit --against: the host does not have the plan's values
	exitInvalid  = 5 // emulate: the emulator was overloaded, the run's results are not valid
)

// SignalStatus is the exit status of a command ended by signal s, as
// shells report it: 128 + the signal number (130 for SIGINT, 143 for
// SIGTERM).
func SignalStatus(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 128 + int(syscall.SIGINT)
}

// usagef is bad input the user must change on the command line (exit 2,
// as every error badinput marks).
func usagef(format string, a ...any) error { return badinput.Errorf(format, a...) }

// findingsError reports that audit found what --fail-on asked about.
type findingsError struct{ msg string }

func (e findingsError) Error() string { return e.msg }

// driftError reports that audit --against found keys that differ from
// the plan.
type driftError struct{ msg string }

func (e driftError) Error() string { return e.msg }

// invalidError reports a run whose results are not valid (the emulator
// was overloaded) although the command itself succeeded.
type invalidError struct{ msg string }

func (e invalidError) Error() string { return e.msg }

// errStopped is a daemon's (serve, exporter) clean stop on SIGINT or
// SIGTERM: the exit status is 0, as a service manager expects.
var errStopped = errors.New("stopped")

// stopped turns a daemon's clean return after ctx ended into errStopped.
func stopped(ctx context.Context, err error) error {
	if err == nil && ctx.Err() != nil {
		return errStopped
	}
	return err
}

// Stopped reports whether err is a daemon's clean stop on a signal:
// main keeps the exit status 0 then.
func Stopped(err error) bool { return errors.Is(err, errStopped) }

// interrupted reports whether err is a run cut short by the context's
// cancellation (net's "operation was canceled" wraps it too).
func interrupted(err error) bool { return errors.Is(err, context.Canceled) }

// ExitCode prints err as one line on stderr and maps it to an exit status.
func ExitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, errStopped) {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st) // emulate passes its command's status on silently
	}
	if interrupted(err) {
		// Only main's signal handler cancels the context: Go's "context
		// canceled", wrapped in whatever step was running, tells the
		// user nothing they did not do. main sets the status (130, 143).
		fmt.Fprintln(stderr, "longhaul: interrupted")
		return exitError
	}
	// The message may quote an input (a file's name, a far host's answer).
	fmt.Fprintf(stderr, "longhaul: %s\n", termsafe.String(err.Error()))
	var f findingsError
	var d driftError
	var inv invalidError
	switch {
	case errors.As(err, &d):
		return exitDrift
	case errors.As(err, &inv):
		return exitInvalid
	case badinput.Is(err):
		return exitUsage
	case errors.As(err, &f):
		return exitFindings
	}
	return exitError
}

// Run executes longhaul with args (without the program name). Every
// command writes through termsafe filters on stdout and stderr, so that
// no string from a file or a far host reaches a terminal as control
// characters, whichever printer it takes; JSON is unchanged by them (its
// encoder escapes controls itself). What must pass raw says so: see
// rawWriter and writeControl.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	out, errOut := termsafe.NewWriter(stdout), termsafe.NewWriter(stderr)
	defer errOut.Flush()
	defer out.Flush()
	root := newRoot(out, errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		// An argument that names no command is the user's to change:
		// cobra's Find says so before anything runs (its error has no
		// type of its own to match).
		if _, _, ferr := root.Find(args); ferr != nil {
			return badinput.Wrap(err)
		}
	}
	return err
}

// Command returns longhaul's command tree, for documentation generators
// (man pages: cmd/longhaul-man).
func Command() *cobra.Command { return newRoot(io.Discard, io.Discard) }

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "longhaul",
		Short: "Explain, fix and prove TCP throughput over long paths",
		Long: `longhaul explains what limits a TCP transfer over a long path, says exactly
what to change, and proves it on an emulated copy of the path.

Units are written the way people write them: 200ms, 1Gbit/s, 100Mbps,
64MiB, 17kB. JSON output carries plain SI numbers (bytes, seconds, bits/s).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if fe := flagError(err); fe != nil {
			return fe
		}
		return usagef("%v (see %s --help)", err, c.CommandPath())
	})
	root.AddCommand(newCalcCmd(), newAuditCmd(), newReportCmd(), newMeshCostCmd())
	root.AddCommand(newAnalyzeCmd())
	root.AddCommand(newPlanCmd(), newApplyCmd(), newRollbackCmd())
	root.AddCommand(platformCommands()...)
	root.AddCommand(newVersionCmd())
	root.Version = Build().Version
	root.SetVersionTemplate(Build().versionLine())
	return root
}

// exitStatus passes the command's exit status through.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("command exited with status %d", int(e)) }

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// noArgs is cobra.NoArgs returning a usage error.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q (see %s --help)", c.Name(), args[0], c.CommandPath())
	}
	return nil
}

// version is longhaul's version, recorded in lab results; the build sets
// it with -ldflags "-X github.com/longhaul/longhaul/internal/cli.version=...".
var version = "dev"
