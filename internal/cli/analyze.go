package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/capture"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/tcpflow"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
)

type analyzeArgs struct {
	flow       int
	json       bool
	timeline   bool
	rate       units.Rate
	top        int
	paragraphs int
	points     int
	maxFlows   int
	cpuProfile string // hidden: scripts/bench-analyze.sh's profile
}

func newAnalyzeCmd() *cobra.Command {
	var a analyzeArgs
	c := &cobra.Command{
		Use:   "analyze FILE [--flow ID] [--json] [--timeline]",
		Short: "Explain a packet capture: what limited each TCP flow, by how much, and the fix",
		Long: `analyze reads a capture (pcap or pcapng, optionally gzip'd; Ethernet with
VLAN tags, raw IP, Linux cooked SLL/SLL2, BSD loopback, PPP and PPPoE,
802.11 with or without radiotap; IPv4 and IPv6) and follows every TCP flow. For each direction that carried data it
attributes the transfer's time to what limited the sender: the receiver's
window (rwnd-limited), a zero window, the send buffer, the application,
slow start, loss recovery or the path (bottleneck), and prints the verdict
with its share of the time, the numbers behind it (RTT, window, achieved
throughput against the ceiling the window sets, the BDP with --rate) and the
fix. For a direction held by its congestion window (loss-limited or a
bottleneck) it also names what the path did, when the packets show it:
random loss, a shallow buffer, bufferbloat or reordering, with the numbers
(the round trip idle and under load, the losses and how they came), and
that cause's fix becomes the direction's. A capture cannot tell a policer
from a shallow buffer with no queue, nor show a CPU-bound end or the
congestion control's fit: longhaul test measures those.

The capture may be taken at the client, the server or in between: the
handshake tells where, and the RTT and in-flight data are corrected for it.
Captures cut at a small snaplen (tcpdump -s 128) are fine: lengths come from
the IP headers. FILE may be - (standard input) or a pipe, read as a stream:
Ctrl-C then prints the flows read so far.

Memory is bounded: at most --max-flows connections are followed at once
(about 7 KB each); when more are open, the quarter idle longest are judged
on the packets so far and dropped from the table. At most --max-flows flows
are listed, those with the most bytes; the rest are counted in one line
("summarised" in the JSON) with their verdicts.

Output: a table of flows, then verdict paragraphs for the largest flows.
--json prints the analysis (schema longhaul.analyze/v1); --timeline adds
each direction's time-sequence series (seq, ack, window, in flight, marks for
retransmissions and zero windows) to the JSON.

Exit status: 0 when the capture was read to its end, 1 when it is truncated
or corrupt (the flows before the damage are still printed), 2 for bad flags
or a file that is not a pcap/pcapng capture.`,
		Example: `  # what limited each flow in a capture
  longhaul analyze upload.pcap

  # one flow, with the BDP and fix sized for a 100 Mbit/s path
  longhaul analyze upload.pcapng.gz --flow 3 --rate 100Mbit/s

  # machine-readable verdicts, and the series for plots
  longhaul analyze big.pcap --json
  longhaul analyze big.pcap --flow 1 --timeline > flow1.json

  # capture for it: headers only, both directions, from the SYN on
  tcpdump -i eth0 -s 128 -w upload.pcap 'tcp port 443'

  # live, from a pipe; Ctrl-C prints what was seen
  tcpdump -i eth0 -s 128 -U -w - 'tcp port 443' | longhaul analyze -'`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("analyze takes one capture file, got %d arguments (see %s --help)", len(args), c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runAnalyze(c.Context(), a, args[0], c.OutOrStdout())
		},
	}
	f := c.Flags()
	f.IntVar(&a.flow, "flow", 0, "only this flow (its ID from the table)")
	f.BoolVar(&a.json, "json", false, "print JSON (schema longhaul.analyze/v1)")
	f.BoolVar(&a.timeline, "timeline", false, "include each direction's time-sequence series in the JSON (implies --json)")
	a.rate = units.Rate{Min: 1e3, Max: pathmodel.MaxRate}
	f.Var(&a.rate, "rate", "the path's bottleneck rate, e.g. 100Mbit/s: gives the BDP and sizes the fixes")
	f.IntVar(&a.top, "top", 20, "table rows: the largest flows")
	f.IntVar(&a.paragraphs, "explain", 5, "verdict paragraphs: the largest flows")
	f.IntVar(&a.points, "points", 2000, "with --timeline: at most this many points per direction")
	f.IntVar(&a.maxFlows, "max-flows", tcpflow.DefaultMaxFlows, "connections followed at once and listed: beyond it the longest idle are judged early and the smallest summarised (memory: ~10 KB each)")
	f.StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the analysis to this file (pprof)")
	_ = f.MarkHidden("cpuprofile")
	return c
}

