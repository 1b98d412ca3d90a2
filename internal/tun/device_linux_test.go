package tun

// Integration tests against the real kernel: two throwaway network
// namespaces, one TUN device in each, and the test in the middle copying
// frames between them. They need CAP_SYS_ADMIN and CAP_NET_ADMIN and skip
// without them.

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
)

var (
	clientAddr = netip.MustParseAddr("198.18.0.1")
	serverAddr = netip.MustParseAddr("198.18.0.2")
)

const tunName = "lhtun0"

// newTun creates a TUN device named tunName in namespace ns the way the
// emulator does, configures local/32 peer peer/32, MTU 1500 and
// txqueuelen 10000, wraps it with New and registers its Close. It skips
// the test if the kernel or the privileges do not allow TUN devices.
func newTun(t *testing.T, ns string, vnet bool, local, peer netip.Addr) *Device {
	t.Helper()
	var dev *Device
	var link *netlink.Tuntap
	err := netns.Do(ns, func() error {
		flags := netlink.TUNTAP_NO_PI | netlink.TUNTAP_ONE_QUEUE
		if vnet {
			flags |= netlink.TUNTAP_VNET_HDR
		}
		link = &netlink.Tuntap{
			LinkAttrs:  netlink.LinkAttrs{Name: tunName},
			Mode:       netlink.TUNTAP_MODE_TUN,
			Flags:      flags,
			NonPersist: true,
			Queues:     1,
		}
		if err := netlink.LinkAdd(link); err != nil {
			return fmt.Errorf("create tun: %w", err)
		}
		if !vnet {
			return nil
		}
		d, err := New(link.Fds[0], tunName)
		if err != nil {
			return err
		}
		dev = d
		if err := netlink.LinkSetMTU(link, 1500); err != nil {
			return fmt.Errorf("set mtu: %w", err)
		}
		if err := netlink.LinkSetTxQLen(link, 10000); err != nil {
			return fmt.Errorf("set txqueuelen: %w", err)
		}
		addr := &netlink.Addr{
			IPNet: &net.IPNet{IP: local.AsSlice(), Mask: net.CIDRMask(32, 32)},
			Peer:  &net.IPNet{IP: peer.AsSlice(), Mask: net.CIDRMask(32, 32)},
		}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("add address: %w", err)
		}
		if err := netlink.LinkSetUp(link); err != nil {
			return fmt.Errorf("set up: %w", err)
		}
		return nil
	})
	if dev != nil {
		t.Cleanup(func() { dev.Close() })
	} else if link != nil {
		for _, f := range link.Fds {
			f.Close()
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			t.Skipf("skipping: cannot create TUN devices here: %v", err)
		}
		t.Fatalf("%s: %v", ns, err)
	}
	return dev
}

// copyStats counts what a copier saw. Fields are updated by the copier
// goroutine and read after it stopped (or atomically).
type copyStats struct {
	frames, gso, big, maxLen  atomic.Int64
	split, dropped, finished  atomic.Int64
	corrupted                 atomic.Int64
	errMu                     sync.Mutex
	inspectErrs, writeErrs    int
	firstInspect, firstWrite  error
	maxSegs, segsInGSOFrames  atomic.Int64
	offloadFlagsSeen, gsoSeen atomic.Uint64 // bit sets of vnet flags and gso types seen
	// partialChecked and partialBad count TCP frames with NEEDS_CSUM and
	// those whose checksum field was not the pseudo-header sum.
	partialChecked, partialBad atomic.Int64
}

func (s *copyStats) inspectErr(err error, frame []byte) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.inspectErrs++
	if s.firstInspect == nil {
		s.firstInspect = fmt.Errorf("%w (frame %x)", err, frame[:min(len(frame), 80)])
	}
}

func (s *copyStats) writeErr(err error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.writeErrs++
	if s.firstWrite == nil {
		s.firstWrite = err
	}
}

// transform decides what to write for one frame read; it writes with w.
type transform func(frame []byte, info Info, w func([]byte) error) error

func passThrough(frame []byte, _ Info, w func([]byte) error) error { return w(frame) }

