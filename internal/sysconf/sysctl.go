package sysconf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"unicode"
)

// sysctlDirs are the sysctl.d directories in order of precedence: a file in
// an earlier directory overrides a same-named file in a later one.
var sysctlDirs = []string{
	"/etc/sysctl.d",
	"/run/sysctl.d",
	"/usr/local/lib/sysctl.d",
	"/usr/lib/sysctl.d",
	"/lib/sysctl.d",
}

// sysctlConf is applied after every sysctl.d file, as procps does.
const sysctlConf = "/etc/sysctl.conf"

// globChars are the characters that make a key a glob(7) pattern; systemd
// uses the same set.
const globChars = "*?["

// readFile is os.ReadFile; tests replace it to simulate unreadable files
// (running as root defeats permission bits).
var readFile = os.ReadFile

// Assignment is one "key = value" line of a sysctl configuration file.
type Assignment struct {
	Key           string `json:"Key"`           // normalised to dots: net.ipv4.tcp_rmem
	Value         string `json:"Value"`         // trimmed, inner white space collapsed to single spaces
	File          string `json:"File"`          // file as seen under the root, or the name given to ParseSysctlFile
	Line          int    `json:"Line"`          // 1-based line number
	IgnoreMissing bool   `json:"IgnoreMissing"` // the key had a leading '-': errors setting it are ignored
	Glob          bool   `json:"Glob"`          // the key contains glob characters (*, ?, [)
}

// Config is the sysctl configuration a host applies at boot. Its JSON
// names (and Assignment's, and Process's) are those snapshots and the
// two-host protocol have carried since v1: keep them.
type Config struct {
	Files       []string     `json:"Files"`       // files applied, in application order, without the root prefix
	Assignments []Assignment `json:"Assignments"` // every assignment, in application order
	Problems    []string     `json:"Problems"`    // "file:line: text" for lines that are not assignments
}

// candidate is a configuration file selected for application.
type candidate struct {
	name     string // path as seen under the root
	resolved string // path after following symlinks, within the root
}

// ReadSysctlConfig reads the sysctl configuration below root ("/" on a real
// host) in the order systemd-sysctl and "sysctl --system" apply it. Missing
// directories and files are not errors; an unreadable one is.
func ReadSysctlConfig(root string) (Config, error) {
	files, err := selectSysctlFiles(root)
	if err != nil {
		return Config{}, err
	}
	var c Config
	for _, f := range files {
		data, err := readFile(hostPath(root, f.resolved))
		if err != nil {
			return Config{}, fmt.Errorf("sysconf: read %s: %w", f.name, bare(err))
		}
		as, probs := ParseSysctlFile(f.name, bytes.NewReader(data))
		c.Files = append(c.Files, f.name)
		c.Assignments = append(c.Assignments, as...)
		c.Problems = append(c.Problems, probs...)
	}
	return c, nil
}

// selectSysctlFiles applies the sysctl.d(5) precedence, masking and ordering
// rules and returns the files to apply, in order.
func selectSysctlFiles(root string) ([]candidate, error) {
	seen := make(map[string]bool) // basenames already decided (applied or masked)
	var files []candidate
	for _, dir := range sysctlDirs {
		d, err := resolveIn(root, dir)
		if err != nil {
			if unresolvable(err) {
				continue
			}
			return nil, fmt.Errorf("sysconf: read %s: %w", dir, bare(err))
		}
		if d.info == nil || !d.info.IsDir() {
			continue
		}
		entries, err := os.ReadDir(hostPath(root, d.path))
		if err != nil {
			if unresolvable(err) {
				continue
			}
			return nil, fmt.Errorf("sysconf: read %s: %w", dir, bare(err))
		}
		for _, e := range entries {
			base := e.Name()
			if seen[base] || strings.HasPrefix(base, ".") || !strings.HasSuffix(base, ".conf") {
				continue
			}
			name := path.Join(dir, base)
			n, err := resolveIn(root, name)
			if err != nil {
				if unresolvable(err) {
					continue // like systemd: cannot stat, ignored, does not mask
				}
				return nil, fmt.Errorf("sysconf: read %s: %w", name, bare(err))
			}
			switch {
			case n.isNull(), n.isEmptyFile():
				seen[base] = true // masked
			case n.info.Mode().IsRegular():
				seen[base] = true
				files = append(files, candidate{name: name, resolved: n.path})
			}
			// Directories and other node types are ignored and do not mask.
		}
	}
	sort.Slice(files, func(i, j int) bool {
		return path.Base(files[i].name) < path.Base(files[j].name)
	})

	n, err := resolveIn(root, sysctlConf)
	switch {
	case err != nil && unresolvable(err):
	case err != nil:
		return nil, fmt.Errorf("sysconf: read %s: %w", sysctlConf, bare(err))
	case n.isNull(), n.isEmptyFile(), !n.info.Mode().IsRegular():
	default:
		// /etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf is the same source.
		kept := files[:0]
		for _, f := range files {
			if f.resolved != n.path {
				kept = append(kept, f)
			}
		}
		files = append(kept, candidate{name: sysctlConf, resolved: n.path})
	}
	return files, nil
}

