package topo

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// StateDir holds one state file per run, <prefix>-<runid>.json, naming
// the owning process. /run is a tmpfs: it is empty after a reboot, as is
// /run/netns, so state and namespaces disappear together.
const StateDir = "/run/longhaul"

// ErrNotSupported is returned on systems without Linux network
// namespaces.
var ErrNotSupported = errors.New("topo: not supported on this system")

// ErrSysctlRefused is matched (errors.Is) by every error of a namespace
// sysctl the kernel would not take: an unknown or read-only key, a value
// it rejected, or one it stored differently. The spec was valid; the
// value is wrong for this kernel.
var ErrSysctlRefused = errors.New("topo: the kernel refused a sysctl")

// refused marks an error as ErrSysctlRefused without changing its text.
type refused struct{ err error }

func (r refused) Error() string        { return r.err.Error() }
func (r refused) Unwrap() error        { return r.err }
func (r refused) Is(target error) bool { return target == ErrSysctlRefused }

// BadInput: a value the kernel refuses is the caller's to change.
func (r refused) BadInput() bool { return true }

// Topology is a running client/server pair of namespaces joined by two TUN
// devices. It owns the namespaces, the TUN file descriptors, the run's
// state file and the commands started through its ends; [Topology.Close]
// releases them all. Create it with [Up].
type Topology struct {
	spec        Spec
	runID       string
	statePath   string // set once the state file is written
	created     []string
	cgroups     []string // CPU-limited cgroups made, named as their namespace
	cgroupFiles []*os.File
	ends        [2]End // client, server

	mu   sync.Mutex
	cmds []*exec.Cmd

	closeOnce sync.Once
	closeErr  error
}

// End is one side of the topology.
type End struct {
	// Netns is the name of the namespace, usable with package netns and
	// with `ip netns exec`.
	Netns string
	// Dev is the TUN device's (or veth half's) name inside Netns ("lh0").
	Dev string
	// Addr is this end's address, assigned to Dev as a point-to-point /32
	// with the other end's address as peer.
	Addr netip.Addr
	// Addr6 is its IPv6 address with Spec.IPv6 (a /128 with the other
	// end's as peer); invalid otherwise.
	Addr6 netip.Addr
	// cgroupProcs is the end's CPU-limited cgroup's cgroup.procs, open
	// for writing (Spec.ClientCPU, ServerCPU); nil without a limit.
	cgroupProcs *os.File
	// Tun is the TUN queue: every packet the namespace routes to the peer
	// can be read from it, and every packet written to it is received by
	// the namespace. Each read or write is one packet preceded by a
	// 10-byte struct virtio_net_hdr (IFF_VNET_HDR, no IFF_PI header).
	// Offloads (TUNSETOFFLOAD) are off until the data plane enables
	// them. The file is non-blocking and registered with Go's poller;
	// [Topology.Close] closes it, which also unblocks pending reads.
	Tun *os.File
	// Sysctls holds the effective value of every sysctl set in this
	// namespace (defaults, CC and the Spec's list), as read back from the
	// kernel with white space collapsed.
	Sysctls map[string]string

	t *Topology // tracks commands for Close; nil in an End built by hand
}

// Client returns the client end.
func (t *Topology) Client() End { return t.ends[0] }

// Server returns the server end.
func (t *Topology) Server() End { return t.ends[1] }

// Spec returns the specification the topology was built from, with
// defaults filled in.
func (t *Topology) Spec() Spec { return t.spec }

// Close kills the processes left in the namespaces (the process groups of
// commands started with [End.Command] first, then anything else whose
// network namespace is one of the two), closes the TUN file descriptors,
// deletes both namespaces (which destroys the TUN devices) and removes
// the state file. The state file is kept if a namespace could not be
// deleted, so that the next [Up] with the same prefix finishes the job.
// Close is idempotent: later calls return the first call's result.
//
// The caller must arrange for Close to run on SIGINT and SIGTERM (for
// example with signal.NotifyContext and a deferred Close); after SIGKILL
// or a crash the next [Up] with the same prefix reaps the leftovers.
func (t *Topology) Close() error {
	t.closeOnce.Do(func() { t.closeErr = t.teardown() })
	return t.closeErr
}

func (t *Topology) track(cmd *exec.Cmd) {
	t.mu.Lock()
	t.cmds = append(t.cmds, cmd)
	t.mu.Unlock()
}

func (t *Topology) commands() []*exec.Cmd {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*exec.Cmd(nil), t.cmds...)
}

// multiError joins errors on one line and unwraps to all of them.
type multiError []error

func (m multiError) Error() string {
	s := make([]string, len(m))
	for i, err := range m {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (m multiError) Unwrap() []error { return m }

func joinErrors(errs []error) error {
	var out multiError
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}
