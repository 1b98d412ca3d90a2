//go:build linux

package server_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

func TestNoDataBeforeAuth(t *testing.T) {
	addr := servertest.Start(t, server.ServerConfig{})
	t.Run("start without auth", func(t *testing.T) {
		c, _ := servertest.RawConn(t, addr)
		if err := wire.WriteMsg(c, wire.TypeStart, wire.Start{Software: "x"}); err != nil {
			t.Fatal(err)
		}
		_, err := servertest.Next(t, c)
		servertest.WantRefusal(t, err, wire.CodeRequest)
		if _, err := servertest.Next(t, c); err == nil {
			t.Fatal("the server kept talking after refusing")
		}
	})
	t.Run("data connection with a wrong token", func(t *testing.T) {
		_, acc := servertest.StartSession(t, addr)
		c, h := servertest.RawConn(t, addr)
		a := wire.Auth{Purpose: wire.PurposeData, ClientNonce: wire.NewNonce(), Session: acc.Session, Phase: 1}
		a.MAC = wire.ClientMAC([]byte("not-the-token-0123456789"), h.Nonce, a)
		if err := wire.WriteMsg(c, wire.TypeAuth, a); err != nil {
			t.Fatal(err)
		}
		_, err := servertest.Next(t, c)
		servertest.WantRefusal(t, err, wire.CodeAuth)
		n, _ := io.Copy(io.Discard, c)
		if n != 0 {
			t.Errorf("%d bytes after refusing", n)
		}
	})
	t.Run("nothing but hello until auth", func(t *testing.T) {
		c, _ := servertest.RawConn(t, addr)
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := c.Read(make([]byte, 1))
		if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read %d bytes (%v) before auth; want nothing", n, err)
		}
	})
}

func TestSilentClientDropped(t *testing.T) {
	addr := servertest.Start(t, server.ServerConfig{HandshakeTimeout: 300 * time.Millisecond, IdleTimeout: 400 * time.Millisecond})
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) net.Conn
		max   time.Duration
	}{
		{"before auth", func(t *testing.T) net.Conn { c, _ := servertest.RawConn(t, addr); return c }, 2 * time.Second},
		{"after start", func(t *testing.T) net.Conn { c, _ := servertest.StartSession(t, addr); return c }, 2 * time.Second},
		{"half a length prefix", func(t *testing.T) net.Conn {
			c, _ := servertest.RawConn(t, addr)
			_, _ = c.Write([]byte{0, 0})
			return c
		}, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.setup(t)
			t0 := time.Now()
			_ = c.SetReadDeadline(t0.Add(5 * time.Second))
			_, _ = io.Copy(io.Discard, c) // until the server closes
			if el := time.Since(t0); el > tc.max {
				t.Errorf("dropped after %v; want within %v", el, tc.max)
			}
		})
	}
}

