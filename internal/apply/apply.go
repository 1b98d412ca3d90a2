package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/atomicfile"
	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
)

// DefaultStateDir holds the journals, below the root.
const DefaultStateDir = "/var/lib/longhaul/journal"

// refuse is a plan or request apply refuses before changing anything
// (unknown key, value out of range, another kernel, a damaged journal):
// bad input, the command line exits 2.
func refuse(format string, a ...any) error { return refuseAs("apply", format, a...) }

// refuseAs is refuse for command cmd (rollback's refusals say rollback).
func refuseAs(cmd, format string, a ...any) error {
	return badinput.Errorf("%s: %s", cmd, fmt.Sprintf(format, a...))
}

// Options says where and how to apply.
type Options struct {
	// Root is the file system root holding proc/sys and etc; "" means
	// "/". Any other root is a copied or fixture tree: its proc/sys files
	// stand for the kernel's values and routes are not live.
	Root string
	// Netns names the network namespace whose sysctls and routes change.
	Netns string
	// StateDir holds the journals; "" means Root + DefaultStateDir.
	StateDir string
	Persist  bool
	DryRun   bool
	// Router changes routes; nil means rtnetlink on the live root and no
	// route changes under another root.
	Router Router
	// Hook, for tests, runs after each step (the journal written, each
	// change made, the state committed). A non-nil error stops the run at
	// once, as if the process had been killed there: nothing is undone.
	Hook func(step string) error
	// Now stamps journals; nil means time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() (Options, error) {
	if o.Root == "" {
		o.Root = "/"
	}
	abs, err := filepath.Abs(o.Root)
	if err != nil {
		return o, fmt.Errorf("root %s: %w", o.Root, err)
	}
	o.Root = abs
	if o.StateDir == "" {
		o.StateDir = hostPath(o.Root, DefaultStateDir)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Router == nil && o.live() {
		o.Router = newNetlinkRouter(o.Netns)
	}
	return o, nil
}

func (o Options) live() bool { return filepath.Clean(o.Root) == "/" }

func (o Options) sysRoot() string { return hostPath(o.Root, "/proc/sys") }

// crashed is returned when the test hook stops a run.
type crashed struct{ err error }

func (c crashed) Error() string { return c.err.Error() }
func (c crashed) Unwrap() error { return c.err }

func (o Options) step(name string) error {
	if o.Hook == nil {
		return nil
	}
	if err := o.Hook(name); err != nil {
		return crashed{err}
	}
	return nil
}

// inNetns runs fn where the options' sysctls live.
func (o Options) inNetns(fn func() error) error {
	if o.Netns == "" {
		return fn()
	}
	return netns.Do(o.Netns, fn)
}

// Change is one line of a report.
type Change struct {
	Kind   string `json:"kind"` // sysctl, route or file
	Key    string `json:"key"`
	Before string `json:"before"`
	After  string `json:"after"`
	// Status: change (dry run), changed, unchanged, skipped, restore
	// (dry run), restored.
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
}

// FileChange is a file written or restored, with its new content.
type FileChange struct {
	Path    string `json:"path"`
	Action  string `json:"action"` // create, update, restore, remove
	Content string `json:"content,omitempty"`
}

// Report says what an apply or rollback did (or, dry, would do).
type Report struct {
	ID        string       `json:"id,omitempty"`
	State     string       `json:"state,omitempty"`
	DryRun    bool         `json:"dry_run"`
	Resumed   bool         `json:"resumed,omitempty"`
	Changes   []Change     `json:"changes"`
	Files     []FileChange `json:"files,omitempty"`
	Apps      []plan.Item  `json:"apps,omitempty"`
	Conflicts []string     `json:"conflicts,omitempty"`
	Notes     []string     `json:"notes,omitempty"`
}

func (r *Report) note(format string, a ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, a...)) }

