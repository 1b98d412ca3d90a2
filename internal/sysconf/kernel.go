package sysconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Kernel is a parsed kernel release, as printed by "uname -r".
type Kernel struct {
	Release string `json:"release"` // the whole release string, trimmed
	Major   int    `json:"major"`
	Minor   int    `json:"minor"`
	Patch   int    `json:"patch"` // 0 when the release has no patch level ("6.6")
}

// ParseKernelRelease parses a release such as "6.1.0-27-amd64",
// "5.15.0-91-generic" or "6.6": MAJOR.MINOR[.PATCH] followed by any suffix
// that does not start with a digit.
func ParseKernelRelease(s string) (Kernel, error) {
	k, err := parseKernelRelease(strings.TrimSpace(s))
	if err != nil {
		return Kernel{}, fmt.Errorf("sysconf: parse kernel release %q: %w", s, err)
	}
	return k, nil
}

// ReadKernel reads the running kernel's release from
// procRoot/sys/kernel/osrelease.
func ReadKernel(procRoot string) (Kernel, error) {
	name := filepath.Join(procRoot, "sys", "kernel", "osrelease")
	b, err := os.ReadFile(name)
	if err != nil {
		return Kernel{}, fmt.Errorf("sysconf: read %s: %w", name, bare(err))
	}
	return ParseKernelRelease(string(b))
}

// AtLeast reports whether k is major.minor or newer.
func (k Kernel) AtLeast(major, minor int) bool {
	if k.Major != major {
		return k.Major > major
	}
	return k.Minor >= minor
}

func parseKernelRelease(s string) (Kernel, error) {
	if s == "" {
		return Kernel{}, errors.New("empty release")
	}
	k := Kernel{Release: s}
	rest := s
	var err error
	if k.Major, rest, err = leadingNumber(rest); err != nil {
		return Kernel{}, fmt.Errorf("major version: %w", err)
	}
	if !strings.HasPrefix(rest, ".") {
		return Kernel{}, errors.New("no minor version, want MAJOR.MINOR[.PATCH]")
	}
	if k.Minor, rest, err = leadingNumber(rest[1:]); err != nil {
		return Kernel{}, fmt.Errorf("minor version: %w", err)
	}
	if len(rest) > 1 && rest[0] == '.' && isDigit(rest[1]) {
		if k.Patch, _, err = leadingNumber(rest[1:]); err != nil {
			return Kernel{}, fmt.Errorf("patch level: %w", err)
		}
	}
	return k, nil
}

// leadingNumber parses the decimal digits at the start of s.
func leadingNumber(s string) (int, string, error) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 {
		return 0, s, errors.New("not a number")
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		return 0, s, strconv.ErrRange // only digits, so the only failure is range
	}
	return n, s[i:], nil
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }
