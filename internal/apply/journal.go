package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/atomicfile"
	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/filekind"
	"github.com/longhaul/longhaul/internal/rtnl"
)

// JournalSchema names the journal format.
const JournalSchema = "longhaul.journal/v1"

// Transaction states, in the order a transaction goes through them.
const (
	StateApplying    = "applying"     // journal written; changes may be half made
	StateApplied     = "applied"      // every change made
	StateRollingBack = "rolling-back" // restoring; values may be half restored
	StateRolledBack  = "rolled-back"  // everything restored
)

// trailer starts the journal's last line, which carries the SHA-256 of
// everything before it: a truncated or edited journal fails the check.
const trailer = "# longhaul-journal-sha256 "

// Journal is one transaction: the exact prior state of everything an
// apply changes, written (and synced) before the first change.
type Journal struct {
	Schema  string    `json:"schema"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	State   string    `json:"state"`
	// Root is the file system root (absolute) and Netns the namespace the
	// transaction changed.
	Root       string `json:"root"`
	Netns      string `json:"netns,omitempty"`
	Kernel     string `json:"kernel"`
	PlanDigest string `json:"plan_digest"`
	Summary    string `json:"summary"`
	Persist    bool   `json:"persist"`

	Sysctls []SysctlStep `json:"sysctls"`
	Routes  []RouteStep  `json:"routes"`
	Files   []FileStep   `json:"files"`
}

// SysctlStep is one kernel parameter: Before is the file's exact prior
// content, After the value written.
type SysctlStep struct {
	Key    string `json:"key"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// RouteStep is one route: Before is its prior state (Existed false: the
// apply adds it), After the route with the planned metrics.
type RouteStep struct {
	Existed bool       `json:"existed"`
	Before  rtnl.Route `json:"before"`
	After   rtnl.Route `json:"after"`
}

// FileStep is one file below Root: its prior bytes and mode (Existed false:
// the apply creates it), the bytes written, and the directories the apply
// created for it (outermost first), removed again on rollback.
type FileStep struct {
	Path    string   `json:"path"`
	Existed bool     `json:"existed"`
	Mode    uint32   `json:"mode"`
	Before  []byte   `json:"before"`
	After   []byte   `json:"after"`
	NewDirs []string `json:"new_dirs,omitempty"`
}

// touches lists what the transaction changes, as comparable names.
func (j *Journal) touches() []string {
	var out []string
	for _, s := range j.Sysctls {
		out = append(out, "sysctl "+s.Key)
	}
	for _, r := range j.Routes {
		out = append(out, "route "+r.After.Family+" "+r.After.Dst+" table "+strconv.Itoa(r.After.Table))
	}
	for _, f := range j.Files {
		out = append(out, "file "+f.Path)
	}
	return out
}

// encodeJournal returns the journal's bytes with the checksum trailer.
func encodeJournal(j *Journal) ([]byte, error) {
	body, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return nil, err
	}
	body = append(body, '\n')
	return append(body, []byte(trailer+sumHex(body)+"\n")...), nil
}

func sumHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ErrDamaged marks a journal that fails its checksum or does not parse.
var ErrDamaged = errors.New("journal is damaged")

// decodeJournal checks the trailer and parses the journal.
func decodeJournal(data []byte) (*Journal, error) {
	i := bytes.LastIndex(data, []byte(trailer))
	if i < 0 {
		return nil, fmt.Errorf("%w: no checksum line (truncated?)", ErrDamaged)
	}
	body, tail := data[:i], data[i+len(trailer):]
	want := strings.TrimSuffix(string(tail), "\n")
	if len(tail) == 0 || tail[len(tail)-1] != '\n' || want != sumHex(body) {
		return nil, fmt.Errorf("%w: checksum mismatch (edited or truncated)", ErrDamaged)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var j Journal
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	if j.Schema != JournalSchema {
		return nil, fmt.Errorf("%w: schema %q, want %s", ErrDamaged, j.Schema, JournalSchema)
	}
	switch j.State {
	case StateApplying, StateApplied, StateRollingBack, StateRolledBack:
	default:
		return nil, fmt.Errorf("%w: unknown state %q", ErrDamaged, j.State)
	}
	return &j, nil
}

// store is the state directory holding one journal file per transaction.
type store struct{ dir string }

func (s store) path(id string) string { return filepath.Join(s.dir, id+".json") }

// normID accepts "3" or "0003".
func normID(id string) (string, error) {
	n, err := strconv.Atoi(id)
	if err != nil || n <= 0 || n > 999999 {
		return "", fmt.Errorf("transaction id %q: want a number as longhaul rollback --list shows it", id)
	}
	return fmt.Sprintf("%04d", n), nil
}

// ids lists the transaction ids in the directory, oldest first.
func (s store) ids() ([]string, error) {
	if err := trusted(s.dir, true); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal directory: %w", err)
	}
	var ids []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		if id, err := normID(name); err == nil && id == name {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// load reads and checks one journal.
func (s store) load(id string) (*Journal, error) {
	if err := trusted(s.dir, true); err != nil {
		return nil, err
	}
	if err := trusted(s.path(id), false); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no transaction %s in %s (see longhaul rollback --list)", id, s.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	j, err := decodeJournal(data)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w: refusing to use it; nothing was changed", s.path(id), err)
	}
	if j.ID != id {
		return nil, fmt.Errorf("journal %s: %w: it names transaction %q: refusing to use it; nothing was changed", s.path(id), ErrDamaged, j.ID)
	}
	return j, nil
}

