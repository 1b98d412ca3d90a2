//go:build linux

package flows

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
)

// destroyMsg builds one SOCK_DIAG_BY_FAMILY message as the kernel
// broadcasts it: nlmsghdr, inet_diag_msg, an INET_DIAG_INFO attribute.
func destroyMsg(local, remote netip.AddrPort, cookie uint64, state uint8, info []byte) []byte {
	ne := binary.NativeEndian
	m := make([]byte, sizeofInetDiag)
	m[0], m[1] = unix.AF_INET, state
	if local.Addr().Is6() {
		m[0] = unix.AF_INET6
	}
	binary.BigEndian.PutUint16(m[4:], local.Port())
	binary.BigEndian.PutUint16(m[6:], remote.Port())
	l, r := local.Addr().AsSlice(), remote.Addr().AsSlice()
	copy(m[8:], l)
	copy(m[24:], r)
	ne.PutUint32(m[44:], uint32(cookie))
	ne.PutUint32(m[48:], uint32(cookie>>32))
	if info != nil {
		a := make([]byte, nlAlign(4+len(info)))
		ne.PutUint16(a, uint16(4+len(info)))
		ne.PutUint16(a[2:], inetDiagInfo)
		copy(a[4:], info)
		m = append(m, a...)
	}
	h := make([]byte, sizeofNlmsghdr)
	ne.PutUint32(h, uint32(sizeofNlmsghdr+len(m)))
	ne.PutUint16(h[4:], sockDiagByFamily)
	return append(h, m...)
}

// rawInfo lays out a tcp_info with the given counters at the kernel's
// offsets, through x/sys's struct (generated from the uapi header).
func rawInfo(ti unix.TCPInfo) []byte {
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&ti)), unsafe.Sizeof(ti))...)
}

