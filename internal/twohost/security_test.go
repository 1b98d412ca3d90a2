//go:build linux

package twohost

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// syncBuf is a log sink safe for the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func logTo(b *syncBuf) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// rawConn dials addr and reads the hello.
func rawConn(t *testing.T, addr string) (net.Conn, wire.Hello) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	f, err := wire.ReadFrame(c, wire.MaxPreAuthFrame)
	if err != nil {
		t.Fatal(err)
	}
	var h wire.Hello
	if err := wire.Decode(f, wire.TypeHello, &h); err != nil {
		t.Fatal(err)
	}
	return c, h
}

// authMsg is a valid control auth for a hello.
func authMsg(token []byte, h wire.Hello) wire.Auth {
	a := wire.Auth{Purpose: wire.PurposeControl, ClientNonce: newNonce()}
	a.MAC = clientMAC(token, h.Nonce, a)
	return a
}

// next reads the server's next frame (an error frame as *RemoteError).
func next(t *testing.T, c net.Conn) (wire.Frame, error) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := wire.ReadFrame(c, wire.MaxServerFrame)
	if err != nil {
		return f, err
	}
	if re := wire.AsError(f); re != nil {
		return f, re
	}
	return f, nil
}

func wantRefusal(t *testing.T, err error, code string) {
	t.Helper()
	var re *wire.RemoteError
	if !errors.As(err, &re) || re.Code != code {
		t.Fatalf("got %v; want a %q refusal", err, code)
	}
}

// startSession authenticates and starts a session on a raw connection.
func startSession(t *testing.T, addr string) (net.Conn, wire.Accepted) {
	t.Helper()
	c, h := rawConn(t, addr)
	if err := wire.WriteMsg(c, wire.TypeAuth, authMsg(testToken, h)); err != nil {
		t.Fatal(err)
	}
	if _, err := next(t, c); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteMsg(c, wire.TypeStart, wire.Start{Software: "test"}); err != nil {
		t.Fatal(err)
	}
	f, err := next(t, c)
	if err != nil {
		t.Fatal(err)
	}
	var acc wire.Accepted
	if err := wire.Decode(f, wire.TypeAccepted, &acc); err != nil {
		t.Fatal(err)
	}
	return c, acc
}

func TestNoDataBeforeAuth(t *testing.T) {
	addr := startServer(t, ServerConfig{})
	t.Run("start without auth", func(t *testing.T) {
		c, _ := rawConn(t, addr)
		if err := wire.WriteMsg(c, wire.TypeStart, wire.Start{Software: "x"}); err != nil {
			t.Fatal(err)
		}
		_, err := next(t, c)
		wantRefusal(t, err, wire.CodeRequest)
		if _, err := next(t, c); err == nil {
			t.Fatal("the server kept talking after refusing")
		}
	})
	t.Run("data connection with a wrong token", func(t *testing.T) {
		_, acc := startSession(t, addr)
		c, h := rawConn(t, addr)
		a := wire.Auth{Purpose: wire.PurposeData, ClientNonce: newNonce(), Session: acc.Session, Phase: 1}
		a.MAC = clientMAC([]byte("not-the-token-0123456789"), h.Nonce, a)
		if err := wire.WriteMsg(c, wire.TypeAuth, a); err != nil {
			t.Fatal(err)
		}
		_, err := next(t, c)
		wantRefusal(t, err, wire.CodeAuth)
		n, _ := io.Copy(io.Discard, c)
		if n != 0 {
			t.Errorf("%d bytes after refusing", n)
		}
	})
	t.Run("nothing but hello until auth", func(t *testing.T) {
		c, _ := rawConn(t, addr)
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := c.Read(make([]byte, 1))
		if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read %d bytes (%v) before auth; want nothing", n, err)
		}
	})
}

