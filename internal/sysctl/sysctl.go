// Package sysctl reads and writes kernel parameters as files under a root
// directory (default /proc/sys), and parses their values. Tests point the
// root at a fixture tree; the namespace a read sees is the opener's network
// namespace (the kernel resolves /proc/sys/net per task).
package sysctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/pathmodel"
)

// DefaultRoot is where the running kernel exposes its parameters.
const DefaultRoot = "/proc/sys"

// ErrUnknownKey means the running kernel has no such parameter.
var ErrUnknownKey = errors.New("no such key on this kernel")

// CheckKey accepts dotted (net.ipv4.tcp_rmem) or slashed
// (net/ipv4/tcp_rmem) names and returns the dotted form. Keys are made of
// the characters the kernel uses, so a key can never leave the root.
func CheckKey(key string) (string, error) {
	k := strings.ReplaceAll(strings.TrimSpace(key), "/", ".")
	if k == "" {
		return "", fmt.Errorf("empty key")
	}
	if len(k) > MaxKeyLen {
		return "", fmt.Errorf("key %s is longer than %d bytes: no kernel has such a key", Quote(key), MaxKeyLen)
	}
	for _, part := range strings.Split(k, ".") {
		if part == "" || part == ".." {
			return "", fmt.Errorf("key %s: empty or '..' component", Quote(key))
		}
		for _, r := range part {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == ':' || r == '@') {
				return "", fmt.Errorf("key %s: character %q is not allowed", Quote(key), r)
			}
		}
	}
	return k, nil
}

// Path returns the file behind a key under root.
func Path(root, key string) (string, error) {
	k, err := CheckKey(key)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(strings.ReplaceAll(k, ".", "/"))), nil
}

// Read returns a key's value with whitespace collapsed to single spaces
// (tcp_rmem is tab-separated in /proc). A missing key wraps ErrUnknownKey.
func Read(root, key string) (string, error) {
	p, err := Path(root, key)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("sysctl: %s: %w", key, ErrUnknownKey)
	}
	if err != nil {
		return "", fmt.Errorf("sysctl: read %s: %w", key, err)
	}
	return Normalize(string(b)), nil
}

// Write sets a key. A missing key wraps ErrUnknownKey; the kernel's own
// refusal (EINVAL for a value out of range) is returned as is, wrapped.
func Write(root, key, value string) error {
	p, err := Path(root, key)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sysctl: %s: %w", key, ErrUnknownKey)
	}
	if err != nil {
		return fmt.Errorf("sysctl: write %s: %w", key, err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sysctl: write %s=%q: %w", key, value, err)
	}
	return nil
}

// Setting is one kernel parameter assignment, key in dotted form
// (net.ipv4.tcp_rmem).
type Setting struct{ Key, Value string }

// String returns "key=value".
func (s Setting) String() string { return s.Key + "=" + s.Value }

// Normalize collapses runs of white space to one space and trims.
func Normalize(v string) string { return strings.Join(strings.Fields(v), " ") }

// ReadMany reads keys, returning the values found and the keys the kernel
// does not have. Any other error (permission, I/O) stops the read.
func ReadMany(root string, keys []string) (values map[string]string, missing []string, err error) {
	values = make(map[string]string, len(keys))
	for _, k := range keys {
		v, err := Read(root, k)
		switch {
		case errors.Is(err, ErrUnknownKey):
			missing = append(missing, k)
		case err != nil:
			return values, missing, err
		default:
			values[k] = v
		}
	}
	return values, missing, nil
}

// ParseInts parses exactly n white-space separated integers.
func ParseInts(s string, n int) ([]int64, error) {
	f := strings.Fields(s)
	if len(f) != n {
		return nil, fmt.Errorf("%s: want %d numbers, got %d", Quote(s), n, len(f))
	}
	out := make([]int64, n)
	for i, x := range f {
		if err := CheckNumber(x); err != nil {
			return nil, fmt.Errorf("%s: %w", Quote(s), err)
		}
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s is out of range", Quote(s), Quote(x))
		}
		out[i] = v
	}
	return out, nil
}

// CheckNumber accepts an integer only in the form the kernel writes it:
// digits, a '-' before a negative one, no '+' and no leading zeros. It is
// the one rule for numbers in values, for apply's validation (ParseInts)
// and for every emitted format (CheckValue): "+5" and "0005" parse as 5
// in Go, but the kernel reads "010" as octal 8 and "0x10" as 16
// (proc_dointvec parses with base 0), so a plan holding them would set
// other than it says.
func CheckNumber(x string) error {
	d := strings.TrimPrefix(x, "-")
	ok := d != "" && (d[0] != '0' || d == x && len(d) == 1)
	for _, r := range d {
		ok = ok && r >= '0' && r <= '9'
	}
	if !ok {
		return fmt.Errorf("%s is not an integer as the kernel writes it (digits, no sign or leading zeros)", Quote(x))
	}
	return nil
}

// MaxValueLen bounds a value: the kernel takes at most a page per write.
const MaxValueLen = 4096

// CheckValue checks a value a plan carries, for any key: printable ASCII
// (words separated by spaces, or tabs as the kernel prints them), at most
// MaxValueLen bytes, and every number in it (a word that starts with a
// digit or a sign) in the kernel's form (CheckNumber). Words such as
// congestion control names pass.
func CheckValue(v string) error {
	if len(v) > MaxValueLen {
		return fmt.Errorf("value %s is longer than %d bytes", Quote(v), MaxValueLen)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r != '\t' && (r < ' ' || r > '~') }) {
		return fmt.Errorf("value %s holds a character other than printable ASCII, spaces and tabs", Quote(v))
	}
	for _, w := range strings.Fields(v) {
		if c := w[0]; c >= '0' && c <= '9' || c == '+' || c == '-' {
			if err := CheckNumber(w); err != nil {
				return fmt.Errorf("value %s: %w", Quote(v), err)
			}
		}
	}
	return nil
}

// MaxKeyLen bounds a key: the longest in /proc/sys are under 100 bytes.
const MaxKeyLen = 256

// Quote is s for an error message: Go-quoted (control characters
// escaped) and cut to 60 bytes, so that a hostile value neither breaks
// the line nor floods the terminal.
func Quote(s string) string {
	const max = 60
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:max]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// ParseInt parses a single integer value.
func ParseInt(s string) (int64, error) {
	v, err := ParseInts(s, 1)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// ParseTriple parses a tcp_rmem/tcp_wmem value "min default max" and
// checks it as the kernel would use it.
func ParseTriple(s string) (pathmodel.Triple, error) {
	v, err := ParseInts(s, 3)
	if err != nil {
		return pathmodel.Triple{}, err
	}
	t := pathmodel.Triple{Min: v[0], Default: v[1], Max: v[2]}
	return t, t.Validate()
}
