//go:build linux && !longhaul_portable

package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type emulateArgs struct {
	rtt                   units.Duration
	both, up, down        dirFlags
	upDelay, downDelay    units.Duration
	clientSysctls         []string
	serverSysctls         []string
	cc, server, statsJSON string
	prefix                string
	check, ipv6           bool
	checkTime             units.Duration
	clientCPU, serverCPU  float64
}

// dirFlags are the link flags settable for both directions (--rate) and
// for one (--up-rate, --down-rate).
type dirFlags struct {
	rate    units.Rate
	loss    units.Percent
	burst   emupath.Burst
	outages emupath.Outages
	queue   emupath.Queue
	jitter  units.Duration
	policer emupath.Policer
	reorder emupath.Reorder
	sched   emupath.Schedule
	mbox    emupath.Middlebox
	mtu     emupath.MTU
	cross   emupath.Cross
}

func newDirFlags() dirFlags {
	return dirFlags{rate: units.Rate{Min: 1000, Max: 10e12}, jitter: units.Duration{Max: emupath.MaxRTT}}
}

func (d *dirFlags) register(f *pflag.FlagSet, prefix, what string) {
	f.Var(&d.rate, prefix+"rate", "bottleneck rate on the wire"+what+", e.g. 1Gbit/s (default unlimited)")
	f.Var(&d.loss, prefix+"loss", "random loss per segment"+what+", e.g. 0.1%")
	f.Var(&d.burst, prefix+"burst-loss", "loss in bursts (Gilbert-Elliott)"+what+": MEAN/BURST, e.g. 1%/8 (1% of segments, lost 8 in a row on average)")
	f.Var(&d.outages, prefix+"outage", "drop everything"+what+" for DURATION@START after the start, e.g. 1s@5s (comma-separated list)")
	f.Var(&d.policer, prefix+"policer", "token-bucket policer that drops the excess without a queue"+what+": RATE/BURST, e.g. 50Mbit/s/64KB")
	f.Var(&d.reorder, prefix+"reorder", "hold back a share of packets, as a LAG or multipath path does"+what+": SHARE/EXTRA, e.g. 1%/5ms")
	f.Var(&d.sched, prefix+"rate-schedule", "change the rate over time"+what+": RATE@AT list, e.g. 20Mbit/s@5s,100Mbit/s@10s (needs a rate)")
	f.Var(&d.mbox, prefix+"middlebox", "rewrite the TCP SYNs"+what+" as a firewall or load balancer does: mss=N clamps the MSS, wscale=strip removes window scaling, wscale=N changes it")
	f.Var(&d.mtu, prefix+"mtu", "the link's MTU below the hosts'"+what+": larger packets with DF are dropped and the sender told by ICMP; 1400/blackhole drops them silently (a PMTU black hole)")
	f.Var(&d.cross, prefix+"cross", "competing traffic on the bottleneck"+what+", never delivered: RATE, or RATE/ON/OFF in bursts, e.g. 30Mbit/s or 80Mbit/s/200ms/800ms (needs a rate)")
	f.Var(&d.queue, prefix+"queue", "bottleneck queue"+what+": bytes (25MB), packets (1000p) or BDPs (1bdp, 0.5bdp; at least 100 packets)")
	f.Var(&d.jitter, prefix+"jitter", "extra one-way delay"+what+", uniform in [0, jitter], without reordering")
}

func newEmulateCmd() *cobra.Command {
	var a emulateArgs
	c := &cobra.Command{
		Use:   "emulate --rtt RTT [--rate RATE] [flags] (-- CMD [ARG...] | --check)",
		Short: "Run a command over an emulated long path between two network namespaces",
		Long: `emulate builds a client and a server network namespace joined by an
emulated link (delay, rate, bottleneck queue, loss; each settable per
direction), runs CMD in the client namespace and prints the link's
statistics when it ends. The server is at $LONGHAUL_SERVER, the client at
$LONGHAUL_CLIENT, in CMD's environment: CMD runs as given, not through a
shell, so use sh -c '... "$LONGHAUL_SERVER" ...' to put an address in
its arguments. --server starts a command line (run by sh) in the server
namespace first and stops it afterwards. The exit status is CMD's, or 5
when CMD succeeded but the emulator was overloaded.

The link runs in userspace (this kernel class has no netem): TUN devices
with offloads carry TSO super-packets whole and split them only where a
segment is lost or the queue overflows. Runs in which the emulator itself
dropped or delayed frames are flagged overloaded: their results are not
valid. The warning is printed as soon as it happens, before CMD's own
verdict.

Namespaces are named lh-<run>-c and lh-<run>-s; they are removed on exit,
on SIGINT/SIGTERM, and leftovers of a killed run are reaped at the next
start. Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN).`,
		Example: `  # iperf3 over 200 ms at 1 Gbit/s with large buffers in both namespaces
  longhaul emulate --rtt 200ms --rate 1Gbit/s \
    --client-sysctl net.ipv4.tcp_rmem="4096 131072 67108864" \
    --server-sysctl net.ipv4.tcp_wmem="4096 16384 67108864" \
    --server "iperf3 -s" -- sh -c 'iperf3 -c "$LONGHAUL_SERVER" -t 20'

  # curl against nginx over 35 ms with 0.1% loss
  longhaul emulate --rtt 35ms --rate 100Mbit/s --loss 0.1% \
    --server "nginx -g 'daemon off;'" -- curl -o /dev/null http://198.18.0.2/

  # an interactive shell on a 411 ms, 20 Mbit/s path
  longhaul emulate --rtt 411ms --rate 20Mbit/s -- bash

  # self-test: is the path what it claims?
  longhaul emulate --rtt 200ms --rate 1Gbit/s --check`,
		RunE: func(c *cobra.Command, args []string) error {
			return runEmulate(c.Context(), a, args, c.ErrOrStderr())
		},
	}
	a.registerFlags(c.Flags())
	return c
}

