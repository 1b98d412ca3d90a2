package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
)

type calcArgs struct {
	path                     pathFlags
	size                     units.Size
	rmem, wmem               bufferFlag
	coreRmemMax, coreWmemMax units.Size
	soRcvbuf, soSndbuf       units.Size
	ram                      units.Size
	tcpMem                   string
	kernel                   string
	ratio                    float64
	mss, initcwnd, initrwnd  int
	host, json               bool
}

func newCalcCmd() *cobra.Command {
	var a calcArgs
	c := &cobra.Command{
		Use:   "calc --rtt RTT --rate RATE [flags]",
		Short: "Path model: BDP, buffers each end needs, throughput ceilings, round trips",
		Long: `calc does the arithmetic of a long path: the bandwidth-delay product, the
receive and send buffer (tcp_rmem[2] / tcp_wmem[2]) each end needs, the
throughput ceiling given buffers allow at the RTT (with the kernel's
window/buffer ratio), the memory N flows take against tcp_mem, the round
trips a short transfer needs from initcwnd/initrwnd, and what SO_RCVBUF /
SO_SNDBUF do to an application's buffer.

Buffers may be given as the sysctl triple or as one size (the maximum);
--host takes them, tcp_mem, RAM and the kernel version from this host.`,
		Example: `  # BDP and buffers for 200 ms at 1 Gbit/s
  longhaul calc --rtt 200ms --rate 1Gbit/s

  # what old Ubuntu defaults allow on that path
  longhaul calc --rtt 200ms --rate 1Gbit/s --rmem "4096 131072 6291456" --wmem "4096 16384 4194304"

  # this host's settings, 4 parallel flows
  longhaul calc --rtt 200ms --rate 1Gbit/s --host --flows 4

  # round trips for a 17 kB response at 50 ms with initcwnd 20
  longhaul calc --rtt 50ms --rate 10Mbit/s --size 17kB --initcwnd 20 --initrwnd 20

  # why iperf3 -w 640K is capped (a user's 411 ms path)
  longhaul calc --rtt 516ms --rate 20Mbit/s --so-rcvbuf 640K --core-rmem-max 212992 --kernel 4.15`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runCalc(a, c.OutOrStdout())
		},
	}
	f := c.Flags()
	a.path.register(f, "parallel flows sharing the path")
	a.rmem.def, a.wmem.def = pathmodel.Triple{Min: 4096, Default: 131072}, pathmodel.Triple{Min: 4096, Default: 16384}
	f.Var(&a.size, "size", "a transfer to time on a new connection, e.g. 17kB, 605KB, 1GB")
	f.Var(&a.rmem, "rmem", `receiver's net.ipv4.tcp_rmem: "min default max" or one size for the max`)
	f.Var(&a.wmem, "wmem", `sender's net.ipv4.tcp_wmem: "min default max" or one size for the max`)
	f.Var(&a.coreRmemMax, "core-rmem-max", "net.core.rmem_max (clamps SO_RCVBUF)")
	f.Var(&a.coreWmemMax, "core-wmem-max", "net.core.wmem_max (clamps SO_SNDBUF)")
	f.Var(&a.soRcvbuf, "so-rcvbuf", "the receiving application sets SO_RCVBUF to this (turns autotuning off)")
	f.Var(&a.soSndbuf, "so-sndbuf", "the sending application sets SO_SNDBUF to this")
	f.StringVar(&a.tcpMem, "tcp-mem", "", `net.ipv4.tcp_mem in pages: "min pressure max"`)
	f.Var(&a.ram, "ram", "RAM of the host, e.g. 16GiB")
	f.StringVar(&a.kernel, "kernel", "", "kernel version of the receiver, e.g. 6.1 (picks the window/buffer ratio); default current")
	f.Float64Var(&a.ratio, "ratio", 0, "override the receive window/buffer ratio (0..1)")
	f.IntVar(&a.mss, "mss", 0, "maximum segment size in bytes (default 1448)")
	f.IntVar(&a.initcwnd, "initcwnd", 0, "sender's initial congestion window in segments (default 10)")
	f.IntVar(&a.initrwnd, "initrwnd", 0, "receiver's route initrwnd in segments (default: kernel's)")
	f.BoolVar(&a.host, "host", false, "take buffers, tcp_mem, RAM, kernel and route windows from this host")
	f.BoolVar(&a.json, "json", false, "print JSON (schema longhaul.calc/v1)")
	return c
}

