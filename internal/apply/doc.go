// Package apply changes a host as a plan (package plan) says, exactly
// reversibly, and rolls such changes back.
//
// # Steps
//
// Apply first gathers what it will judge (the kernel release, the
// current value and writability of every key, the routes, the files it
// would write, the boot configuration and tuning daemons) and refuses,
// with one line and before anything is written, a plan that does not fit:
// another kernel or namespace, a key this kernel lacks or longhaul never
// sets, a value out of range or unordered (min <= default <= max, at most
// 2147483647, tcp_mem below RAM), a value that changed since the plan was
// made, a damaged journal, an interrupted transaction of another plan.
// It then writes the journal and makes the changes in order: sysctls,
// routes, and with persist the boot configuration (a sysctl.d drop-in and
// systemd-networkd [Route] drop-ins; a NetworkManager command otherwise).
//
// # Journal
//
// Each transaction is one file in the state directory (default
// /var/lib/longhaul/journal below the root), written atomically and
// synced before the first change: the prior content of every sysctl file,
// the prior metrics of every route (or its absence), the prior bytes and
// mode of every file (or its absence) and the directories created. Its
// last line is the SHA-256 of the rest, so an edited or truncated journal
// is refused rather than trusted.
//
// # Crash safety
//
// A transaction is "applying" until every change is made and "applied"
// after; rollback marks it "rolling-back", then "rolled-back". A process
// killed anywhere leaves a journal in a non-final state: every command
// reports it at start, apply of the same plan completes it, and rollback
// restores everything it recorded. Every restore step is idempotent and
// compares before writing, so a rollback may itself be interrupted and
// run again; files come back byte for byte, sysctls to their exact prior
// text. The test hook Options.Hook runs between steps so that tests can
// stop a run at every boundary.
package apply
