package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/longhaul/longhaul/internal/apply"
	"github.com/longhaul/longhaul/internal/emit"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
)

type planArgs struct {
	path       pathFlags
	role       roleFlag
	budget     budgetFlag
	dst        prefixFlag
	size       units.Size
	appBuffers bool
	host       hostSource
	stateDir   string
	out        string
	json       bool
	emit       string
	from       string
}

func newPlanCmd() *cobra.Command {
	var a planArgs
	c := &cobra.Command{
		Use:   "plan --rtt RTT --rate RATE [flags]",
		Short: "The smallest set of changes that lets N flows reach the rate, with reasons and memory cost",
		Long: `plan reads this host once and says exactly what to change so that N flows
reach the rate on the path: the tcp_rmem/tcp_wmem maxima the path model
needs (plus 25% headroom, rounded up to a MiB: never folklore's 2 GB, and
never lower than now), tcp_mem headroom for the flows within a memory
budget, net.core.rmem_max/wmem_max only for applications that set
SO_RCVBUF/SO_SNDBUF (--app-buffers), per-route initcwnd/initrwnd for one
destination (--dst), tcp_slow_start_after_idle and tcp_no_metrics_save where
they matter, and application snippets (nginx, iperf3).

Each item shows the current value, the new value, why (with the model's
numbers) and the memory it lets the flows take. --role says which end of the
transfers this host is: client receives the data, server sends it, both
(default) either. A plan that cannot fit the memory budget is refused.

Save the plan with -o (or --json) and apply it with longhaul apply.`,
		Example: `  # what this host needs for one flow at 1 Gbit/s over 200 ms
  longhaul plan --rtt 200ms --rate 1Gbit/s

  # a server sending to 8 clients, short responses to one network faster
  longhaul plan --rtt 120ms --rate 10Gbit/s --flows 8 --role server --dst 203.0.113.0/24

  # save it, look at what apply would do, then apply it
  longhaul plan --rtt 200ms --rate 1Gbit/s -o plan.json
  longhaul apply plan.json --dry-run

  # a copied /proc/sys and /etc tree, a namespace, or a saved audit snapshot
  longhaul plan --root /tmp/hostcopy --rtt 200ms --rate 1Gbit/s
  longhaul plan --netns client --rtt 200ms --rate 1Gbit/s --role client
  longhaul plan --snapshot prod-audit.json --rtt 80ms --rate 10Gbit/s --memory-budget 8GiB

  # the plan in the form a fleet applies (--from: a plan saved with -o)
  longhaul plan --rtt 200ms --rate 1Gbit/s --emit ansible > longhaul.yml
  longhaul plan --from plan.json --emit tuned > /etc/tuned/longhaul/tuned.conf`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if a.emit != "" || a.from != "" {
				return runEmit(c, a, c.OutOrStdout(), c.ErrOrStderr())
			}
			return runPlan(c.Context(), a, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	a.path.register(f, "concurrent long flows the host must carry")
	a.role.r, a.dst.withDefault = plan.Both, true
	f.Var(&a.role, "role", "this host's end of the transfers: client (receives the data), server (sends it) or both")
	f.Var(&a.budget, "memory-budget", "most memory the flows' buffers may take: a size (4GiB) or a share of RAM (25%); default 25% of RAM")
	f.Var(&a.dst, "dst", "destination prefix to plan initial windows for (203.0.113.0/24), or default for the default route")
	f.Var(&a.size, "size", "typical short response the initial window is judged for (default 64kB)")
	f.BoolVar(&a.appBuffers, "app-buffers", false, "applications set SO_RCVBUF/SO_SNDBUF themselves: plan net.core.rmem_max/wmem_max and their values")
	a.host.register(f, "plan for")
	f.StringVar(&a.stateDir, "state-dir", "", "journal directory to check for interrupted applies (default ROOT"+apply.DefaultStateDir+")")
	f.StringVarP(&a.out, "output", "o", "", "also write the plan as JSON to this file (for longhaul apply)")
	f.BoolVar(&a.json, "json", false, "print the plan as JSON (schema "+plan.Schema+") instead of text")
	f.StringVar(&a.emit, "emit", "", "print the plan as FORMAT instead of text: "+emit.Names())
	c.Long += "\n\nFormats for --emit:\n"
	for _, ft := range emit.Formats() {
		c.Long += fmt.Sprintf("  %-9s %s\n", ft.Name, ft.Desc)
	}
	f.StringVar(&a.from, "from", "", "with --emit: render this saved plan (-o plan.json) instead of making one")
	return c
}

func (a planArgs) request() (plan.Request, error) {
	rtt, rate, given, err := a.path.parse()
	if err != nil {
		return plan.Request{}, err
	}
	if !given {
		return plan.Request{}, usagef("plan needs the path: --rtt and --rate, e.g. --rtt 200ms --rate 1Gbit/s")
	}
	req := plan.Request{RTT: rtt.D, RateBps: rate.Bps, Flows: a.path.flows, AppBuffers: a.appBuffers}
	req.Role = a.role.r
	req.MemoryBudget, req.BudgetShare = a.budget.bytes, a.budget.share
	req.Dst, req.DstDefault = a.dst.p, a.dst.isDefault
	if a.size.IsSet() {
		if req.ResponseBytes = a.size.N; req.ResponseBytes <= 0 {
			return req, usagef("--size: must be greater than zero, e.g. 64kB")
		}
	}
	return req, nil
}

func runPlan(ctx context.Context, a planArgs, stdout, stderr io.Writer) error {
	p, err := makePlan(ctx, a, stderr)
	if err != nil {
		return err
	}
	if a.out != "" {
		if err := savePlan(a.out, p); err != nil {
			return err
		}
	}
	if a.json {
		return writeJSON(stdout, p)
	}
	printPlan(stdout, p, a.out)
	return nil
}

// savePlan writes the plan as JSON (-o).
func savePlan(name string, p plan.Plan) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	err = writeJSON(f, p)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("plan: write %s: %w", name, err)
	}
	return nil
}