// ParseSysctlFile parses one sysctl configuration file. name is recorded in
// each Assignment and problem. Lines that are not assignments are returned as
// problems ("name:line: text") and parsing continues.
func ParseSysctlFile(name string, r io.Reader) ([]Assignment, []string) {
	var (
		as    []Assignment
		probs []string
	)
	br := bufio.NewReader(r)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadString('\n')
		if line != "" {
			a, ok, problem := parseSysctlLine(line)
			switch {
			case problem:
				probs = append(probs, fmt.Sprintf("%s:%d: %s", name, lineNo, strings.TrimSpace(line)))
			case ok:
				a.File, a.Line = name, lineNo
				as = append(as, a)
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				probs = append(probs, fmt.Sprintf("%s:%d: read: %v", name, lineNo, err))
			}
			break
		}
	}
	return as, probs
}

// parseSysctlLine parses one line. ok reports an assignment; problem reports
// a line that is neither an assignment, a comment, a blank line nor a glob
// exclusion.
func parseSysctlLine(line string) (a Assignment, ok, problem bool) {
	s := strings.TrimSpace(line)
	if s == "" || s[0] == '#' || s[0] == ';' {
		return Assignment{}, false, false
	}
	key, value, hasValue := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if strings.HasPrefix(key, "-") {
		a.IgnoreMissing = true
		key = strings.TrimSpace(key[1:])
	}
	key = normaliseKey(key)
	if key == "" || strings.ContainsFunc(key, unicode.IsSpace) {
		return Assignment{}, false, true
	}
	if !hasValue {
		// sysctl.d(5): "-key" with no "=" excludes key from earlier globs.
		return Assignment{}, false, !a.IgnoreMissing
	}
	a.Key = key
	a.Value = collapseSpace(value)
	a.Glob = strings.ContainsAny(key, globChars)
	return a, true, false
}

// normaliseKey returns key in dotted form. Following sysctl.d(5), if the first
// separator is '/', the key is in /proc/sys path form and dots and slashes are
// interchanged; if it is '.', the key is already in dotted form. Empty path
// components (a leading '/', doubled separators) are dropped.
func normaliseKey(key string) string {
	slashForm := key
	if i := strings.IndexAny(key, "./"); i >= 0 && key[i] == '.' {
		slashForm = swapSeparators(key)
	}
	parts := strings.Split(slashForm, "/")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && p != "." {
			kept = append(kept, p)
		}
	}
	return swapSeparators(strings.Join(kept, "/"))
}

// swapSeparators turns dots into slashes and slashes into dots.
func swapSeparators(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, s)
}

// Effective returns the assignment that wins for each key: the last one.
// Glob keys are kept as written; they are not expanded.
func (c Config) Effective() map[string]Assignment {
	m := make(map[string]Assignment, len(c.Assignments))
	for _, a := range c.Assignments {
		m[a.Key] = a
	}
	return m
}

// Conflict is a key assigned different values in more than one place.
type Conflict struct {
	Key         string
	Assignments []Assignment // every assignment of Key, in application order; the last wins
}

// Conflicts returns the keys assigned more than one distinct value, sorted by
// key. Values are compared after white space normalisation, so "1  2" and
// "1 2" do not conflict.
func (c Config) Conflicts() []Conflict {
	byKey := make(map[string][]Assignment)
	for _, a := range c.Assignments {
		byKey[a.Key] = append(byKey[a.Key], a)
	}
	var out []Conflict
	for key, as := range byKey {
		first := collapseSpace(as[0].Value)
		for _, a := range as[1:] {
			if collapseSpace(a.Value) != first {
				out = append(out, Conflict{Key: key, Assignments: as})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// collapseSpace trims s and collapses each run of white space to one space.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
