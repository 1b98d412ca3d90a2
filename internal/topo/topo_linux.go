//go:build linux

package topo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
)

var sideNames = [2]string{"client", "server"}
var sideSuffix = [2]string{"c", "s"}

// nsName returns the namespace name of one side of a run.
func nsName(prefix, runID string, side int) string {
	return prefix + "-" + runID + "-" + sideSuffix[side]
}

// Up reaps leftovers of dead runs with the same prefix, then builds the
// topology: state file, two namespaces, a TUN device in each with its
// address, and the sysctls. It creates everything or nothing: on any
// error it removes what it made before returning. ctx is checked between
// steps; it does not bound the lifetime of the topology.
func Up(ctx context.Context, s Spec) (*Topology, error) {
	s = s.WithDefaults()
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("topo: up: spec: %w", err)
	}
	if _, err := reap(s.Prefix); err != nil {
		return nil, fmt.Errorf("topo: up: reap leftovers of %s: %w", s.Prefix, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("topo: up: %w", err)
	}
	var b [runIDLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("topo: up: run id: %w", err)
	}
	t := &Topology{spec: s, runID: hex.EncodeToString(b[:])}
	if err := t.up(ctx); err != nil {
		if cerr := t.teardown(); cerr != nil {
			return nil, fmt.Errorf("topo: up: %w (cleanup: %v)", err, cerr)
		}
		return nil, fmt.Errorf("topo: up: %w", err)
	}
	return t, nil
}

func (t *Topology) up(ctx context.Context) error {
	s := t.spec
	names := [2]string{nsName(s.Prefix, t.runID, 0), nsName(s.Prefix, t.runID, 1)}
	mine := names[:]
	if s.JoinClient != "" {
		if _, err := os.Stat(netns.Path(s.JoinClient)); err != nil {
			return fmt.Errorf("the client namespace to join: %w", err)
		}
		names[0], mine = s.JoinClient, names[1:]
	}

	// The state file comes first: a process killed between any two of
	// the following steps leaves something Reap can attribute to it.
	path, err := writeState(s.Prefix, t.runID, mine)
	if err != nil {
		return err
	}
	t.statePath = path

	for _, name := range mine {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := netns.Create(name); err != nil {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
		t.created = append(t.created, name)
	}

	addrs := [2]netip.Addr{s.ClientAddr.Unmap(), s.ServerAddr.Unmap()}
	addrs6 := [2]netip.Addr{s.ClientAddr6, s.ServerAddr6} // invalid without IPv6
	lists := [2][]Sysctl{s.ClientSysctls, s.ServerSysctls}
	if s.Veth {
		if err := addVeth(names[0], names[1], s.Dev); err != nil {
			return err
		}
	}
	for i := range 2 {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := End{Netns: names[i], Dev: s.Dev, Addr: addrs[i], Addr6: addrs6[i], t: t}
		if cores := [2]float64{s.ClientCPU, s.ServerCPU}[i]; cores > 0 {
			if e.cgroupProcs, err = makeCPUGroup(names[i], cores); err != nil {
				return fmt.Errorf("%s namespace %s: %w", sideNames[i], names[i], err)
			}
			t.cgroups = append(t.cgroups, names[i])
			t.cgroupFiles = append(t.cgroupFiles, e.cgroupProcs)
		}
		a := pair{local: addrs[i], peer: addrs[1-i], local6: addrs6[i], peer6: addrs6[1-i]}
		tun, eff, err := setupEnd(names[i], s, a, plan(lists[i], s.CC, s.IPv6, s.Dev))
		if err != nil {
			return fmt.Errorf("%s namespace %s: %w", sideNames[i], names[i], err)
		}
		e.Tun, e.Sysctls = tun, eff
		t.ends[i] = e
	}
	return nil
}

// setupEnd creates and configures the TUN device (or configures its half of
// the veth pair, with Spec.Veth) inside namespace ns and
// applies the sysctls there. Everything runs inside netns.Do because both
// the TUN device and /proc/sys/net bind to the namespace of the thread
// that opens them: /dev/net/tun attaches the new device to the opener's
// namespace (tun_chr_open), not to the netlink handle's.
func setupEnd(ns string, s Spec, a pair, sysctls []Sysctl) (*os.File, map[string]string, error) {
	hostHas := map[string]bool{} // for error messages; read outside the namespace
	for _, sc := range sysctls {
		hostHas[sc.Key] = sysctlExists(sc.Key)
	}
	var (
		tun *os.File
		eff map[string]string
	)
	err := netns.Do(ns, func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		defer h.Close()

		if s.Veth {
			return configure(h, s, a, sysctls, hostHas, &eff)
		}
		tt := &netlink.Tuntap{
			LinkAttrs: netlink.LinkAttrs{Name: s.Dev, MTU: s.MTU, TxQLen: s.TxQueueLen},
			Mode:      netlink.TUNTAP_MODE_TUN,
			// VNET_HDR lets the data plane move GSO super-packets once it
			// enables offloads (emulator notes, lesson 1). NonPersist: the
			// device dies with its last fd, so a killed owner leaves no
			// device behind, only the namespace.
			Flags:      netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR | netlink.TUNTAP_ONE_QUEUE,
			NonPersist: true,
			Queues:     1,
		}
		if err := h.LinkAdd(tt); err != nil {
			return fmt.Errorf("create tun %s: %w", s.Dev, err)
		}
		// netlink v1.3.1 returns the queues in Fds (only when Queues > 0).
		if len(tt.Fds) != 1 {
			for _, f := range tt.Fds {
				f.Close()
			}
			return fmt.Errorf("create tun %s: got %d queues, want 1", s.Dev, len(tt.Fds))
		}
		tun = tt.Fds[0]

		return configure(h, s, a, sysctls, hostHas, &eff)
	})
	if err != nil {
		if tun != nil {
			tun.Close()
		}
		return nil, nil, err
	}
	return tun, eff, nil
}