// Digest identifies a plan's content: an interrupted apply is completed
// only by the same plan.
func Digest(p plan.Plan) string {
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Summary describes a plan's path in a few words.
func Summary(p plan.Plan) string {
	flows := "1 flow"
	if p.Path.Flows > 1 {
		flows = fmt.Sprintf("%d flows", p.Path.Flows)
	}
	s := fmt.Sprintf("%s at %s, %s, role %s", units.FormatRate(p.Path.RateBps), units.FormatDuration(p.Path.RTT()), flows, p.Path.Role)
	if p.Netns != "" {
		s += ", netns " + p.Netns
	}
	return s
}

// Apply validates p against the host, journals the prior state of
// everything it will change, then changes it. An interrupted apply of
// the same plan is completed; of another plan, refused.
func Apply(p plan.Plan, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	switch {
	case o.Persist && o.Netns != "":
		return nil, refuse("--persist writes the boot configuration, which applies to the host's own namespace, not to netns %s", o.Netns)
	case o.Netns != "" && !o.live():
		return nil, refuse("--netns needs the live system, not --root")
	}
	st := store{o.StateDir}
	// Before anything in the journal directory is opened or created; a
	// dry run goes on without one it may not read (see below).
	if err := st.trust("apply"); err != nil && (!o.DryRun || !errors.Is(err, fs.ErrPermission)) {
		return nil, err
	}
	pending, err := interrupted(st)
	var unread error // a dry run goes on without a journal it may not read (not root)
	if err != nil {
		if !o.DryRun || !errors.Is(err, fs.ErrPermission) {
			return nil, err
		}
		unread = err
	}
	e, err := gather(p, o)
	if err != nil {
		return nil, err
	}
	j, rep, err := build(p, e, o)
	if err != nil {
		return nil, err
	}
	if o.DryRun {
		return dryRun(st, rep, pending, unread)
	}
	unlock, err := st.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if pending, err = interrupted(st); err != nil {
		return nil, err
	}
	if j, err = begin(st, j, rep, pending); err != nil {
		return nil, err
	}
	if j == nil {
		return rep, nil
	}
	rep.ID = j.ID
	if err := o.step("journal"); err != nil {
		return rep, err
	}
	return rep, complete(st, j, o, rep)
}

// dryRun finishes the report of a dry run: the drop-ins name the id the
// transaction would get, and interrupted transactions are pointed out.
// A journal that could not be read (unread: not root) is said in a note,
// and the id is then shown as NNNN.
func dryRun(st store, rep *Report, pending []*Journal, unread error) (*Report, error) {
	rep.DryRun = true
	next := "NNNN"
	if unread != nil {
		rep.note("the journal in %s could not be read (%v): reading it needs root, so transactions interrupted there are not shown and NNNN stands for the transaction id; run with sudo to see them", st.dir, errors.Unwrap(unread))
	} else {
		var err error
		if next, err = st.nextID(); err != nil {
			return nil, err
		}
	}
	for i := range rep.Files {
		rep.Files[i].Content = strings.ReplaceAll(rep.Files[i].Content, pendingID, next)
	}
	for _, pj := range pending {
		rep.note("transaction %s was interrupted while %s: longhaul rollback %s restores the host", pj.ID, pj.State, pj.ID)
	}
	return rep, nil
}

// begin returns the journal to execute, saved with state applying: the
// interrupted transaction of the same plan, resumed, or j under a new id.
// It returns nil when there is nothing to change, and refuses while
// another transaction is interrupted.
func begin(st store, j *Journal, rep *Report, pending []*Journal) (*Journal, error) {
	for _, pj := range pending {
		if pj.State == StateApplying && pj.PlanDigest == j.PlanDigest && pj.Root == j.Root && pj.Netns == j.Netns {
			rep.Resumed = true
			rep.Changes, rep.Files = journalChanges(pj, "changed"), nil
			return pj, nil
		}
		return nil, refuse("transaction %s (%s) was interrupted while %s: roll it back first (longhaul rollback %s) or complete it by applying its own plan again", pj.ID, pj.Summary, pj.State, pj.ID)
	}
	if len(j.Sysctls)+len(j.Routes)+len(j.Files) == 0 {
		rep.note("nothing to change: the host already has the plan's values")
		return nil, nil
	}
	var err error
	if j.ID, err = st.nextID(); err != nil {
		return nil, err
	}
	// The drop-ins' headers name the transaction.
	for i := range j.Files {
		j.Files[i].After = []byte(strings.ReplaceAll(string(j.Files[i].After), pendingID, j.ID))
	}
	for i := range rep.Files {
		rep.Files[i].Content = strings.ReplaceAll(rep.Files[i].Content, pendingID, j.ID)
	}
	j.State = StateApplying
	if err := st.save(j); err != nil {
		return nil, fmt.Errorf("write journal: %w", err)
	}
	return j, nil
}

// complete makes the journaled changes and records the outcome. After a
// real failure it puts back what was changed; after a simulated crash
// (tests) it stops where it is.
func complete(st store, j *Journal, o Options, rep *Report) error {
	if done, err := execute(j, o); err != nil {
		var c crashed
		if errors.As(err, &c) {
			return err
		}
		// A real failure: put back what was changed. The failed step
		// itself changed nothing (a refused write, an atomic rename not
		// made).
		if rerr := restore(j.prefix(done), o, &Report{}); rerr != nil {
			return fmt.Errorf("%v; restoring the prior state failed too: %v: run longhaul rollback %s", err, rerr, j.ID)
		}
		j.State = StateRolledBack
		if serr := st.save(j); serr != nil {
			return fmt.Errorf("%v; restored, but the journal could not be updated: %v", err, serr)
		}
		return fmt.Errorf("%v: restored the prior state (transaction %s rolled back)", err, j.ID)
	}
	j.State = StateApplied
	if err := st.save(j); err != nil {
		return fmt.Errorf("all changes made, but the journal could not be updated: %w", err)
	}
	rep.State = StateApplied
	if err := o.step("applied"); err != nil {
		return err
	}
	for i := range rep.Changes {
		if rep.Changes[i].Status == "change" {
			rep.Changes[i].Status = "changed"
		}
	}
	return nil
}

// pendingID stands for the transaction id in file contents rendered
// before the id is allocated.
const pendingID = "\x00ID\x00"

// execute makes the journal's changes, in order: sysctls, routes, files
// (boot configuration last, so a crash never leaves it ahead of the
// running system without the journal saying so).
func execute(j *Journal, o Options) (done int, err error) {
	for _, s := range j.Sysctls {
		if err := writeSysctl(o, s.Key, s.After); err != nil {
			return done, err
		}
		done++
		if err := o.step("sysctl " + s.Key); err != nil {
			return done, err
		}
	}
	for _, r := range j.Routes {
		if o.Router == nil {
			return done, fmt.Errorf("route %s: no way to change routes here", r.After)
		}
		if err := o.Router.Set(r.After); err != nil {
			return done, err
		}
		done++
		if err := o.step("route " + r.After.Dst); err != nil {
			return done, err
		}
	}
	for _, f := range j.Files {
		if err := writeFile(j.Root, f); err != nil {
			return done, err
		}
		done++
		if err := o.step("file " + f.Path); err != nil {
			return done, err
		}
	}
	return done, nil
}

// prefix is the journal with only its first n steps (in execution
// order).
func (j *Journal) prefix(n int) *Journal {
	c := *j
	take := func(l int) int {
		k := min(n, l)
		n -= k
		return k
	}
	c.Sysctls = c.Sysctls[:take(len(c.Sysctls))]
	c.Routes = c.Routes[:take(len(c.Routes))]
	c.Files = c.Files[:take(len(c.Files))]
	return &c
}

func writeSysctl(o Options, key, value string) error {
	return o.inNetns(func() error { return sysctl.Write(o.sysRoot(), key, value) })
}

func readRaw(o Options, key string) (string, error) {
	var raw string
	err := o.inNetns(func() error {
		p, err := sysctl.Path(o.sysRoot(), key)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", key, bare(err))
		}
		raw = string(b)
		return nil
	})
	return raw, err
}