// AnalyzeFile analyzes the capture at path: the hook the lab and tests
// use. On a truncated or corrupt file it returns the analysis so far and
// the error.
func AnalyzeFile(ctx context.Context, path string, opts tcpflow.Options) (*tcpflow.Analysis, error) {
	fh, err := openInput(ctx, "analyze:", path, "a pcap or pcapng capture")
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	src := io.Reader(fh)
	if m := mapInput(ctx, fh); m != nil {
		defer m.Close()
		src = m
	}
	an, err := tcpflow.Analyze(src, opts)
	if errInterrupted(err) {
		return an, fmt.Errorf("analyze: %s: interrupted", path)
	}
	if err != nil {
		var fe *capture.FormatError
		if errors.As(err, &fe) {
			return nil, badinput.Wrap(fmt.Errorf("analyze: %s: %w", path, err))
		}
		return an, fmt.Errorf("analyze: %s: %w", path, err)
	}
	return an, nil
}

// startCPUProfile profiles the CPU into path (none if empty) until the
// returned stop.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("analyze: --cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("analyze: --cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("analyze: --cpuprofile: %w", err)
		}
		return nil
	}, nil
}

// mapInput maps a regular file opened by openInput, to be read in place
// (capture.Mapping: no read calls, no copies), checking for Ctrl-C every
// megabyte as ctxReader does. It returns nil for a pipe, or where the
// file cannot be mapped: it is read as a stream then.
func mapInput(ctx context.Context, fh io.ReadCloser) *capture.Mapping {
	rc, ok := fh.(readCloser)
	if !ok {
		return nil
	}
	f, ok := rc.Closer.(*os.File)
	if !ok {
		return nil
	}
	m, err := capture.MapFile(f)
	if err != nil {
		return nil
	}
	m.Stop = ctx.Err
	return m
}

func runAnalyze(ctx context.Context, a analyzeArgs, path string, w io.Writer) error {
	opts := tcpflow.Options{SeriesFlow: a.flow, MaxFlows: a.maxFlows}
	if a.maxFlows < 1 || a.maxFlows > 10_000_000 {
		return usagef("--max-flows: 1 to 10,000,000, got %d", a.maxFlows)
	}
	if opts.RateBps = a.rate.Bps; a.rate.IsSet() && opts.RateBps <= 0 {
		return usagef("--rate: must be greater than zero, e.g. 100Mbit/s")
	}
	if a.flow < 0 || a.top < 0 || a.paragraphs < 0 {
		return usagef("--flow, --top and --explain must not be negative")
	}
	if a.timeline {
		a.json = true
		if a.points < 10 {
			return usagef("--points: at least 10, got %d", a.points)
		}
		opts.MaxPoints = a.points
	}
	stop, err := startCPUProfile(a.cpuProfile)
	if err != nil {
		return err
	}
	an, err := AnalyzeFile(ctx, path, opts)
	if err := stop(); err != nil {
		return err
	}
	if an == nil {
		return err
	}
	total := int64(len(an.Flows))
	if an.Summarised != nil {
		total += an.Summarised.Flows
	}
	if a.flow > 0 {
		var keep []*tcpflow.FlowReport
		for _, f := range an.Flows {
			if f.ID == a.flow {
				keep = append(keep, f)
			}
		}
		if keep == nil && err == nil {
			return usagef("--flow %d: no such flow; the capture has %s TCP flows (IDs from the table)", a.flow, units.FormatInt(total))
		}
		an.Flows = keep
		if an.Flows == nil {
			an.Flows = []*tcpflow.FlowReport{}
		}
	}
	if a.json {
		if werr := writeJSON(w, tcpflow.Doc{Schema: tcpflow.Schema, File: filepath.Base(path), Analysis: an}); werr != nil {
			return werr
		}
	} else {
		printAnalysis(w, path, an, total, a)
	}
	if err != nil {
		return fmt.Errorf("%w; the flows above are from the packets before it", err)
	}
	return nil
}