// addVeth creates the veth pair dev in namespace client and dev
// in namespace server, both down: [configure] sets them up.
func addVeth(client, server, dev string) error {
	f, err := os.Open(netns.Path(server))
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", server, err)
	}
	defer f.Close()
	return netns.Do(client, func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		defer h.Close()
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: dev}, PeerName: dev, PeerNamespace: netlink.NsFd(f.Fd())}
		if err := h.LinkAdd(v); err != nil {
			return fmt.Errorf("create veth pair %s between %s and %s: %w", dev, client, server, err)
		}
		return nil
	})
}

// pair is an end's addresses and its peer's; the IPv6 ones are invalid
// without Spec.IPv6.
type pair struct{ local, peer, local6, peer6 netip.Addr }

// configure sets up s.Dev in the calling thread's namespace through h:
// MTU, queue length (TUN only), the sysctls (their read-back values go to
// *eff), the point-to-point addresses and the link state.
func configure(h *netlink.Handle, s Spec, a pair, sysctls []Sysctl, hostHas map[string]bool, eff *map[string]string) error {
	link, err := h.LinkByName(s.Dev)
	if err != nil {
		return fmt.Errorf("find %s: %w", s.Dev, err)
	}
	// The Tuntap path of LinkAdd only issues TUNSETIFF: MTU and TxQLen in
	// LinkAttrs are ignored there and must be set here.
	if err := h.LinkSetMTU(link, s.MTU); err != nil {
		return fmt.Errorf("set %s mtu %d: %w", s.Dev, s.MTU, err)
	}
	if !s.Veth {
		if err := h.LinkSetTxQLen(link, s.TxQueueLen); err != nil {
			return fmt.Errorf("set %s txqueuelen %d: %w", s.Dev, s.TxQueueLen, err)
		}
	}
	// Sysctls before the link goes up, so that disable_ipv6 is in force
	// before the kernel would start DAD and router solicitations on it.
	if *eff, err = applySysctls(sysctls, hostHas); err != nil {
		return err
	}
	addr := &netlink.Addr{
		IPNet: &net.IPNet{IP: a.local.AsSlice(), Mask: net.CIDRMask(32, 32)},
		Peer:  &net.IPNet{IP: a.peer.AsSlice(), Mask: net.CIDRMask(32, 32)},
	}
	if err := h.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("add address %v peer %v to %s: %w", a.local, a.peer, s.Dev, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up: %w", s.Dev, err)
	}
	// The IPv6 address once the link is up: its route, added on a link
	// that is down, left connects failing with ENETUNREACH.
	if a.local6.IsValid() {
		addr6 := &netlink.Addr{
			IPNet: &net.IPNet{IP: a.local6.AsSlice(), Mask: net.CIDRMask(128, 128)},
			Peer:  &net.IPNet{IP: a.peer6.AsSlice(), Mask: net.CIDRMask(128, 128)},
			Flags: unix.IFA_F_NODAD,
		}
		if err := h.AddrAdd(link, addr6); err != nil {
			return fmt.Errorf("add address %v peer %v to %s: %w", a.local6, a.peer6, s.Dev, err)
		}
	}
	return nil
}

