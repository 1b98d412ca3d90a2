package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/longhaul/longhaul/internal/badinput"
	"io"
	"strings"

	"github.com/longhaul/longhaul/internal/apply"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/spf13/cobra"
)

type applyArgs struct {
	dryRun, persist, json bool
	netns, root, stateDir string
}

func newApplyCmd() *cobra.Command {
	var a applyArgs
	c := &cobra.Command{
		Use:   "apply PLAN [flags]",
		Short: "Apply a plan: validated first, journaled, exactly reversible",
		Long: `apply changes this host as PLAN (written by longhaul plan -o or --json) says.

It first checks everything and refuses, with one line and before writing
anything, a plan made for another kernel or namespace, a key this kernel does
not have, a value the kernel would reject (min <= default <= max, at most
2147483647, tcp_mem within RAM), a value that changed since the plan was made,
or a damaged journal. Then it journals the exact prior value of every sysctl,
route and file it will touch (in ROOT/var/lib/longhaul/journal, with a
checksum) and makes the changes.

--persist also writes the boot configuration: /etc/sysctl.d/90-longhaul.conf
and, for routes, a systemd-networkd [Route] drop-in with
InitialCongestionWindow=/InitialAdvertisedReceiveWindow= (or the nmcli
command when NetworkManager manages the route). Conflicts are reported: a
later sysctl.d file or /etc/sysctl.conf that wins at boot, tuned or bpftune
running. Application snippets are printed, never applied.

An apply killed half way is reported by every later plan, apply and rollback;
applying the same plan again completes it, longhaul rollback undoes it.`,
		Example: `  # what would change, without changing anything
  longhaul apply plan.json --dry-run --persist

  # apply it now and at every boot
  longhaul apply plan.json --persist

  # inside a network namespace (per-namespace sysctls and routes only)
  longhaul apply plan.json --netns client

  # undo it
  longhaul rollback`,
		Args: exactlyOnePlan,
		RunE: func(c *cobra.Command, args []string) error {
			return runApply(c.Context(), a, args[0], c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.BoolVar(&a.dryRun, "dry-run", false, "print what would change (and the files it would write) and change nothing")
	f.BoolVar(&a.persist, "persist", false, "also write the boot configuration (sysctl.d, systemd-networkd drop-ins)")
	f.StringVar(&a.netns, "netns", "", "apply inside the named network namespace (the plan must be made with --netns too)")
	f.StringVar(&a.root, "root", "", "apply to a copied tree under this directory instead of / (routes are then only persisted)")
	f.StringVar(&a.stateDir, "state-dir", "", "journal directory (default ROOT"+apply.DefaultStateDir+")")
	f.BoolVar(&a.json, "json", false, "print JSON (schema longhaul.apply/v1)")
	return c
}

func exactlyOnePlan(c *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one plan file (written by longhaul plan -o plan.json), got %d arguments (see %s --help)", c.Name(), len(args), c.CommandPath())
	}
	return nil
}

// readPlan loads a plan file, strictly: a typo in a hand-edited plan must
// not be silently ignored.
func readPlan(ctx context.Context, name string) (plan.Plan, error) {
	b, err := readDocument(ctx, "", name, "a plan file written by longhaul plan -o plan.json")
	if err != nil {
		return plan.Plan{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plan.Plan
	if err := dec.Decode(&p); err != nil {
		return p, usagef("%s is not a plan file (write one with longhaul plan -o %s): %v", name, name, badinput.JSON(err))
	}
	return p, nil
}

// applyJSON is the apply and rollback --json document.
type applyJSON struct {
	Schema string `json:"schema"`
	*apply.Report
}

func runApply(ctx context.Context, a applyArgs, file string, stdout, stderr io.Writer) error {
	p, err := readPlan(ctx, file)
	if err != nil {
		return err
	}
	o := apply.Options{Root: a.root, Netns: a.netns, StateDir: a.stateDir, Persist: a.persist, DryRun: a.dryRun}
	warnInterrupted(stderr, o, false)
	rep, err := apply.Apply(p, o)
	if err != nil {
		return needRoot(err, o, !a.dryRun)
	}
	if a.json {
		return writeJSON(stdout, applyJSON{Schema: "longhaul.apply/v1", Report: rep})
	}
	printApply(stdout, p, rep)
	return nil
}

func printApply(w io.Writer, p plan.Plan, rep *apply.Report) {
	switch {
	case rep.DryRun:
		fmt.Fprintf(w, "Dry run: nothing was changed. Applying the plan (%s) would:\n", apply.Summary(p))
	case rep.ID == "":
		fmt.Fprintf(w, "Nothing changed (%s)\n", apply.Summary(p))
	case rep.Resumed:
		fmt.Fprintf(w, "Transaction %s: completed after an interruption (%s)\n", rep.ID, apply.Summary(p))
	default:
		fmt.Fprintf(w, "Transaction %s: applied (%s)\n", rep.ID, apply.Summary(p))
	}
	printChanges(w, rep.Changes)
	for _, f := range rep.Files {
		fmt.Fprintf(w, "\n%s %s:\n", verb(rep.DryRun, f.Action), f.Path)
		for _, l := range strings.Split(strings.TrimSuffix(f.Content, "\n"), "\n") {
			fmt.Fprintf(w, "  | %s\n", l)
		}
	}
	list(w, "Conflicts", rep.Conflicts)
	list(w, "Notes", rep.Notes)
	if len(rep.Apps) > 0 {
		fmt.Fprintln(w, "\nApplications: longhaul does not change them; do it yourself")
		for _, it := range rep.Apps {
			fmt.Fprintf(w, "  - %s\n", it.New)
		}
	}
	if rep.ID != "" && !rep.DryRun {
		fmt.Fprintf(w, "\nUndo with: longhaul rollback %s\n", rep.ID)
	}
}

func verb(dry bool, action string) string {
	v := map[string]string{"create": "Create", "update": "Update"}[action]
	if v == "" {
		v = action
	}
	if dry {
		return "Would " + strings.ToLower(v)
	}
	return map[string]string{"Create": "Created", "Update": "Updated"}[v]
}

func printChanges(w io.Writer, cs []apply.Change) {
	for _, c := range cs {
		fmt.Fprintf(w, "  %-6s %-36s %s -> %s  [%s]\n", c.Kind, c.Key, orDash(c.Before), orDash(c.After), c.Status)
		if c.Note != "" {
			fmt.Fprintf(w, "         %s\n", c.Note)
		}
	}
}

func list(w io.Writer, title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	for _, l := range lines {
		fmt.Fprintf(w, "  - %s\n", l)
	}
}
