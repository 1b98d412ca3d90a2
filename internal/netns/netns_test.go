//go:build linux

package netns_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
)

// nsID identifies a network namespace (nsfs device and inode).
type nsID struct{ dev, ino uint64 }

func statNS(t testing.TB, path string) nsID {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return nsID{dev: st.Dev, ino: st.Ino}
}

// threadNS is the network namespace of the calling thread. Callers that
// compare values across calls must hold runtime.LockOSThread.
func threadNS(t testing.TB) nsID {
	t.Helper()
	return statNS(t, "/proc/thread-self/ns/net")
}

// hostNetNS is the namespace the process started in, i.e. the one that
// unlocked threads are expected to be in. It is recorded before any test
// runs because /proc/self/ns/net follows the main thread, which a failed
// restore may leave parked in another namespace (see
// TestDoDiscardsThreadWhenRestoreFails).
var hostNetNS nsID

func TestMain(m *testing.M) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &st); err != nil {
		fmt.Fprintln(os.Stderr, "stat /proc/self/ns/net:", err)
		os.Exit(1)
	}
	hostNetNS = nsID{dev: st.Dev, ino: st.Ino}
	os.Exit(m.Run())
}

func hostNS(testing.TB) nsID { return hostNetNS }

// ipNetnsList returns the names printed by `ip netns list`, or skips the
// calling (sub)test if iproute2 is not installed.
func ipNetnsList(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 `ip` not installed")
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v\n%s", err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestLifecycle(t *testing.T) {
	nstest.New(t) // skips without privileges
	prefix := nstest.RandomName(t) + "-"
	names := []string{prefix + "b", prefix + "a", prefix + "c"}
	t.Cleanup(func() {
		for _, n := range names {
			if err := netns.Delete(n); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})

	for _, n := range names {
		if netns.Exists(n) {
			t.Fatalf("Exists(%q) before Create = true", n)
		}
		if err := netns.Create(n); err != nil {
			t.Fatalf("Create: %v", err)
		}
		if !netns.Exists(n) {
			t.Fatalf("Exists(%q) after Create = false", n)
		}
	}

	got, err := netns.List(prefix)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := []string{prefix + "a", prefix + "b", prefix + "c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List(%q) mismatch (-want +got):\n%s", prefix, diff)
	}

	t.Run("visible to ip netns", func(t *testing.T) {
		listed := ipNetnsList(t)
		for _, n := range names {
			if !contains(listed, n) {
				t.Errorf("ip netns list does not show %q: %q", n, listed)
			}
		}
	})

	for _, n := range names {
		if err := netns.Delete(n); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if netns.Exists(n) {
			t.Errorf("Exists(%q) after Delete = true", n)
		}
		if err := netns.Delete(n); err != nil {
			t.Errorf("second Delete(%q) = %v, want nil", n, err)
		}
	}
	got, err = netns.List(prefix)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("List(%q) after Delete = %q, want empty", prefix, got)
	}
	t.Run("gone from ip netns", func(t *testing.T) {
		listed := ipNetnsList(t)
		for _, n := range names {
			if contains(listed, n) {
				t.Errorf("ip netns list still shows %q", n)
			}
		}
	})
}

func TestCreateExisting(t *testing.T) {
	name := nstest.New(t)
	before := statNS(t, netns.Path(name))

	err := netns.Create(name)
	if !errors.Is(err, os.ErrExist) {
		t.Fatalf("Create(existing) = %v, want os.ErrExist", err)
	}
	if want := "netns: create " + name + ": file already exists"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if after := statNS(t, netns.Path(name)); after != before {
		t.Errorf("existing namespace replaced: %v -> %v", before, after)
	}
}