// Command returns a command that runs name with args inside the end's
// namespace through `ip netns exec NAME`. iproute2 is used rather than a
// re-exec trampoline because Go cannot setns in a forked child before
// exec; `ip netns exec` also gives the child a private mount namespace
// with /sys remounted for its network namespace and bind-mounts
// /etc/netns/NAME/* over /etc, as users of named namespaces expect. It
// execs the program in place, so the command's PID is the program's.
//
// The child runs in its own process group (so a terminal's SIGINT does
// not reach it: the caller owns its lifetime) with SIGKILL as its parent
// death signal (best effort: Linux ties it to the forking thread, and a
// set-id or file-capability program clears it on exec). Cancelling ctx
// kills the whole process group. [Topology.Close] kills the process
// groups of every command created through an End it returned, and any
// other process still inside the namespace. Do not call Start
// concurrently with Close.
func (e End) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := append([]string{"netns", "exec", e.Netns, name}, args...)
	if e.cgroupProcs != nil {
		// Join the CPU-limited cgroup (its cgroup.procs is fd 3) before
		// exec, so that nothing of the command runs outside it.
		argv = append([]string{"netns", "exec", e.Netns, "sh", "-c", `echo $$ >&3 && exec 3>&- && exec "$@"`, "sh", name}, args...)
	}
	cmd := exec.CommandContext(ctx, "ip", argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if e.cgroupProcs != nil {
		cmd.ExtraFiles = []*os.File{e.cgroupProcs}
	}
	cmd.Cancel = func() error { return KillGroup(cmd.Process) }
	if e.t != nil {
		e.t.track(cmd)
	}
	return cmd
}

// KillGroup sends SIGKILL to the process group led by p, but only while p
// has not been waited for: until then its PID, and so the group id, cannot
// be reused by an unrelated process.
func KillGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	// os.Process signals through a pidfd: this fails with
	// os.ErrProcessDone once the process has been waited for.
	if err := p.Signal(syscall.Signal(0)); err != nil {
		return os.ErrProcessDone
	}
	err := unix.Kill(-p.Pid, unix.SIGKILL)
	if errors.Is(err, unix.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

func (t *Topology) teardown() error {
	var errs []error
	for _, cmd := range t.commands() {
		if err := KillGroup(cmd.Process); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("kill process group %d: %w", cmd.Process.Pid, err))
		}
	}
	for _, name := range t.created {
		if _, err := killInNamespace(name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, e := range t.ends {
		if e.Tun != nil {
			if err := e.Tun.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
				errs = append(errs, fmt.Errorf("close tun of %s: %w", e.Netns, err))
			}
		}
	}
	for _, f := range t.cgroupFiles {
		f.Close()
	}
	for _, name := range t.cgroups {
		if err := removeCPUGroup(name); err != nil {
			errs = append(errs, err)
		}
	}
	deleted := true
	for _, name := range t.created {
		if err := netns.Delete(name); err != nil {
			errs = append(errs, err)
			deleted = false
		}
	}
	if deleted && t.statePath != "" {
		if err := os.Remove(t.statePath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove state file: %w", err))
		}
	}
	if err := joinErrors(errs); err != nil {
		return fmt.Errorf("topo: close %s-%s: %w", t.spec.Prefix, t.runID, err)
	}
	return nil
}
