//go:build !linux || longhaul_portable

package cli

import (
	"fmt"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/spf13/cobra"
)

// platformCommands stand in for the commands that need Linux (network
// namespaces, TUN devices, sock_diag): each says so in one line. calc,
// analyze, plan (--snapshot), audit (--snapshot, --root) and report work
// everywhere.
func platformCommands() []*cobra.Command {
	var out []*cobra.Command
	for _, c := range []struct{ name, short, why string }{
		{"flows", "Live TCP sockets (tcp_info): what limits each flow (Linux only)", "it reads tcp_info over Linux's sock_diag"},
		{"emulate", "Run a command over an emulated long path (Linux only)", "it builds network namespaces joined by TUN devices"},
		{"lab", "Run a repeatable experiment over an emulated long path (Linux only)", "it runs on an emulated path of network namespaces and TUN devices"},
		{"verify", "Prove a plan on an emulated copy of the path (Linux only)", "it runs on an emulated path of network namespaces and TUN devices"},
		{"exporter", "Prometheus exporter of what limits TCP flows (Linux only)", "it reads tcp_info over Linux's sock_diag"},
		{"serve", "The far end of longhaul test (Linux only)", "it samples its sockets' tcp_info over Linux's sock_diag"},
		{"test", "Measure and explain the path to a host running longhaul serve (Linux only)", "it samples its sockets' tcp_info over Linux's sock_diag"},
	} {
		c := c
		out = append(out, &cobra.Command{
			Use:                c.name,
			Short:              c.short,
			DisableFlagParsing: true,
			RunE: func(*cobra.Command, []string) error {
				return badinput.Wrap(fmt.Errorf("%s needs Linux: %s; run it on a Linux host (analyze, calc, plan --snapshot, audit --snapshot and report work here)", c.name, c.why))
			},
		})
	}
	return out
}