func writeFile(root string, f FileStep) error {
	for _, d := range f.NewDirs {
		if err := os.Mkdir(hostPath(root, d), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", d, bare(err))
		}
	}
	if err := atomicfile.WriteFile(hostPath(root, f.Path), f.After, fs.FileMode(f.Mode).Perm()); err != nil {
		return fmt.Errorf("write %s: %w", f.Path, bare(err))
	}
	return nil
}

// journalChanges lists a journal's changes for a report.
func journalChanges(j *Journal, status string) []Change {
	var out []Change
	for _, s := range j.Sysctls {
		out = append(out, Change{Kind: "sysctl", Key: s.Key, Before: sysctl.Normalize(s.Before), After: sysctl.Normalize(s.After), Status: status})
	}
	for _, r := range j.Routes {
		before := "absent"
		if r.Existed {
			before = r.Before.String() + " " + r.Before.MetricsText()
		}
		out = append(out, Change{Kind: "route", Key: r.After.Dst, Before: before, After: r.After.String() + " " + r.After.MetricsText(), Status: status})
	}
	for _, f := range j.Files {
		out = append(out, Change{Kind: "file", Key: f.Path, Before: describe(f.Existed, f.Before), After: describe(true, f.After), Status: status})
	}
	return out
}

// readKernel reads the release of the kernel under the root.
func readKernel(o Options) (string, error) {
	k, err := sysconf.ReadKernel(hostPath(o.Root, "/proc"))
	if err != nil {
		return "", err
	}
	return k.Release, nil
}

// hostPath maps a path within root to a path on this machine.
func hostPath(root, name string) string {
	return filepath.Join(root, filepath.FromSlash(path.Clean("/"+name)))
}

// bare strips the *fs.PathError wrapper, whose path is the host path.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
