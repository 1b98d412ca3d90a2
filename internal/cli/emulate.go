package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/longhaul/longhaul/internal/lab"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

type emulateArgs struct {
	rtt, rate, upRate, downRate string
	loss, upLoss, downLoss      string
	burst, upBurst, downBurst   string
	outage, upOut, downOut      string
	queue, jitter               string
	upQueue, downQueue          string
	upJitter, downJitter        string
	upDelay, downDelay          string
	clientSysctls               []string
	serverSysctls               []string
	cc                          string
	server                      string
	statsJSON                   string
	prefix                      string
	check                       bool
	checkTime                   string
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
$LONGHAUL_CLIENT. --server starts a command in the server namespace first
and stops it afterwards. The exit status is CMD's.

The link runs in userspace (this kernel class has no netem): TUN devices
with offloads carry TSO super-packets whole and split them only where a
segment is lost or the queue overflows. Runs in which the emulator itself
dropped or delayed frames are flagged overloaded: their results are not
valid.

Namespaces are named lh-<run>-c and lh-<run>-s; they are removed on exit,
on SIGINT/SIGTERM, and leftovers of a killed run are reaped at the next
start. Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN).`,
		Example: `  # iperf3 over 200 ms at 1 Gbit/s with large buffers in both namespaces
  longhaul emulate --rtt 200ms --rate 1Gbit/s \
    --client-sysctl net.ipv4.tcp_rmem="4096 131072 67108864" \
    --server-sysctl net.ipv4.tcp_wmem="4096 16384 67108864" \
    --server "iperf3 -s" -- iperf3 -c '$LONGHAUL_SERVER' -t 20

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
	f := c.Flags()
	f.StringVar(&a.rtt, "rtt", "", "round-trip time: each direction gets half as one-way delay, e.g. 200ms")
	f.StringVar(&a.rate, "rate", "", "bottleneck rate on the wire, both directions, e.g. 1Gbit/s (default unlimited)")
	f.StringVar(&a.upRate, "up-rate", "", "rate client -> server (overrides --rate)")
	f.StringVar(&a.downRate, "down-rate", "", "rate server -> client (overrides --rate)")
	f.StringVar(&a.loss, "loss", "", "random loss per segment, both directions, e.g. 0.1%")
	f.StringVar(&a.upLoss, "up-loss", "", "loss client -> server (overrides --loss)")
	f.StringVar(&a.downLoss, "down-loss", "", "loss server -> client (overrides --loss)")
	f.StringVar(&a.burst, "burst-loss", "", "loss in bursts (Gilbert-Elliott), both directions: MEAN/BURST, e.g. 1%/8 (1% of segments, lost 8 in a row on average)")
	f.StringVar(&a.upBurst, "up-burst-loss", "", "burst loss client -> server (overrides --burst-loss)")
	f.StringVar(&a.downBurst, "down-burst-loss", "", "burst loss server -> client (overrides --burst-loss)")
	f.StringVar(&a.outage, "outage", "", "drop everything, both directions, for DURATION@START after the start, e.g. 1s@5s (comma-separated list)")
	f.StringVar(&a.upOut, "up-outage", "", "outages client -> server (overrides --outage)")
	f.StringVar(&a.downOut, "down-outage", "", "outages server -> client (overrides --outage)")
	f.StringVar(&a.queue, "queue", "1bdp", "bottleneck queue: bytes (25MB), packets (1000p) or BDPs (1bdp, 0.5bdp; at least 100 packets)")
	f.StringVar(&a.jitter, "jitter", "", "extra one-way delay, uniform in [0, jitter], without reordering")
	f.StringVar(&a.upQueue, "up-queue", "", "queue client -> server (overrides --queue)")
	f.StringVar(&a.downQueue, "down-queue", "", "queue server -> client (overrides --queue)")
	f.StringVar(&a.upJitter, "up-jitter", "", "jitter client -> server (overrides --jitter)")
	f.StringVar(&a.downJitter, "down-jitter", "", "jitter server -> client (overrides --jitter)")
	f.StringVar(&a.upDelay, "up-delay", "", "one-way delay client -> server (default half of --rtt)")
	f.StringVar(&a.downDelay, "down-delay", "", "one-way delay server -> client (default --rtt minus the up delay)")
	f.StringArrayVar(&a.clientSysctls, "client-sysctl", nil, "KEY=VALUE set in the client namespace (repeatable)")
	f.StringArrayVar(&a.serverSysctls, "server-sysctl", nil, "KEY=VALUE set in the server namespace (repeatable)")
	f.StringVar(&a.cc, "cc", "", "congestion control of both namespaces (cubic, bbr, reno)")
	f.StringVar(&a.server, "server", "", "shell command to run in the server namespace first (stopped at the end)")
	f.StringVar(&a.statsJSON, "stats-json", "", "also write the link statistics as JSON to this file")
	f.BoolVar(&a.check, "check", false, "self-test: measure RTT and goodput across the path against the configuration, then exit")
	f.StringVar(&a.checkTime, "check-time", "", "how long --check's transfer runs (default max(5s, 20 RTT))")
	f.StringVar(&a.prefix, "prefix", topo.DefaultPrefix, "name prefix of the namespaces")
	_ = f.MarkHidden("prefix")
	return c
}

