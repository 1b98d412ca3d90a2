//go:build linux

package netns

import (
	"errors"
	"fmt"
	"os"

	vnetlink "github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Create makes a new named network namespace, like `ip netns add NAME`,
// and brings its loopback interface up. The calling goroutine's thread is
// never moved: the namespace is created on a separate locked thread that
// is switched back (or discarded, if that fails). Creating a name that
// already exists fails with an error wrapping os.ErrExist.
func Create(name string) error {
	if err := validateName(name); err != nil {
		return opError("create", name, err)
	}
	if Exists(name) {
		return opError("create", name, os.ErrExist)
	}
	res := onLockedThread(
		func() error {
			return classify("unshare", unix.Unshare(unix.CLONE_NEWNET))
		},
		func() error { return createInCurrentNS(name) },
	)
	switch {
	case res.enterErr != nil:
		return opError("create", name, res.enterErr)
	case res.restoreErr != nil:
		// The helper thread could not return to its original namespace
		// and was discarded. Undo the namespace so that an error always
		// means "not created".
		if res.bodyErr == nil {
			_ = Delete(name)
		}
		return opError("create", name, res.restoreErr)
	case res.bodyErr != nil:
		return opError("create", name, res.bodyErr)
	}
	return nil
}

// createInCurrentNS publishes the calling thread's (new) network namespace
// as /run/netns/NAME and brings lo up in it. It runs on a locked thread
// that has just unshared CLONE_NEWNET.
func createInCurrentNS(name string) error {
	if err := prepareRunDir(); err != nil {
		return err
	}
	path := Path(name)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EEXIST) {
		return os.ErrExist
	}
	if err != nil {
		return classify("create "+path, err)
	}
	unix.Close(fd)

	self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
	if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		return classify("bind mount "+self, err)
	}
	if err := loopbackUp(path); err != nil {
		_ = Delete(name)
		return err
	}
	return nil
}

// prepareRunDir makes sure /run/netns exists and is a shared mount point,
// exactly as iproute2's netns_add does (under the same flock), so that
// namespace mounts propagate between mount namespaces.
func prepareRunDir() error {
	if err := unix.Mkdir(RunDir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return classify("mkdir "+RunDir, err)
	}
	lock, err := unix.Open(RunDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return classify("open "+RunDir, err)
	}
	defer unix.Close(lock)
	if err := flock(lock, unix.LOCK_EX); err != nil {
		return classify("lock "+RunDir, err)
	}
	defer flock(lock, unix.LOCK_UN) //nolint:errcheck // closing the fd releases it anyway

	madeMount := false
	for {
		err := unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		// EINVAL means RunDir is not a mount point yet: bind it onto
		// itself once, then retry making it shared.
		if !errors.Is(err, unix.EINVAL) || madeMount {
			return classify("make "+RunDir+" shared", err)
		}
		if err := unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return classify("bind mount "+RunDir, err)
		}
		madeMount = true
	}
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// loopbackUp sets "lo" up in the namespace bind-mounted at path, through a
// netlink socket created in that namespace.
func loopbackUp(path string) error {
	ns, err := vnetns.GetFromPath(path)
	if err != nil {
		return classify("open "+path, err)
	}
	defer ns.Close()
	h, err := vnetlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return classify("netlink", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return classify("find lo", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return classify("set lo up", err)
	}
	return nil
}

// Delete removes a named namespace like `ip netns delete NAME`: it
// lazily unmounts /run/netns/NAME and removes the file. The namespace
// itself disappears once nothing else (a process, an open fd, another
// mount) refers to it. A missing namespace is not an error.
func Delete(name string) error {
	if err := validateName(name); err != nil {
		return opError("delete", name, err)
	}
	path := Path(name)
	err := unix.Unmount(path, unix.MNT_DETACH)
	// EINVAL: not a mount point (e.g. a leftover from an interrupted
	// create); ENOENT: already gone. Both are fine, removal decides.
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return opError("delete", name, classify("unmount "+path, err))
	}
	if err := unix.Unlink(path); err != nil && !errors.Is(err, unix.ENOENT) {
		return opError("delete", name, classify("remove "+path, err))
	}
	return nil
}

// Do runs fn on an OS thread that has been switched into the named
// namespace, then switches the thread back. fn runs on a new goroutine
// locked to its thread; the caller's goroutine and thread are never moved.
// If the switch back fails, that thread is discarded rather than returned
// to the runtime.
//
// Inside fn, files opened under /proc/sys/net and sockets (including
// netlink sockets) belong to the namespace, and keep belonging to it after
// Do returns. Goroutines started by fn run elsewhere and are not in the
// namespace.
//
// Do returns fn's error unchanged, or a "netns: do NAME: ..." error if the
// namespace cannot be entered or left. If fn panics, Do panics with the
// same value in the caller's goroutine; if fn calls runtime.Goexit (for
// example via t.FailNow), the caller's goroutine exits too.
func Do(name string, fn func() error) error {
	if err := validateName(name); err != nil {
		return opError("do", name, err)
	}
	target, err := unix.Open(Path(name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return opError("do", name, fmt.Errorf("no such namespace: %w", os.ErrNotExist))
		}
		return opError("do", name, classify("open "+Path(name), err))
	}
	defer unix.Close(target)

	res := onLockedThread(
		func() error {
			err := unix.Setns(target, unix.CLONE_NEWNET)
			if errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("setns: %s is not a network namespace: %w", Path(name), err)
			}
			return classify("setns", err)
		},
		fn,
	)
	switch {
	case res.enterErr != nil:
		return opError("do", name, res.enterErr)
	case res.restoreErr != nil && res.bodyErr != nil:
		return fmt.Errorf("netns: do %s: %w (fn returned: %w)", name, res.restoreErr, res.bodyErr)
	case res.restoreErr != nil:
		return opError("do", name, res.restoreErr)
	}
	return res.bodyErr
}