func TestInvalidNames(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"dot", "."},
		{"dotdot", ".."},
		{"slash", "a/b"},
		{"traversal", "../../tmp/x"},
		{"too long", strings.Repeat("x", 65)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := map[string]error{
				"Create": netns.Create(tt.in),
				"Delete": netns.Delete(tt.in),
				"Do":     netns.Do(tt.in, func() error { t.Error("fn ran"); return nil }),
			}
			for op, err := range ops {
				if !errors.Is(err, netns.ErrInvalidName) {
					t.Errorf("%s(%q) = %v, want ErrInvalidName", op, tt.in, err)
				}
			}
			if netns.Exists(tt.in) {
				t.Errorf("Exists(%q) = true", tt.in)
			}
		})
	}
	err := netns.Create("a/b")
	if want := `netns: create "a/b": invalid namespace name: must not contain '/'`; err == nil || err.Error() != want {
		t.Errorf("Create(\"a/b\") = %v, want %q", err, want)
	}
}

func TestDoEntersNamespace(t *testing.T) {
	a, b := nstest.New(t), nstest.New(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	outside := threadNS(t)

	seen := map[string]nsID{}
	for _, name := range []string{a, b} {
		err := netns.Do(name, func() error {
			seen[name] = threadNS(t)
			return nil
		})
		if err != nil {
			t.Fatalf("Do(%s): %v", name, err)
		}
		if got, want := seen[name], statNS(t, netns.Path(name)); got != want {
			t.Errorf("inside %s: thread namespace %v, want the bind-mounted one %v", name, got, want)
		}
		if seen[name] == outside {
			t.Errorf("inside %s: thread namespace equals the caller's %v", name, outside)
		}
	}
	if seen[a] == seen[b] {
		t.Errorf("namespaces %s and %s are the same: %v", a, b, seen[a])
	}
	if got := threadNS(t); got != outside {
		t.Errorf("caller moved: %v -> %v", outside, got)
	}
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestDoSysctlIsPerNamespace(t *testing.T) {
	const path = "/proc/sys/net/ipv4/tcp_rmem"
	name := nstest.New(t)

	readHost := func() string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read host %s: %v", path, err)
		}
		return normalize(string(b))
	}
	host := readHost()
	want := "4096 65536 1048576"
	if host == want {
		want = "4096 65537 1048577"
	}

	var kept *os.File // opened inside, read outside
	err := netns.Do(name, func() error {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if got := normalize(string(b)); got != want {
			return fmt.Errorf("inside: %s = %q, want %q", path, got, want)
		}
		kept, err = os.Open(path)
		return err
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer kept.Close()

	if got := readHost(); got != host {
		t.Errorf("host %s changed: %q -> %q", path, host, got)
	}

	// The file opened inside still refers to the namespace.
	b, err := io.ReadAll(kept)
	if err != nil {
		t.Fatalf("read kept file: %v", err)
	}
	if got := normalize(string(b)); got != want {
		t.Errorf("file opened inside, read outside = %q, want %q", got, want)
	}

	// A later Do sees the value persisted in the namespace.
	err = netns.Do(name, func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if got := normalize(string(b)); got != want {
			return fmt.Errorf("second Do: %s = %q, want %q", path, got, want)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

func TestLoopbackUp(t *testing.T) {
	name := nstest.New(t)
	err := netns.Do(name, func() error {
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		if len(links) != 1 || links[0].Attrs().Name != "lo" {
			var got []string
			for _, l := range links {
				got = append(got, l.Attrs().Name)
			}
			t.Errorf("links in new namespace = %q, want only lo", got)
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if lo.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("lo flags = %v, want up", lo.Attrs().Flags)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}

	t.Run("ip sees lo up", func(t *testing.T) {
		ipNetnsList(t) // skips without iproute2
		out, err := exec.Command("ip", "-n", name, "-o", "link", "show", "lo").CombinedOutput()
		if err != nil {
			t.Fatalf("ip -n %s link show lo: %v\n%s", name, err, out)
		}
		if !strings.Contains(string(out), ",UP") {
			t.Errorf("ip -n %s link show lo: not UP: %s", name, out)
		}
	})
}

var errSentinel = errors.New("sentinel")

func TestDoResults(t *testing.T) {
	name := nstest.New(t)
	missing := nstest.RandomName(t)

	tests := []struct {
		name string
		ns   string
		fn   func() error
		// check inspects Do's error and recovered panic value.
		check func(t *testing.T, err error, panicked any)
	}{
		{
			name: "nil",
			ns:   name,
			fn:   func() error { return nil },
			check: func(t *testing.T, err error, p any) {
				if err != nil || p != nil {
					t.Errorf("err=%v panic=%v, want nil", err, p)
				}
			},
		},
		{
			name: "fn error returned unchanged",
			ns:   name,
			fn:   func() error { return errSentinel },
			check: func(t *testing.T, err error, p any) {
				if err != errSentinel {
					t.Errorf("err = %v, want sentinel itself", err)
				}
			},
		},
		{
			name: "panic re-raised",
			ns:   name,
			fn:   func() error { panic("boom") },
			check: func(t *testing.T, err error, p any) {
				if p != "boom" {
					t.Errorf("recovered %v, want boom", p)
				}
			},
		},
		{
			name: "missing namespace",
			ns:   missing,
			fn:   func() error { t.Error("fn ran"); return nil },
			check: func(t *testing.T, err error, p any) {
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("err = %v, want os.ErrNotExist", err)
				}
				if want := "netns: do " + missing + ": no such namespace: file does not exist"; err == nil || err.Error() != want {
					t.Errorf("err = %v, want %q", err, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			before := threadNS(t)
			var err error
			p := func() (p any) {
				defer func() { p = recover() }()
				err = netns.Do(tt.ns, tt.fn)
				return nil
			}()
			tt.check(t, err, p)
			if after := threadNS(t); after != before {
				t.Errorf("caller's thread moved: %v -> %v", before, after)
			}
		})
	}
}

func TestDoGoexitPropagates(t *testing.T) {
	name := nstest.New(t)
	reached := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = netns.Do(name, func() error {
			runtime.Goexit()
			return nil
		})
		reached = true
	}()
	<-done
	if reached {
		t.Error("code after Do ran although fn called runtime.Goexit")
	}
}

func TestDoNotANamespace(t *testing.T) {
	nstest.New(t) // ensures /run/netns exists and we are privileged
	name := nstest.RandomName(t)
	if err := os.WriteFile(netns.Path(name), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(netns.Path(name)) })

	err := netns.Do(name, func() error { t.Error("fn ran"); return nil })
	if err == nil || !strings.Contains(err.Error(), "not a network namespace") {
		t.Errorf("Do on a plain file = %v, want 'not a network namespace'", err)
	}
	// Delete copes with an entry that is not a mount point, e.g. left by
	// an interrupted Create.
	if err := netns.Delete(name); err != nil {
		t.Errorf("Delete(plain file) = %v", err)
	}
	if netns.Exists(name) {
		t.Error("plain file still exists after Delete")
	}
}

func TestCallerNamespaceUnchanged(t *testing.T) {
	existing := nstest.New(t)
	fresh := nstest.RandomName(t)
	t.Cleanup(func() { netns.Delete(fresh) })

	tests := []struct {
		name string
		op   func() error
	}{
		{"Create", func() error { return netns.Create(fresh) }},
		{"Create existing", func() error {
			if err := netns.Create(existing); !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("got %v, want ErrExist", err)
			}
			return nil
		}},
		{"Do", func() error { return netns.Do(existing, func() error { return nil }) }},
		{"nested Do", func() error {
			return netns.Do(existing, func() error {
				return netns.Do(fresh, func() error { return nil })
			})
		}},
		{"Delete", func() error { return netns.Delete(fresh) }},
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadNS(t)
	if host := hostNS(t); before != host {
		t.Fatalf("test thread starts outside the host namespace: %v vs %v", before, host)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); err != nil {
				t.Fatal(err)
			}
			if after := threadNS(t); after != before {
				t.Errorf("caller's thread moved: %v -> %v", before, after)
			}
		})
	}
}

// TestNoThreadLeaks hammers Do from several goroutines while others, on
// unlocked goroutines, check that no pool thread is left in a foreign
// namespace.
func TestNoThreadLeaks(t *testing.T) {
	names := []string{nstest.New(t), nstest.New(t)}
	want := map[string]nsID{}
	for _, n := range names {
		want[n] = statNS(t, netns.Path(n))
	}
	host := hostNS(t)

	const workers, iterations = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers*iterations)
	stop := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < iterations; i++ {
				n := names[(w+i)%len(names)]
				err := netns.Do(n, func() error {
					if got := threadNS(t); got != want[n] {
						return fmt.Errorf("inside %s: namespace %v, want %v", n, got, want[n])
					}
					runtime.Gosched()
					return nil
				})
				if err != nil {
					errs <- err
				}
			}
		}(w)
	}
	var checkers sync.WaitGroup
	for c := 0; c < workers; c++ {
		checkers.Add(1)
		go func() {
			defer checkers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				runtime.LockOSThread()
				got := threadNS(t)
				runtime.UnlockOSThread()
				if got != host {
					errs <- fmt.Errorf("unlocked goroutine found in namespace %v, want host %v", got, host)
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(stop)
	checkers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestNotPermitted re-runs this test binary without CAP_SYS_ADMIN (via
// util-linux setpriv) and checks the errors and the nstest skip there.
func TestNotPermitted(t *testing.T) {
	if os.Getenv("LONGHAUL_NETNS_UNPRIVILEGED_CHILD") != "" {
		t.Skip("already in the child")
	}
	name := nstest.New(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	cmd := exec.Command(setpriv, "--inh-caps=-sys_admin", "--bounding-set=-sys_admin", "--",
		os.Args[0], "-test.run=^TestUnprivilegedChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "LONGHAUL_NETNS_UNPRIVILEGED_CHILD="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestUnprivilegedChild") {
		t.Fatalf("child did not run the test:\n%s", out)
	}
	if !strings.Contains(string(out), "--- SKIP: TestUnprivilegedChild/nstest") {
		t.Errorf("nstest.New did not skip without CAP_SYS_ADMIN:\n%s", out)
	}
	if !netns.Exists(name) {
		t.Errorf("unprivileged child removed %s", name)
	}
}

func TestUnprivilegedChild(t *testing.T) {
	existing := os.Getenv("LONGHAUL_NETNS_UNPRIVILEGED_CHILD")
	if existing == "" {
		t.Skip("helper for TestNotPermitted")
	}
	name := nstest.RandomName(t)
	err := netns.Create(name)
	if !errors.Is(err, netns.ErrNotPermitted) || !errors.Is(err, unix.EPERM) {
		t.Errorf("Create = %v, want ErrNotPermitted and EPERM", err)
	}
	if want := "netns: create " + name + ": operation not permitted"; err == nil || err.Error() != want {
		t.Errorf("Create = %v, want %q", err, want)
	}
	if netns.Exists(name) {
		t.Errorf("failed Create left %s behind", name)
		netns.Delete(name)
	}
	if err := netns.Do(existing, func() error { t.Error("fn ran"); return nil }); !errors.Is(err, netns.ErrNotPermitted) {
		t.Errorf("Do = %v, want ErrNotPermitted", err)
	}
	if err := netns.Delete(existing); !errors.Is(err, netns.ErrNotPermitted) {
		t.Errorf("Delete = %v, want ErrNotPermitted", err)
	}
	t.Run("nstest", func(t *testing.T) {
		nstest.New(t)
		t.Error("nstest.New did not skip")
	})
}

// dropSysAdminOnThisThread removes CAP_SYS_ADMIN from the calling
// thread's effective set (capabilities are per thread).
func dropSysAdminOnThisThread() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[unix.CAP_SYS_ADMIN/32].Effective &^= 1 << (unix.CAP_SYS_ADMIN % 32)
	return unix.Capset(&hdr, &data[0])
}

// parkedThreads holds threads deliberately tainted by
// TestDoDiscardsThreadWhenRestoreFails that Go parked instead of exiting
// (the main thread); they never run Go code again.
var parkedThreads = map[string]bool{}

// threadsOK reports the first thread of this process, other than skip
// and parkedThreads, that is outside the host network namespace or lacks
// CAP_SYS_ADMIN in its effective set.
func threadsOK(host nsID, skip int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, task := range tasks {
		if task.Name() == fmt.Sprint(skip) || parkedThreads[task.Name()] {
			continue
		}
		dir := "/proc/self/task/" + task.Name()
		var st unix.Stat_t
		if err := unix.Stat(dir+"/ns/net", &st); err != nil {
			continue // thread exited meanwhile
		}
		if got := (nsID{dev: st.Dev, ino: st.Ino}); got != host {
			return fmt.Errorf("thread %s is in namespace %v, not the host's %v", task.Name(), got, host)
		}
		status, err := os.ReadFile(dir + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			var eff uint64
			if _, err := fmt.Sscanf(line, "CapEff: %x", &eff); err == nil && eff&(1<<unix.CAP_SYS_ADMIN) == 0 {
				return fmt.Errorf("thread %s lacks CAP_SYS_ADMIN (CapEff %x)", task.Name(), eff)
			}
		}
	}
	return nil
}

// TestDoDiscardsThreadWhenRestoreFails makes the switch back fail (fn
// drops CAP_SYS_ADMIN on its thread, so setns back gets EPERM) and checks
// that Do reports it and that the runtime never reuses that thread: it is
// terminated or, if it happens to be the process's main thread (which Go
// cannot exit), parked forever.
func TestDoDiscardsThreadWhenRestoreFails(t *testing.T) {
	name := nstest.New(t)
	host := hostNS(t)
	var tid int
	err := netns.Do(name, func() error {
		tid = unix.Gettid()
		return dropSysAdminOnThisThread()
	})
	if err == nil || !strings.Contains(err.Error(), "restore original namespace") || !errors.Is(err, netns.ErrNotPermitted) {
		t.Fatalf("Do = %v, want a restore error wrapping ErrNotPermitted", err)
	}
	if want := "netns: do " + name + ": restore original namespace: operation not permitted"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}

	mainThread := tid == os.Getpid()
	if mainThread {
		parkedThreads[fmt.Sprint(tid)] = true
	}
	t.Logf("tainted thread %d (main thread: %v)", tid, mainThread)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, statErr := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid))
		okErr := threadsOK(host, tid)
		if (mainThread || os.IsNotExist(statErr)) && okErr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tainted thread %d: stat=%v; other threads: %v", tid, statErr, okErr)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// No goroutine ever runs on the tainted thread again.
	var wg sync.WaitGroup
	tids := make(chan int, 200)
	for i := 0; i < cap(tids); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			time.Sleep(time.Millisecond)
		}()
	}
	wg.Wait()
	close(tids)
	for got := range tids {
		if got == tid {
			t.Fatalf("a goroutine ran on the discarded thread %d", tid)
		}
	}

	// And everything still works.
	if err := netns.Do(name, func() error { return nil }); err != nil {
		t.Errorf("Do after discarded thread: %v", err)
	}
	other := nstest.RandomName(t)
	t.Cleanup(func() { netns.Delete(other) })
	if err := netns.Create(other); err != nil {
		t.Errorf("Create after discarded thread: %v", err)
	}
}

// TestIproute2Interop uses a namespace made by `ip netns add` and deletes
// it with Delete.
func TestIproute2Interop(t *testing.T) {
	nstest.New(t)  // skips without privileges
	ipNetnsList(t) // skips without iproute2
	name := nstest.RandomName(t)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	t.Cleanup(func() { netns.Delete(name) })

	if !netns.Exists(name) {
		t.Fatalf("Exists(%q) = false for an ip-made namespace", name)
	}
	if got, err := netns.List(name); err != nil || !cmp.Equal(got, []string{name}) {
		t.Errorf("List(%q) = %q, %v", name, got, err)
	}
	if err := netns.Create(name); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create(ip-made) = %v, want os.ErrExist", err)
	}
	var inside nsID
	if err := netns.Do(name, func() error { inside = threadNS(t); return nil }); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if want := statNS(t, netns.Path(name)); inside != want {
		t.Errorf("inside = %v, want %v", inside, want)
	}
	if err := netns.Delete(name); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if contains(ipNetnsList(t), name) {
		t.Errorf("ip netns list still shows %q after Delete", name)
	}
}
