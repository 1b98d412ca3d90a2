package cli

import (
	"fmt"
	"io"

	"github.com/longhaul/longhaul/internal/apply"
	"github.com/spf13/cobra"
)

type rollbackArgs struct {
	list, dryRun, json bool
	root, stateDir     string
}

func newRollbackCmd() *cobra.Command {
	var a rollbackArgs
	c := &cobra.Command{
		Use:   "rollback [ID] [flags]",
		Short: "Undo an apply exactly: runtime values, routes and files as they were",
		Long: `rollback restores what transaction ID (default: the latest one not rolled
back) changed, exactly as journaled: each sysctl to its prior text, each route
to its prior metrics (or removed, if the apply added it), each file byte for
byte (or removed, with the directories apply created). It works on an apply
that was interrupted at any point, may itself be interrupted and run again,
and does nothing for a transaction already rolled back.

A transaction is not rolled back under a later one that changed the same
thing: roll back the later one first. A damaged journal (checksum mismatch,
truncated) is refused rather than trusted. --list shows the transactions.`,
		Example: `  # undo the latest apply
  longhaul rollback

  # what the transactions are, then undo one of them
  longhaul rollback --list
  longhaul rollback 3 --dry-run
  longhaul rollback 3`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("rollback takes at most one transaction id, got %d (see longhaul rollback --list)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return runRollback(a, id, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.BoolVar(&a.list, "list", false, "list the transactions and their states")
	f.BoolVar(&a.dryRun, "dry-run", false, "print what would be restored and change nothing")
	f.StringVar(&a.root, "root", "", "the root the transactions were applied under (default /)")
	f.StringVar(&a.stateDir, "state-dir", "", "journal directory (default ROOT"+apply.DefaultStateDir+")")
	f.BoolVar(&a.json, "json", false, "print JSON (schema longhaul.rollback/v1; with --list longhaul.transactions/v1)")
	return c
}

type txListJSON struct {
	Schema       string            `json:"schema"`
	Transactions []apply.TxSummary `json:"transactions"`
}

func runRollback(a rollbackArgs, id string, stdout, stderr io.Writer) error {
	if err := checkDir("--root", a.root); err != nil {
		return err
	}
	if err := checkDir("--state-dir", a.stateDir); err != nil {
		return err
	}
	o := apply.Options{Root: a.root, StateDir: a.stateDir, DryRun: a.dryRun}
	if a.list {
		if id != "" {
			return usagef("--list shows every transaction: it takes no id")
		}
		txs, err := apply.List(o)
		if err != nil {
			return fmt.Errorf("rollback: %w", needRoot(err, o, false))
		}
		if a.json {
			if txs == nil {
				txs = []apply.TxSummary{}
			}
			return writeJSON(stdout, txListJSON{Schema: "longhaul.transactions/v1", Transactions: txs})
		}
		printTxList(stdout, txs)
		return nil
	}
	warnInterrupted(stderr, o, false)
	rep, err := apply.Rollback(id, o)
	if err != nil {
		return needRoot(err, o, !a.dryRun)
	}
	if a.json {
		return writeJSON(stdout, applyJSON{Schema: "longhaul.rollback/v1", Report: rep})
	}
	switch {
	case rep.ID == "":
	case rep.DryRun:
		fmt.Fprintf(stdout, "Dry run: nothing was changed. Rolling back transaction %s (%s) would:\n", rep.ID, rep.State)
	case rep.State == apply.StateRolledBack && len(rep.Changes) > 0:
		fmt.Fprintf(stdout, "Transaction %s: rolled back\n", rep.ID)
	}
	printChanges(stdout, rep.Changes)
	for _, n := range rep.Notes {
		fmt.Fprintln(stdout, n)
	}
	return nil
}

func printTxList(w io.Writer, txs []apply.TxSummary) {
	if len(txs) == 0 {
		fmt.Fprintln(w, "No transactions.")
		return
	}
	fmt.Fprintf(w, "%-6s %-20s %-13s %-8s %s\n", "ID", "CREATED", "STATE", "CHANGES", "PLAN")
	for _, t := range txs {
		if t.Damaged != "" {
			fmt.Fprintf(w, "%-6s %s\n", t.ID, t.Damaged)
			continue
		}
		what := t.Summary
		if t.Persist {
			what += ", persisted"
		}
		fmt.Fprintf(w, "%-6s %-20s %-13s %-8d %s\n", t.ID, t.Created.UTC().Format("2006-01-02 15:04:05"), t.State, t.Changes, what)
	}
}
