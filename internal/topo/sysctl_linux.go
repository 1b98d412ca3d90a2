//go:build linux

package topo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/sysctl"
)

// unknownKeyError reports a key missing in the namespace. It matches
// sysctl.ErrUnknownKey with errors.Is.
type unknownKeyError struct {
	key      string
	hostOnly bool // the host has it: a key of the initial namespace only
}

func (e *unknownKeyError) Error() string {
	if e.hostOnly {
		return fmt.Sprintf("sysctl %s: the key exists only in the host's namespace on this kernel (it is global, not per network namespace); set it on the host", e.key)
	}
	return fmt.Sprintf("sysctl %s: the key does not exist on this kernel", e.key)
}

func (e *unknownKeyError) Is(target error) bool { return target == sysctl.ErrUnknownKey }

// sysctlExists reports whether the calling thread's namespace has key.
func sysctlExists(key string) bool {
	p, err := sysctl.Path(sysctl.DefaultRoot, key)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// applySysctls writes each sysctl in order and reads it back. It must run
// on a thread inside the target namespace: /proc/sys/net resolves to the
// opener's namespace. hostHas tells, for error messages, which keys the
// host has. It returns the effective values (white space collapsed).
func applySysctls(list []Sysctl, hostHas map[string]bool) (map[string]string, error) {
	eff := make(map[string]string, len(list))
	for _, sc := range list {
		if err := writeSysctl(sc, hostHas[sc.Key]); err != nil {
			return nil, refused{err}
		}
		got, err := sysctl.Read(sysctl.DefaultRoot, sc.Key)
		if err != nil {
			return nil, fmt.Errorf("sysctl %s: read back: %w", sc.Key, err)
		}
		if want := sysctl.Normalize(sc.Value); got != want {
			return nil, refused{fmt.Errorf("sysctl %s: wrote %q but the kernel stored %q", sc.Key, want, got)}
		}
		eff[sc.Key] = got
	}
	return eff, nil
}

func writeSysctl(sc Sysctl, hostHas bool) error {
	p, err := sysctl.Path(sysctl.DefaultRoot, sc.Key)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &unknownKeyError{key: sc.Key, hostOnly: hostHas}
	case errors.Is(err, fs.ErrPermission):
		// net.core.rmem_max and friends are 0444 in a child namespace
		// (Linux 6.10+); being root does not help.
		return fmt.Errorf("sysctl %s: read-only inside a network namespace on this kernel: %w", sc.Key, unwrapPath(err))
	case err != nil:
		return fmt.Errorf("sysctl %s: %w", sc.Key, err)
	}
	_, err = f.WriteString(sc.Value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		return nil
	}
	err = unwrapPath(err)
	if sc.Key == keyCC {
		return ccError(sc.Value, err)
	}
	if errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("sysctl %s=%q: the kernel rejected the value: %w", sc.Key, sc.Value, err)
	}
	return fmt.Errorf("sysctl %s=%q: write: %w", sc.Key, sc.Value, err)
}

// ccError explains why the kernel refused a default congestion control.
// tcp_set_default_congestion_control (net/ipv4/tcp_cong.c) returns ENOENT
// for an algorithm it cannot find or load, and EPERM in a non-initial
// namespace for one without TCP_CONG_NON_RESTRICTED, i.e. not in the
// host's tcp_allowed_congestion_control, whatever the caller's
// privileges. (A socket of a CAP_NET_ADMIN process can still pick it with
// setsockopt TCP_CONGESTION.) Both lists are global and readable here.
func ccError(cc string, err error) error {
	read := func(key string) string {
		v, rerr := sysctl.Read(sysctl.DefaultRoot, key)
		if rerr != nil {
			return "unreadable"
		}
		return v
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("congestion control %q is not available on this kernel (net.ipv4.tcp_available_congestion_control: %s): %w",
			cc, read("net.ipv4.tcp_available_congestion_control"), err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("congestion control %q is not in the host's net.ipv4.tcp_allowed_congestion_control (%s), and a network namespace may only default to allowed algorithms, even as root: add it on the host: %w",
			cc, read("net.ipv4.tcp_allowed_congestion_control"), err)
	}
	return fmt.Errorf("congestion control %q: %w", cc, err)
}

// unwrapPath drops the *fs.PathError layer: the file name is implied by
// the key already in the message.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