func printAnalysis(w io.Writer, path string, an *tcpflow.Analysis, total int64, a analyzeArgs) {
	fmt.Fprintf(w, "Capture %s: %s, %s packets (%s TCP), %s TCP flow(s), %s\n", filepath.Base(path), an.Format,
		units.FormatInt(an.Stats.Packets), units.FormatInt(an.Stats.TCPPackets), units.FormatInt(total), units.FormatDuration(units.FromSeconds(an.Duration)))
	if an.Clock.TickSeconds > 0 {
		fmt.Fprintf(w, "Clock: timestamps tick every %s (coarse)\n", units.FormatDuration(units.FromSeconds(an.Clock.TickSeconds)))
	}
	if an.Clock.Steps > 0 || an.Clock.Backwards > 0 {
		fmt.Fprintf(w, "Clock: %d jump(s) cut out, %d timestamp(s) going backwards clamped\n", an.Clock.Steps, an.Clock.Backwards)
	}
	if an.UnansweredSYNs > 0 {
		fmt.Fprintf(w, "Connection attempts never answered (SYN only, a scan or a SYN flood?): %s, counted, not listed\n", units.FormatInt(an.UnansweredSYNs))
	}
	if s := an.Summarised; s != nil && s.Flows > 0 {
		fmt.Fprintf(w, "Flows summarised, not listed (more than --max-flows %s): %s with %s packets and %s, the smallest; verdicts: %s\n",
			units.FormatInt(int64(a.maxFlows)), units.FormatInt(s.Flows), units.FormatInt(s.Packets), units.FormatBytes(float64(s.Bytes)), verdictCounts(s.Verdicts))
		fmt.Fprintf(w, "Flows judged early (idle when the table was full; a later packet starts a new flow): %s\n", units.FormatInt(s.Evicted))
	}
	if len(an.Flows) == 0 {
		fmt.Fprintln(w, "No TCP flows.")
		return
	}
	flows := append([]*tcpflow.FlowReport(nil), an.Flows...)
	sort.SliceStable(flows, func(i, j int) bool { return flows[i].Bytes > flows[j].Bytes })
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSENDER -> RECEIVER\tBYTES\tTIME\tTHROUGHPUT\tRTT\tVERDICT\tSHARE")
	for i, f := range flows {
		if i == a.top && a.flow == 0 {
			break
		}
		rtt := "-"
		if f.RTTSeconds > 0 {
			rtt = units.FormatDuration(units.FromSeconds(f.RTTSeconds))
		}
		share := "-"
		if f.Share > 0 {
			share = fmt.Sprintf("%.0f%%", 100*f.Share)
		}
		snd, rcv := f.Sender, f.Receiver
		if snd == "" {
			snd, rcv = f.Client, f.Server
		}
		fmt.Fprintf(tw, "%d\t%s -> %s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.ID, snd, rcv, units.FormatBytes(float64(f.Bytes)),
			units.FormatDuration(units.FromSeconds(dirDuration(f))), units.FormatRate(f.ThroughputBps), rtt, f.Verdict.Verdict, share)
	}
	tw.Flush()
	if n := len(flows) - a.top; n > 0 && a.flow == 0 {
		fmt.Fprintf(w, "... and %d smaller flow(s) (--json lists every listed flow)\n", n)
	}
	for i, f := range flows {
		if i == a.paragraphs && a.flow == 0 {
			break
		}
		if f.Bytes == 0 && a.flow == 0 {
			continue
		}
		printFlow(w, f, a.flow != 0)
	}
}

func dirDuration(f *tcpflow.FlowReport) float64 {
	for _, d := range f.Directions {
		if d.Sender == f.Sender {
			return d.Duration
		}
	}
	return f.Duration
}