// copier copies frames from src to dst through xf until src is closed.
func copier(src, dst Dev, st *copyStats, xf transform, wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]byte, MaxFrameLen)
	write := func(f []byte) error {
		_, err := dst.Write(f)
		return err
	}
	for {
		n, err := src.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				st.writeErr(fmt.Errorf("read %s: %w", src.Name(), err))
			}
			return
		}
		frame := buf[:n]
		info, err := Inspect(frame)
		if err != nil {
			st.inspectErr(err, frame)
			continue
		}
		st.frames.Add(1)
		st.offloadFlagsSeen.Or(1 << info.Hdr.Flags)
		st.gsoSeen.Or(1 << (info.Hdr.GSOType & 0x3f))
		if int64(n) > st.maxLen.Load() {
			st.maxLen.Store(int64(n))
		}
		if info.IPLen > 1500 {
			st.big.Add(1)
		}
		if info.IsGSO() {
			st.gso.Add(1)
			st.segsInGSOFrames.Add(int64(info.NumSegs))
			if int64(info.NumSegs) > st.maxSegs.Load() {
				st.maxSegs.Store(int64(info.NumSegs))
			}
		}
		if info.Proto == ProtoTCP && info.Hdr.Flags&FlagNeedsCsum != 0 {
			st.partialChecked.Add(1)
			field := binary.BigEndian.Uint16(frame[VirtioNetHdrLen+info.IPHeaderLen+16:])
			if field != pseudo(info.Src, info.Dst, ProtoTCP, info.IPLen-info.IPHeaderLen) {
				st.partialBad.Add(1)
			}
		}
		if err := xf(frame, info, write); err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			st.writeErr(err)
		}
	}
}

