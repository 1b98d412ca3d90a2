//go:build linux && !longhaul_portable

package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/longhaul/longhaul/internal/scenario"
)

func newVerifyCmd() *cobra.Command {
	var a labArgs
	var baseline string
	c := &cobra.Command{
		Use:   "verify PLAN [--rtt RTT --rate RATE] [flags]",
		Short: "Prove a plan on an emulated copy of the path before applying it",
		Long: `verify runs the plan's settings on an emulated path between two network
namespaces (the host is not changed) against a baseline, with real peers
(nginx serves, curl downloads), repeats each, and prints the measured
gain beside the path model's prediction, with a report like longhaul lab.

The path is the plan's (--rtt/--rate override it). The plan's side is this
host after apply (its settings with the plan's changes); the baseline is
this host as it is (default) or old Ubuntu defaults. Host-wide keys
(tcp_mem, net.core.*) cannot be set in a namespace and are left out; the
plan's route and application items are not part of the test. Needs root.`,
		Example: `  longhaul plan --rtt 200ms --rate 1Gbit/s -o plan.json
  sudo longhaul verify plan.json
  sudo longhaul verify plan.json --baseline old-ubuntu --repeat 5`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("verify needs one plan file (write one with longhaul plan -o plan.json)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runVerify(c.Context(), a, args[0], baseline, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	a.register(f, "the plan's", "verify")
	f.StringVar(&baseline, "baseline", "host", "what the plan is compared with: "+strings.Join(scenario.Baselines(), " or "))
	return c
}

func runVerify(ctx context.Context, a labArgs, file, baseline string, stdout, stderr io.Writer) error {
	pl, err := readPlan(ctx, file)
	if err != nil {
		return err
	}
	p, err := a.params()
	if err != nil {
		return err
	}
	if !a.rtt.IsSet() {
		p.RTT = pl.Path.RTT()
	}
	if !a.rate.IsSet() {
		p.RateBps = pl.Path.RateBps
	}
	facts, err := hostFacts()
	if err != nil {
		return fmt.Errorf("verify: read this host's settings: %w", err)
	}
	set, desc := scenario.NamespaceSysctls(pl)
	if len(set) == 0 {
		return usagef("verify: %s changes nothing a namespace can hold (no tcp_rmem/tcp_wmem or other per-namespace sysctl): nothing to prove", file)
	}
	s, err := scenario.ExpandVerify(p, facts, set, "plan "+file+": "+desc, baseline)
	if err != nil {
		return err
	}
	if a.out == "" {
		a.out = "longhaul-lab/verify-" + time.Now().Format("20060102-150405")
	}
	return runScenario(ctx, a, s, stdout, stderr)
}
