package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/sysctl"
)

// keyAllowedCC is the host's list of congestion controls a non-initial
// namespace may select (a global setting: kernel facts).
const keyAllowedCC = "net.ipv4.tcp_allowed_congestion_control"

// ccFile records, under StateDir, a widening of the host's allowed list:
// the list as the host had it and the runs relying on the widening. It is
// written before the host is changed, so a run killed at any moment is
// undone by the next start (AllowCC reaps dead holders first); runs
// sharing a widening keep it until the last one ends.
const ccFile = "allowed-cc.json"

type ccRecord struct {
	Version  int    `json:"version"`
	Original string `json:"original"`
	// Added is what runs put in the list that the host did not have:
	// narrowing takes out only those, so that what someone else changed
	// meanwhile (an operator, a run under another /run) stays. Records
	// written before it are read with their holders' ccs (load).
	Added   []string   `json:"added,omitempty"`
	Holders []ccHolder `json:"holders"`
}

type ccHolder struct {
	CC        string `json:"cc"`
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	BootID    string `json:"boot_id,omitempty"`
}

func (h ccHolder) alive() bool {
	return ownerAlive(state{PID: h.PID, StartTime: h.StartTime, BootID: h.BootID})
}

// ccStore is the record and the sysctl tree it guards; tests point both
// at temporary directories.
type ccStore struct {
	dir     string // where the record and its lock live
	sysRoot string // the host's /proc/sys
}

var hostCC = ccStore{dir: StateDir, sysRoot: sysctl.DefaultRoot}

// AllowCC makes congestion control cc selectable in new namespaces: when
// the host's tcp_allowed_congestion_control lacks it, the list is widened
// (said on log) after the widening is recorded, and restore narrows it
// again once no other live run relies on it. Whatever cc is, a widening
// left by a killed run is undone first. cc "" only does that.
func AllowCC(cc string, log io.Writer) (restore func(), err error) {
	return hostCC.allow(cc, log)
}

func (c ccStore) allow(cc string, log io.Writer) (func(), error) {
	noop := func() {}
	unlock, err := c.lock()
	if err != nil {
		return noop, err
	}
	defer unlock()
	rec, err := c.reap(log)
	if err != nil || cc == "" {
		return noop, err
	}
	avail, err := sysctl.Read(c.sysRoot, "net.ipv4.tcp_available_congestion_control")
	if err != nil {
		return noop, err
	}
	if !slices.Contains(strings.Fields(avail), cc) {
		return noop, refused{fmt.Errorf("congestion control %q is not available on this kernel (available: %s); load its module first, e.g. modprobe tcp_%s", cc, avail, cc)}
	}
	cur, err := sysctl.Read(c.sysRoot, keyAllowedCC)
	if err != nil {
		return noop, err
	}
	host := cur
	if rec != nil {
		host = rec.Original
	}
	if slices.Contains(strings.Fields(host), cc) {
		return noop, nil // the host allows it on its own
	}
	self, err := selfHolder(cc)
	if err != nil {
		return noop, err
	}
	if rec == nil {
		rec = &ccRecord{Version: 1, Original: cur}
	}
	rec.Holders = append(rec.Holders, self)
	if !slices.Contains(rec.Added, cc) {
		rec.Added = append(rec.Added, cc)
	}
	if err := c.save(rec); err != nil {
		return noop, err
	}
	if err := c.write(rec); err != nil {
		return noop, fmt.Errorf("allow %s in the namespaces: %w", cc, err)
	}
	if !slices.Contains(strings.Fields(cur), cc) {
		// Said once: a run already holding the widening (the lab runner
		// and each of its paths) only adds a reference.
		fmt.Fprintf(log, "longhaul: added %s to the host's %s for this run (was %q; restored at exit)\n", cc, keyAllowedCC, rec.Original)
	}
	return func() { c.release(self, log) }, nil
}

// release drops one holder and narrows the list to what the remaining
// live holders need.
func (c ccStore) release(h ccHolder, log io.Writer) {
	unlock, err := c.lock()
	if err != nil {
		fmt.Fprintf(log, "longhaul: could not restore %s: %v; restore it by hand\n", keyAllowedCC, err)
		return
	}
	defer unlock()
	rec, err := c.load()
	if err != nil || rec == nil {
		return
	}
	// One process may hold a widening more than once (the lab runner and
	// each of its paths): drop one.
	if i := slices.Index(rec.Holders, h); i >= 0 {
		rec.Holders = slices.Delete(rec.Holders, i, i+1)
	}
	if err := c.settle(rec); err != nil {
		fmt.Fprintf(log, "longhaul: could not restore %s=%q: %v; restore it by hand\n", keyAllowedCC, rec.Original, err)
	}
}

