package iperf3

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var record = flag.Bool("record", false, "record testdata/*.exchange against the installed iperf3 (server and client)")

// recordCase is one recorded exchange: how the real server and the real
// client were run. Every client asks for the server's output, as ours does.
type recordCase struct {
	name       string
	serverArgs []string
	clientArgs []string
	busy       bool // record a second client while the first one runs
}

var recordCases = []recordCase{
	{name: "forward-1", clientArgs: []string{"-t", "1"}},
	{name: "forward-2", clientArgs: []string{"-t", "1", "-P", "2"}},
	{name: "reverse-1", clientArgs: []string{"-t", "1", "-R"}},
	{name: "reverse-2", clientArgs: []string{"-t", "1", "-R", "-P", "2"}},
	{name: "forward-2-json", serverArgs: []string{"-J"}, clientArgs: []string{"-t", "1", "-P", "2"}},
	{name: "reverse-2-json", serverArgs: []string{"-J"}, clientArgs: []string{"-t", "1", "-R", "-P", "2"}},
	{name: "busy", clientArgs: []string{"-t", "1"}, busy: true},
}

// TestRecord re-records testdata/*.exchange: the real iperf3 client talks
// to the real iperf3 server through recordingProxy on loopback. The
// replay tests read these files; run it again only to change them.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record testdata/*.exchange with the installed iperf3")
	}
	version, err := exec.Command("iperf3", "--version").Output()
	if err != nil {
		t.Skip("iperf3 is not installed")
	}
	ver, _, _ := strings.Cut(string(version), "\n")
	for _, c := range recordCases {
		t.Run(c.name, func(t *testing.T) {
			srv := startIperf3(t, c.serverArgs...)
			p := newRecordingProxy(t, srv.addr)
			args := append([]string{"-c", "127.0.0.1", "-p", fmt.Sprint(p.port()), "--get-server-output"}, c.clientArgs...)
			if c.busy {
				// The first client goes to the server directly and runs
				// long enough for the second, recorded one to be refused.
				_, sport, _ := net.SplitHostPort(srv.addr)
				first := exec.Command("iperf3", "-c", "127.0.0.1", "-p", sport, "-t", "3")
				if err := first.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { first.Process.Kill(); first.Wait() })
				time.Sleep(time.Second)
			}
			out, err := exec.Command("iperf3", args...).CombinedOutput()
			if err != nil && !c.busy {
				t.Fatalf("iperf3 %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			x := p.exchange(t)
			x.comments = append([]string{
				fmt.Sprintf("recorded on loopback with %s", ver),
				fmt.Sprintf("server: iperf3 -s -1 %s", strings.Join(c.serverArgs, " ")),
				fmt.Sprintf("client: iperf3 -c HOST --get-server-output %s", strings.Join(c.clientArgs, " ")),
				"c = client to server, s = server to client; data connections not recorded",
			}, x.comments...)
			if err := x.write(filepath.Join("testdata", c.name+".exchange")); err != nil {
				t.Fatal(err)
			}
			t.Logf("client said:\n%s", out)
		})
	}
}

// recordingProxy forwards every connection to the server and records the
// first connection carrying each new cookie: a control connection. Data
// connections repeat their test's cookie and are forwarded unrecorded.
type recordingProxy struct {
	l       net.Listener
	server  string
	mu      sync.Mutex
	cookies map[string]bool
	ctrl    []chunk // the first control connection's bytes, in order
	wg      sync.WaitGroup
}

type chunk struct {
	from string
	b    []byte // nil: this direction ended
}

func newRecordingProxy(t *testing.T, server string) *recordingProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{l: l, server: server, cookies: map[string]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() { l.Close(); p.wg.Wait() })
	return p
}

func (p *recordingProxy) port() int { return p.l.Addr().(*net.TCPAddr).Port }

func (p *recordingProxy) serve() {
	defer p.wg.Done()
	first := true
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func(c net.Conn, first bool) {
			defer p.wg.Done()
			p.proxy(c, first)
		}(c, first)
		first = false
	}
}

func (p *recordingProxy) proxy(c net.Conn, first bool) {
	defer c.Close()
	s, err := net.Dial("tcp", p.server)
	if err != nil {
		return
	}
	defer s.Close()
	cookie := make([]byte, cookieLen)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := io.ReadFull(c, cookie)
	c.SetReadDeadline(time.Time{})
	p.mu.Lock()
	seen := p.cookies[string(cookie[:n])]
	p.cookies[string(cookie[:n])] = true
	rec := !seen && (first || len(p.ctrl) == 0)
	p.mu.Unlock()
	if !seen && !first {
		// A second control connection (the busy case): record it instead
		// of the first, which went to the server directly.
		p.mu.Lock()
		p.ctrl = nil
		rec = true
		p.mu.Unlock()
	}
	if rec {
		p.add("c", cookie[:n])
	}
	s.Write(cookie[:n])
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(from string, dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if rec {
					p.add(from, buf[:n])
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		if rec {
			p.add(from, nil)
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}
	go pipe("c", s, c)
	go pipe("s", c, s)
	wg.Wait()
}

func (p *recordingProxy) add(from string, b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var cp []byte
	if b != nil {
		cp = append([]byte{}, b...)
	}
	p.ctrl = append(p.ctrl, chunk{from: from, b: cp})
}

// exchange waits for the recorded control connection to end both ways and
// turns its bytes into messages.
func (p *recordingProxy) exchange(t *testing.T) *exchange {
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		ended := 0
		for _, c := range p.ctrl {
			if c.b == nil {
				ended++
			}
		}
		p.mu.Unlock()
		if ended == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recorded control connection did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	toks := map[string]*tokenizer{"c": {from: "c"}, "s": {from: "s"}}
	x := &exchange{}
	for _, c := range p.ctrl {
		tk := toks[c.from]
		tk.buf = append(tk.buf, c.b...)
		x.msgs = append(x.msgs, tk.next(c.b == nil)...)
		if c.b == nil {
			x.msgs = append(x.msgs, xmsg{from: c.from, kind: "eof"})
		}
	}
	return x
}