func (a calcArgs) input() (pathmodel.Input, error) {
	rtt, rate, given, err := a.path.parse()
	if err != nil {
		return pathmodel.Input{}, err
	}
	if !given {
		return pathmodel.Input{}, usagef("calc needs the path: --rtt and --rate, e.g. --rtt 200ms --rate 1Gbit/s")
	}
	var in pathmodel.Input
	if a.host {
		s, err := snapshot.Gather(snapshot.Options{})
		if err != nil {
			return in, err
		}
		in = s.ModelInput()
	}
	in.RTT, in.RateBps, in.Flows = rtt.D, rate.Bps, a.path.flows
	if a.rmem.set {
		in.Rmem = a.rmem.t
	}
	if a.wmem.set {
		in.Wmem = a.wmem.t
	}
	for _, s := range []struct {
		v   units.Size
		dst *int64
	}{{a.size, &in.TransferBytes}, {a.coreRmemMax, &in.CoreRmemMax}, {a.coreWmemMax, &in.CoreWmemMax},
		{a.soRcvbuf, &in.SoRcvbuf}, {a.soSndbuf, &in.SoSndbuf}, {a.ram, &in.RAMBytes}} {
		if s.v.IsSet() {
			*s.dst = s.v.N
		}
	}
	if a.tcpMem != "" {
		v, err := sysctl.ParseInts(a.tcpMem, 3)
		if err != nil {
			return in, usagef("--tcp-mem: %v; write it like the sysctl: \"287901 383868 575802\" (pages)", err)
		}
		in.TCPMemPages = [3]int64{v[0], v[1], v[2]}
	}
	if a.kernel != "" {
		k, err := sysconf.ParseKernelRelease(a.kernel)
		if err != nil {
			return in, usagef("--kernel: %v", err)
		}
		in.Kernel = pathmodel.Version{Major: k.Major, Minor: k.Minor}
		in.RecvRatio = pathmodel.ReceiveRatio(in.Kernel, 0, false)
	}
	if a.ratio != 0 {
		if !(a.ratio > 0 && a.ratio <= 1) { // NaN too
			return in, usagef("--ratio: %g is out of range; the window is a share of the buffer between 0 and 1 (0.66 on Linux 6.6+)", a.ratio)
		}
		in.RecvRatio = pathmodel.Ratio{Value: a.ratio, Basis: "given with --ratio"}
	}
	if a.mss != 0 {
		in.MSS = a.mss
	}
	if a.initcwnd != 0 {
		in.InitCwnd = a.initcwnd
	}
	if a.initrwnd != 0 {
		in.InitRwnd = a.initrwnd
	}
	if (a.mss < 0) || a.initcwnd < 0 || a.initrwnd < 0 {
		return in, usagef("--mss, --initcwnd and --initrwnd must be positive")
	}
	return in, nil
}

// calcJSON is the calc --json document.
type calcJSON struct {
	Schema string `json:"schema"`
	pathmodel.Result
}

func runCalc(a calcArgs, w io.Writer) error {
	in, err := a.input()
	if err != nil {
		return err
	}
	r, err := pathmodel.Compute(in)
	if err != nil {
		return err
	}
	if a.json {
		return writeJSON(w, calcJSON{Schema: "longhaul.calc/v1", Result: r})
	}
	printCalc(w, r)
	return nil
}

func line(w io.Writer, label, value, why string) {
	fmt.Fprintf(w, "  %-14s %-26s %s\n", label, value, why)
}

