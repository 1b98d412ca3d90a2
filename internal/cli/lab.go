package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/longhaul/longhaul/internal/lab"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/report"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/units"
)

type labArgs struct {
	rtt, rate, loss, queue, cc, duration, out, interval string
	repeat                                              int
	cases, clientSysctls, serverSysctls                 []string
	prefix                                              string
	quick, noReport                                     bool
}

func newLabCmd() *cobra.Command {
	var a labArgs
	var list strings.Builder
	for _, n := range lab.Names() {
		t, seed, _ := lab.Describe(n)
		fmt.Fprintf(&list, "  %-9s %s\n            seed: %s\n", n, t, seed)
	}
	c := &cobra.Command{
		Use:   "lab SCENARIO [flags]",
		Short: "Run a repeatable experiment over an emulated long path and write a report",
		Long: `lab reproduces a field report on an emulated path between two network
namespaces, with real peers (nginx, curl, iperf3, tcpdump), repeats every
case, compares it with the path model and writes results.jsonl (schema
longhaul.lab/v1), report.html and captures/ into the output directory.

Every run gets a fresh path: new namespaces (no cached route metrics), the
case's settings set and read back from the kernel, tcp_info sampled from
both ends, and the emulator's statistics; a run the emulator flagged as
overloaded is marked invalid. Needs root.

Scenarios:
` + list.String(),
		Example: `  # the seed's experiment on the default 200 ms / 1 Gbit/s path, quickly
  sudo longhaul lab buffers --quick

  # all cases, 5 repeats, on a 150 ms / 500 Mbit/s path
  sudo longhaul lab buffers --rtt 150ms --rate 500Mbit/s --repeat 5 -o out/buffers

  # short transfers and initcwnd/initrwnd at 50 ms
  sudo longhaul lab initcwnd

  # the slow upload, with a capture of each case for longhaul analyze
  sudo longhaul lab upload`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("lab needs one scenario: %s (see %s --help)", strings.Join(lab.Names(), ", "), c.CommandPath())
			}
			return nil
		},
		ValidArgs: lab.Names(),
		RunE: func(c *cobra.Command, args []string) error {
			return runLab(c.Context(), a, args[0], c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	a.register(f, "the scenario's, e.g. 200ms / 1Gbit/s for buffers", "SCENARIO")
	f.StringSliceVar(&a.cases, "case", nil, "run only the cases whose ID matches this glob, e.g. 'both-*' (repeatable)")
	f.StringArrayVar(&a.clientSysctls, "client-sysctl", nil, "extra sysctl key=value in the client namespace of every run (the case's own settings win)")
	f.StringArrayVar(&a.serverSysctls, "server-sysctl", nil, "extra sysctl key=value in the server namespace of every run")
	return c
}

// register adds the flags lab and verify share: the path, the runs and
// the output.
func (a *labArgs) register(f *pflag.FlagSet, pathDefault, dirName string) {
	f.StringVar(&a.rtt, "rtt", "", "round-trip time of the emulated path (default: "+pathDefault+")")
	f.StringVar(&a.rate, "rate", "", "rate on the wire, e.g. 1Gbit/s (default: "+pathDefault+")")
	f.StringVar(&a.loss, "loss", "", "random loss per segment, e.g. 0.1%")
	f.StringVar(&a.queue, "queue", "", "bottleneck queue in bytes (default one BDP)")
	f.StringVar(&a.cc, "cc", "cubic", "congestion control of both ends")
	f.StringVar(&a.duration, "duration", "", "length of each timed run (default 12s, --quick 8s; longrtt 20s/12s)")
	f.IntVar(&a.repeat, "repeat", 0, "runs per case (default 3, or 1 with --quick; initcwnd 5/3)")
	f.BoolVar(&a.quick, "quick", false, "fewer cases and shorter runs: a few minutes (CI, make demo)")
	f.StringVarP(&a.out, "output", "o", "", "output directory (default longhaul-lab/"+dirName+"-TIME)")
	f.StringVar(&a.interval, "interval", "100ms", "tcp_info sampling interval of timed runs")
	f.BoolVar(&a.noReport, "no-report", false, "do not write report.html")
	f.StringVar(&a.prefix, "prefix", topo.DefaultPrefix, "name prefix of the namespaces")
	_ = f.MarkHidden("prefix")
}

func (a labArgs) params() (lab.Params, error) {
	var p lab.Params
	var err error
	if a.rtt != "" {
		if p.RTT, err = units.ParseDuration(a.rtt); err != nil {
			return p, usagef("--rtt: %v", err)
		}
	}
	if a.rate != "" {
		if p.RateBps, err = units.ParseRate(a.rate); err != nil {
			return p, usagef("--rate: %v", err)
		}
	}
	if a.loss != "" {
		if p.Loss, err = units.ParsePercent(a.loss); err != nil {
			return p, usagef("--loss: %v", err)
		}
	}
	if a.queue != "" {
		if p.Queue, err = units.ParseSize(a.queue); err != nil {
			return p, usagef("--queue: %v", err)
		}
	}
	if a.duration != "" {
		if p.Duration, err = units.ParseDuration(a.duration); err != nil {
			return p, usagef("--duration: %v", err)
		}
	}
	if a.repeat < 0 {
		return p, usagef("--repeat %d: must be at least 1", a.repeat)
	}
	p.Repeat, p.Quick, p.CC = a.repeat, a.quick, a.cc
	for _, set := range []struct {
		flag string
		in   []string
		out  *[]topo.Sysctl
	}{{"client-sysctl", a.clientSysctls, &p.ClientSysctls}, {"server-sysctl", a.serverSysctls, &p.ServerSysctls}} {
		for _, kv := range set.in {
			sc, err := topo.ParseSysctl(kv)
			if err != nil {
				return p, usagef("--%s: %v", set.flag, err)
			}
			*set.out = append(*set.out, sc)
		}
	}
	return p, nil
}

// hostFacts gathers what scenario expansion needs from this host, with
// the same snapshot `longhaul plan` uses, so the lab's plan profile is
// exactly that command's plan.
func hostFacts() (lab.Facts, error) {
	snap, err := snapshot.Gather(snapshot.Options{})
	if err != nil {
		return lab.Facts{}, err
	}
	f := lab.Facts{Kernel: snap.Version(),
		Host: results.Host{Hostname: snap.Hostname, Kernel: snap.Kernel.Release, CPUs: runtime.NumCPU(), Version: version}}
	var ok bool
	if f.HostRmem, ok = snap.Triple("net.ipv4.tcp_rmem"); !ok {
		return f, fmt.Errorf("no readable net.ipv4.tcp_rmem")
	}
	if f.HostWmem, ok = snap.Triple("net.ipv4.tcp_wmem"); !ok {
		return f, fmt.Errorf("no readable net.ipv4.tcp_wmem")
	}
	f.CoreRmemMax, _ = snap.Int("net.core.rmem_max")
	f.CoreWmemMax, _ = snap.Int("net.core.wmem_max")
	f.Plan = func(rtt time.Duration, rate float64, flows int) ([]topo.Sysctl, []topo.Sysctl, string, error) {
		p, err := plan.Make(snap, plan.Request{RTT: rtt, RateBps: rate, Flows: flows, Role: plan.Both})
		if err != nil {
			return nil, nil, "", err
		}
		set, desc := namespaceSysctls(p)
		if len(desc) == 0 {
			desc = "no change: this host's settings already cover the path"
		}
		return set, set, "longhaul plan: " + desc, nil
	}
	return f, nil
}

// namespaceSysctls are a plan's changes a namespace can hold, in key
// order, and the same as "key=value, ..." text.
func namespaceSysctls(p plan.Plan) ([]topo.Sysctl, string) {
	ns := plan.NamespaceSysctls(p)
	keys := slices.Sorted(maps.Keys(ns))
	set := make([]topo.Sysctl, 0, len(keys))
	text := make([]string, 0, len(keys))
	for _, k := range keys {
		set = append(set, topo.Sysctl{Key: k, Value: ns[k]})
		text = append(text, k+"="+ns[k])
	}
	return set, strings.Join(text, ", ")
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
	s, err := lab.Expand(name, p, facts)
	if err != nil {
		return labError(err)
	}
	if err := lab.Filter(s, a.cases); err != nil {
		return labError(err)
	}
	return runScenario(ctx, a, s, stdout, stderr)
}

// runScenario runs an expanded scenario: results, table, report.
func runScenario(ctx context.Context, a labArgs, s *lab.Scenario, stdout, stderr io.Writer) error {
	name := s.Name
	interval, err := units.ParseDuration(a.interval)
	if err != nil || interval < time.Millisecond || interval > 10*time.Second {
		return usagef("--interval %q: give a duration from 1ms to 10s, e.g. 100ms", a.interval)
	}
	if err := lab.CheckPeers(s); err != nil {
		return labError(err)
	}
	if os.Geteuid() != 0 {
		return lab.ErrNotRoot
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
	h := labHeader(s)
	fmt.Fprintf(stderr, "longhaul: lab %s: %d cases x %d repeats on %s / %s, about %s; results in %s\n",
		s.Name, len(s.Cases), s.Repeat, units.FormatDuration(s.RTT), units.FormatRate(s.RateBps),
		units.FormatDuration(s.Estimate().Round(time.Second)), dir)
	opt := lab.Options{OutDir: dir, Interval: interval, Log: stderr, Prefix: a.prefix}
	if isTerminal(os.Stderr) && stderr == io.Writer(os.Stderr) {
		opt.Progress = progressLine(stderr)
	}
	runs, err := lab.Run(ctx, s, h, results.NewWriter(f), opt)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		if len(runs) > 0 {
			fmt.Fprintf(stderr, "longhaul: lab stopped after %d runs; partial results in %s\n", len(runs), resPath)
		} else {
			cleanup()
		}
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("lab: interrupted")
		}
		return labError(err)
	}
	printLabTable(stdout, s, h, runs)
	fmt.Fprintf(stdout, "\nresults: %s\n", resPath)
	if !a.noReport {
		out := filepath.Join(dir, "report.html")
		if err := writeReport(resPath, out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "report:  %s\n", out)
	}
	return nil
}