// makePlan gathers the host (or reads the snapshot) and makes the plan.
func makePlan(ctx context.Context, a planArgs, stderr io.Writer) (plan.Plan, error) {
	req, err := a.request()
	if err != nil {
		return plan.Plan{}, err
	}
	warnInterrupted(stderr, apply.Options{Root: a.host.root, StateDir: a.stateDir}, true)
	s, err := a.host.load(ctx)
	if err != nil {
		return plan.Plan{}, err
	}
	return plan.Make(s, req)
}

func roleText(r plan.Role) string {
	switch r {
	case plan.Client:
		return "this host receives the data"
	case plan.Server:
		return "this host sends the data"
	}
	return "this host sends and receives the data"
}

func printPlan(w io.Writer, p plan.Plan, saved string) {
	printPlanHead(w, p)
	printPlanItems(w, p.Items)
	printPlanMemory(w, p.Memory)
	list := func(title string, lines []string) {
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s\n", title)
			for _, s := range lines {
				fmt.Fprintf(w, "  - %s\n", s)
			}
		}
	}
	list("Warnings", p.Warnings)
	list("Also looked at", p.Notes)
	fmt.Fprintln(w)
	if saved != "" {
		fmt.Fprintf(w, "Plan written to %s: longhaul apply %s --dry-run shows what would change\n", saved, saved)
	} else {
		fmt.Fprintln(w, "Save it with -o plan.json, then: longhaul apply plan.json --dry-run")
	}
}

// printPlanHead prints the host, the model's need and what to expect.
func printPlanHead(w io.Writer, p plan.Plan) {
	fmt.Fprintf(w, "Plan for %s (%s)\n", apply.Summary(p), roleText(p.Path.Role))
	head := fmt.Sprintf("Host %s, Linux %s", orDash(p.Host), orDash(p.Kernel))
	if p.Source != "" && p.Source != "live" {
		head += " (" + p.Source + ")"
	}
	fmt.Fprintln(w, head)
	m := p.Model
	need := []string{}
	if m.ReceiverNeedBytes > 0 {
		need = append(need, fmt.Sprintf("the receiver needs %s (window = %.2g x buffer)", units.FormatIEC(float64(m.ReceiverNeedBytes)), m.ReceiveRatio))
	}
	if m.SenderNeedBytes > 0 {
		need = append(need, fmt.Sprintf("the sender needs %s (%.2g of it in flight)", units.FormatIEC(float64(m.SenderNeedBytes)), pathmodel.SendRatio))
	}
	fmt.Fprintf(w, "Model: BDP %s per flow; %s\n", units.FormatBytes(float64(m.FlowBDPBytes)), strings.Join(need, ", "))
	fmt.Fprintf(w, "Expected: %s now (%s), %s with the plan (%s)\n", units.FormatRate(m.NowBps), limitText(m.NowLimitedBy), units.FormatRate(m.PlannedBps), limitText(m.PlannedLimitedBy))
}

