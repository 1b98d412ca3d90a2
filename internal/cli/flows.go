//go:build linux && !longhaul_portable

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
)

type flowsArgs struct {
	netns                string
	dst                  prefixFlag
	interval             units.Duration
	rate                 units.Rate
	port, count, explain int
	watch, all, json     bool
}

func newFlowsCmd() *cobra.Command {
	var a flowsArgs
	c := &cobra.Command{
		Use:   "flows [flags]",
		Short: "Live TCP sockets (tcp_info): what limits each flow moving data, and the fix",
		Long: `flows reads every TCP socket's tcp_info (sock_diag, like ss -ti) twice,
--interval apart, and judges each socket that moved data in between. It
also reads them 20 times in between, to see how each sender lost
segments: random loss, a shallow buffer or bufferbloat (the flow's cause).

The kernel measures a sender's limits itself: of the time the socket had
data to send (tcpi_busy_time), how long the peer's receive window held it
(tcpi_rwnd_limited) and how long its own send buffer did
(tcpi_sndbuf_limited); the rest is the congestion window (slow start,
loss recovery, or the path), and time not busy is the application having
nothing to send. The verdicts and fixes are those of longhaul analyze.

A socket that mostly receives is listed, but what limits it is measured at
the sender: run flows there, or capture and analyze. Sockets that moved
nothing in the interval are left out unless --all.`,
		Example: `  # what limits the transfers running now
  longhaul flows

  # only flows to one network, watched every 2 s until Ctrl-C
  longhaul flows --dst 203.0.113.0/24 --watch --interval 2s

  # size the fix for a 1 Gbit/s path; machine-readable
  longhaul flows --port 443 --rate 1Gbit/s --json

  # inside a network namespace (ip netns)
  sudo longhaul flows --netns lab-client`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runFlows(c.Context(), a, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVar(&a.netns, "netns", "", "read the sockets of this network namespace (a name from ip netns list)")
	f.Var(&a.dst, "dst", "only flows whose remote address is in this prefix or is this address, e.g. 203.0.113.0/24")
	f.IntVar(&a.port, "port", 0, "only flows with this port at either end")
	a.interval = units.Duration{D: time.Second}
	f.Var(&a.interval, "interval", "time between the two reads (100ms..1h); each verdict covers it")
	f.BoolVar(&a.watch, "watch", false, "keep judging, one interval after the other, until interrupted (or --count)")
	f.IntVar(&a.count, "count", 0, "with --watch: stop after this many intervals (0: until interrupted)")
	f.BoolVar(&a.all, "all", false, "also list sockets that moved nothing")
	a.rate = units.Rate{Min: 1e3, Max: pathmodel.MaxRate}
	f.Var(&a.rate, "rate", "the path's bottleneck rate, if known: sizes the fixes, e.g. 1Gbit/s")
	f.IntVar(&a.explain, "explain", 5, "verdict paragraphs: the largest flows")
	f.BoolVar(&a.json, "json", false, "print JSON (schema longhaul.flows/v1; with --watch one object per line and interval)")
	return c
}

type flowsOpts struct {
	filter   flows.Filter
	interval time.Duration
	opt      flows.Options
}

func (a flowsArgs) parse() (flowsOpts, error) {
	var o flowsOpts
	if o.interval = a.interval.D; o.interval < 100*time.Millisecond || o.interval > time.Hour {
		return o, usagef("--interval: %s is out of range: give 100ms..1h (tcp_info's busy times tick in jiffies, 1-10 ms)", units.FormatDuration(o.interval))
	}
	if a.dst.p.IsValid() {
		o.filter.Dst = a.dst.p.Masked()
	}
	if a.port < 0 || a.port > 65535 {
		return o, usagef("--port: %d is not a port (1..65535)", a.port)
	}
	o.filter.Port = uint16(a.port)
	if a.count < 0 {
		return o, usagef("--count: must not be negative, got %d", a.count)
	}
	if a.count > 0 && !a.watch {
		return o, usagef("--count goes with --watch")
	}
	if a.explain < 0 {
		return o, usagef("--explain: must not be negative, got %d", a.explain)
	}
	if o.opt.RateBps = a.rate.Bps; a.rate.IsSet() && o.opt.RateBps <= 0 {
		return o, usagef("--rate: must be greater than zero, e.g. 1Gbit/s")
	}
	return o, nil
}

func runFlows(ctx context.Context, a flowsArgs, stdout, stderr io.Writer) error {
	o, err := a.parse()
	if err != nil {
		return err
	}
	d, err := flows.Open(a.netns)
	if err != nil {
		return fmt.Errorf("flows: %w", err)
	}
	defer d.Close()
	prev, err := d.Dump()
	if err != nil {
		return fmt.Errorf("flows: %w", err)
	}
	t0 := time.Now()
	for n := 1; ; n++ {
		// Samples between the two dumps (a twentieth of the interval
		// apart, 50 ms..1 s) tell how the senders lost segments.
		step := min(max(o.interval/20, 50*time.Millisecond), time.Second)
		tracks := flows.TrackUntil(ctx, d.Dump, prev, o.filter, step, t0.Add(o.interval))
		select {
		case <-ctx.Done():
			if a.watch {
				return nil // --watch ends with Ctrl-C (exit 130, said by the shell)
			}
			return fmt.Errorf("flows: interrupted before the interval ended: nothing to judge")
		case <-time.After(o.interval - time.Since(t0)):
		}
		cur, err := d.Dump()
		if err != nil {
			return fmt.Errorf("flows: %w", err)
		}
		t1 := time.Now()
		for _, s := range cur {
			if tr := tracks[s.Key()]; tr != nil {
				tr.Add(s)
			}
		}
		opt := o.opt
		opt.Tracks = tracks
		doc := flows.Doc{Schema: flows.Schema, Time: t1.UTC(), Netns: a.netns, Interval: t1.Sub(t0).Seconds(), Sockets: len(cur)}
		// idle: how many sockets that passed the filter moved nothing
		// and were left out (not --all): the text says so.
		var idle int
		doc.Flows, idle = flows.Compare(prev, cur, t1.Sub(t0), o.filter, a.all, opt)
		if a.json {
			if a.watch {
				b, err := json.Marshal(doc)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s\n", b)
			} else if err := writeJSON(stdout, doc); err != nil {
				return err
			}
		} else {
			if n > 1 {
				fmt.Fprintln(stdout)
			}
			printFlows(stdout, doc, idle, a.explain)
		}
		if !a.watch || (a.count > 0 && n >= a.count) {
			return nil
		}
		prev, t0 = cur, t1
	}
}

func printFlows(w io.Writer, doc flows.Doc, idle, explain int) {
	where := "this host"
	if doc.Netns != "" {
		where = "namespace " + doc.Netns
	}
	span := units.FormatDuration(time.Duration(doc.Interval * float64(time.Second)))
	if len(doc.Flows) == 0 {
		fmt.Fprintf(w, "%s  no TCP flow moved data in the last %s (%s, %d sockets; --all lists idle ones)\n",
			doc.Time.Local().Format("15:04:05"), span, where, doc.Sockets)
		return
	}
	if idle > 0 {
		where += fmt.Sprintf("; %d idle socket(s) left out, --all lists them", idle)
	}
	fmt.Fprintf(w, "%s  %d TCP flow(s) over the last %s (%s)\n", doc.Time.Local().Format("15:04:05"), len(doc.Flows), span, where)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "local\tremote\tdir\trate\trtt\tcwnd\tpeer window\tin flight\tretrans\tverdict")
	for _, f := range doc.Flows {
		verdict := f.Verdict.Verdict
		if f.Direction == flows.DirSend {
			verdict = fmt.Sprintf("%s (%.0f%%)", verdict, 100*f.Share)
		} else {
			verdict = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", f.Local, f.Remote, f.Direction,
			units.FormatRate(f.ThroughputBps), units.FormatDuration(units.FromSeconds(f.RTT)),
			units.FormatBytes(float64(f.CwndBytes)), units.FormatBytes(float64(f.SndWndBytes)),
			units.FormatBytes(float64(f.InflightBytes)), f.Retrans, verdict)
	}
	tw.Flush()
	shown := 0
	for _, f := range doc.Flows {
		if shown >= explain {
			break
		}
		if f.Direction == flows.DirIdle {
			continue
		}
		shown++
		fmt.Fprintf(w, "\n%s -> %s: %s\n  %s\n", f.Local, f.Remote, f.Verdict.Verdict, strings.TrimSpace(f.Summary))
		if f.Cause != nil {
			fmt.Fprintf(w, "  the path: %s\n", f.Cause.Text)
		}
		for _, c := range f.Seen {
			fmt.Fprintf(w, "  also seen: %s\n", c.Text)
		}
		fmt.Fprintf(w, "  fix: %s\n", strings.TrimSpace(f.Fix))
	}
}