func printCalc(w io.Writer, r pathmodel.Result) {
	rtt := units.FormatDuration(units.FromSeconds(r.RTTSeconds))
	flows := "1 flow"
	if r.Flows > 1 {
		flows = strconv.Itoa(r.Flows) + " flows"
	}
	fmt.Fprintf(w, "Path: %s, RTT %s, %s\n", units.FormatRate(r.RateBps), rtt, flows)
	line(w, "BDP", units.FormatBytes(float64(r.BDPBytes)), fmt.Sprintf("%s bytes in flight fill the path: rate x RTT", units.FormatInt(r.BDPBytes)))
	if r.Flows > 1 {
		line(w, "per flow", units.FormatBytes(float64(r.FlowBDPBytes)), fmt.Sprintf("each of %d flows needs 1/%d of it in flight", r.Flows, r.Flows))
	}
	printEnd(w, "Receiver (tcp_rmem[2])", r.Receiver, r, fmt.Sprintf("window = %.2g x buffer: %s", r.RecvRatio.Value, r.RecvRatio.Basis))
	printEnd(w, "Sender (tcp_wmem[2])", r.Sender, r, fmt.Sprintf("a sender-bound flow keeps %.2g of the send buffer in flight on average (measured)", r.Sender.Ratio))

	fmt.Fprintln(w)
	switch r.LimitedBy {
	case "path":
		if r.Receiver.BufferBytes == 0 && r.Sender.BufferBytes == 0 {
			fmt.Fprintf(w, "Expected: up to %s if both ends have at least the buffers above (give --rmem/--wmem or --host to check)\n", units.FormatRate(r.ExpectedBps))
		} else {
			fmt.Fprintf(w, "Expected: %s, the path rate: the buffers given are large enough\n", units.FormatRate(r.ExpectedBps))
		}
	default:
		fmt.Fprintf(w, "Expected: %s, limited by the %s's buffer (%.0f%% of the path rate)\n", units.FormatRate(r.ExpectedBps), r.LimitedBy, 100*r.ExpectedBps/r.RateBps)
	}
	if m := r.Memory; m != nil {
		fmt.Fprintln(w, "Memory")
		line(w, "flows need", units.FormatIEC(float64(m.NeededBytes)), fmt.Sprintf("%d x the buffer one flow grows to (its share of the BDP, at most the maximum)", m.Flows))
		if m.WorstCaseBytes > 0 {
			line(w, "worst case", units.FormatIEC(float64(m.WorstCaseBytes)), "if every buffer grows to its configured maximum")
		}
		if m.TCPMemPressureBytes > 0 {
			line(w, "tcp_mem", units.FormatIEC(float64(m.TCPMemPressureBytes)), fmt.Sprintf("pressure (max %s): %s", units.FormatIEC(float64(m.TCPMemMaxBytes)), fits(m)))
		}
		if m.RAMBytes > 0 {
			line(w, "RAM", units.FormatIEC(float64(m.RAMBytes)), fmt.Sprintf("the flows take %.1f%% of it", 100*m.ShareOfRAM))
		}
	}
	if t := r.Transfer; t != nil {
		fmt.Fprintf(w, "Transfer of %s (%d segments of %d bytes)\n", units.FormatBytes(float64(t.Bytes)), t.Segments, t.MSS)
		line(w, "first flight", units.FormatBytes(float64(t.Flights[0])), fmt.Sprintf("min(initcwnd %d x MSS, initial rwnd %s): bound by %s", t.InitCwnd, units.FormatBytes(float64(t.InitRwndBytes)), t.FirstFlightLimit))
		rounds := fmt.Sprintf("1 for the handshake + %d data round(s): %s", t.DataRounds, flightList(t.Flights))
		if t.StreamedBytes > 0 {
			rounds += fmt.Sprintf("; the window then fills the path and the last %s stream at its rate", units.FormatBytes(float64(t.StreamedBytes)))
		}
		line(w, "round trips", strconv.Itoa(t.RoundTrips), rounds)
		line(w, "SYN to last", units.FormatDuration(units.FromSeconds(t.Seconds)), fmt.Sprintf("%d x RTT + serialization at the rate", t.RoundTrips))
		line(w, "first to last", units.FormatDuration(units.FromSeconds(t.FirstToLastSeconds)), "from the first data byte to the last")
	}
}

// windowHow says how an end's window follows from its buffer.
func windowHow(e pathmodel.End) string {
	how := fmt.Sprintf("%.2g x %s", e.Ratio, units.FormatIEC(float64(e.BufferBytes)))
	switch e.WindowBasis {
	case pathmodel.WindowOfFloor:
		return "two 64 KB super-packets: the least a sender keeps"
	case pathmodel.WindowOfRatioAndSkb:
		return how + " + " + units.FormatIEC(pathmodel.SendOvershoot) + " (the skb being filled)"
	}
	return how
}

func printEnd(w io.Writer, title string, e pathmodel.End, r pathmodel.Result, ratioWhy string) {
	fmt.Fprintln(w, title)
	line(w, "needed", units.FormatIEC(float64(e.NeededBytes)), fmt.Sprintf("%s window / %.2g; %s", units.FormatBytes(float64(r.FlowBDPBytes)), e.Ratio, ratioWhy))
	if e.BufferBytes == 0 {
		return
	}
	if sb := e.SockBuf; sb != nil {
		how := "setsockopt, doubled by the kernel"
		if sb.Clamped {
			how = fmt.Sprintf("setsockopt, clamped to the core max %s, then doubled", units.FormatIEC(float64(sb.CoreMaxBytes)))
		}
		line(w, "app buffer", units.FormatIEC(float64(sb.RequestedBytes)), fmt.Sprintf("requested with %s", how))
	}
	line(w, "given", units.FormatIEC(float64(e.BufferBytes)), e.Source)
	line(w, "window", units.FormatBytes(e.WindowBytes), windowHow(e))
	ceil := fmt.Sprintf("window / RTT; %.0f%% of the path rate", 100*e.CeilingBps/r.RateBps)
	if r.Flows > 1 {
		ceil = fmt.Sprintf("window / RTT per flow; %d flows: %s", r.Flows, units.FormatRate(e.AggregateCeilingBps))
	}
	line(w, "ceiling", units.FormatRate(e.CeilingBps), ceil)
}

func fits(m *pathmodel.Memory) string {
	switch {
	case !m.FitsMax:
		return "the flows exceed even the maximum"
	case !m.FitsPressure:
		return "the flows exceed pressure: the kernel will shrink buffers"
	}
	return "fits"
}

func flightList(f []int64) string {
	const show = 6
	parts := make([]string, 0, show+1)
	for i, b := range f {
		if i == show {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, units.FormatBytes(float64(b)))
	}
	return strings.Join(parts, ", ")
}
