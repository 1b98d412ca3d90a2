package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/longhaul/longhaul/internal/emu"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/tun"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

type emulateArgs struct {
	rtt, rate, upRate, downRate string
	loss, upLoss, downLoss      string
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

// minBDPQueue floors a BDP-based queue at 100 full-size packets on the
// wire: with --rtt 0 one BDP is a single packet, and a 1 Gbit/s path then
// carried 2 Mbit/s.
const minBDPQueue = 100 * (1500 + 38)

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
		c.QueueBytes = max(int64(n*pathmodel.BDP(c.RateBps, rtt)), minBDPQueue)
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

// path is a running emulated path: the topology and the data plane.
type path struct {
	t      *topo.Topology
	e      *emu.Emulator
	rtt    time.Duration
	up     linkemu.Config
	down   linkemu.Config
	closer []func()
}

// close stops the emulator, removes the topology and restores what was
// widened, in that order.
func (p *path) close() {
	for i := len(p.closer) - 1; i >= 0; i-- {
		p.closer[i]()
	}
	p.closer = nil
}

// upPath validates the flags and brings the path up; extra sysctls go
// before the user's own, so the user's win.
func upPath(ctx context.Context, a emulateArgs, stderr io.Writer, extraClient, extraServer []topo.Sysctl) (*path, error) {
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
	if os.Geteuid() != 0 {
		return nil, errors.New("emulate needs root: it creates network namespaces and TUN devices (CAP_SYS_ADMIN, CAP_NET_ADMIN); run it with sudo")
	}
	p := &path{rtt: rtt, up: up, down: down}
	restoreCC, err := allowCC(a.cc, stderr)
	if err != nil {
		return nil, err
	}
	p.closer = append(p.closer, restoreCC)
	if p.t, err = topo.Up(ctx, spec); err != nil {
		p.close()
		return nil, err
	}
	p.closer = append(p.closer, func() { _ = p.t.Close() })
	cl, sv := p.t.Client(), p.t.Server()
	cdev, err := tun.New(cl.Tun, cl.Dev)
	if err != nil {
		p.close()
		return nil, err
	}
	sdev, err := tun.New(sv.Tun, sv.Dev)
	if err != nil {
		cdev.Close()
		p.close()
		return nil, err
	}
	if p.e, err = emu.Start(emu.Config{Up: up, Down: down}, cdev, sdev); err != nil {
		cdev.Close()
		sdev.Close()
		p.close()
		return nil, err
	}
	p.closer = append(p.closer, func() { p.e.Stop() })
	cc := "?"
	_ = netns.Do(cl.Netns, func() error {
		cc, _ = sysctl.Read(sysctl.DefaultRoot, "net.ipv4.tcp_congestion_control")
		return nil
	})
	fmt.Fprintf(stderr, "longhaul: path up: client %s (netns %s) <-> server %s (netns %s), rtt %s, rate %s, congestion control %s\n",
		cl.Addr, cl.Netns, sv.Addr, sv.Netns, units.FormatDuration(rtt), rateText(up.RateBps, down.RateBps), cc)
	return p, nil
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
	defer p.close()
	cl, sv := p.t.Client(), p.t.Server()
	e := p.e
	env := append(os.Environ(), "LONGHAUL_SERVER="+sv.Addr.String(), "LONGHAUL_CLIENT="+cl.Addr.String(),
		"LONGHAUL_CLIENT_NETNS="+cl.Netns, "LONGHAUL_SERVER_NETNS="+sv.Netns)
	if a.server != "" {
		srv := sv.Command(ctx, "sh", "-c", a.server)
		srv.Env, srv.Stdout, srv.Stderr = env, stderr, stderr
		if err := srv.Start(); err != nil {
			return fmt.Errorf("emulate: start --server: %w", err)
		}
		defer func() { _ = srv.Cancel(); _ = srv.Wait() }()
		if err := waitListening(ctx, srv, sv.Netns); err != nil {
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

// allowCC makes a congestion control selectable in the namespaces: a
// non-initial namespace may only use algorithms in the host's
// net.ipv4.tcp_allowed_congestion_control. When cc is missing from it,
// the list is widened for the run (said on stderr) and restored after.
func allowCC(cc string, stderr io.Writer) (restore func(), err error) {
	restore = func() {}
	if cc == "" {
		return restore, nil
	}
	const key = "net.ipv4.tcp_allowed_congestion_control"
	avail, err := sysctl.Read(sysctl.DefaultRoot, "net.ipv4.tcp_available_congestion_control")
	if err != nil {
		return restore, err
	}
	if !slices.Contains(strings.Fields(avail), cc) {
		return restore, usagef("--cc: %q is not available on this kernel (available: %s); load its module first, e.g. modprobe tcp_%s", cc, avail, cc)
	}
	allowed, err := sysctl.Read(sysctl.DefaultRoot, key)
	if err != nil || slices.Contains(strings.Fields(allowed), cc) {
		return restore, err
	}
	if err := sysctl.Write(sysctl.DefaultRoot, key, allowed+" "+cc); err != nil {
		return restore, fmt.Errorf("emulate: allow %s in the namespaces: %w", cc, err)
	}
	fmt.Fprintf(stderr, "longhaul: added %s to the host's %s for this run (was %q; restored at exit)\n", cc, key, allowed)
	return func() {
		if err := sysctl.Write(sysctl.DefaultRoot, key, allowed); err != nil {
			fmt.Fprintf(stderr, "longhaul: could not restore %s=%q: %v; restore it by hand\n", key, allowed, err)
		}
	}, nil
}

func rateText(up, down float64) string {
	f := func(r float64) string {
		if r == 0 {
			return "unlimited"
		}
		return units.FormatRate(r)
	}
	if up == down {
		return f(up)
	}
	return fmt.Sprintf("%s up, %s down", f(up), f(down))
}