func TestParseDestroy(t *testing.T) {
	l4, r4 := netip.MustParseAddrPort("198.18.0.1:40000"), netip.MustParseAddrPort("198.18.0.2:5201")
	l6, r6 := netip.MustParseAddrPort("[2001:db8::1]:40001"), netip.MustParseAddrPort("[2001:db8::2]:443")
	info := rawInfo(unix.TCPInfo{Snd_mss: 1448, Bytes_acked: 1 << 30, Busy_time: 7_000_000,
		Rwnd_limited: 5_000_000, Sndbuf_limited: 1_000_000, Total_retrans: 12, Min_rtt: 50_000, Rtt: 61_000})
	want4 := Sock{Local: l4, Remote: r4, Cookie: 0x1234_0000_0042, State: "CLOSE", MSS: 1448,
		BytesAcked: 1 << 30, Busy: 7 * time.Second, RwndLimited: 5 * time.Second, SndbufLimited: time.Second,
		Retrans: 12, MinRTT: 50 * time.Millisecond, RTT: 61 * time.Millisecond}
	want6 := want4
	want6.Local, want6.Remote, want6.Cookie = l6, r6, 7
	tests := []struct {
		name    string
		in      []byte
		want    []Sock
		wantErr bool
	}{
		{name: "ipv4", in: destroyMsg(l4, r4, 0x1234_0000_0042, 7, info), want: []Sock{want4}},
		{name: "two in one datagram", in: append(destroyMsg(l4, r4, 0x1234_0000_0042, 7, info), destroyMsg(l6, r6, 7, 7, info)...),
			want: []Sock{want4, want6}},
		{name: "old kernel short tcp_info", in: destroyMsg(l4, r4, 1, 7, info[:104]),
			want: []Sock{{Local: l4, Remote: r4, Cookie: 1, State: "CLOSE", MSS: 1448, Retrans: 12, RTT: 61 * time.Millisecond}}},
		{name: "listener skipped", in: destroyMsg(l4, netip.AddrPortFrom(netip.IPv4Unspecified(), 0), 1, 10, info)},
		{name: "truncated message", in: destroyMsg(l4, r4, 1, 7, info)[:60], wantErr: true},
		{name: "bad attribute length", in: func() []byte {
			b := destroyMsg(l4, r4, 1, 7, info)
			binary.NativeEndian.PutUint16(b[sizeofNlmsghdr+sizeofInetDiag:], 3)
			return b
		}(), wantErr: true},
		{name: "empty", in: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDestroy(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// DecodeTCPInfo reads a real socket's getsockopt(TCP_INFO) the way
// x/sys's struct (generated from the kernel header) does.
func TestDecodeTCPInfoMatchesKernelLayout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback: %v", err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	rc, _ := c.(*net.TCPConn).SyscallConn()
	var ti *unix.TCPInfo
	_ = rc.Control(func(fd uintptr) { ti, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if err != nil {
		t.Fatal(err)
	}
	got := DecodeTCPInfo(rawInfo(*ti))
	if got.Bytes_acked != ti.Bytes_acked || got.Bytes_acked < 1<<20 || got.Busy_time != ti.Busy_time ||
		got.Min_rtt != ti.Min_rtt || got.Snd_mss != ti.Snd_mss || got.Snd_cwnd != ti.Snd_cwnd ||
		got.Data_segs_out != ti.Data_segs_out || got.Bytes_sent != ti.Bytes_sent || got.Snd_wnd != ti.Snd_wnd ||
		got.Rcv_space != ti.Rcv_space || got.Delivery_rate != ti.Delivery_rate {
		t.Errorf("decoded %+v\nkernel  %+v", got, *ti)
	}
}

// A socket closed in a namespace is reported with its cookie (the one
// dumps show) and its final counters.
func TestIntegrationDestroyNotification(t *testing.T) {
	ns := nstest.New(t)
	l, err := ListenDestroy(ns)
	if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EPERM) {
		t.Skipf("no CAP_NET_ADMIN: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const size = 3 << 20
	var cookie uint64
	err = netns.Do(ns, func() error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer ln.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if c, err := ln.Accept(); err == nil {
				_, _ = io.Copy(io.Discard, c)
				c.Close()
			}
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		if _, err := c.Write(make([]byte, size)); err != nil {
			return err
		}
		d, err := Open(ns)
		if err != nil {
			return err
		}
		defer d.Close()
		socks, err := d.Dump()
		for _, s := range socks {
			if s.Local.String() == c.LocalAddr().String() {
				cookie = s.Cookie
			}
		}
		c.Close()
		<-done
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if cookie == 0 {
		t.Fatal("dump did not show the client socket's cookie")
	}
	_ = l.SetDeadline(time.Now().Add(5 * time.Second))
	for {
		socks, err := l.Read()
		if err != nil {
			t.Fatalf("no destroy notification for cookie %#x: %v", cookie, err)
		}
		for _, s := range socks {
			if s.Cookie == cookie {
				if s.BytesAcked != size+2 { // the SYN and the FIN count one each
					t.Errorf("final bytes_acked %d, want %d", s.BytesAcked, size+2)
				}
				return
			}
		}
	}
}

func FuzzParseDestroy(f *testing.F) {
	l, r := netip.MustParseAddrPort("198.18.0.1:40000"), netip.MustParseAddrPort("198.18.0.2:5201")
	f.Add(destroyMsg(l, r, 1, 7, rawInfo(unix.TCPInfo{Snd_mss: 1448, Bytes_acked: 1000})))
	f.Fuzz(func(t *testing.T, b []byte) {
		socks, err := ParseDestroy(b)
		if err == nil && len(socks) > len(b)/(sizeofNlmsghdr+sizeofInetDiag) {
			t.Errorf("%d sockets from %d bytes", len(socks), len(b))
		}
	})
}

// RawDumper returns what Dumper does, in one walk.
func TestIntegrationRawDumpMatchesDump(t *testing.T) {
	ns := nstest.New(t)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	err := netns.Do(ns, func() error {
		for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			defer ln.Close()
			for range 20 {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					return err
				}
				s, err := ln.Accept()
				if err != nil {
					return err
				}
				conns = append(conns, c, s)
				if _, err := c.Write(make([]byte, 100_000)); err != nil {
					return err
				}
				if _, err := io.ReadFull(s, make([]byte, 100_000)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // acks in
	d, err := Open(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, err := OpenRaw(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want, err := d.Dump()
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Dump(nil)
	if err != nil {
		t.Fatal(err)
	}
	byCookie := func(a, b Sock) int { return cmpUint(a.Cookie, b.Cookie) }
	slices.SortFunc(want, byCookie)
	slices.SortFunc(got, byCookie)
	if len(want) != 80 {
		t.Errorf("Dump found %d sockets, want 80", len(want))
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Errorf("RawDumper vs Dumper (-want +got)\n%s", diff)
	}
	// Lookup finds each socket by its addresses and cookie (both
	// families, batches of lookupBatch), and nothing for a cookie or a
	// port that names no socket.
	many := slices.Repeat(got, 5) // 400 requests: two batches
	stale := got[0]
	stale.Cookie += 1 << 40
	gone := got[1]
	gone.Remote = netip.AddrPortFrom(gone.Remote.Addr(), 1)
	found, err := r.Lookup(append(many, stale, gone), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != len(many) {
		t.Fatalf("Lookup found %d sockets of %d asked (and 2 that do not exist)", len(found), len(many))
	}
	slices.SortFunc(found, byCookie)
	if diff := cmp.Diff(slices.Compact(slices.Clone(found)), got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Errorf("Lookup vs Dump (-found +dumped)\n%s", diff)
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dumpReply is a dump datagram: socket messages (as TCPDIAG_GETSOCK
// replies) and NLMSG_DONE, all with sequence number seq.
func dumpReply(seq uint32, msgs ...[]byte) []byte {
	var b []byte
	for _, m := range append(msgs, make([]byte, sizeofNlmsghdr+4)) {
		m = append([]byte(nil), m...)
		binary.NativeEndian.PutUint32(m[8:], seq)
		if len(m) == sizeofNlmsghdr+4 {
			binary.NativeEndian.PutUint32(m, uint32(len(m)))
			binary.NativeEndian.PutUint16(m[4:], unix.NLMSG_DONE)
		} else {
			binary.NativeEndian.PutUint16(m[4:], tcpdiagGetsock)
		}
		b = append(b, m...)
	}
	return b
}

func FuzzRawDumpParse(f *testing.F) {
	l, r := netip.MustParseAddrPort("198.18.0.1:40000"), netip.MustParseAddrPort("198.18.0.2:5201")
	info := rawInfo(unix.TCPInfo{Snd_mss: 1448, Bytes_acked: 1000})
	f.Add(dumpReply(1, destroyMsg(l, r, 1, 1, info), destroyMsg(l, r, 2, 1, info[:100])))
	f.Add(dumpReply(1))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := &RawDumper{seq: 1}
		socks, done, err := d.parse(b, nil)
		if (err != nil && !done) || len(socks) > len(b)/(sizeofNlmsghdr+sizeofInetDiag) {
			t.Errorf("%d sockets, done %v, err %v from %d bytes", len(socks), done, err, len(b))
		}
	})
}

func TestRawDumpParse(t *testing.T) {
	l, r := netip.MustParseAddrPort("198.18.0.1:40000"), netip.MustParseAddrPort("198.18.0.2:5201")
	info := rawInfo(unix.TCPInfo{Snd_mss: 1448, Bytes_acked: 1000})
	errMsg := make([]byte, sizeofNlmsghdr+4)
	binary.NativeEndian.PutUint32(errMsg, uint32(len(errMsg)))
	binary.NativeEndian.PutUint16(errMsg[4:], unix.NLMSG_ERROR)
	binary.NativeEndian.PutUint32(errMsg[8:], 1)
	eperm := -int32(unix.EPERM)
	binary.NativeEndian.PutUint32(errMsg[16:], uint32(eperm))
	tests := []struct {
		name      string
		in        []byte
		wantN     int
		wantDone  bool
		wantError bool
	}{
		{"two sockets and done", dumpReply(1, destroyMsg(l, r, 1, 1, info), destroyMsg(l, r, 2, 1, info)), 2, true, false},
		{"no done yet", dumpReply(1, destroyMsg(l, r, 1, 1, info))[:sizeofNlmsghdr+sizeofInetDiag+nlAlign(4+len(info))], 1, false, false},
		{"late reply to an older dump", dumpReply(7, destroyMsg(l, r, 1, 1, info))[:sizeofNlmsghdr+sizeofInetDiag+nlAlign(4+len(info))], 0, false, false},
		{"kernel error", errMsg, 0, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &RawDumper{seq: 1}
			socks, done, err := d.parse(tc.in, nil)
			if len(socks) != tc.wantN || done != tc.wantDone || (err != nil) != tc.wantError {
				t.Errorf("%d sockets, done %v, err %v; want %d, %v, error %v", len(socks), done, err, tc.wantN, tc.wantDone, tc.wantError)
			}
		})
	}
}

// SetDeadline bounds the next Reads.
func (l *DestroyListener) SetDeadline(t time.Time) error { return l.f.SetReadDeadline(t) }