func TestWrongTokenAndReplay(t *testing.T) {
	logs := &syncBuf{}
	addr := startServer(t, ServerConfig{Log: logTo(logs)})
	t.Run("wrong token", func(t *testing.T) {
		_, err := Run(context.Background(), ClientOptions{Addr: addr, Token: []byte("another-token-0123456789"), Download: true, Snapshot: fakeSnap, Rounds: 1})
		wantRefusal(t, err, wire.CodeAuth)
		if !strings.Contains(err.Error(), "wrong token") {
			t.Errorf("error %q does not say why", err)
		}
	})
	t.Run("replayed handshake", func(t *testing.T) {
		c1, h1 := rawConn(t, addr)
		a := authMsg(testToken, h1)
		if err := wire.WriteMsg(c1, wire.TypeAuth, a); err != nil {
			t.Fatal(err)
		}
		if _, err := next(t, c1); err != nil {
			t.Fatalf("the original handshake: %v", err)
		}
		c2, _ := rawConn(t, addr)
		if err := wire.WriteMsg(c2, wire.TypeAuth, a); err != nil { // the same bytes on a new connection
			t.Fatal(err)
		}
		_, err := next(t, c2)
		wantRefusal(t, err, wire.CodeAuth)
	})
	if !strings.Contains(logs.String(), "reason=\"handshake: wrong token") {
		t.Errorf("refusals not logged:\n%s", logs)
	}
}

func TestServerProvesToken(t *testing.T) {
	// A server with another token cannot pass for the real one.
	addr := startServer(t, ServerConfig{Token: []byte("the-impostor's-token-0123")})
	_, err := Run(context.Background(), ClientOptions{Addr: addr, Token: testToken, Download: true, Snapshot: fakeSnap, Rounds: 1})
	if err == nil || !strings.Contains(err.Error(), "authentication") {
		t.Fatalf("got %v; want an authentication failure", err)
	}
}

func TestSecondClientBusy(t *testing.T) {
	addr := startServer(t, ServerConfig{MaxClients: 1, Caps: testdoc.Caps{MaxDurationS: 30}})
	c, _ := startSession(t, addr)
	_, err := Run(context.Background(), ClientOptions{Addr: addr, Token: testToken, Download: true, Snapshot: fakeSnap, Rounds: 1})
	var re *wire.RemoteError
	if !errors.As(err, &re) || re.Code != wire.CodeBusy || re.RetryAfterS < 1 || re.RetryAfterS > 30 {
		t.Fatalf("got %v; want busy with a retry after 1..30 s", err)
	}
	if !strings.Contains(err.Error(), "retry after") {
		t.Errorf("%q does not say when to retry", err)
	}
	// Once the first test ends, the next one runs.
	_ = wire.WriteMsg(c, wire.TypeBye, nil)
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err = Run(context.Background(), ClientOptions{Addr: addr, Token: testToken, Download: true, Duration: 300 * time.Millisecond, Snapshot: fakeSnap})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("after the first test ended: %v", err)
	}
}

func TestSilentClientDropped(t *testing.T) {
	addr := startServer(t, ServerConfig{HandshakeTimeout: 300 * time.Millisecond, IdleTimeout: 400 * time.Millisecond})
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) net.Conn
		max   time.Duration
	}{
		{"before auth", func(t *testing.T) net.Conn { c, _ := rawConn(t, addr); return c }, 2 * time.Second},
		{"after start", func(t *testing.T) net.Conn { c, _ := startSession(t, addr); return c }, 2 * time.Second},
		{"half a length prefix", func(t *testing.T) net.Conn {
			c, _ := rawConn(t, addr)
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
	addr := startServer(t, ServerConfig{Caps: caps})
	c, acc := startSession(t, addr)
	if acc.Caps != caps {
		t.Errorf("caps announced %+v, want %+v", acc.Caps, caps)
	}
	if err := wire.WriteMsg(c, wire.TypePhase, wire.PhaseReq{Name: wire.PhaseDownload, Streams: wire.MaxStreams, DurationS: 3600, RateBps: 1e12}); err != nil {
		t.Fatal(err)
	}
	f, err := next(t, c)
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
		f, err := next(t, c)
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
	a := wire.Auth{Purpose: wire.PurposeData, ClientNonce: newNonce(), Session: session, Phase: phase, Stream: stream}
	a.MAC = clientMAC(testToken, h.Nonce, a)
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
	addr := startServer(t, ServerConfig{})
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
			c, _ := rawConn(t, addr)
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			_, err := next(t, c)
			wantRefusal(t, err, tc.code)
		})
	}
	t.Run("after start", func(t *testing.T) {
		c, _ := startSession(t, addr)
		if _, err := c.Write(frame(`{"v":1,"type":"phase","body":{"name":"download","streams":-1,"duration_s":1e308}}`)); err != nil {
			t.Fatal(err)
		}
		_, err := next(t, c)
		wantRefusal(t, err, wire.CodeRequest)
	})
}

func TestAllow(t *testing.T) {
	logs := &syncBuf{}
	addr := startServer(t, ServerConfig{Allow: mustPrefixes("198.51.100.0/24"), Log: logTo(logs)})
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
