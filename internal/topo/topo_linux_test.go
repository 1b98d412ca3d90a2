//go:build linux

package topo

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// helperEnv makes the test binary act as a long-lived owner of a run (see
// TestHelperProcess); its value is the prefix.
const helperEnv = "LONGHAUL_TOPO_TEST_HELPER"

// Everything the tests of this process created, checked once at the end.
var used struct {
	sync.Mutex
	prefixes []string
	pids     []int
}

func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv(helperEnv) == "" {
		if err := checkNothingLeft(); err != nil {
			fmt.Fprintln(os.Stderr, "topo tests left resources behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkNothingLeft verifies that no namespace, state file or process of
// any prefix used by the tests survived, and removes what did.
func checkNothingLeft() error {
	used.Lock()
	defer used.Unlock()
	var problems []string
	listed, _ := exec.Command("ip", "netns", "list").Output() // best effort: iproute2 may be absent
	for _, p := range used.prefixes {
		names, err := netns.List(p + "-")
		if err != nil {
			problems = append(problems, err.Error())
		}
		if len(names) > 0 {
			problems = append(problems, fmt.Sprintf("namespaces %v", names))
		}
		if bytes.Contains(listed, []byte(p+"-")) {
			problems = append(problems, fmt.Sprintf("`ip netns list` shows %s-*", p))
		}
		states, _ := filepath.Glob(filepath.Join(StateDir, p+"-*"))
		if len(states) > 0 {
			problems = append(problems, fmt.Sprintf("state files %v", states))
		}
		if len(names) > 0 || len(states) > 0 {
			for _, n := range names {
				killInNamespace(n)
				netns.Delete(n)
			}
			for _, s := range states {
				os.Remove(s)
			}
		}
	}
	// The TUN devices live and die in the namespaces; one in the host's
	// namespace would mean it was opened on the wrong thread.
	if _, err := net.InterfaceByName(DevName); err == nil {
		problems = append(problems, "the host namespace has a device "+DevName)
	}
	for _, pid := range used.pids {
		if ps, err := readProcStat(pid); err == nil && !ps.dead() {
			problems = append(problems, fmt.Sprintf("process %d still running", pid))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func notePID(pid int) {
	used.Lock()
	used.pids = append(used.pids, pid)
	used.Unlock()
}

// newPrefix returns a fresh prefix "lht<12 hex>" so that a test sees only
// its own runs, and registers a cleanup that fails the test if any of its
// namespaces or state files outlive it.
func newPrefix(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	p := "lht" + hex.EncodeToString(b[:])
	used.Lock()
	used.prefixes = append(used.prefixes, p)
	used.Unlock()
	t.Cleanup(func() {
		if names, _ := netns.List(p + "-"); len(names) > 0 {
			t.Errorf("namespaces left behind: %v", names)
		}
		if states, _ := filepath.Glob(filepath.Join(StateDir, p+"-*")); len(states) > 0 {
			t.Errorf("state files left behind: %v", states)
		}
	})
	return p
}

// requireNetns skips the test unless namespaces can be created (probing
// for EPERM, not the uid).
func requireNetns(t *testing.T) {
	t.Helper()
	nstest.New(t)
}

// up runs Up for t, skipping if privileges are missing, and closes the
// topology when t ends.
func up(t *testing.T, s Spec) *Topology {
	t.Helper()
	requireNetns(t)
	topo, err := Up(context.Background(), s)
	if errors.Is(err, netns.ErrNotPermitted) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() {
		if err := topo.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return topo
}

// forward copies packets between two TUN queues unchanged until either
// is closed; both use the same vnet header, so raw frames pass as they
// are. The returned function waits for both directions to stop.
func forward(a, b *os.File) (wait func()) {
	var wg sync.WaitGroup
	pump := func(src, dst *os.File) {
		defer wg.Done()
		buf := make([]byte, 65550)
		for {
			n, err := src.Read(buf)
			if err != nil {
				return
			}
			dst.Write(buf[:n]) //nolint:errcheck // a lost packet is the link's business
		}
	}
	wg.Add(2)
	go pump(a, b)
	go pump(b, a)
	return wg.Wait
}

type linkInfo struct {
	MTU, TxQLen   int
	Up            bool
	TunFlags      netlink.TuntapFlag
	NonPersist    bool
	Addrs         []string // "local peer"
	IPv6Addrs     int
	PeerRouteDev  bool // the route to the peer goes through lh0
	EffectiveCtls map[string]string
}

// inspect reads the end's link state and the given sysctls from inside
// its namespace.
func inspect(t *testing.T, e End, peer netip.Addr, keys []string) linkInfo {
	t.Helper()
	var li linkInfo
	err := netns.Do(e.Netns, func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		l, err := h.LinkByName(e.Dev)
		if err != nil {
			return err
		}
		a := l.Attrs()
		li.MTU, li.TxQLen, li.Up = a.MTU, a.TxQLen, a.Flags&net.FlagUp != 0
		if tt, ok := l.(*netlink.Tuntap); ok {
			li.TunFlags = tt.Flags & (netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR)
			li.NonPersist = tt.NonPersist
		}
		addrs, err := h.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		for _, ad := range addrs {
			li.Addrs = append(li.Addrs, fmt.Sprintf("%v %v", ad.IPNet, ad.Peer))
		}
		v6, err := h.AddrList(l, netlink.FAMILY_V6)
		if err != nil {
			return err
		}
		li.IPv6Addrs = len(v6)
		routes, err := h.RouteGet(peer.AsSlice())
		if err != nil {
			return err
		}
		li.PeerRouteDev = len(routes) == 1 && routes[0].LinkIndex == a.Index
		li.EffectiveCtls = map[string]string{}
		for _, k := range keys {
			v, err := sysctl.Read(sysctl.DefaultRoot, k)
			if err != nil {
				return err
			}
			li.EffectiveCtls[k] = v
		}
		return nil
	})
	if err != nil {
		t.Fatalf("inspect %s: %v", e.Netns, err)
	}
	return li
}

func hostSysctls(t *testing.T, keys []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, k := range keys {
		v, err := sysctl.Read(sysctl.DefaultRoot, k)
		if err != nil {
			t.Fatalf("host sysctl: %v", err)
		}
		m[k] = v
	}
	return m
}

func TestIntegrationUp(t *testing.T) {
	prefix := newPrefix(t)
	keys := []string{"net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control"}
	hostBefore := hostSysctls(t, keys)

	spec := Spec{
		Prefix: prefix, MTU: 9000, TxQueueLen: 20000,
		ClientSysctls: []Sysctl{{Key: "net.ipv4.tcp_rmem", Value: "4096 131072 8388608"}},
		ServerSysctls: []Sysctl{{Key: "net/ipv4/tcp_wmem", Value: "4096\t16384 8388608"}},
	}
	topo := up(t, spec)
	c, s := topo.Client(), topo.Server()

	t.Run("ends", func(t *testing.T) {
		ignore := cmp.Options{cmpopts.IgnoreFields(End{}, "Tun"), cmpopts.IgnoreUnexported(End{}),
			cmp.Comparer(func(a, b netip.Addr) bool { return a == b })}
		run := topo.runID
		wantC := End{Netns: prefix + "-" + run + "-c", Dev: "lh0", Addr: netip.MustParseAddr("198.18.0.1"),
			Sysctls: map[string]string{
				"net.ipv4.tcp_no_metrics_save":   "1",
				"net.ipv6.conf.lh0.disable_ipv6": "1",
				"net.ipv4.tcp_rmem":              "4096 131072 8388608",
			}}
		wantS := End{Netns: prefix + "-" + run + "-s", Dev: "lh0", Addr: netip.MustParseAddr("198.18.0.2"),
			Sysctls: map[string]string{
				"net.ipv4.tcp_no_metrics_save":   "1",
				"net.ipv6.conf.lh0.disable_ipv6": "1",
				"net.ipv4.tcp_wmem":              "4096 16384 8388608",
			}}
		if diff := cmp.Diff(wantC, c, ignore); diff != "" {
			t.Errorf("Client() (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantS, s, ignore); diff != "" {
			t.Errorf("Server() (-want +got):\n%s", diff)
		}
		if c.Tun == nil || s.Tun == nil {
			t.Errorf("Tun files: client %v, server %v; want both set", c.Tun, s.Tun)
		}
		for _, e := range []End{c, s} {
			if !netns.Exists(e.Netns) {
				t.Errorf("namespace %s does not exist", e.Netns)
			}
		}
		if _, err := os.Stat(filepath.Join(StateDir, prefix+"-"+run+".json")); err != nil {
			t.Errorf("state file: %v", err)
		}
	})

	t.Run("links", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			end       End
			peer      string
			wantCtls  map[string]string
			wantAddrs []string
		}{
			{name: "client", end: c, peer: "198.18.0.2", wantAddrs: []string{"198.18.0.1/32 198.18.0.2/32"},
				wantCtls: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 8388608", "net.ipv4.tcp_wmem": hostBefore["net.ipv4.tcp_wmem"]}},
			{name: "server", end: s, peer: "198.18.0.1", wantAddrs: []string{"198.18.0.2/32 198.18.0.1/32"},
				wantCtls: map[string]string{"net.ipv4.tcp_rmem": hostBefore["net.ipv4.tcp_rmem"], "net.ipv4.tcp_wmem": "4096 16384 8388608"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.wantCtls["net.ipv4.tcp_no_metrics_save"] = "1"
				tc.wantCtls["net.ipv6.conf.lh0.disable_ipv6"] = "1"
				want := linkInfo{MTU: 9000, TxQLen: 20000, Up: true,
					TunFlags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR, NonPersist: true,
					Addrs: tc.wantAddrs, IPv6Addrs: 0, PeerRouteDev: true, EffectiveCtls: tc.wantCtls}
				got := inspect(t, tc.end, netip.MustParseAddr(tc.peer), slices.Sorted(maps.Keys(tc.wantCtls)))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("link state (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("host unchanged", func(t *testing.T) {
		if diff := cmp.Diff(hostBefore, hostSysctls(t, keys)); diff != "" {
			t.Errorf("host sysctls (-want +got):\n%s", diff)
		}
	})

	wait := forward(c.Tun, s.Tun)

	t.Run("command runs in namespace", func(t *testing.T) {
		var st unix.Stat_t
		if err := unix.Stat(netns.Path(c.Netns), &st); err != nil {
			t.Fatal(err)
		}
		out, err := c.Command(context.Background(), "readlink", "/proc/self/ns/net").CombinedOutput()
		if err != nil {
			t.Fatalf("readlink in %s: %v\n%s", c.Netns, err, out)
		}
		if got, want := strings.TrimSpace(string(out)), fmt.Sprintf("net:[%d]", st.Ino); got != want {
			t.Errorf("child's network namespace = %s, want %s", got, want)
		}
	})

	t.Run("ping", func(t *testing.T) {
		if _, err := exec.LookPath("ping"); err != nil {
			t.Skip("ping not installed: apt-get install -y iputils-ping")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := c.Command(ctx, "ping", "-c", "3", "-W", "1", "198.18.0.2").CombinedOutput()
		if err != nil {
			t.Fatalf("ping from %s: %v\n%s", c.Netns, err, out)
		}
		if !strings.Contains(string(out), "3 received") {
			t.Errorf("ping output lacks \"3 received\":\n%s", out)
		}
	})

	t.Run("tcp", func(t *testing.T) {
		var ln net.Listener
		if err := netns.Do(s.Netns, func() (err error) {
			ln, err = net.Listen("tcp4", "198.18.0.2:0")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		type result struct {
			n   int64
			sum [32]byte
			err error
		}
		got := make(chan result, 1)
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				got <- result{err: err}
				return
			}
			defer conn.Close()
			h := sha256.New()
			n, err := io.Copy(h, conn)
			var r result
			r.n, r.err = n, err
			copy(r.sum[:], h.Sum(nil))
			got <- r
		}()

		var conn net.Conn
		if err := netns.Do(c.Netns, func() (err error) {
			conn, err = (&net.Dialer{Timeout: 5 * time.Second}).Dial("tcp4", ln.Addr().String())
			return err
		}); err != nil {
			t.Fatalf("dial from %s: %v", c.Netns, err)
		}
		if la := conn.LocalAddr().(*net.TCPAddr); !la.IP.Equal(net.ParseIP("198.18.0.1")) {
			t.Errorf("local address %v, want 198.18.0.1", la)
		}
		data := make([]byte, 8<<20)
		rand.Read(data)
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := conn.Write(data); err != nil {
			t.Fatalf("write: %v", err)
		}
		conn.Close()
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("server: %v", r.err)
			}
			if r.n != int64(len(data)) || r.sum != sha256.Sum256(data) {
				t.Errorf("server received %d bytes (sha256 match %v), want %d", r.n, r.sum == sha256.Sum256(data), len(data))
			}
		case <-time.After(30 * time.Second):
			t.Fatal("server did not receive the data within 30 s")
		}
	})

	t.Run("close", func(t *testing.T) {
		if err := topo.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		wait() // the forwarder stops because Close closed the TUN queues
		for _, e := range []End{c, s} {
			if netns.Exists(e.Netns) {
				t.Errorf("namespace %s survived Close", e.Netns)
			}
		}
		if _, err := os.Stat(filepath.Join(StateDir, prefix+"-"+topo.runID+".json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("state file after Close: %v, want not exist", err)
		}
		if err := topo.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

func TestIntegrationDefaults(t *testing.T) {
	prefix := newPrefix(t)
	topo := up(t, Spec{Prefix: prefix})
	for _, tc := range []struct {
		name string
		end  End
		peer string
		want string
	}{
		{name: "client", end: topo.Client(), peer: "198.18.0.2", want: "198.18.0.1/32 198.18.0.2/32"},
		{name: "server", end: topo.Server(), peer: "198.18.0.1", want: "198.18.0.2/32 198.18.0.1/32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := inspect(t, tc.end, netip.MustParseAddr(tc.peer), nil)
			want := linkInfo{MTU: 1500, TxQLen: 10000, Up: true, TunFlags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR,
				NonPersist: true, Addrs: []string{tc.want}, PeerRouteDev: true, EffectiveCtls: map[string]string{}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("link state (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIntegrationUpErrors checks that Up reports what the kernel refuses
// and, failing at any step (the server's sysctls come after the whole
// client end is built), leaves nothing behind.
func TestIntegrationUpErrors(t *testing.T) {
	requireNetns(t)
	tests := []struct {
		name    string
		spec    Spec
		wantErr string
		wantIs  error
	}{
		{name: "invalid spec", spec: Spec{ClientAddr: netip.MustParseAddr("10.0.0.1")},
			wantErr: "topo: up: spec: client address 10.0.0.1 is outside 198.18.0.0/15"},
		{name: "unknown key", spec: Spec{ClientSysctls: []Sysctl{{Key: "net.ipv4.tcp_no_such_key", Value: "1"}}},
			wantErr: "sysctl net.ipv4.tcp_no_such_key: the key does not exist on this kernel", wantIs: sysctl.ErrUnknownKey},
		{name: "host-only key", spec: Spec{ServerSysctls: []Sysctl{{Key: "net.core.netdev_max_backlog", Value: "5000"}}},
			wantErr: "sysctl net.core.netdev_max_backlog: the key exists only in the host's namespace", wantIs: sysctl.ErrUnknownKey},
		{name: "rejected value on the server", spec: Spec{ServerSysctls: []Sysctl{{Key: "net.ipv4.tcp_rmem", Value: "abc"}}},
			wantErr: `server namespace %s-s: sysctl net.ipv4.tcp_rmem="abc": the kernel rejected the value: invalid argument`, wantIs: unix.EINVAL},
		{name: "rewritten value", spec: Spec{ServerSysctls: []Sysctl{{Key: "net.ipv4.tcp_no_metrics_save", Value: "0x1"}}},
			wantErr: `sysctl net.ipv4.tcp_no_metrics_save: wrote "0x1" but the kernel stored "1"`},
		{name: "read-only in a namespace", spec: Spec{ClientSysctls: []Sysctl{{Key: "net.core.rmem_max", Value: "8388608"}}},
			wantErr: "sysctl net.core.rmem_max: read-only inside a network namespace on this kernel: permission denied"},
		{name: "unknown congestion control", spec: Spec{CC: "nosuchcc"},
			wantErr: `congestion control "nosuchcc" is not available on this kernel`, wantIs: unix.ENOENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := newPrefix(t)
			tt.spec.Prefix = prefix
			topo, err := Up(context.Background(), tt.spec)
			if err == nil {
				topo.Close()
				t.Fatalf("Up succeeded, want error containing %q", tt.wantErr)
			}
			msg := err.Error()
			// The run id is random: match "%s" against prefix-<id>.
			want := tt.wantErr
			if strings.Contains(want, "%s") {
				i := strings.Index(msg, prefix+"-")
				if i < 0 {
					t.Fatalf("error %q does not name a namespace of prefix %s", msg, prefix)
				}
				want = fmt.Sprintf(want, msg[i:i+len(prefix)+1+runIDLen])
			}
			if !strings.HasPrefix(msg, "topo: up: ") || !strings.Contains(msg, want) {
				t.Errorf("Up error = %q, want \"topo: up: ...%s...\"", msg, want)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(err, %v) = false for %q", tt.wantIs, msg)
			}
			// Every refusal of a sysctl by the kernel (congestion control
			// included) is one class to callers (bad input for the lab);
			// a bad spec is not.
			if refusedWant := tt.name != "invalid spec"; errors.Is(err, ErrSysctlRefused) != refusedWant {
				t.Errorf("errors.Is(err, ErrSysctlRefused) = %v for %q", !refusedWant, msg)
			}
			checkOneLine(t, err)
			if names, _ := netns.List(prefix + "-"); len(names) > 0 {
				t.Errorf("failed Up left namespaces %v", names)
			}
			if states, _ := filepath.Glob(filepath.Join(StateDir, prefix+"-*")); len(states) > 0 {
				t.Errorf("failed Up left state files %v", states)
			}
		})
	}
}

// TestIntegrationCC checks CC against the kernel's rule for non-initial
// namespaces: the default may be any algorithm in the host's
// tcp_allowed_congestion_control, and nothing else, even for root.
func TestIntegrationCC(t *testing.T) {
	requireNetns(t)
	hostCC := hostSysctls(t, []string{keyCC})
	allowed := strings.Fields(hostSysctls(t, []string{"net.ipv4.tcp_allowed_congestion_control"})["net.ipv4.tcp_allowed_congestion_control"])
	available := strings.Fields(hostSysctls(t, []string{"net.ipv4.tcp_available_congestion_control"})["net.ipv4.tcp_available_congestion_control"])

	t.Run("allowed", func(t *testing.T) {
		topo := up(t, Spec{Prefix: newPrefix(t), CC: "reno"}) // reno is always allowed
		for _, e := range []End{topo.Client(), topo.Server()} {
			if got := e.Sysctls[keyCC]; got != "reno" {
				t.Errorf("%s: %s = %q, want reno", e.Netns, keyCC, got)
			}
			if got := inspect(t, e, topo.Server().Addr, []string{keyCC}).EffectiveCtls[keyCC]; got != "reno" {
				t.Errorf("%s: kernel reports %s = %q, want reno", e.Netns, keyCC, got)
			}
		}
		if diff := cmp.Diff(hostCC, hostSysctls(t, []string{keyCC})); diff != "" {
			t.Errorf("host congestion control changed (-want +got):\n%s", diff)
		}
	})

	t.Run("available but not allowed", func(t *testing.T) {
		var cc string
		for _, a := range available {
			if !slices.Contains(allowed, a) {
				cc = a
				break
			}
		}
		if cc == "" {
			t.Skipf("every available algorithm (%v) is allowed on this host", available)
		}
		prefix := newPrefix(t)
		topo, err := Up(context.Background(), Spec{Prefix: prefix, CC: cc})
		if err == nil {
			topo.Close()
			t.Fatalf("Up with CC %s (not in %v) succeeded; the kernel rule changed", cc, allowed)
		}
		want := fmt.Sprintf("congestion control %q is not in the host's net.ipv4.tcp_allowed_congestion_control (%s)", cc, strings.Join(allowed, " "))
		if !strings.Contains(err.Error(), want) || !errors.Is(err, unix.EPERM) {
			t.Errorf("Up error = %q, want one containing %q and wrapping EPERM", err, want)
		}
	})
}

// TestIntegrationVeth checks the raw path: a veth pair between the two
// namespaces (no TUN, so no data plane is needed), addressed like the
// TUN topology, carrying a TCP connection, with the sysctls applied, and
// gone with Close.
func TestIntegrationVeth(t *testing.T) {
	prefix := newPrefix(t)
	topo := up(t, Spec{Prefix: prefix, Veth: true, MTU: 9000,
		ServerSysctls: []Sysctl{{Key: "net.ipv4.tcp_wmem", Value: "4096 16384 8388608"}}})
	cl, sv := topo.Client(), topo.Server()
	if cl.Tun != nil || sv.Tun != nil {
		t.Fatalf("veth ends have TUN files: %v %v", cl.Tun, sv.Tun)
	}
	if got := sv.Sysctls["net.ipv4.tcp_wmem"]; got != "4096 16384 8388608" {
		t.Errorf("server tcp_wmem = %q, want it applied", got)
	}
	for _, e := range []End{cl, sv} {
		err := netns.Do(e.Netns, func() error {
			l, err := netlink.LinkByName(DevName)
			if err != nil {
				return err
			}
			if l.Type() != "veth" || l.Attrs().MTU != 9000 || l.Attrs().OperState != netlink.OperUp {
				return fmt.Errorf("%s in %s: type %s mtu %d state %s, want veth 9000 up", DevName, e.Netns, l.Type(), l.Attrs().MTU, l.Attrs().OperState)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A TCP exchange across the pair.
	ln, err := listenIn(sv.Netns, "tcp4", netip.AddrPortFrom(sv.Addr, 5201).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = c.Write([]byte("veth"))
			c.Close()
		}
	}()
	var got []byte
	err = netns.Do(cl.Netns, func() error {
		c, err := net.DialTimeout("tcp4", netip.AddrPortFrom(sv.Addr, 5201).String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err = io.ReadAll(c)
		return err
	})
	if err != nil || string(got) != "veth" {
		t.Fatalf("dial across the veth pair: %q, %v", got, err)
	}
	if err := topo.Close(); err != nil {
		t.Fatal(err)
	}
	if netns.Exists(cl.Netns) || netns.Exists(sv.Netns) {
		t.Errorf("namespaces left after Close")
	}
}

// listenIn opens a listener inside namespace ns.
func listenIn(ns, network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := netns.Do(ns, func() (err error) {
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// A star: a second topology joins the first one's client namespace with
// its own device and addresses; each path carries its own traffic; the
// joined one's Close removes its device and server namespace and leaves
// the shared client namespace and the first path alone.
func TestIntegrationStar(t *testing.T) {
	prefix := newPrefix(t)
	a := up(t, Spec{Prefix: prefix})
	b := up(t, Spec{Prefix: prefix, JoinClient: a.Client().Netns, Dev: "lh1",
		ClientAddr: netip.MustParseAddr("198.18.1.1"), ServerAddr: netip.MustParseAddr("198.18.1.2")})
	if b.Client().Netns != a.Client().Netns || b.Client().Dev != "lh1" || b.Server().Netns == a.Server().Netns {
		t.Fatalf("star ends: a %+v, b %+v", a.Client(), b.Client())
	}
	for _, p := range []*Topology{a, b} {
		forward(p.Client().Tun, p.Server().Tun) // ends when Close closes the TUN queues
		sv := p.Server()
		ln, err := listenIn(sv.Netns, "tcp4", netip.AddrPortFrom(sv.Addr, 5201).String())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			if c, err := ln.Accept(); err == nil {
				_, _ = c.Write([]byte(sv.Netns))
				c.Close()
			}
			ln.Close()
		}()
		var got []byte
		err = netns.Do(p.Client().Netns, func() error {
			c, err := net.DialTimeout("tcp4", netip.AddrPortFrom(sv.Addr, 5201).String(), 5*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			got, err = io.ReadAll(c)
			return err
		})
		if err != nil || string(got) != sv.Netns {
			t.Fatalf("from the shared client to %v: %q, %v", sv.Addr, got, err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(netns.Path(b.Server().Netns)); err == nil {
		t.Errorf("the joined path's server namespace %s is left", b.Server().Netns)
	}
	err := netns.Do(a.Client().Netns, func() error {
		if _, err := netlink.LinkByName("lh1"); err == nil {
			return fmt.Errorf("lh1 is left in the shared client")
		}
		_, err := netlink.LinkByName(DevName)
		return err
	})
	if err != nil {
		t.Error(err)
	}
}