// linkConfigs turns the flags into the two directions' link models.
func (a emulateArgs) linkConfigs() (up, down linkemu.Config, rtt time.Duration, err error) {
	if a.rtt == "" && (a.upDelay == "" || a.downDelay == "") {
		return up, down, 0, usagef("emulate needs --rtt, e.g. --rtt 200ms (or both --up-delay and --down-delay)")
	}
	if a.rtt == "" {
		a.rtt = "0s"
	}
	if rtt, err = units.ParseDuration(a.rtt); err != nil {
		return up, down, 0, usagef("--rtt: %v", err)
	}
	if rtt > 10*time.Second {
		return up, down, 0, usagef("--rtt: %v is longer than the emulator supports (10s)", rtt)
	}
	rate := func(flag, v, def string) (float64, error) {
		if v == "" {
			v, flag = def, "rate"
		}
		if v == "" {
			return 0, nil
		}
		r, err := units.ParseRate(v)
		if err != nil {
			return 0, usagef("--%s: %v", flag, err)
		}
		return r, nil
	}
	loss := func(flag, v, def string) (linkemu.LossModel, error) {
		if v == "" {
			v, flag = def, "loss"
		}
		if v == "" {
			return nil, nil
		}
		p, err := units.ParsePercent(v)
		if err != nil {
			return nil, usagef("--%s: %v", flag, err)
		}
		if p == 0 {
			return nil, nil
		}
		return linkemu.Bernoulli{P: p}, nil
	}
	if up.RateBps, err = rate("up-rate", a.upRate, a.rate); err != nil {
		return
	}
	if down.RateBps, err = rate("down-rate", a.downRate, a.rate); err != nil {
		return
	}
	if up.Loss, err = loss("up-loss", a.upLoss, a.loss); err != nil {
		return
	}
	if down.Loss, err = loss("down-loss", a.downLoss, a.loss); err != nil {
		return
	}
	if err = a.burstAndOutages(&up, &down); err != nil {
		return
	}
	dur := func(flag, v, def string) (time.Duration, error) {
		if v == "" {
			v, flag = def, strings.SplitN(flag, "-", 2)[1]
		}
		if v == "" {
			return 0, nil
		}
		d, err := units.ParseDuration(v)
		if err != nil {
			return 0, usagef("--%s: %v", flag, err)
		}
		return d, nil
	}
	if up.Jitter, err = dur("up-jitter", a.upJitter, a.jitter); err != nil {
		return
	}
	if down.Jitter, err = dur("down-jitter", a.downJitter, a.jitter); err != nil {
		return
	}
	up.Delay, down.Delay = rtt/2, rtt-rtt/2
	if a.upDelay != "" || a.downDelay != "" {
		if up.Delay, err = dur("up-delay", a.upDelay, ""); err != nil {
			return
		}
		if a.upDelay == "" {
			up.Delay = rtt - rtt/2
		}
		if down.Delay, err = dur("down-delay", a.downDelay, ""); err != nil {
			return
		}
		if a.downDelay == "" {
			down.Delay = max(rtt-up.Delay, 0)
		}
		rtt = up.Delay + down.Delay
	}
	seed := time.Now().UnixNano()
	up.Seed, down.Seed = seed, seed+1
	for _, d := range []struct {
		c    *linkemu.Config
		flag string
		q    string
	}{{&up, "up-queue", a.upQueue}, {&down, "down-queue", a.downQueue}} {
		q, flag := d.q, d.flag
		if q == "" {
			q, flag = a.queue, "queue"
		}
		if err := setQueue(d.c, flag, q, rtt); err != nil {
			return up, down, 0, err
		}
		if err := d.c.Validate(); err != nil {
			return up, down, 0, usagef("link: %v", err)
		}
	}
	return up, down, rtt, nil
}