// save writes the journal atomically and durably: a synced temporary
// file renamed over the old one, then the directory synced.
func (s store) save(j *Journal) error {
	data, err := encodeJournal(j)
	if err != nil {
		return fmt.Errorf("encode journal: %w", err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create journal directory: %w", err)
	}
	return atomicfile.WriteFile(s.path(j.ID), data, 0o600)
}

// nextID is one past the highest id in the directory.
func (s store) nextID() (string, error) {
	ids, err := s.ids()
	if err != nil {
		return "", err
	}
	n := 1
	if len(ids) > 0 {
		last, _ := strconv.Atoi(ids[len(ids)-1])
		n = last + 1
	}
	return fmt.Sprintf("%04d", n), nil
}

// distrust is trusted's refusal: bad input, in no command's name (the
// entry points say which command refused, see trust).
func distrust(format string, a ...any) error { return badinput.Errorf(format, a...) }

// trust refuses, in command cmd's name, a journal directory another user
// could have written. Every entry point asks before anything in the
// directory is created, opened or removed (the lock file, the leftovers
// of a killed writer, the journals): with a world-writable --state-dir,
// a planted ".lock -> /some/file" made root create that file before
// refusing the directory.
func (s store) trust(cmd string) error {
	if err := trusted(s.dir, true); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

// errLocked is tryLock's answer when another process holds the lock.
var errLocked = errors.New("locked")

// busy reports whether another process holds the journal lock now.
func (s store) busy() bool {
	f, err := s.openLock(false)
	if err != nil {
		return false
	}
	defer f.Close()
	return errors.Is(tryLock(f), errLocked)
}

// openLock opens the directory's lock file (creating it when create is
// set) without following a symbolic link, and only if it is a regular
// file: whatever else stands there is refused, never opened through.
func (s store) openLock(create bool) (*os.File, error) {
	name := filepath.Join(s.dir, ".lock")
	notFile := func(m fs.FileMode) error {
		return distrust("%s is not a regular file (%s): refusing to open it as the journal's lock; remove it", name, filekind.Of(m))
	}
	if fi, err := os.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, notFile(fi.Mode())
	}
	flags := os.O_RDWR | noFollow
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(name, flags, 0o600)
	if err != nil {
		if isLoop(err) { // a symbolic link planted after the Lstat
			return nil, notFile(fs.ModeSymlink)
		}
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, notFile(fi.Mode())
	}
	return f, nil
}

// lock takes the directory's lock so that two applies or rollbacks never
// interleave; unlock releases it (a killed process releases it too). The
// directory is trusted before and after it is created (a new one's
// parents are checked then), and only then is anything opened in it.
func (s store) lock() (unlock func(), err error) {
	if err := trusted(s.dir, true); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create journal directory: %w", err)
	}
	if err := trusted(s.dir, true); err != nil {
		return nil, err
	}
	f, err := s.openLock(true)
	if badinput.Is(err) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("lock journal directory: %w", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, errors.New("another longhaul apply or rollback is running (journal directory locked)")
		}
		return nil, fmt.Errorf("lock journal directory: %w", err)
	}
	s.removeTemps()
	return func() { f.Close() }, nil
}

// removeTemps removes the temporary journal files a killed writer left
// (".0001.json.tmp123"): with the lock held nobody else writes one.
func (s store) removeTemps() {
	matches, _ := filepath.Glob(filepath.Join(s.dir, ".*.json.tmp*"))
	for _, m := range matches {
		if st, err := os.Lstat(m); err == nil && st.Mode().IsRegular() {
			os.Remove(m)
		}
	}
}