func (a *emulateArgs) registerFlags(f *pflag.FlagSet) {
	a.rtt = units.Duration{Max: emupath.MaxRTT}
	a.both, a.up, a.down = newDirFlags(), newDirFlags(), newDirFlags()
	a.both.queue = emupath.Queue{BDPs: 1}
	a.upDelay, a.downDelay = units.Duration{Max: emupath.MaxRTT}, units.Duration{Max: emupath.MaxRTT}
	a.checkTime = units.Duration{Min: time.Second, Max: time.Hour}
	f.Var(&a.rtt, "rtt", "round-trip time: each direction gets half as one-way delay, e.g. 200ms")
	a.both.register(f, "", ", both directions")
	a.up.register(f, "up-", " client -> server (overrides the both-directions flag)")
	a.down.register(f, "down-", " server -> client (overrides the both-directions flag)")
	f.Var(&a.upDelay, "up-delay", "one-way delay client -> server (default half of --rtt)")
	f.Var(&a.downDelay, "down-delay", "one-way delay server -> client (default --rtt minus the up delay)")
	f.StringArrayVar(&a.clientSysctls, "client-sysctl", nil, "KEY=VALUE set in the client namespace (repeatable)")
	f.StringArrayVar(&a.serverSysctls, "server-sysctl", nil, "KEY=VALUE set in the server namespace (repeatable)")
	f.StringVar(&a.cc, "cc", "", "congestion control of both namespaces (cubic, bbr, reno)")
	f.StringVar(&a.server, "server", "", "shell command to run in the server namespace first (stopped at the end)")
	f.StringVar(&a.statsJSON, "stats-json", "", "also write the link statistics as JSON to this file")
	f.BoolVar(&a.check, "check", false, "self-test: measure RTT and goodput across the path against the configuration, then exit")
	f.Var(&a.checkTime, "check-time", "how long --check's transfer runs (default max(5s, 20 RTT))")
	f.StringVar(&a.prefix, "prefix", topo.DefaultPrefix, "name prefix of the namespaces")
	f.Float64Var(&a.clientCPU, "client-cpu", 0, "limit the CPU of the commands in the client namespace to this many cores, e.g. 0.2 (a cgroup; default no limit)")
	f.Float64Var(&a.serverCPU, "server-cpu", 0, "limit the CPU of the commands in the server namespace (--server) to this many cores, e.g. 0.2")
	f.BoolVar(&a.ipv6, "ipv6", false, "give the ends IPv6 addresses too (2001:2::1 client, 2001:2::2 server; $LONGHAUL_CLIENT6, $LONGHAUL_SERVER6)")
	_ = f.MarkHidden("prefix")
}

// link turns the flags into the emulated link: a one-direction flag
// overrides the both-directions one; --up-delay/--down-delay override the
// halves of --rtt.
func (a emulateArgs) link() (emupath.Link, error) {
	if !a.rtt.IsSet() && !(a.upDelay.IsSet() && a.downDelay.IsSet()) {
		return emupath.Link{}, usagef("emulate needs --rtt, e.g. --rtt 200ms (or both --up-delay and --down-delay)")
	}
	rtt := a.rtt.D
	l := emupath.Link{Up: a.up.resolve(a.both), Down: a.down.resolve(a.both), Seed: time.Now().UnixNano()}
	l.Up.Delay, l.Down.Delay = rtt/2, rtt-rtt/2
	if a.upDelay.IsSet() || a.downDelay.IsSet() {
		l.Up.Delay = pick(a.upDelay.IsSet(), a.upDelay.D, rtt-rtt/2)
		l.Down.Delay = pick(a.downDelay.IsSet(), a.downDelay.D, max(rtt-l.Up.Delay, 0))
	}
	if _, _, err := l.Configs(); err != nil {
		return l, usagef("%v", err)
	}
	return l, nil
}