// reap drops holders whose process is gone and settles the list; it
// returns the record that remains (nil when none).
func (c ccStore) reap(log io.Writer) (*ccRecord, error) {
	rec, err := c.load()
	if err != nil || rec == nil {
		return nil, err
	}
	before := len(rec.Holders)
	rec.Holders = slices.DeleteFunc(rec.Holders, func(h ccHolder) bool { return !h.alive() })
	if len(rec.Holders) == before {
		return rec, nil
	}
	if len(rec.Holders) == 0 {
		fmt.Fprintf(log, "longhaul: took %s back out of the host's %s (added by a run that was killed)\n", strings.Join(rec.Added, " "), keyAllowedCC)
	}
	if err := c.settle(rec); err != nil {
		return nil, fmt.Errorf("restore %s left by a killed run: %w", keyAllowedCC, err)
	}
	if len(rec.Holders) == 0 {
		return nil, nil
	}
	return rec, nil
}

// settle writes the list the holders need and the record, or narrows
// the list back and removes the record when no holder is left.
func (c ccStore) settle(rec *ccRecord) error {
	if len(rec.Holders) > 0 {
		if err := c.save(rec); err != nil {
			return err
		}
		return c.write(rec)
	}
	if err := c.write(rec); err != nil {
		return err
	}
	return os.Remove(filepath.Join(c.dir, ccFile))
}

// write sets the allowed list to the host's as it is now, less what runs
// added that no holder needs any more, plus every holder's cc: with
// nothing else changed and no holder left, that is the original.
func (c ccStore) write(rec *ccRecord) error {
	cur, err := sysctl.Read(c.sysRoot, keyAllowedCC)
	if err != nil {
		cur = rec.Original
	}
	var need []string
	for _, h := range rec.Holders {
		need = append(need, h.CC)
	}
	list := slices.DeleteFunc(strings.Fields(cur), func(cc string) bool {
		return slices.Contains(rec.Added, cc) && !slices.Contains(need, cc) && !slices.Contains(strings.Fields(rec.Original), cc)
	})
	for _, cc := range need {
		if !slices.Contains(list, cc) {
			list = append(list, cc)
		}
	}
	return c.set(strings.Join(list, " "))
}

// set writes the allowed list unless the host has it already: the lab
// runner and each of its paths hold one widening, and the host's global
// setting is written once for it, not once per path.
func (c ccStore) set(list string) error {
	if cur, err := sysctl.Read(c.sysRoot, keyAllowedCC); err == nil && strings.Join(strings.Fields(cur), " ") == list {
		return nil
	}
	return sysctl.Write(c.sysRoot, keyAllowedCC, list)
}

func (c ccStore) load() (*ccRecord, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, ccFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec ccRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Original == "" {
		return nil, fmt.Errorf("%s: damaged record of the host's %s (%v): restore the list by hand and remove the file", filepath.Join(c.dir, ccFile), keyAllowedCC, err)
	}
	for _, h := range rec.Holders {
		if !slices.Contains(rec.Added, h.CC) && !slices.Contains(strings.Fields(rec.Original), h.CC) {
			rec.Added = append(rec.Added, h.CC)
		}
	}
	return &rec, nil
}

func (c ccStore) save(rec *ccRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(c.dir, ccFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// lock serializes every longhaul process's changes to the record.
func (c ccStore) lock() (func(), error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(c.dir, ccFile+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

func selfHolder(cc string) (ccHolder, error) {
	ps, err := readProcStat(os.Getpid())
	if err != nil {
		return ccHolder{}, err
	}
	return ccHolder{CC: cc, PID: os.Getpid(), StartTime: ps.StartTime, BootID: bootID()}, nil
}

// HostAllowedCC is the host's tcp_allowed_congestion_control without
// what live longhaul runs added to it (the record's Added): what the
// host has of its own, the same whichever runs hold a widening now. A
// check that the host is left as found compares this, not the live
// list another run may be widening.
func HostAllowedCC() (string, error) { return hostCC.hostAllowed() }

func (c ccStore) hostAllowed() (string, error) {
	unlock, err := c.lock()
	if err != nil {
		return "", err
	}
	defer unlock()
	cur, err := sysctl.Read(c.sysRoot, keyAllowedCC)
	if err != nil {
		return "", err
	}
	rec, err := c.load()
	if err != nil || rec == nil {
		return cur, err
	}
	own := slices.DeleteFunc(strings.Fields(cur), func(cc string) bool {
		return slices.Contains(rec.Added, cc) && !slices.Contains(strings.Fields(rec.Original), cc)
	})
	return strings.Join(own, " "), nil
}