// setQueue applies a --queue value to one direction; without a rate there
// is no bottleneck and so no queue.
func setQueue(c *linkemu.Config, flag, q string, rtt time.Duration) error {
	q = strings.TrimSpace(q)
	if c.RateBps == 0 || q == "" {
		return nil
	}
	switch {
	case strings.HasSuffix(q, "bdp"):
		var n float64
		if _, err := fmt.Sscanf(strings.TrimSuffix(q, "bdp"), "%g", &n); err != nil || n <= 0 {
			return usagef("--%s: %q: write BDPs like 1bdp or 0.5bdp, bytes like 25MB, or packets like 1000p", flag, q)
		}
		// A BDP-sized queue on a short path would be a packet or two; real
		// links queue at least what a NIC ring holds.
		c.QueueBytes = lab.BDPQueue(n, c.RateBps, rtt)
	case strings.HasSuffix(q, "p"):
		var n int
		if _, err := fmt.Sscanf(strings.TrimSuffix(q, "p"), "%d", &n); err != nil || n < 1 {
			return usagef("--%s: %q: packets must be a whole number >= 1, like 1000p", flag, q)
		}
		c.QueuePackets = n
	default:
		n, err := units.ParseSize(q)
		if err != nil {
			return usagef("--%s: %v; or BDPs like 1bdp, or packets like 1000p", flag, err)
		}
		c.QueueBytes = n
	}
	return nil
}