// splitter returns a transform that cuts every super-packet into 2 or 3
// runs of random sizes, keeping every segment unless dropEvery > 0, in
// which case it drops the middle segment of every dropEvery-th
// super-packet of at least 3 segments (at most maxDrops times). Single
// segment runs get a complete checksum and no NEEDS_CSUM flag, so the
// receiving kernel verifies them; the first one is also sent once with a
// corrupted payload, which the kernel must reject.
func splitter(st *copyStats, seed uint64, dropEvery, maxDrops int) transform {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out [][]byte
	var runs []linkemu.Run
	gsoCount := 0
	return func(frame []byte, info Info, w func([]byte) error) error {
		if !info.IsGSO() || info.Proto != ProtoTCP {
			return w(frame)
		}
		n := info.NumSegs
		runs = runs[:0]
		if dropEvery > 0 {
			if n < 3 {
				return w(frame)
			}
			gsoCount++
			if gsoCount%dropEvery != 0 || st.dropped.Load() >= int64(maxDrops) {
				return w(frame)
			}
			mid := n / 2
			runs = append(runs, linkemu.Run{First: 0, Count: mid}, linkemu.Run{First: mid + 1, Count: n - mid - 1})
			st.dropped.Add(1)
		} else {
			// 2 or 3 runs covering every segment.
			parts := min(2+rng.IntN(2), n)
			cuts := []int{0}
			for len(cuts) < parts {
				c := 1 + rng.IntN(n-1)
				dup := false
				for _, x := range cuts {
					dup = dup || x == c
				}
				if !dup {
					cuts = append(cuts, c)
				}
			}
			cuts = append(cuts, n)
			sortInts(cuts)
			for k := 0; k+1 < len(cuts); k++ {
				runs = append(runs, linkemu.Run{First: cuts[k], Count: cuts[k+1] - cuts[k]})
			}
		}
		var err error
		out, err = splitRuns(frame, runs, out)
		if err != nil {
			return err
		}
		st.split.Add(1)
		for k, f := range out {
			if runs[k].Count == 1 {
				if err := finishChecksum(f); err != nil {
					return err
				}
				st.finished.Add(1)
				if st.corrupted.Load() == 0 && len(f) > VirtioNetHdrLen+info.HeaderLen {
					bad := append([]byte(nil), f...)
					bad[len(bad)-1] ^= 0x5a
					st.corrupted.Add(1)
					if err := w(bad); err != nil {
						return err
					}
				}
			}
			if err := w(f); err != nil {
				return err
			}
		}
		return nil
	}
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// dataPlane is two namespaces joined by the test's copiers.
type dataPlane struct {
	client, server string // namespace names
	cdev, sdev     *Device
	up, down       copyStats // client->server, server->client
	wg             sync.WaitGroup
	stopOnce       sync.Once
}

// newDataPlane sets up the namespaces, devices and copiers. upXF, if not
// nil, makes the client->server transform (given that direction's stats);
// server->client frames pass through unchanged.
func newDataPlane(t *testing.T, upXF func(*copyStats) transform) *dataPlane {
	t.Helper()
	p := &dataPlane{client: nstest.New(t), server: nstest.New(t)}
	p.cdev = newTun(t, p.client, true, clientAddr, serverAddr)
	p.sdev = newTun(t, p.server, true, serverAddr, clientAddr)
	up := transform(passThrough)
	if upXF != nil {
		up = upXF(&p.up)
	}
	p.wg.Add(2)
	go copier(p.cdev, p.sdev, &p.up, up, &p.wg)
	go copier(p.sdev, p.cdev, &p.down, passThrough, &p.wg)
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop closes both devices and waits for the copiers to return.
func (p *dataPlane) stop(t *testing.T) {
	p.stopOnce.Do(func() {
		p.cdev.Close()
		p.sdev.Close()
		done := make(chan struct{})
		go func() { p.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("copier goroutines still running 5s after Close")
		}
	})
}

// transfer sends size bytes of pseudo-random data over TCP from the client
// namespace to a listener in the server namespace and checks that they
// arrive intact. It returns the elapsed time.
func (p *dataPlane) transfer(t *testing.T, size int64, timeout time.Duration) time.Duration {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var ln net.Listener
	if err := netns.Do(p.server, func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(serverAddr, 0).String())
		return err
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()

	type result struct {
		n   int64
		sum [32]byte
		err error
	}
	res := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			res <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(deadline)
		h := sha256.New()
		n, err := io.Copy(h, c)
		var r result
		r.n, r.err = n, err
		copy(r.sum[:], h.Sum(nil))
		res <- r
	}()

	var conn net.Conn
	if err := netns.Do(p.client, func() (err error) {
		conn, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(deadline)

	start := time.Now()
	src := rand.NewChaCha8([32]byte{'l', 'o', 'n', 'g', 'h', 'a', 'u', 'l'})
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(conn, h), 1<<20)
	if _, err := io.CopyN(w, src, size); err != nil {
		t.Fatalf("send: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("send: %v", err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatalf("close write: %v", err)
	}
	var r result
	select {
	case r = <-res:
	case <-time.After(time.Until(deadline) + time.Second):
		t.Fatalf("receiver did not finish within %v", timeout)
	}
	elapsed := time.Since(start)
	if r.err != nil {
		t.Fatalf("receive: %v after %d bytes", r.err, r.n)
	}
	if r.n != size {
		t.Fatalf("received %d bytes, sent %d", r.n, size)
	}
	if want := h.Sum(nil); string(want) != string(r.sum[:]) {
		t.Fatalf("received data hash %x, sent %x", r.sum, want)
	}
	return elapsed
}

// tcpCounter reads a Tcp counter of /proc/net/snmp in namespace ns.
func tcpCounter(t *testing.T, ns, name string) int64 {
	t.Helper()
	var v int64 = -1
	err := netns.Do(ns, func() error {
		b, err := os.ReadFile("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		var keys []string
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] != "Tcp:" {
				continue
			}
			if keys == nil {
				keys = f
				continue
			}
			for i, k := range keys {
				if k == name && i < len(f) {
					v, err = strconv.ParseInt(f[i], 10, 64)
					return err
				}
			}
		}
		return fmt.Errorf("no Tcp counter %s", name)
	})
	if err != nil {
		t.Fatalf("read Tcp %s in %s: %v", name, ns, err)
	}
	return v
}

func (p *dataPlane) checkClean(t *testing.T) {
	t.Helper()
	for _, d := range []struct {
		name string
		st   *copyStats
	}{{"client->server", &p.up}, {"server->client", &p.down}} {
		if bad := d.st.partialBad.Load(); bad > 0 {
			t.Errorf("%s: %d of %d TCP frames with NEEDS_CSUM had a checksum field other than the pseudo-header sum", d.name, bad, d.st.partialChecked.Load())
		}
		d.st.errMu.Lock()
		if d.st.inspectErrs > 0 {
			t.Errorf("%s: %d frames failed Inspect; first: %v", d.name, d.st.inspectErrs, d.st.firstInspect)
		}
		if d.st.writeErrs > 0 {
			t.Errorf("%s: %d write errors; first: %v", d.name, d.st.writeErrs, d.st.firstWrite)
		}
		d.st.errMu.Unlock()
	}
}

func (p *dataPlane) logStats(t *testing.T, elapsed time.Duration, size int64) {
	t.Helper()
	st := &p.up
	avg := 0.0
	if g := st.gso.Load(); g > 0 {
		avg = float64(st.segsInGSOFrames.Load()) / float64(g)
	}
	t.Logf("offloads %s; %d MB in %v (%.1f Gbit/s); client->server: %d frames, %d GSO (avg %.1f, max %d segments), %d over 1500 bytes, largest frame %d bytes; %d split, %d dropped, %d checksummed in software; server->client: %d frames, largest %d",
		OffloadString(p.cdev.Offloads()), size>>20, elapsed.Round(time.Millisecond), float64(size)*8/elapsed.Seconds()/1e9,
		st.frames.Load(), st.gso.Load(), avg, st.maxSegs.Load(), st.big.Load(), st.maxLen.Load(),
		st.split.Load(), st.dropped.Load(), st.finished.Load(), p.down.frames.Load(), p.down.maxLen.Load())
}

const transferSize = 64 << 20

func TestDataPlanePassThrough(t *testing.T) {
	p := newDataPlane(t, nil)
	if got := p.cdev.Offloads() & offloadsBase; got != offloadsBase {
		t.Errorf("offloads %s, want at least %s", OffloadString(p.cdev.Offloads()), OffloadString(offloadsBase))
	}
	elapsed := p.transfer(t, transferSize, 60*time.Second)
	p.stop(t)
	p.logStats(t, elapsed, transferSize)
	p.checkClean(t)
	if p.up.big.Load() == 0 || p.up.maxLen.Load() <= 1500+VirtioNetHdrLen {
		t.Errorf("no frame over 1500 bytes seen on the copy path (largest %d): TSO is not in effect", p.up.maxLen.Load())
	}
	if p.up.gso.Load() == 0 {
		t.Errorf("no GSO super-packet seen on the copy path")
	}
	if p.up.partialChecked.Load() == 0 {
		t.Errorf("no TCP frame with NEEDS_CSUM seen: checksum offload is not in effect")
	}
}

func TestDataPlaneSplitKeepsAll(t *testing.T) {
	p := newDataPlane(t, func(s *copyStats) transform { return splitter(s, 1, 0, 0) })
	before := tcpCounter(t, p.server, "InCsumErrors")
	elapsed := p.transfer(t, transferSize, 60*time.Second)
	p.stop(t)
	p.logStats(t, elapsed, transferSize)
	p.checkClean(t)
	if p.up.split.Load() == 0 {
		t.Fatalf("no super-packet was split")
	}
	if p.up.finished.Load() == 0 {
		t.Errorf("no single-segment run was written with a software checksum")
	}
	// Single segments went out with full checksums that the receiver
	// verified; only the one deliberately corrupted copy may fail.
	if got := tcpCounter(t, p.server, "InCsumErrors") - before; got != p.up.corrupted.Load() {
		t.Errorf("receiver counted %d TCP checksum errors, want %d (the deliberately corrupted copy)", got, p.up.corrupted.Load())
	}
}

func TestDataPlaneDropMiddleSegment(t *testing.T) {
	p := newDataPlane(t, func(s *copyStats) transform { return splitter(s, 2, 5, 200) })
	before := tcpCounter(t, p.client, "RetransSegs")
	elapsed := p.transfer(t, transferSize, 60*time.Second)
	retrans := tcpCounter(t, p.client, "RetransSegs") - before
	p.stop(t)
	p.logStats(t, elapsed, transferSize)
	p.checkClean(t)
	t.Logf("sender retransmitted %d segments for %d dropped", retrans, p.up.dropped.Load())
	if p.up.dropped.Load() == 0 {
		t.Fatalf("no segment was dropped")
	}
	if retrans < p.up.dropped.Load() {
		t.Errorf("sender retransmitted %d segments, fewer than the %d dropped", retrans, p.up.dropped.Load())
	}
}

func TestDevice(t *testing.T) {
	ns := nstest.New(t)
	dev := newTun(t, ns, true, clientAddr, serverAddr)
	if dev.Name() != tunName {
		t.Errorf("Name() = %q, want %q", dev.Name(), tunName)
	}
	t.Logf("offloads accepted: %s", OffloadString(dev.Offloads()))

	t.Run("short buffer", func(t *testing.T) {
		if _, err := dev.Read(make([]byte, 1500)); !errors.Is(err, io.ErrShortBuffer) {
			t.Errorf("Read into 1500 bytes: %v, want io.ErrShortBuffer", err)
		}
	})
	t.Run("kernel rejects a GSO frame with gso_size 0", func(t *testing.T) {
		f := build(t, spec{gso: 1000, payload: payloadBytes(3000)})
		f[4], f[5] = 0, 0
		if _, err := dev.Write(f); !errors.Is(err, unix.EINVAL) {
			t.Errorf("Write: %v, want EINVAL", err)
		}
	})
	t.Run("Close unblocks Read and removes the interface", func(t *testing.T) {
		errc := make(chan error, 1)
		go func() {
			buf := make([]byte, MaxFrameLen)
			for {
				if _, err := dev.Read(buf); err != nil {
					errc <- err
					return
				}
			}
		}()
		time.Sleep(50 * time.Millisecond)
		if err := dev.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case err := <-errc:
			if !errors.Is(err, os.ErrClosed) {
				t.Errorf("Read after Close: %v, want os.ErrClosed", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Read still blocked 2s after Close")
		}
		if err := dev.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := dev.Write(make([]byte, 40)); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Write after Close: %v, want os.ErrClosed", err)
		}
		var lerr error
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			lerr = netns.Do(ns, func() error {
				_, err := netlink.LinkByName(tunName)
				return err
			})
			if lerr != nil {
				break
			}
		}
		var notFound netlink.LinkNotFoundError
		if !errors.As(lerr, &notFound) {
			t.Errorf("interface %s still present after Close (lookup: %v)", tunName, lerr)
		}
	})
}

func TestNewRejects(t *testing.T) {
	ns := nstest.New(t)
	t.Run("no vnet header", func(t *testing.T) {
		var files []*os.File
		err := netns.Do(ns, func() error {
			link := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: "lhplain0"}, Mode: netlink.TUNTAP_MODE_TUN,
				Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_ONE_QUEUE, NonPersist: true, Queues: 1}
			err := netlink.LinkAdd(link)
			files = link.Fds
			return err
		})
		t.Cleanup(func() {
			for _, f := range files {
				f.Close()
			}
		})
		if err != nil {
			t.Skipf("cannot create TUN devices here: %v", err)
		}
		if _, err := New(files[0], ""); err == nil || !strings.Contains(err.Error(), "IFF_VNET_HDR") {
			t.Errorf("New on a TUN without IFF_VNET_HDR: %v", err)
		}
	})
	t.Run("name mismatch", func(t *testing.T) {
		var files []*os.File
		err := netns.Do(ns, func() error {
			link := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: "lhvnet0"}, Mode: netlink.TUNTAP_MODE_TUN,
				Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR | netlink.TUNTAP_ONE_QUEUE, NonPersist: true, Queues: 1}
			err := netlink.LinkAdd(link)
			files = link.Fds
			return err
		})
		t.Cleanup(func() {
			for _, f := range files {
				f.Close()
			}
		})
		if err != nil {
			t.Skipf("cannot create TUN devices here: %v", err)
		}
		if _, err := New(files[0], "other0"); err == nil || !strings.Contains(err.Error(), `attached to device "lhvnet0"`) {
			t.Errorf("New with the wrong name: %v", err)
		}
		// On error New leaves f open and usable.
		d, err := New(files[0], "")
		if err != nil {
			t.Fatalf("New after a failed New: %v", err)
		}
		if d.Name() != "lhvnet0" {
			t.Errorf("Name() = %q, want the kernel's name lhvnet0", d.Name())
		}
		d.Close()
	})
	t.Run("not a TUN file", func(t *testing.T) {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := New(f, "x"); err == nil || !strings.Contains(err.Error(), "TUNGETIFF") {
			t.Errorf("New on /dev/null: %v", err)
		}
	})
}
