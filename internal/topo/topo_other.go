//go:build !linux

package topo

import (
	"context"
	"os/exec"
)

// Up needs Linux network namespaces and TUN devices.
func Up(ctx context.Context, s Spec) (*Topology, error) { return nil, ErrNotSupported }

// Command returns a command that fails to start: there are no network
// namespaces here.
func (e End) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Err = ErrNotSupported
	return cmd
}

func (t *Topology) teardown() error { return nil }
