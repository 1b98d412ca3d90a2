//go:build linux && !longhaul_portable

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/lab"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/scenario"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/units"
)

type labArgs struct {
	rtt, duration, interval             units.Duration
	rate                                units.Rate
	loss                                units.Percent
	queue                               units.Size
	cc, out                             string
	repeat, retry                       int
	cases, clientSysctls, serverSysctls []string
	prefix                              string
	quick, noReport, ipv6               bool
	flags                               *pflag.FlagSet
}

func newLabCmd() *cobra.Command {
	var a labArgs
	var list strings.Builder
	for _, n := range scenario.Names() {
		t, problem, _ := scenario.Describe(n)
		fmt.Fprintf(&list, "  %-9s %s\n            (%s)\n", n, t, problem)
	}
	c := &cobra.Command{
		Use:   "lab SCENARIO [flags]",
		Short: "Run a repeatable experiment over an emulated long path and write a report",
		Long: `lab reproduces a problem users reported on an emulated path between two network
namespaces, with real peers (nginx, curl, iperf3, tcpdump, ping), repeats every
case, compares it with the path model and writes results.jsonl (schema
longhaul.lab/v1), report.html and captures/ into the output directory.

Every run gets a fresh path: new namespaces (no cached route metrics), the
case's settings set and read back from the kernel, tcp_info sampled from
both ends, and the emulator's statistics; a run the emulator flagged as
overloaded is marked invalid. Needs root.

Scenarios (and the reported problem or the targets each one checks):
` + list.String(),
		Example: `  # the buffers experiment (a reported 6x problem) on the default 200 ms / 1 Gbit/s path, quickly
  sudo longhaul lab buffers --quick

  # all cases, 5 repeats, on a 150 ms / 500 Mbit/s path
  sudo longhaul lab buffers --rtt 150ms --rate 500Mbit/s --repeat 5 -o out/buffers

  # short transfers and initcwnd/initrwnd at 50 ms
  sudo longhaul lab initcwnd

  # the slow upload, with a capture of each case for longhaul analyze
  sudo longhaul lab upload`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("lab needs one scenario: %s (see %s --help)", strings.Join(scenario.Names(), ", "), c.CommandPath())
			}
			return nil
		},
		ValidArgs: scenario.Names(),
		RunE: func(c *cobra.Command, args []string) error {
			return runLab(c.Context(), a, args[0], c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	a.register(f, "the scenario's, e.g. 200ms / 1Gbit/s for buffers", "SCENARIO")
	f.StringSliceVar(&a.cases, "case", nil, "run only the cases whose id or name (as the table prints it, any case) matches this glob, e.g. 'both-*' or 'old ubuntu defaults' (repeatable)")
	f.StringArrayVar(&a.clientSysctls, "client-sysctl", nil, "extra sysctl key=value in the client namespace of every run (the case's own settings win)")
	f.StringArrayVar(&a.serverSysctls, "server-sysctl", nil, "extra sysctl key=value in the server namespace of every run")
	f.BoolVar(&a.ipv6, "ipv6", false, "causes: the ends get IPv6 addresses (2001:2::/48) and the tools talk over IPv6")
	return c
}

// register adds the flags lab and verify share: the path, the runs and
// the output. Each value is checked against the lab's range as it is
// parsed; an unset flag keeps the scenario's default.
func (a *labArgs) register(f *pflag.FlagSet, pathDefault, dirName string) {
	a.flags = f
	a.rtt = units.Duration{Min: time.Millisecond, Max: 5 * time.Second}
	a.rate = units.Rate{Min: 1e5, Max: 10e9}
	a.loss = units.Percent{Max: 0.49}
	a.queue = units.Size{Min: linkemu.MTU + linkemu.DefaultOverhead, Unit: true}
	a.duration = units.Duration{Min: time.Second, Max: time.Hour}
	a.interval = units.Duration{D: 100 * time.Millisecond, Min: time.Millisecond, Max: 10 * time.Second}
	f.Var(&a.rtt, "rtt", "round-trip time of the emulated path, 1ms..5s (default: "+pathDefault+")")
	f.Var(&a.rate, "rate", "rate on the wire, 100kbit/s..10Gbit/s (default: "+pathDefault+")")
	f.Var(&a.loss, "loss", "random loss per segment, under 50%, e.g. 0.1%")
	f.Var(&a.queue, "queue", "bottleneck queue in bytes, with a unit: 150kB, 1MiB (default one BDP)")
	f.StringVar(&a.cc, "cc", "cubic", "congestion control of both ends")
	f.Var(&a.duration, "duration", "length of each timed run (default 12s, --quick 8s; longrtt 20s/12s)")
	f.IntVar(&a.repeat, "repeat", 0, "runs per case, 1..100 (default 3, or 1 with --quick; initcwnd 5/3)")
	f.IntVar(&a.retry, "retry-invalid", 0, "make a run that came out invalid (the emulator overloaded, a peer failed) again, up to N more times, 0..5; every attempt stays in the results")
	f.BoolVar(&a.quick, "quick", false, "fewer cases and shorter runs: a few minutes (CI, make demo)")
	f.StringVarP(&a.out, "output", "o", "", "output directory (default longhaul-lab/"+dirName+"-TIME)")
	f.Var(&a.interval, "interval", "tcp_info sampling interval of timed runs, 1ms..10s")
	f.BoolVar(&a.noReport, "no-report", false, "do not write report.html")
	f.StringVar(&a.prefix, "prefix", topo.DefaultPrefix, "name prefix of the namespaces")
	_ = f.MarkHidden("prefix")
}

// maxRetryInvalid bounds --retry-invalid: a machine that overloads the
// emulator more often than that needs a quieter machine or a slower path.
const maxRetryInvalid = 5

// params are the scenario parameters the user set.
func (a labArgs) params() (scenario.Params, error) {
	p := scenario.Params{RTT: a.rtt.D, RateBps: a.rate.Bps, Loss: a.loss.F, Queue: a.queue.N, Duration: a.duration.D,
		Repeat: a.repeat, Quick: a.quick, CC: a.cc, IPv6: a.ipv6}
	if a.flags != nil && a.flags.Changed("repeat") && (a.repeat < 1 || a.repeat > 100) {
		return p, usagef("--repeat %d: give 1..100 runs per case", a.repeat)
	}
	if a.retry < 0 || a.retry > maxRetryInvalid {
		return p, usagef("--retry-invalid %d: give 0..%d more attempts", a.retry, maxRetryInvalid)
	}
	var err error
	if p.ClientSysctls, err = parseSysctls("client-sysctl", a.clientSysctls); err != nil {
		return p, err
	}
	p.ServerSysctls, err = parseSysctls("server-sysctl", a.serverSysctls)
	return p, err
}

// parseSysctls reads repeated KEY=VALUE flags.
func parseSysctls(flag string, in []string) ([]topo.Sysctl, error) {
	var out []topo.Sysctl
	for _, kv := range in {
		sc, err := topo.ParseSysctl(kv)
		if err != nil {
			return nil, usagef("--%s: %v", flag, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// hostFacts gathers what scenario expansion needs from this host: the
// snapshot `longhaul plan` uses, so the lab's plan profile is exactly
// that command's plan.
func hostFacts() (scenario.Facts, error) {
	snap, err := snapshot.Gather(snapshot.Options{})
	if err != nil {
		return scenario.Facts{}, err
	}
	return scenario.FactsFrom(snap, results.Host{Hostname: snap.Hostname, Kernel: snap.Kernel.Release, CPUs: runtime.NumCPU(), Version: version})
}

func runLab(ctx context.Context, a labArgs, name string, stdout, stderr io.Writer) error {
	p, err := a.params()
	if err != nil {
		return err
	}
	facts, err := hostFacts()
	if err != nil {
		return fmt.Errorf("lab: read this host's settings: %w", err)
	}
	s, err := scenario.Expand(name, p, facts)
	if err != nil {
		return err
	}
	if err := scenario.Filter(s, a.cases); err != nil {
		return err
	}
	return runScenario(ctx, a, s, stdout, stderr)
}

// runScenario runs an expanded scenario: results, table, report.
func runScenario(ctx context.Context, a labArgs, s *scenario.Scenario, stdout, stderr io.Writer) error {
	name := s.Name
	if err := lab.CheckPeers(s); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return emupath.ErrNotRoot
	}
	dir := a.out
	if dir == "" {
		dir = filepath.Join("longhaul-lab", name+"-"+time.Now().Format("20060102-150405"))
	}
	resPath := filepath.Join(dir, "results.jsonl")
	if _, err := os.Stat(resPath); err == nil {
		return usagef("-o %s already holds results (%s): choose another directory or remove it", dir, resPath)
	}
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	// Bad input found by the first run leaves nothing behind.
	cleanup := func() {
		os.Remove(resPath)
		if os.IsNotExist(statErr) {
			os.Remove(dir) // only if empty
		}
	}
	f, err := os.Create(resPath)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(stderr, "longhaul: lab %s: %s x %s on %s, about %s; results in %s\n",
		s.Name, count(len(s.Cases), "case"), count(s.Repeat, "repeat"), s.PathsLabel(), units.FormatDuration(s.Estimate().Round(time.Second)), dir)
	opt := lab.Options{OutDir: dir, Interval: a.interval.D, Log: stderr, Prefix: a.prefix, RetryInvalid: a.retry}
	opt.Progress = progressLines(stderr)
	if f, ok := rawWriter(stderr).(*os.File); ok && f == os.Stderr && isTerminal(f) {
		opt.Progress = progressLine(stderr)
	}
	runs, err := lab.Run(ctx, s, results.NewWriter(f), opt)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		if len(runs) > 0 {
			fmt.Fprintf(stderr, "longhaul: lab stopped after %s; partial results in %s\n", count(len(runs), "run"), resPath)
		} else {
			cleanup()
		}
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("lab: interrupted")
		}
		return err
	}
	printLabTable(stdout, s.Header(time.Now()), runs)
	fmt.Fprintf(stdout, "\nresults: %s\n", resPath)
	if !a.noReport {
		out := filepath.Join(dir, "report.html")
		if err := writeReport(ctx, resPath, out, stderr); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "report:  %s\n", out)
	}
	return nil
}

// progressLine redraws one status line on a terminal.
func progressLine(w io.Writer) func(lab.Progress) {
	return func(p lab.Progress) {
		// The controls pass the filter, the line (a case's name from
		// the scenario file) does not.
		writeControl(w, "\r\033[K")
		if p.Done >= p.Total {
			return
		}
		fmt.Fprintf(w, "[%d/%d] %s (repeat %d)  elapsed %s  ETA %s", p.Done+1, p.Total, p.Case, p.Repeat,
			clock(p.Elapsed), clock(p.ETA))
	}
}

// progressLines prints one plain line per run where stderr is not a
// terminal (a pipe, a log file: make demo | tee), so a long lab is not
// silent there.
func progressLines(w io.Writer) func(lab.Progress) {
	return func(p lab.Progress) {
		if p.Done >= p.Total {
			fmt.Fprintf(w, "longhaul: lab: %s done in %s\n", count(p.Total, "run"), clock(p.Elapsed))
			return
		}
		fmt.Fprintf(w, "longhaul: lab: run %d/%d: %s (repeat %d), elapsed %s, ETA %s\n", p.Done+1, p.Total, p.Case, p.Repeat,
			clock(p.Elapsed), clock(p.ETA))
	}
}

// count writes n and the word, plural unless n is 1: "1 run", "3 runs".
func count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
