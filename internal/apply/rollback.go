// Rollback: a transaction restored exactly as journaled, the latest first,
// on the host or under the root and namespace it was applied to.

package apply

import (
	"errors"
	"fmt"
	"github.com/longhaul/longhaul/internal/atomicfile"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/sysctl"
)

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
			return nil, refuseRollback("%v", err)
		}
	}
	// Before the lock: taking it creates a file in the directory.
	if err := st.trust("rollback"); err != nil {
		return nil, err
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
		return nil, refuseRollback("%v", err)
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

// refuseRollback is refuse in rollback's words.
func refuseRollback(format string, a ...any) error { return refuseAs("rollback", format, a...) }

// latestApplied returns the id of the newest transaction not rolled back
// ("" when there is none).
func latestApplied(st store, ids []string) (string, error) {
	for i := len(ids) - 1; i >= 0; i-- {
		j, err := st.load(ids[i])
		if err != nil {
			return "", refuseRollback("%v", err)
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
			return refuseRollback("%v", err)
		}
		if lj.State == StateRolledBack {
			continue
		}
		for _, t := range lj.touches() {
			if slices.Contains(mine, t) {
				return refuseRollback("transaction %s, applied later, also changed %s: roll it back first (longhaul rollback %s)", lj.ID, strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(t, "sysctl "), "file "), "route "), lj.ID)
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