// printPlanItems prints the changes, numbered, then the applications'.
func printPlanItems(w io.Writer, items []plan.Item) {
	var changes, apps []plan.Item
	for _, it := range items {
		if it.Kind == plan.KindApp {
			apps = append(apps, it)
		} else {
			changes = append(changes, it)
		}
	}
	fmt.Fprintln(w)
	if len(changes) == 0 {
		fmt.Fprintln(w, "Changes: none: this host already allows the rate on this path")
	} else {
		fmt.Fprintf(w, "Changes (%d)\n", len(changes))
	}
	for i, it := range changes {
		scope := ""
		if it.Scope == plan.ScopeHost {
			scope = " (host-wide)"
		}
		title := string(it.Kind) + " " + it.Key
		if strings.HasPrefix(it.Key, string(it.Kind)+" ") {
			title = it.Key
		}
		fmt.Fprintf(w, "  %d. %s%s\n", i+1, title, scope)
		fmt.Fprintf(w, "     now:    %s\n     new:    %s\n     why:    %s\n", it.Current, it.New, it.Why)
		if it.MemoryBytes > 0 {
			fmt.Fprintf(w, "     memory: up to %s\n", units.FormatIEC(float64(it.MemoryBytes)))
		}
	}
	if len(apps) > 0 {
		fmt.Fprintln(w, "\nApplications (printed, not applied)")
		for _, it := range apps {
			fmt.Fprintf(w, "  - %s\n     now:    %s\n     new:    %s\n     why:    %s\n", it.Key, it.Current, it.New, it.Why)
		}
	}
}

// printPlanMemory prints what the planned flows may take.
func printPlanMemory(w io.Writer, mem plan.Memory) {
	fmt.Fprintf(w, "\nMemory: %d flow(s) need %s", mem.Flows, units.FormatIEC(float64(mem.NeededBytes)))
	if mem.WorstCaseBytes > 0 {
		fmt.Fprintf(w, ", at most %s if every buffer reaches its maximum", units.FormatIEC(float64(mem.WorstCaseBytes)))
	}
	if mem.BudgetBytes > 0 {
		fmt.Fprintf(w, "; budget %s (%s)", units.FormatIEC(float64(mem.BudgetBytes)), mem.BudgetBasis)
	}
	if mem.TCPMemPressureBytes > 0 {
		fmt.Fprintf(w, "; tcp_mem pressure %s, max %s", units.FormatIEC(float64(mem.TCPMemPressureBytes)), units.FormatIEC(float64(mem.TCPMemMaxBytes)))
	}
	fmt.Fprintln(w)
}

func limitText(by string) string {
	switch by {
	case "path":
		return "the path rate"
	case "":
		return "unknown"
	case "receiver", "sender":
		return "limited by the " + by + "'s buffer"
	}
	return "limited: " + by
}

// warnInterrupted tells the user, at the start of plan, apply and
// rollback, about transactions a crash left half done and journals that
// cannot be trusted.
func warnInterrupted(w io.Writer, o apply.Options, sayUnreadable bool) {
	txs, err := apply.Interrupted(o)
	if err != nil {
		// No journal directory is no error (nothing was applied); one
		// that cannot be read or trusted hides what an earlier apply
		// left: plan says so (apply and rollback refuse it themselves).
		if sayUnreadable {
			fmt.Fprintf(w, "longhaul: warning: could not check for interrupted transactions: %v\n", err)
		}
		return
	}
	for _, t := range txs {
		if t.Damaged != "" {
			fmt.Fprintf(w, "longhaul: warning: transaction %s cannot be trusted: %s\n", t.ID, t.Damaged)
			continue
		}
		fmt.Fprintf(w, "longhaul: warning: transaction %s (%s) was interrupted while %s: the host may be half changed; longhaul rollback %s restores it, or apply the same plan again to complete it\n",
			t.ID, t.Summary, t.State, t.ID)
	}
}

// runEmit prints a plan, made now or read with --from, in an --emit
// format.
func runEmit(c *cobra.Command, a planArgs, stdout, stderr io.Writer) error {
	if a.emit == "" {
		return usagef("--from renders a saved plan: give the format with --emit (%s)", emit.Names())
	}
	if a.json {
		return usagef("--emit and --json are two outputs: give one (-o plan.json saves the JSON beside --emit)")
	}
	var p plan.Plan
	if a.from != "" {
		for _, name := range []string{"rtt", "rate", "flows", "role", "memory-budget", "dst", "size", "app-buffers", "netns", "root", "snapshot"} {
			if c.Flags().Changed(name) {
				return usagef("--from renders a saved plan as it is: --%s does not go with it", name)
			}
		}
		var err error
		if p, err = readPlan(c.Context(), a.from); err != nil {
			return err
		}
	} else {
		var err error
		if p, err = makePlan(c.Context(), a, stderr); err != nil {
			return err
		}
		if a.out != "" {
			if err := savePlan(a.out, p); err != nil {
				return err
			}
		}
	}
	out, err := emit.Render(p, a.emit)
	if err != nil {
		return fmt.Errorf("--emit %s: %w", a.emit, err)
	}
	_, err = stdout.Write(out)
	return err
}
