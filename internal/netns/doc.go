// Package netns manages named Linux network namespaces the way iproute2
// does, so that namespaces created here show up in `ip netns list` and
// namespaces created with `ip netns add` can be used here.
//
// # Named namespaces
//
// A network namespace lives as long as something refers to it: a task
// inside it, an open file descriptor for it, or a bind mount of its nsfs
// inode. iproute2 keeps a namespace alive without any process by bind
// mounting /proc/<tid>/ns/net onto an empty file /run/netns/NAME, and it
// makes /run/netns a shared mount point so that the mount (and later its
// unmount) propagates to every mount namespace. [Create] and [Delete]
// follow exactly that protocol, including the flock on /run/netns that
// iproute2 takes while preparing the directory.
//
// # Why the thread locking
//
// Namespace membership in Linux is a property of a thread, not of a
// process: unshare(CLONE_NEWNET) and setns(fd, CLONE_NEWNET) only move the
// calling thread. The Go runtime multiplexes goroutines over a pool of OS
// threads and may move a goroutine to another thread at any preemption
// point, so a goroutine that switches namespace without pinning itself can
// continue in the wrong namespace, and, worse, leave a pool thread behind
// in a foreign namespace where unrelated goroutines will later run.
//
// Every namespace switch in this package therefore happens on a fresh
// goroutine that calls [runtime.LockOSThread] and switches back to the
// thread's original namespace before unlocking. If switching back fails,
// the goroutine exits while still locked; the runtime then terminates that
// OS thread instead of returning it to the pool (or, if it happens to be
// the process's main thread, which cannot exit, parks it forever), so no
// other goroutine can ever run in the wrong namespace. Because the work happens on a separate
// goroutine, the caller's own goroutine and thread are never touched, even
// if the caller has itself locked its thread.
//
// While a thread is locked, the runtime creates any new OS threads from a
// clean template thread rather than cloning the locked one, so threads
// spawned during [Do] do not inherit the temporary namespace either. The
// flip side is that goroutines started by the function passed to [Do] run
// on other threads and are NOT in the namespace.
//
// # Why /proc/sys/net follows the opener
//
// The sysctl tree under /proc/sys/net is per network namespace, and the
// kernel selects which namespace's values a file refers to when the file
// is opened, using the network namespace of the opening thread (not the
// namespace of the process that mounted /proc). A file opened inside the
// function passed to [Do] keeps referring to that namespace after Do
// returns, and reads or writes of it from any thread affect that
// namespace. The same holds for sockets: a socket, including a netlink
// socket, belongs to the namespace its creating thread was in, so netlink
// handles created inside Do (or with netlink.NewHandleAt) configure that
// namespace. /sys/class/net, in contrast, reflects the namespace of
// whoever mounted sysfs and is not switched by Do.
//
// # Privileges
//
// Creating, entering and deleting namespaces needs CAP_SYS_ADMIN. When it
// is missing, errors wrap [ErrNotPermitted]; the helper package
// internal/netns/nstest uses that to skip tests instead of failing them.
//
// # Other systems
//
// Off Linux, [Create], [Delete] and [Do] return errors wrapping
// [ErrNotSupported]; [Path], [Exists] and [List] work anywhere, so that
// packages that use a namespace only on request build everywhere.
package netns
