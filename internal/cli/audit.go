package cli

import (
	"context"
	"fmt"
	"github.com/longhaul/longhaul/internal/plan"
	"io"
	"strings"

	"github.com/longhaul/longhaul/internal/audit"
	"github.com/longhaul/longhaul/internal/drift"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
)

type auditArgs struct {
	path    pathFlags
	host    hostSource
	failOn  severityFlag
	json    bool
	against string
}

func newAuditCmd() *cobra.Command {
	var a auditArgs
	c := &cobra.Command{
		Use:   "audit [--rtt RTT --rate RATE] [flags]",
		Short: "Read this host's TCP settings and say what they allow and what to change",
		Long: `audit gathers a snapshot of the host once (TCP sysctls, routes with their
initcwnd/initrwnd, the default-route interface's MTU, qdisc and offloads,
congestion control, kernel version, sysctl.d files and tuning daemons) and
judges it. Each finding has an id, a severity (info, warn, crit), what was
observed, what was expected, why (with numbers) and the fix.

With --rtt and --rate it judges the buffers for that path; without, it says
what they allow at common RTTs.

With --against PLAN it checks instead that the host has a plan's values
(made with longhaul plan -o, applied by apply, Ansible, tuned, ...): each
sysctl compared with whitespace collapsed, each route's initcwnd/initrwnd;
the drifted keys are listed (--json: schema longhaul.drift/v1).

Exit status: 0 when the audit ran (whatever it found), 3 with --fail-on when
a finding at or above that severity exists, 4 with --against when a key has
drifted from the plan, 2 for bad flags, 1 when the host could not be read.`,
		Example: `  # this host
  longhaul audit

  # judged for a 200 ms, 1 Gbit/s path with 4 flows
  longhaul audit --rtt 200ms --rate 1Gbit/s --flows 4

  # a network namespace
  longhaul audit --netns client --rtt 100ms --rate 1Gbit/s

  # a copied /proc/sys and /etc tree, or a snapshot saved with --json elsewhere
  longhaul audit --root /tmp/hostcopy
  longhaul audit --snapshot prod-audit.json --rtt 200ms --rate 10Gbit/s

  # in CI: fail when anything critical is found
  longhaul audit --rtt 50ms --rate 1Gbit/s --fail-on crit

  # after config management ran: does the host still have the plan? (exit 4 if not)
  longhaul audit --against plan.json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runAudit(c.Context(), a, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	a.path.register(f, "concurrent long flows the host must carry")
	a.host.register(f, "audit")
	f.Var(&a.failOn, "fail-on", "exit 3 if a finding is at least this severe: warn or crit")
	f.BoolVar(&a.json, "json", false, "print JSON (schema longhaul.audit/v1; with --against "+drift.Schema+")")
	f.StringVar(&a.against, "against", "", "check that the host has this plan's values (longhaul plan -o FILE); exit 4 when one drifted")
	return c
}

// auditJSON is the audit --json document.
type auditJSON struct {
	Schema   string             `json:"schema"`
	Path     *auditPathJSON     `json:"path"`
	Host     *snapshot.Snapshot `json:"host"`
	Findings []audit.Finding    `json:"findings"`
	Summary  map[string]int     `json:"summary"`
}

type auditPathJSON struct {
	RTTSeconds float64 `json:"rtt_s"`
	RateBps    float64 `json:"rate_bps"`
	Flows      int     `json:"flows"`
}

func runAudit(ctx context.Context, a auditArgs, stdout, stderr io.Writer) error {
	rtt, rate, given, err := a.path.parse()
	if err != nil {
		return err
	}
	failOn := a.failOn.s
	if a.against != "" && (given || failOn != "") {
		return usagef("--against checks a plan's values: --rtt, --rate and --fail-on do not go with it")
	}
	s, err := a.host.load(ctx)
	if err != nil {
		return err
	}
	if a.against != "" {
		return runAgainst(ctx, a, s, stdout)
	}
	p := audit.Path{}
	if given {
		p = audit.Path{RTT: rtt.D, RateBps: rate.Bps, Flows: a.path.flows}
	}
	findings := audit.Run(s, p)
	summary := audit.Summary(findings)
	if a.json {
		doc := auditJSON{Schema: "longhaul.audit/v1", Host: s, Findings: findings, Summary: summary}
		if doc.Findings == nil {
			doc.Findings = []audit.Finding{}
		}
		if given {
			doc.Path = &auditPathJSON{RTTSeconds: rtt.D.Seconds(), RateBps: rate.Bps, Flows: p.Flows}
		}
		if err := writeJSON(stdout, doc); err != nil {
			return err
		}
	} else {
		printAudit(stdout, s, p, findings, summary)
	}
	if failOn != "" {
		if n := audit.AtLeast(findings, failOn); n > 0 {
			return findingsError{fmt.Sprintf("audit: %d finding(s) at or above %s", n, failOn)}
		}
	}
	return nil
}

func loadSnapshot(ctx context.Context, path string) (*snapshot.Snapshot, error) {
	b, err := readDocument(ctx, "--snapshot", path, "a snapshot written by longhaul audit --json")
	if err != nil {
		return nil, err
	}
	s, err := snapshot.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("--snapshot %s: %w", path, err)
	}
	return s, nil
}

func printAudit(w io.Writer, s *snapshot.Snapshot, p audit.Path, findings []audit.Finding, summary map[string]int) {
	head := fmt.Sprintf("Host %s, Linux %s", orDash(s.Hostname), orDash(s.Kernel.Release))
	if s.Netns != "" {
		head += ", netns " + s.Netns
	}
	if s.Source != "live" {
		head += " (" + s.Source + ")"
	}
	fmt.Fprintln(w, head)
	if p.RTT > 0 {
		fmt.Fprintf(w, "Path: %s at %s, %d flow(s)\n", units.FormatRate(p.RateBps), units.FormatDuration(p.RTT), max(p.Flows, 1))
	} else {
		fmt.Fprintln(w, "Path: none given (add --rtt and --rate to judge buffers for a path)")
	}
	for _, f := range findings {
		fmt.Fprintf(w, "\n%-4s %s", strings.ToUpper(string(f.Severity)), f.ID)
		if f.Key != "" {
			fmt.Fprintf(w, "  [%s]", f.Key)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  observed: %s\n  expected: %s\n  why:      %s\n  fix:      %s\n", f.Observed, f.Expected, f.Why, f.Fix)
	}
	fmt.Fprintf(w, "\nSummary: %d crit, %d warn, %d info\n", summary["crit"], summary["warn"], summary["info"])
	for _, n := range s.Notes {
		fmt.Fprintf(w, "Not examined: %s\n", n)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runAgainst compares the host with a plan file and prints the drift.
func runAgainst(ctx context.Context, a auditArgs, s *snapshot.Snapshot, stdout io.Writer) error {
	p, err := readPlan(ctx, a.against)
	if err != nil {
		return err
	}
	if err := plan.CheckFields(p); err != nil {
		return fmt.Errorf("%s: %w", a.against, err)
	}
	rep := drift.Compare(s, p)
	if a.json {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printDrift(stdout, rep, a.against)
	}
	if rep.Drifted == 0 {
		return nil
	}
	var keys []string
	for _, c := range rep.Checks {
		if c.Status == drift.Drifted {
			keys = append(keys, c.Key)
		}
	}
	return driftError{fmt.Sprintf("audit: %d key(s) drifted from %s: %s", rep.Drifted, a.against, strings.Join(keys, ", "))}
}

func printDrift(w io.Writer, rep drift.Report, file string) {
	head := fmt.Sprintf("Host %s, Linux %s", orDash(rep.Host), orDash(rep.Kernel))
	if rep.Netns != "" {
		head += ", netns " + rep.Netns
	}
	if rep.Source != "live" {
		head += " (" + rep.Source + ")"
	}
	fmt.Fprintf(w, "%s against %s\n\n", head, file)
	for _, c := range rep.Checks {
		fmt.Fprintf(w, "%-7s %s\n", strings.ToUpper(c.Status), c.Key)
		switch c.Status {
		case drift.Drifted:
			fmt.Fprintf(w, "  plan: %s\n  host: %s\n", c.Want, c.Have)
		case drift.OK:
			fmt.Fprintf(w, "  %s\n", c.Have)
		}
		if c.Note != "" {
			fmt.Fprintf(w, "  note: %s\n", c.Note)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "\nNote: %s\n", n)
	}
	ok := 0
	for _, c := range rep.Checks {
		if c.Status == drift.OK {
			ok++
		}
	}
	fmt.Fprintf(w, "\nSummary: %d drifted, %d as planned, %d not checked\n", rep.Drifted, ok, len(rep.Checks)-rep.Drifted-ok)
}