// labHeader describes the scenario in the results file.
func labHeader(s *lab.Scenario) results.Header {
	return results.Header{
		Scenario: s.Name, Title: s.Title, Seed: s.Seed, Started: time.Now().UTC(), Quick: s.Quick, Repeat: s.Repeat,
		Path: results.Path{RTTSeconds: s.RTT.Seconds(), RateBps: s.RateBps, Loss: s.Loss, QueueBytes: s.Queue,
			BDPBytes: int64(pathmodel.BDP(s.GoodputBps(), s.RTT)), GoodputBps: s.GoodputBps()},
		Host: s.Facts.Host, CC: s.CC, Charts: s.Charts,
	}
}

// progressLine redraws one status line on a terminal.
func progressLine(w io.Writer) func(lab.Progress) {
	return func(p lab.Progress) {
		if p.Done >= p.Total {
			fmt.Fprintf(w, "\r\033[K")
			return
		}
		fmt.Fprintf(w, "\r\033[K[%d/%d] %s (repeat %d)  elapsed %s  ETA %s", p.Done+1, p.Total, p.Case, p.Repeat,
			clock(p.Elapsed), clock(p.ETA))
	}
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// printLabTable prints the median of each case beside the model.
func printLabTable(w io.Writer, s *lab.Scenario, h results.Header, runs []results.Run) {
	metric := s.Charts[0].Metric
	unit := s.Charts[0].YUnit
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "case\truns\t%s (median)\tmin..max\tmodel\tmeasured/model\n", s.Charts[0].YLabel)
	for _, sm := range results.Summarize(runs) {
		runsText := fmt.Sprint(sm.N)
		if sm.Invalid > 0 {
			runsText += fmt.Sprintf(" (+%d invalid)", sm.Invalid)
		}
		med, ok := sm.Median[metric]
		if !ok {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\n", sm.Label, runsText)
			continue
		}
		model, ratio := "-", "-"
		if mv, ok := sm.Model[metric]; ok && mv > 0 {
			model, ratio = report.Format(mv, unit), fmt.Sprintf("%.2f", med/mv)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s..%s\t%s\t%s\n", sm.Label, runsText, report.Format(med, unit),
			report.Format(sm.Min[metric], unit), report.Format(sm.Max[metric], unit), model, ratio)
	}
	tw.Flush()
	for _, l := range lab.Headlines(h, results.Summarize(runs)) {
		fmt.Fprintln(w, l)
	}
}
