//go:build linux

package flows

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
)

// withAttr appends one attribute to a message built by destroyMsg and
// fixes its length.
func withAttr(msg []byte, typ uint16, val []byte) []byte {
	ne := binary.NativeEndian
	a := make([]byte, nlAlign(4+len(val)))
	ne.PutUint16(a, uint16(4+len(val)))
	ne.PutUint16(a[2:], typ)
	copy(a[4:], val)
	msg = append(msg, a...)
	ne.PutUint32(msg, uint32(len(msg)))
	return msg
}

// The congestion control (INET_DIAG_CONG) and the send buffer's size
// and use (INET_DIAG_SKMEMINFO) come with each socket; a name that is
// not a plain word is dropped.
func TestParseCongAndMemInfo(t *testing.T) {
	l4, r4 := netip.MustParseAddrPort("198.18.0.1:40000"), netip.MustParseAddrPort("198.18.0.2:5201")
	info := rawInfo(unix.TCPInfo{Snd_mss: 1448})
	mem := make([]byte, 9*4)
	binary.NativeEndian.PutUint32(mem[4*skMeminfoSndbuf:], 131072)
	binary.NativeEndian.PutUint32(mem[4*skMeminfoWmemQueued:], 98304)
	msg := withAttr(withAttr(destroyMsg(l4, r4, 1, 1, info), inetDiagCong, []byte("bbr\x00")), inetDiagSkmem, mem)
	got, err := ParseDestroy(msg)
	if err != nil || len(got) != 1 {
		t.Fatalf("%v %v", got, err)
	}
	if s := got[0]; s.CC != "bbr" || s.Sndbuf != 131072 || s.WmemQueued != 98304 {
		t.Errorf("cc %q sndbuf %d queued %d; want bbr 131072 98304", s.CC, s.Sndbuf, s.WmemQueued)
	}
	bad := withAttr(destroyMsg(l4, r4, 1, 1, info), inetDiagCong, []byte("b\x1b[1m\x00"))
	if got, _ := ParseDestroy(bad); len(got) != 1 || got[0].CC != "" {
		t.Errorf("an odd name was kept: %+v", got)
	}
}

// A dump and getsockopt both read a real socket's congestion control
// and send buffer.
func TestIntegrationDumpReadsCCAndSndbuf(t *testing.T) {
	ns := nstest.New(t)
	err := netns.Do(ns, func() error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer ln.Close()
		acc := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				acc <- c
			}
			close(acc)
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		peer := <-acc
		if peer == nil {
			t.Fatal("no connection accepted")
		}
		defer peer.Close()
		// The reader never reads: the sender's buffer fills.
		go func() { _, _ = c.Write(make([]byte, 8<<20)) }()
		time.Sleep(200 * time.Millisecond)
		k, err := Info(c.(*net.TCPConn), netip.MustParseAddrPort(c.LocalAddr().String()), netip.MustParseAddrPort(c.RemoteAddr().String()))
		if err != nil {
			return err
		}
		if k.CC == "" || k.Sndbuf <= 0 || k.WmemQueued <= 0 {
			t.Errorf("getsockopt: cc %q sndbuf %d queued %d; want all known", k.CC, k.Sndbuf, k.WmemQueued)
		}
		d, err := Open(ns)
		if err != nil {
			return err
		}
		defer d.Close()
		socks, err := d.Dump()
		if err != nil {
			return err
		}
		for _, s := range socks {
			if s.Local.String() == c.LocalAddr().String() {
				if s.CC != k.CC || s.Sndbuf != k.Sndbuf || s.WmemQueued <= 0 {
					t.Errorf("dump: cc %q sndbuf %d queued %d; getsockopt said %q %d", s.CC, s.Sndbuf, s.WmemQueued, k.CC, k.Sndbuf)
				}
				return nil
			}
		}
		t.Error("the dump lacks the socket")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
