package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/longhaul/longhaul/internal/atomicfile"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
)

// DefaultStateDir holds the journals, below the root.
const DefaultStateDir = "/var/lib/longhaul/journal"

// ErrInput marks a plan or request apply refuses before changing
// anything (unknown key, value out of range, another kernel, a damaged
// journal); the command line exits 2.
var ErrInput = errors.New("apply")

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, a...))
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

// restore puts back the journal's prior state, newest change first.
// Every step is idempotent: restoring twice, or restoring what was never
// changed, leaves the same result. A step that fails does not stop the
// others; the test hook does.
func restore(j *Journal, o Options, rep *Report) error {
	var errs []string
	fail := func(err error) error {
		var c crashed
		if errors.As(err, &c) {
			return err
		}
		errs = append(errs, err.Error())
		return nil
	}
	for i := len(j.Files) - 1; i >= 0; i-- {
		f := j.Files[i]
		c, err := restoreFile(j.Root, f, o.DryRun)
		if err != nil {
			_ = fail(err)
			continue
		}
		rep.Changes = append(rep.Changes, c)
		if err := o.step("restore file " + f.Path); err != nil {
			return err
		}
	}
	for i := len(j.Routes) - 1; i >= 0; i-- {
		r := j.Routes[i]
		if err := restoreRoute(r, o, rep); err != nil {
			_ = fail(err)
			continue
		}
		if err := o.step("restore route " + r.After.Dst); err != nil {
			return err
		}
	}
	for i := len(j.Sysctls) - 1; i >= 0; i-- {
		s := j.Sysctls[i]
		if err := restoreSysctl(s, o, rep); err != nil {
			_ = fail(err)
			continue
		}
		if err := o.step("restore sysctl " + s.Key); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func restoreRoute(r RouteStep, o Options, rep *Report) error {
	c := Change{Kind: "route", Key: r.After.Dst, Before: "absent", After: "absent"}
	if o.Router == nil {
		return fmt.Errorf("route %s: no way to change routes here", r.After)
	}
	cur, found, err := o.Router.Get(r.After.Family, r.After.Dst, r.After.Table)
	if err != nil {
		return err
	}
	if found {
		c.Before = cur.String() + " " + cur.MetricsText()
	}
	if r.Existed {
		c.After = r.Before.String() + " " + r.Before.MetricsText()
	}
	switch {
	case !r.Existed && !found, r.Existed && found && cur.InitCwnd == r.Before.InitCwnd && cur.InitRwnd == r.Before.InitRwnd:
		c.Status = "unchanged"
	case !r.Existed:
		c.Status = restoreStatus(o.DryRun)
		if !o.DryRun {
			if err := o.Router.Delete(r.After); err != nil {
				return err
			}
		}
	default:
		c.Status = restoreStatus(o.DryRun)
		if !o.DryRun {
			if err := o.Router.Set(r.Before); err != nil {
				return err
			}
		}
	}
	rep.Changes = append(rep.Changes, c)
	return nil
}

func restoreSysctl(s SysctlStep, o Options, rep *Report) error {
	cur, err := readRaw(o, s.Key)
	if err != nil {
		return err
	}
	c := Change{Kind: "sysctl", Key: s.Key, Before: sysctl.Normalize(cur), After: sysctl.Normalize(s.Before), Status: "unchanged"}
	if cur != s.Before {
		c.Status = restoreStatus(o.DryRun)
		if n := sysctl.Normalize(cur); n != sysctl.Normalize(s.After) && n != sysctl.Normalize(s.Before) {
			c.Note = "changed by something else since the apply; restored anyway"
		}
		if !o.DryRun {
			if err := writeSysctl(o, s.Key, s.Before); err != nil {
				return err
			}
		}
	}
	rep.Changes = append(rep.Changes, c)
	return nil
}

func restoreStatus(dry bool) string {
	if dry {
		return "restore"
	}
	return "restored"
}

// restoreFile puts one file back byte for byte (or removes it, and the
// directories created for it, when it did not exist).
func restoreFile(root string, f FileStep, dry bool) (Change, error) {
	name := hostPath(root, f.Path)
	c := Change{Kind: "file", Key: f.Path, Status: "unchanged"}
	cur, err := os.ReadFile(name)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("read %s: %w", f.Path, bare(err))
	}
	c.Before, c.After = describe(exists, cur), describe(f.Existed, f.Before)
	mode := fs.FileMode(0)
	if fi, err := os.Stat(name); err == nil {
		mode = fi.Mode().Perm()
	}
	if exists && !slices.Equal(cur, f.After) && !(f.Existed && slices.Equal(cur, f.Before)) {
		c.Note = "edited since the apply; restored anyway"
	}
	if dry {
		if exists != f.Existed || (f.Existed && (!slices.Equal(cur, f.Before) || mode != fs.FileMode(f.Mode).Perm())) {
			c.Status = "restore"
		}
		return c, nil
	}
	// Leftovers of a write killed between its temporary file and the
	// rename.
	if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp*")); len(tmps) > 0 {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	switch {
	case !f.Existed && exists:
		if err := os.Remove(name); err != nil {
			return c, fmt.Errorf("remove %s: %w", f.Path, bare(err))
		}
		c.Status = "restored"
	case f.Existed && (!exists || !slices.Equal(cur, f.Before) || mode != fs.FileMode(f.Mode).Perm()):
		if err := atomicfile.WriteFile(name, f.Before, fs.FileMode(f.Mode).Perm()); err != nil {
			return c, fmt.Errorf("restore %s: %w", f.Path, bare(err))
		}
		c.Status = "restored"
	}
	for i := len(f.NewDirs) - 1; i >= 0; i-- {
		err := os.Remove(hostPath(root, f.NewDirs[i]))
		if err == nil {
			c.Status = "restored"
		}
	}
	return c, nil
}

