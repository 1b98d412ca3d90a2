//go:build linux

package emupath

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/longhaul/longhaul/internal/emu"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/tun"
	"github.com/longhaul/longhaul/internal/units"
)

// Path is a running emulated path: the topology and the data plane. It
// owns both; Close releases them.
type Path struct {
	Topo *topo.Topology
	Emu  *emu.Emulator
	Spec Spec
	// CC is the congestion control the namespaces use, read back.
	CC     string
	closer []func()
}

// Up brings a path up: it makes Spec.Topo.CC selectable (see AllowCC),
// creates the namespaces and starts the emulator. Messages for the user
// (a widened host setting) go to log.
func Up(ctx context.Context, spec Spec, log io.Writer) (*Path, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	p := &Path{Spec: spec}
	restoreCC, err := AllowCC(spec.Topo.CC, log)
	if err != nil {
		return nil, err
	}
	p.closer = append(p.closer, restoreCC)
	if p.Topo, err = topo.Up(ctx, spec.Topo); err != nil {
		p.Close()
		return nil, err
	}
	p.closer = append(p.closer, func() { _ = p.Topo.Close() })
	cl, sv := p.Topo.Client(), p.Topo.Server()
	cdev, err := tun.New(cl.Tun, cl.Dev)
	if err != nil {
		p.Close()
		return nil, err
	}
	sdev, err := tun.New(sv.Tun, sv.Dev)
	if err != nil {
		cdev.Close()
		p.Close()
		return nil, err
	}
	if p.Emu, err = emu.Start(emu.Config{Up: spec.Up, Down: spec.Down}, cdev, sdev); err != nil {
		cdev.Close()
		sdev.Close()
		p.Close()
		return nil, err
	}
	p.closer = append(p.closer, func() { p.Emu.Stop() })
	p.CC = "?"
	_ = netns.Do(cl.Netns, func() error {
		p.CC, _ = sysctl.Read(sysctl.DefaultRoot, "net.ipv4.tcp_congestion_control")
		return nil
	})
	return p, nil
}

// Describe is the one-line summary of a running path.
func (p *Path) Describe() string {
	cl, sv := p.Topo.Client(), p.Topo.Server()
	return fmt.Sprintf("client %s (netns %s) <-> server %s (netns %s), rtt %s, rate %s, congestion control %s",
		cl.Addr, cl.Netns, sv.Addr, sv.Netns, units.FormatDuration(p.Spec.RTT), RateText(p.Spec.Up.RateBps, p.Spec.Down.RateBps), p.CC)
}

// Close stops the emulator, removes the topology and restores what was
// widened, in that order. It is idempotent.
func (p *Path) Close() {
	for i := len(p.closer) - 1; i >= 0; i-- {
		p.closer[i]()
	}
	p.closer = nil
}

// AllowCC makes a congestion control selectable in the namespaces: a
// non-initial namespace may only use algorithms in the host's
// net.ipv4.tcp_allowed_congestion_control. When cc is missing from it,
// the list is widened (said on log) and restore puts it back.
func AllowCC(cc string, log io.Writer) (restore func(), err error) {
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
		return restore, fmt.Errorf("%w: congestion control %q is not available on this kernel (available: %s); load its module first, e.g. modprobe tcp_%s", ErrInput, cc, avail, cc)
	}
	allowed, err := sysctl.Read(sysctl.DefaultRoot, key)
	if err != nil || slices.Contains(strings.Fields(allowed), cc) {
		return restore, err
	}
	if err := sysctl.Write(sysctl.DefaultRoot, key, allowed+" "+cc); err != nil {
		return restore, fmt.Errorf("allow %s in the namespaces: %w", cc, err)
	}
	fmt.Fprintf(log, "longhaul: added %s to the host's %s for this run (was %q; restored at exit)\n", cc, key, allowed)
	return func() {
		if err := sysctl.Write(sysctl.DefaultRoot, key, allowed); err != nil {
			fmt.Fprintf(log, "longhaul: could not restore %s=%q: %v; restore it by hand\n", key, allowed, err)
		}
	}, nil
}