func (a emulateArgs) spec() (topo.Spec, error) {
	s := topo.Spec{Prefix: a.prefix, CC: a.cc}
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
func upPath(ctx context.Context, a emulateArgs, stderr io.Writer, extraClient, extraServer []topo.Sysctl) (*lab.Path, error) {
	up, down, rtt, err := a.linkConfigs()
	if err != nil {
		return nil, err
	}
	spec, err := a.spec()
	if err != nil {
		return nil, err
	}
	spec.ClientSysctls = append(extraClient, spec.ClientSysctls...)
	spec.ServerSysctls = append(extraServer, spec.ServerSysctls...)
	p, err := lab.Up(ctx, lab.PathSpec{Topo: spec, Up: up, Down: down, RTT: rtt}, stderr)
	if err != nil {
		return nil, labError(err)
	}
	fmt.Fprintf(stderr, "longhaul: path up: %s\n", p.Describe())
	return p, nil
}

// labError turns the lab's bad-input errors into usage errors (exit 2).
func labError(err error) error {
	if errors.Is(err, lab.ErrInput) {
		return usagef("%v", err)
	}
	return err
}

func runEmulate(ctx context.Context, a emulateArgs, argv []string, stderr io.Writer) error {
	if a.check {
		if len(argv) > 0 {
			return usagef("--check runs its own test: give no command")
		}
		return runCheck(ctx, a, stderr)
	}
	if len(argv) == 0 {
		return usagef("emulate needs a command to run after --, e.g. longhaul emulate --rtt 200ms -- iperf3 -c 198.18.0.2")
	}
	if _, _, _, err := a.linkConfigs(); err != nil {
		return err
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return usagef("command %q not found in PATH; install it first", argv[0])
	}
	p, err := upPath(ctx, a, stderr, nil, nil)
	if err != nil {
		return err
	}
	defer p.Close()
	cl, sv := p.Topo.Client(), p.Topo.Server()
	e := p.Emu
	env := append(os.Environ(), "LONGHAUL_SERVER="+sv.Addr.String(), "LONGHAUL_CLIENT="+cl.Addr.String(),
		"LONGHAUL_CLIENT_NETNS="+cl.Netns, "LONGHAUL_SERVER_NETNS="+sv.Netns)
	if a.server != "" {
		srv := sv.Command(ctx, "sh", "-c", a.server)
		srv.Env, srv.Stdout, srv.Stderr = env, stderr, stderr
		if err := srv.Start(); err != nil {
			return fmt.Errorf("emulate: start --server: %w", err)
		}
		defer func() { _ = srv.Cancel(); _ = srv.Wait() }()
		if err := lab.WaitListening(ctx, srv, sv.Netns, 0, "emulate: --server command", 10*time.Second); err != nil {
			return err
		}
	}
	code, err := runClient(ctx, cl, argv, env)
	st := e.Stop()
	printLinkStats(stderr, st)
	if a.statsJSON != "" {
		if werr := writeStatsFile(a.statsJSON, st); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}

// exitStatus passes the command's exit status through.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("command exited with status %d", int(e)) }

// runClient runs CMD in the client namespace. On a terminal it becomes
// the foreground process group, so that an interactive shell gets the
// terminal's signals; otherwise SIGINT/SIGTERM to longhaul are passed on.
func runClient(ctx context.Context, cl topo.End, argv []string, env []string) (int, error) {
	cmd := cl.Command(context.Background(), argv[0], argv[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	tty := isTerminal(os.Stdin)
	if tty {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = 0
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("emulate: start %s: %w", argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// Ask politely, then insist.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
		}
	}
	if tty {
		reclaimTerminal()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// reclaimTerminal makes longhaul's process group the foreground again.
func reclaimTerminal() {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(int(os.Stdin.Fd()), unix.TIOCSPGRP, unix.Getpgrp())
}

// burstAndOutages adds --burst-loss (the Gilbert-Elliott model from a
// mean and a burst length) and --outage to the two directions.
func (a emulateArgs) burstAndOutages(up, down *linkemu.Config) error {
	for _, d := range []struct {
		c         *linkemu.Config
		dir, b, o string
	}{{up, "up", a.upBurst, a.upOut}, {down, "down", a.downBurst, a.downOut}} {
		b, flag := d.b, d.dir+"-burst-loss"
		if b == "" {
			b, flag = a.burst, "burst-loss"
		}
		if b != "" {
			if d.c.Loss != nil {
				return usagef("--%s: give either --loss or --burst-loss for a direction, not both", flag)
			}
			mean, burst, ok := strings.Cut(b, "/")
			m, err := units.ParsePercent(mean)
			if err != nil || !ok {
				return usagef("--%s: want MEAN/BURST, e.g. 1%%/8 (1%% of segments, in bursts of 8 on average)", flag)
			}
			n, err := strconv.ParseFloat(burst, 64)
			if err != nil {
				return usagef("--%s: burst length %q: want a number of segments, e.g. 8", flag, burst)
			}
			ge, err := linkemu.BurstLoss(m, n)
			if err != nil {
				return usagef("--%s: %v", flag, err)
			}
			d.c.Loss = ge
		}
		o, flag := d.o, d.dir+"-outage"
		if o == "" {
			o, flag = a.outage, "outage"
		}
		if o != "" {
			out, err := linkemu.ParseOutages(o)
			if err != nil {
				return usagef("--%s: %v", flag, err)
			}
			d.c.Outages = out
		}
	}
	return nil
}