func describe(exists bool, b []byte) string {
	if !exists {
		return "absent"
	}
	return fmt.Sprintf("%d bytes", len(b))
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

// interrupted returns the transactions a crash left half done; a damaged
// journal is an error: nobody can tell what it left behind.
func interrupted(st store) ([]*Journal, error) {
	ids, err := st.ids()
	if err != nil {
		return nil, err
	}
	var out []*Journal
	for _, id := range ids {
		j, err := st.load(id)
		if err != nil {
			return nil, refuse("%v", err)
		}
		if j.State == StateApplying || j.State == StateRollingBack {
			out = append(out, j)
		}
	}
	return out, nil
}

// Summary lines for --list and start-up warnings.
type TxSummary struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	State   string    `json:"state"`
	Summary string    `json:"summary,omitempty"`
	Root    string    `json:"root,omitempty"`
	Netns   string    `json:"netns,omitempty"`
	Persist bool      `json:"persist"`
	Changes int       `json:"changes"`
	// Damaged says why the journal cannot be used; the rest is then empty.
	Damaged string `json:"damaged,omitempty"`
}

// Interrupted reports transactions a crash left half done, and damaged
// journals, so that every command can tell the user at start.
func Interrupted(o Options) ([]TxSummary, error) {
	all, err := List(o)
	if err != nil {
		return nil, err
	}
	// A transaction half done while another apply or rollback holds the
	// journal lock is in progress, not interrupted.
	od, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	running := store{od.StateDir}.busy()
	var out []TxSummary
	for _, t := range all {
		if t.Damaged != "" || (!running && (t.State == StateApplying || t.State == StateRollingBack)) {
			out = append(out, t)
		}
	}
	return out, nil
}

// List returns every transaction in the state directory, oldest first.
func List(o Options) ([]TxSummary, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	st := store{o.StateDir}
	ids, err := st.ids()
	if err != nil {
		return nil, err
	}
	var out []TxSummary
	for _, id := range ids {
		j, err := st.load(id)
		if err != nil {
			out = append(out, TxSummary{ID: id, Damaged: err.Error()})
			continue
		}
		out = append(out, TxSummary{ID: j.ID, Created: j.Created, State: j.State, Summary: j.Summary, Root: j.Root, Netns: j.Netns,
			Persist: j.Persist, Changes: len(j.Sysctls) + len(j.Routes) + len(j.Files)})
	}
	return out, nil
}

