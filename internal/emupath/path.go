//go:build linux

package emupath

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/longhaul/longhaul/internal/emu"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/tun"
	"github.com/longhaul/longhaul/internal/units"
)

// Path is a running emulated path: the topology and the data plane. It
// owns both; Close releases them. With Spec.Topo.Veth it is the raw
// kernel path between the namespaces and Emu is nil.
type Path struct {
	Topo *topo.Topology
	Emu  *emu.Emulator
	Spec Spec
	// CC is the congestion control the namespaces use, read back.
	CC     string
	closer []func()
}

// Up brings a path up: it makes Spec.Topo.CC selectable (topo.AllowCC),
// creates the namespaces and starts the emulator. Messages for the user
// (a widened host setting) go to log.
func Up(ctx context.Context, spec Spec, log io.Writer) (*Path, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	p := &Path{Spec: spec}
	restoreCC, err := topo.AllowCC(spec.Topo.CC, log)
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
	if spec.Topo.Veth {
		p.readCC()
		return p, nil
	}
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
	p.readCC()
	return p, nil
}

// readCC reads back the client namespace's congestion control.
func (p *Path) readCC() {
	p.CC = "?"
	_ = netns.Do(p.Topo.Client().Netns, func() error {
		p.CC, _ = sysctl.Read(sysctl.DefaultRoot, "net.ipv4.tcp_congestion_control")
		return nil
	})
}

// Describe is the one-line summary of a running path.
func (p *Path) Describe() string {
	cl, sv := p.Topo.Client(), p.Topo.Server()
	s := fmt.Sprintf("client %s (netns %s) <-> server %s (netns %s), rtt %s, rate %s, congestion control %s",
		cl.Addr, cl.Netns, sv.Addr, sv.Netns, units.FormatDuration(p.Spec.RTT), RateText(p.Spec.Up.RateBps, p.Spec.Down.RateBps), p.CC)
	if cl.Addr6.IsValid() {
		s += fmt.Sprintf(", IPv6 %s <-> %s", cl.Addr6, sv.Addr6)
	}
	for _, d := range []struct {
		name string
		c    linkemu.Config
	}{{"up", p.Spec.Up}, {"down", p.Spec.Down}} {
		if imp := d.c.Impairments(); len(imp) > 0 {
			s += "; " + d.name + ": " + strings.Join(imp, ", ")
		}
	}
	return s
}

// Close stops the emulator, removes the topology and restores what was
// widened, in that order. It is idempotent.
func (p *Path) Close() {
	for i := len(p.closer) - 1; i >= 0; i-- {
		p.closer[i]()
	}
	p.closer = nil
}