// resolve is one direction's link: its own flags where given, else the
// both-directions flags.
func (d dirFlags) resolve(both dirFlags) emupath.Direction {
	q := both.queue
	if d.queue != (emupath.Queue{}) {
		q = d.queue
	}
	out := emupath.Direction{
		RateBps:   pick(d.rate.IsSet(), d.rate.Bps, both.rate.Bps),
		Loss:      pick(d.loss.IsSet(), d.loss.F, both.loss.F),
		Burst:     pick(d.burst.Mean > 0, d.burst, both.burst),
		Outages:   pick(d.outages != nil, d.outages, both.outages),
		Jitter:    pick(d.jitter.IsSet(), d.jitter.D, both.jitter.D),
		Queue:     q,
		Policer:   pick(d.policer.Enabled(), d.policer, both.policer),
		Reorder:   pick(d.reorder.Enabled(), d.reorder, both.reorder),
		Schedule:  pick(d.sched != nil, d.sched, both.sched),
		Middlebox: pick(d.mbox.Enabled(), d.mbox, both.mbox),
		MTU:       pick(d.mtu.Bytes > 0, d.mtu, both.mtu),
		Cross:     pick(d.cross.Enabled(), d.cross, both.cross),
	}
	if d.burst.Mean > 0 && !d.loss.IsSet() {
		out.Loss = 0 // this direction's burst loss replaces the both-directions random loss
	}
	return out
}

func pick[T any](own bool, v, otherwise T) T {
	if own {
		return v
	}
	return otherwise
}

func (a emulateArgs) spec() (topo.Spec, error) {
	s := topo.Spec{Prefix: a.prefix, CC: a.cc, IPv6: a.ipv6, ClientCPU: a.clientCPU, ServerCPU: a.serverCPU}
	for _, set := range []struct {
		flag string
		in   []string
		out  *[]topo.Sysctl
	}{{"client-sysctl", a.clientSysctls, &s.ClientSysctls}, {"server-sysctl", a.serverSysctls, &s.ServerSysctls}} {
		for _, kv := range set.in {
			sc, err := topo.ParseSysctl(kv)
			if err != nil {
				return s, usagef("--%s: %v", set.flag, err)
			}
			*set.out = append(*set.out, sc)
		}
	}
	if err := s.Validate(); err != nil {
		return s, usagef("%v", err)
	}
	return s, nil
}

// upPath validates the flags and brings the path up; extra sysctls go
// before the user's own, so the user's win.
func upPath(ctx context.Context, a emulateArgs, l emupath.Link, stderr io.Writer, extra []topo.Sysctl) (*emupath.Path, error) {
	up, down, err := l.Configs()
	if err != nil {
		return nil, usagef("%v", err)
	}
	spec, err := a.spec()
	if err != nil {
		return nil, err
	}
	spec.ClientSysctls = append(slices.Clone(extra), spec.ClientSysctls...)
	spec.ServerSysctls = append(slices.Clone(extra), spec.ServerSysctls...)
	p, err := emupath.Up(ctx, emupath.Spec{Topo: spec, Up: up, Down: down, RTT: l.RTT()}, stderr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "longhaul: path up: %s\n", p.Describe())
	return p, nil
}

func runEmulate(ctx context.Context, a emulateArgs, argv []string, stderr io.Writer) error {
	l, err := a.link()
	if err != nil {
		return err
	}
	if a.check {
		if len(argv) > 0 {
			return usagef("--check runs its own test: give no command")
		}
		return runCheck(ctx, a, l, stderr)
	}
	if len(argv) == 0 {
		return usagef("emulate needs a command to run after --, e.g. longhaul emulate --rtt 200ms -- iperf3 -c 198.18.0.2")
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return usagef("command %q not found in PATH; install it first", argv[0])
	}
	stats, err := openStatsFile(a.statsJSON)
	if err != nil {
		return err
	}
	defer stats.Close()
	p, err := upPath(ctx, a, l, stderr, nil)
	if err != nil {
		return err
	}
	defer p.Close()
	env := p.Env()
	if a.server != "" {
		// The server's output is its own, as CMD's is: the real file
		// descriptor, unfiltered (a pipe would also hold stop until every
		// process the server started had closed it).
		stop, err := p.StartServer(ctx, a.server, env, rawWriter(stderr))
		if err != nil {
			return err
		}
		defer stop()
	}
	e := p.Emu
	stopWatch := watchOverload(e.Stats, stderr, 500*time.Millisecond)
	code, err := p.RunClient(ctx, argv, env, isTerminal(os.Stdin))
	warned := stopWatch()
	return finishEmulate(stderr, stats, e.Stop(), warned, code, err)
}

// emulateOutcome is emulate's result: the run's error, else the command's
// own exit status, else, for a command that succeeded on a run the
// emulator overloaded, exit 5 (its numbers are not the path's).
func emulateOutcome(code int, err error, overloaded bool) error {
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	if overloaded {
		return invalidError{"emulate: the command succeeded but its results are not valid: the emulator was overloaded (exit status 5); run it on a less busy machine or at a lower --rate"}
	}
	return nil
}