func TestCapsEnforced(t *testing.T) {
	t.Run("duration, rate, streams", func(t *testing.T) {
		caps := testdoc.Caps{MaxDurationS: 4, MaxBytes: 1 << 30, MaxRateBps: 80e6, MaxStreams: 2}
		total, el, _ := greedy(t, caps)
		if el > time.Duration(caps.MaxDurationS*float64(time.Second))+3*time.Second {
			t.Errorf("data flowed for %v; the cap is %gs", el, caps.MaxDurationS)
		}
		if rate := float64(total) * 8 / el.Seconds(); rate > 1.1*caps.MaxRateBps || rate < 0.3*caps.MaxRateBps {
			t.Errorf("%.4g bit/s; the cap is %.4g (and loopback is much faster)", rate, caps.MaxRateBps)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		caps := testdoc.Caps{MaxDurationS: 20, MaxBytes: 4 << 20, MaxStreams: 2}
		total, el, done := greedy(t, caps)
		if total > caps.MaxBytes || total < caps.MaxBytes/2 {
			t.Errorf("%d bytes moved; the cap is %d", total, caps.MaxBytes)
		}
		if done.Reason != "bytes-cap" || el > 10*time.Second {
			t.Errorf("phase ended by %q after %v; want the byte cap, early", done.Reason, el)
		}
	})
}

// greedy asks for far more than caps allow, reads every granted stream
// (and one more) as fast as it can, and returns what it got.
func greedy(t *testing.T, caps testdoc.Caps) (int64, time.Duration, wire.PhaseDone) {
	addr := servertest.Start(t, server.ServerConfig{Caps: caps})
	c, acc := servertest.StartSession(t, addr)
	if acc.Caps != caps {
		t.Errorf("caps announced %+v, want %+v", acc.Caps, caps)
	}
	if err := wire.WriteMsg(c, wire.TypePhase, wire.PhaseReq{Name: wire.PhaseDownload, Streams: wire.MaxStreams, DurationS: 3600, RateBps: 1e12}); err != nil {
		t.Fatal(err)
	}
	f, err := servertest.Next(t, c)
	var g wire.Grant
	if err == nil {
		err = wire.Decode(f, wire.TypeGrant, &g)
	}
	if err != nil {
		t.Fatal(err)
	}
	if g.Streams > caps.MaxStreams || g.DurationS > caps.MaxDurationS || (caps.MaxRateBps > 0 && g.RateBps != caps.MaxRateBps) || g.MaxBytes > caps.MaxBytes {
		t.Errorf("granted %+v beyond the caps %+v", g, caps)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	t0 := time.Now()
	for i := 0; i <= g.Streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := greedyStream(addr, acc.Session, g.Phase, i)
			if i == g.Streams && err == nil {
				t.Errorf("stream %d beyond the grant was accepted", i)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	var done wire.PhaseDone
	for {
		f, err := servertest.Next(t, c)
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == wire.TypePhaseDone {
			if err := wire.Decode(f, wire.TypePhaseDone, &done); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	t.Logf("greedy client: %d bytes in %v, ended by %s", total, el, done.Reason)
	return total, el, done
}

// greedyStream attaches a data connection and reads all it can.
func greedyStream(addr, session string, phase, stream int) (int64, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	f, err := wire.ReadFrame(c, wire.MaxPreAuthFrame)
	var h wire.Hello
	if err == nil {
		err = wire.Decode(f, wire.TypeHello, &h)
	}
	if err != nil {
		return 0, err
	}
	a := wire.Auth{Purpose: wire.PurposeData, ClientNonce: wire.NewNonce(), Session: session, Phase: phase, Stream: stream}
	a.MAC = wire.ClientMAC(servertest.Token, h.Nonce, a)
	if err := wire.WriteMsg(c, wire.TypeAuth, a); err != nil {
		return 0, err
	}
	for _, want := range []string{wire.TypeWelcome, wire.TypeGo} {
		f, err := wire.ReadFrame(c, wire.MaxServerFrame)
		if err != nil {
			return 0, err
		}
		if re := wire.AsError(f); re != nil {
			return 0, re
		}
		if f.Type != want {
			return 0, errors.New("unexpected " + f.Type)
		}
	}
	return io.Copy(io.Discard, c)
}

func TestMalformedMessages(t *testing.T) {
	addr := servertest.Start(t, server.ServerConfig{})
	frame := func(s string) []byte {
		b := make([]byte, 4+len(s))
		binary.BigEndian.PutUint32(b, uint32(len(s)))
		copy(b[4:], s)
		return b
	}
	huge := make([]byte, 4)
	binary.BigEndian.PutUint32(huge, 1<<31)
	for _, tc := range []struct {
		name string
		send []byte
		code string
	}{
		{"huge length", huge, wire.CodeRequest},
		{"zero length", []byte{0, 0, 0, 0}, wire.CodeRequest},
		{"not json", frame("GET / HTTP/1.1"), wire.CodeRequest},
		{"another version", frame(`{"v":2,"type":"auth","body":{}}`), wire.CodeVersion},
		{"unknown type", frame(`{"v":1,"type":"shell","body":{"cmd":"id"}}`), wire.CodeRequest},
		{"auth without body", frame(`{"v":1,"type":"auth"}`), wire.CodeRequest},
		{"auth short mac", frame(`{"v":1,"type":"auth","body":{"purpose":"control","client_nonce":"AAAA","mac":"AAAA"}}`), wire.CodeRequest},
		{"trailing data", frame(`{"v":1,"type":"auth","body":{}} {}`), wire.CodeRequest},
		{"data purpose bad session", frame(`{"v":1,"type":"auth","body":{"purpose":"data","session":"../../etc/passwd"}}`), wire.CodeRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := servertest.RawConn(t, addr)
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			_, err := servertest.Next(t, c)
			servertest.WantRefusal(t, err, tc.code)
		})
	}
	t.Run("after start", func(t *testing.T) {
		c, _ := servertest.StartSession(t, addr)
		if _, err := c.Write(frame(`{"v":1,"type":"phase","body":{"name":"download","streams":-1,"duration_s":1e308}}`)); err != nil {
			t.Fatal(err)
		}
		_, err := servertest.Next(t, c)
		servertest.WantRefusal(t, err, wire.CodeRequest)
	})
}

func TestAllow(t *testing.T) {
	logs := &servertest.SyncBuf{}
	addr := servertest.Start(t, server.ServerConfig{Allow: mustPrefixes("198.51.100.0/24"), Log: servertest.LogTo(logs)})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := io.Copy(io.Discard, c)
	if n != 0 {
		t.Errorf("a refused address got %d bytes", n)
	}
	if !strings.Contains(logs.String(), "address not in --allow") {
		t.Errorf("not logged:\n%s", logs)
	}
}

func mustPrefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}