// Rollback restores transaction id (the latest one not rolled back when
// id is "") exactly as journaled. Rolling back a rolled-back transaction
// does nothing.
func Rollback(id string, o Options) (*Report, error) {
	router := o.Router // the journal says which namespace's routes; see below
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	st := store{o.StateDir}
	if id != "" {
		if id, err = normID(id); err != nil {
			return nil, refuse("%v", err)
		}
	}
	if !o.DryRun {
		unlock, err := st.lock()
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	ids, err := st.ids()
	if err != nil {
		return nil, err
	}
	rep := &Report{DryRun: o.DryRun, Changes: []Change{}}
	if id == "" {
		if id, err = latestApplied(st, ids); err != nil {
			return nil, err
		}
		if id == "" {
			rep.note("nothing to roll back: no transaction is applied")
			return rep, nil
		}
	}
	j, err := st.load(id)
	if err != nil {
		return nil, refuse("%v", err)
	}
	rep.ID, rep.State = j.ID, j.State
	if j.State == StateRolledBack {
		rep.note("transaction %s is already rolled back: nothing to do", j.ID)
		return rep, nil
	}
	if err := laterFirst(st, ids, j); err != nil {
		return nil, err
	}
	ro, rj := restoreTarget(o, router, j, rep)
	if o.DryRun {
		return rep, restore(rj, ro, rep)
	}
	j.State = StateRollingBack
	if err := st.save(j); err != nil {
		return nil, fmt.Errorf("write journal: %w", err)
	}
	if err := ro.step("rolling-back"); err != nil {
		return rep, err
	}
	if err := restore(rj, ro, rep); err != nil {
		return rep, fmt.Errorf("rollback %s: %w (run longhaul rollback %s again; restoring is idempotent)", j.ID, err, j.ID)
	}
	j.State = StateRolledBack
	if err := st.save(j); err != nil {
		return rep, fmt.Errorf("restored, but the journal could not be updated: %w", err)
	}
	rep.State = StateRolledBack
	if err := ro.step("rolled-back"); err != nil {
		return rep, err
	}
	return rep, nil
}

// latestApplied returns the id of the newest transaction not rolled back
// ("" when there is none).
func latestApplied(st store, ids []string) (string, error) {
	for i := len(ids) - 1; i >= 0; i-- {
		j, err := st.load(ids[i])
		if err != nil {
			return "", refuse("%v", err)
		}
		if j.State != StateRolledBack {
			return j.ID, nil
		}
	}
	return "", nil
}

// laterFirst refuses to roll back j while a later transaction that
// changed the same things is still applied: this one would restore
// values older than theirs under them.
func laterFirst(st store, ids []string, j *Journal) error {
	mine := j.touches()
	for _, later := range ids {
		if later <= j.ID {
			continue
		}
		lj, err := st.load(later)
		if err != nil {
			return refuse("%v", err)
		}
		if lj.State == StateRolledBack {
			continue
		}
		for _, t := range lj.touches() {
			if slices.Contains(mine, t) {
				return refuse("transaction %s, applied later, also changed %s: roll it back first (longhaul rollback %s)", lj.ID, strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(t, "sysctl "), "file "), "route "), lj.ID)
			}
		}
	}
	return nil
}

// restoreTarget returns the options that restore j where it was applied,
// whatever o says, and what of j to restore: only its files when the
// running system it changed is gone (another kernel booted, the
// namespace deleted).
func restoreTarget(o Options, router Router, j *Journal, rep *Report) (Options, *Journal) {
	ro := o
	ro.Root, ro.Netns, ro.Router = j.Root, j.Netns, router
	if router == nil && filepath.Clean(j.Root) == "/" {
		ro.Router = newNetlinkRouter(j.Netns)
	}
	runtime := true
	if k, err := readKernel(ro); err != nil || k != j.Kernel {
		runtime = false
		rep.note("the journal was made on Linux %s but this host runs %s now: the boot configuration is restored, running values are left as they are (a reboot reset them)", j.Kernel, orUnknown(k))
	}
	if j.Netns != "" && !netns.Exists(j.Netns) {
		runtime = false
		rep.note("network namespace %s no longer exists: its values went with it", j.Netns)
	}
	rj := *j
	if !runtime {
		rj.Sysctls, rj.Routes = nil, nil
	}
	return ro, &rj
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown kernel"
	}
	return s
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