func printFlow(w io.Writer, f *tcpflow.FlowReport, detail bool) {
	fmt.Fprintf(w, "\nFlow %d: %s -> %s, %s in %s (%s)\n", f.ID, f.Sender, f.Receiver, units.FormatBytes(float64(f.Bytes)),
		units.FormatDuration(units.FromSeconds(dirDuration(f))), units.FormatRate(f.ThroughputBps))
	fmt.Fprintf(w, "  verdict:  %s", f.Verdict.Verdict)
	if f.Share > 0 {
		fmt.Fprintf(w, " (%.0f%% of the time)", 100*f.Share)
	}
	fmt.Fprintf(w, ": %s\n", f.Summary)
	if d := mainDir(f); d != nil {
		if d.Cause != nil {
			fmt.Fprintf(w, "  path:     %s\n", d.Cause.Text)
		} else if d.CauseNote != "" {
			fmt.Fprintf(w, "  path:     %s\n", d.CauseNote)
		}
		for _, c := range d.Seen {
			fmt.Fprintf(w, "  seen:     %s\n", c.Text)
		}
	}
	var nums []string
	if f.RTTSeconds > 0 {
		nums = append(nums, "RTT "+units.FormatDuration(units.FromSeconds(f.RTTSeconds)))
	}
	if f.RwndBytes > 0 {
		nums = append(nums, "window "+units.FormatInt(f.RwndBytes)+" bytes")
	}
	if f.InflightBytes > 0 {
		nums = append(nums, "in flight up to "+units.FormatInt(f.InflightBytes)+" bytes")
	}
	if f.CeilingBps > 0 {
		nums = append(nums, "ceiling "+units.FormatRate(f.CeilingBps))
	}
	nums = append(nums, "achieved "+units.FormatRate(f.ThroughputBps))
	if f.BDPBytes > 0 {
		nums = append(nums, "BDP "+units.FormatBytes(float64(f.BDPBytes)))
	}
	fmt.Fprintf(w, "  numbers:  %s\n", strings.Join(nums, ", "))
	fmt.Fprintf(w, "  fix:      %s\n", f.Fix)
	if len(f.Flags) > 0 {
		fmt.Fprintf(w, "  flags:    %s\n", strings.Join(f.Flags, ", "))
	}
	if !detail {
		return
	}
	if h := f.Handshake; h != nil && h.RTT > 0 {
		fmt.Fprintf(w, "  handshake: SYN->SYN-ACK %s (capture-server-capture), SYN-ACK->ACK %s (capture-client-capture)\n",
			units.FormatDuration(units.FromSeconds(h.SynToSynAck)), units.FormatDuration(units.FromSeconds(h.SynAckToAck)))
	}
	for _, d := range f.Directions {
		fmt.Fprintf(w, "  %s -> %s: %s in %d segments (%s sent), MSS %d, window scale %s", d.Sender, d.Receiver,
			units.FormatBytes(float64(d.Bytes)), d.Segments, units.FormatBytes(float64(d.BytesSent)), d.MSS, d.WindowScale.State)
		if d.WindowScale.State == "known" {
			fmt.Fprintf(w, " (shift %d)", d.WindowScale.Shift)
		} else if d.WindowScale.LowerBound > 0 {
			fmt.Fprintf(w, " (shift >= %d)", d.WindowScale.LowerBound)
		}
		fmt.Fprintln(w)
		if d.Cause != nil && d.Sender != f.Sender {
			fmt.Fprintf(w, "    path: %s\n    fix: %s\n", d.Cause.Text, d.Fix)
		}
		fmt.Fprintf(w, "    retransmissions %d (fast %d, rto %d, spurious %d), hardware dups %d, reordered %d, zero-window stalls %d (%s, %d probes), keep-alives %d\n",
			d.Retrans.Total, d.Retrans.Fast, d.Retrans.RTO, d.Retrans.Spurious, d.HWDups, d.Reordered,
			d.ZeroWindow.Stalls, units.FormatDuration(units.FromSeconds(d.ZeroWindow.Seconds)), d.ZeroWindow.Probes, d.KeepAlives)
		if len(d.Shares) > 0 {
			keys := make([]string, 0, len(d.Shares))
			for k := range d.Shares {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool { return d.Shares[keys[i]] > d.Shares[keys[j]] })
			parts := make([]string, 0, len(keys))
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s %.0f%%", k, 100*d.Shares[k]))
			}
			fmt.Fprintf(w, "    time: %s\n", strings.Join(parts, ", "))
		}
	}
}

// mainDir is a flow's main direction (the one its verdict is about), or
// nil.
func mainDir(f *tcpflow.FlowReport) *tcpflow.DirReport {
	for i := range f.Directions {
		if f.Directions[i].Sender == f.Sender {
			return &f.Directions[i]
		}
	}
	return nil
}

// verdictCounts lists verdicts by count, the most common first.
func verdictCounts(m map[string]int64) string {
	type vc struct {
		v string
		n int64
	}
	var l []vc
	for v, n := range m {
		l = append(l, vc{v, n})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || (l[i].n == l[j].n && l[i].v < l[j].v) })
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprintf("%s %s", x.v, units.FormatInt(x.n))
	}
	return strings.Join(parts, ", ")
}
