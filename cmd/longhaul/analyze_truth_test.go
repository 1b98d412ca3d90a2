package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ground truth for analyze: each case builds, on an emulated path, a
// transfer whose limit is known by construction (a receiver with a tiny
// SO_RCVBUF, a reader that sleeps, a writer that dribbles, a small
// tcp_wmem, a short transfer, random loss, a bottleneck, no window
// scaling), captures it with tcpdump in the client namespace, and checks
// analyze's verdict and flags.
//
// The peers are this test binary itself (TestMain runs peerMain when
// LONGHAUL_TRUTH_PEER is set), so the cases need only tcpdump besides
// the emulator, and the socket options are set exactly.
//
// LONGHAUL_TRUTH_KEEP=DIR keeps the captures there, gzip'd, as
// CASE.pcap.gz: internal/tcpflow/testdata/truth holds one run's, judged
// by a unit test that needs no root (refresh them with
// LONGHAUL_TRUTH_KEEP=$PWD/internal/tcpflow/testdata/truth).

const truthPort = 5001

func TestMain(m *testing.M) {
	if os.Getenv("LONGHAUL_TRUTH_PEER") == "1" {
		if err := peerMain(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "peer:", err)
			if errors.Is(err, errCaptureDropped) {
				os.Exit(exitInvalid) // a busy machine's run: runEmulated runs it again
			}
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	removeBinary()
	os.Exit(code)
}

// peer is one end of a ground-truth transfer: it sends Send bytes (Chunk
// at a time, Every apart), reads whatever the other end sends (ReadChunk
// at a time, ReadDelay apart, after StartDelay), and closes when both
// halves are done.
type peer struct {
	listen, dial string
	send         int64
	chunk        int
	every        time.Duration
	readChunk    int
	readDelay    time.Duration
	startDelay   time.Duration
	rcvbuf       int
	sndbuf       int
	capture      string
	dev          string
	timeout      time.Duration
	// tolerate: a transfer that fails (a peer that stops answering) is
	// the case, not an error; netstat: write the namespace's TCP
	// counters (/proc/net/netstat, /proc/net/snmp) there at the end.
	tolerate bool
	netstat  string
	// Exchanges: parts of part bytes, each answered by reply bytes
	// after think (the dialling end sends the parts, the listening end
	// answers). deferAck: TCP_DEFER_ACCEPT on the dialling socket, so
	// Linux holds the handshake's last ACK (up to 200 ms) for data that
	// writeDelay later brings.
	parts, part, reply int
	think, writeDelay  time.Duration
	deferAck           bool
}

func peerMain(args []string) (perr error) {
	var p peer
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	fs.StringVar(&p.listen, "listen", "", "accept one connection on this address")
	fs.StringVar(&p.dial, "dial", "", "connect to this address")
	fs.Int64Var(&p.send, "send", 0, "bytes to send")
	// 16 KB writes, as most applications do: a single larger write can
	// queue more than the send buffer holds (seen on 6.18: a 256 KB
	// write with a 128 KB tcp_wmem kept 340 KB in flight).
	fs.IntVar(&p.chunk, "chunk", 16<<10, "bytes per write")
	fs.DurationVar(&p.every, "every", 0, "pause between writes")
	fs.IntVar(&p.readChunk, "read-chunk", 256<<10, "bytes per read")
	fs.DurationVar(&p.readDelay, "read-delay", 0, "pause between reads")
	fs.DurationVar(&p.startDelay, "start-delay", 0, "pause before the first read")
	fs.IntVar(&p.rcvbuf, "rcvbuf", 0, "SO_RCVBUF before listen/connect (0: autotuning)")
	fs.IntVar(&p.sndbuf, "sndbuf", 0, "SO_SNDBUF before listen/connect (0: autotuning)")
	fs.StringVar(&p.capture, "capture", "", "capture the transfer with tcpdump into this file")
	fs.StringVar(&p.dev, "dev", "lh0", "interface to capture on")
	fs.DurationVar(&p.timeout, "timeout", 30*time.Second, "give up after this long")
	fs.BoolVar(&p.tolerate, "tolerate", false, "exit 0 when the transfer fails (the peer stopped answering)")
	fs.StringVar(&p.netstat, "netstat", "", "write the namespace's TCP counters to this file at the end")
	fs.IntVar(&p.parts, "parts", 0, "exchanges: parts sent, each answered")
	fs.IntVar(&p.part, "part", 100_000, "exchanges: bytes per part")
	fs.IntVar(&p.reply, "reply", 30, "exchanges: bytes per answer")
	fs.DurationVar(&p.think, "think", 0, "exchanges: the answering end's pause before each answer")
	fs.DurationVar(&p.writeDelay, "write-delay", 0, "pause before the first write")
	fs.BoolVar(&p.deferAck, "defer-ack", false, "TCP_DEFER_ACCEPT on the dialling socket (the handshake's ACK waits for data)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	if p.capture != "" {
		td, err := startCapture(ctx, p.dev, p.capture)
		if err != nil {
			return err
		}
		defer func() {
			// Let the last ACKs and FINs reach the file.
			time.Sleep(300 * time.Millisecond)
			_ = td.cmd.Process.Signal(syscall.SIGTERM)
			_ = td.cmd.Wait()
			if n := td.dropped(); n > 0 && perr == nil {
				// Measured under load: a 6 MB upload's capture without
				// its retransmissions (SACKs, but no resent segment).
				perr = fmt.Errorf("%w: %d packets dropped by the kernel", errCaptureDropped, n)
			}
		}()
	}
	control := func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if p.rcvbuf > 0 {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, p.rcvbuf)
			}
			if serr == nil && p.sndbuf > 0 {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, p.sndbuf)
			}
			if serr == nil && p.deferAck {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpDeferAccept, 1)
			}
		})
		return errors.Join(err, serr)
	}
	var conn *net.TCPConn
	switch {
	case p.listen != "":
		lc := net.ListenConfig{Control: control}
		ln, err := lc.Listen(ctx, "tcp4", p.listen)
		if err != nil {
			return err
		}
		defer ln.Close()
		go func() { <-ctx.Done(); ln.Close() }()
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		conn = c.(*net.TCPConn)
	case p.dial != "":
		d := net.Dialer{Control: control}
		c, err := d.DialContext(ctx, "tcp4", p.dial)
		if err != nil {
			return err
		}
		conn = c.(*net.TCPConn)
	default:
		return errors.New("give -listen or -dial")
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if p.tolerate {
			// Give up on the connection before the capture is stopped,
			// so the reset is in the file.
			dl = dl.Add(-2 * time.Second)
		}
		_ = conn.SetDeadline(dl)
	}
	if p.parts > 0 {
		return exchange(conn, &p)
	}
	time.Sleep(p.writeDelay)
	// The end that sends closes its half when it is done; an end that
	// only receives closes after the other's FIN, so that the capture,
	// stopped when the client returns, holds the whole transfer.
	sent := make(chan error, 1)
	readAll := make(chan struct{})
	go func() {
		buf := make([]byte, p.chunk)
		for left := p.send; left > 0; {
			n := int(min(left, int64(len(buf))))
			if _, err := conn.Write(buf[:n]); err != nil {
				sent <- err
				return
			}
			left -= int64(n)
			if left > 0 && p.every > 0 {
				time.Sleep(p.every)
			}
		}
		if p.send == 0 {
			<-readAll
		}
		sent <- conn.CloseWrite()
	}()
	time.Sleep(p.startDelay)
	buf := make([]byte, p.readChunk)
	var rerr error
	for {
		_, err := conn.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
		if p.readDelay > 0 {
			time.Sleep(p.readDelay)
		}
	}
	close(readAll)
	err := errors.Join(<-sent, rerr)
	if p.netstat != "" {
		if werr := copyCounters(p.netstat); werr != nil {
			return werr
		}
	}
	if p.tolerate && err != nil {
		_ = conn.SetLinger(0)
		return nil
	}
	return err
}

// tcpDeferAccept is Linux's TCP_DEFER_ACCEPT (the peer runs on Linux
// only; the constant is not in package syscall for every system vet
// builds this file for).
const tcpDeferAccept = 9

// exchange plays p.parts exchanges on conn: the dialling end sends a
// part and reads the answer, the listening end reads the part, thinks
// and answers; then the dialler closes and the listener reads the EOF.
func exchange(conn *net.TCPConn, p *peer) error {
	part, reply := make([]byte, p.part), make([]byte, p.reply)
	for range p.parts {
		if p.dial != "" {
			if _, err := conn.Write(part); err != nil {
				return err
			}
			if _, err := io.ReadFull(conn, reply); err != nil {
				return err
			}
			continue
		}
		if _, err := io.ReadFull(conn, part); err != nil {
			return err
		}
		time.Sleep(p.think)
		if _, err := conn.Write(reply); err != nil {
			return err
		}
	}
	if p.dial != "" {
		return conn.CloseWrite()
	}
	_, err := io.Copy(io.Discard, conn)
	return err
}

// copyCounters writes the namespace's TCP counters (the kernel's own
// count of fast and timeout retransmissions) to file.
func copyCounters(file string) error {
	var all []byte
	for _, f := range []string{"/proc/net/netstat", "/proc/net/snmp"} {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		all = append(all, b...)
	}
	return os.WriteFile(file, all, 0o644)
}

// errCaptureDropped: tcpdump could not keep up and the capture lacks
// packets, so it is no ground truth.
var errCaptureDropped = errors.New("the capture dropped packets (a busy machine)")

// capture is a running tcpdump.
type capture struct {
	cmd   *exec.Cmd
	stats chan string // its last lines, once it has exited
}

// droppedRE is tcpdump's closing count of what the kernel dropped.
var droppedRE = regexp.MustCompile(`(\d+) packets? dropped by kernel`)

// dropped is how many packets the kernel dropped for tcpdump (after it
// exited; 0 when it did not say).
func (c *capture) dropped() int {
	select {
	case tail := <-c.stats:
		if m := droppedRE.FindStringSubmatch(tail); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	case <-time.After(2 * time.Second):
	}
	return 0
}

// startCapture runs tcpdump on dev (headers only) and returns once it
// listens.
func startCapture(ctx context.Context, dev, file string) (*capture, error) {
	cmd := exec.CommandContext(ctx, "tcpdump", "-i", dev, "-s", "128", "-U", "--immediate-mode", "-Z", "root", "-n", "-w", file,
		"tcp", "port", fmt.Sprint(truthPort))
	pr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tcpdump: %w", err)
	}
	ready := make(chan string, 1)
	c := &capture{cmd: cmd, stats: make(chan string, 1)}
	go func() {
		sc := bufio.NewScanner(pr)
		var last string
		for sc.Scan() {
			last = sc.Text()
			if strings.Contains(last, "listening on") {
				ready <- ""
				tail, _ := io.ReadAll(pr)
				c.stats <- string(tail)
				return
			}
		}
		ready <- "tcpdump exited: " + last
	}()
	select {
	case msg := <-ready:
		if msg == "" {
			return c, nil
		}
		_ = cmd.Wait()
		return nil, errors.New(msg)
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, errors.New("tcpdump did not start within 10s")
	}
}

// truthCase is one transfer with a known limit. Client is the peer in
// the client namespace (it also captures), server the one in the server
// namespace.
type truthCase struct {
	name    string
	path    []string // emulate flags: --rtt, --rate, --loss, sysctls
	server  []string // peer flags
	client  []string
	verdict string
	flags   []string // must be among the flags
	// check, if set, judges the numbers: what is wrong, or "".
	check func(f *truthFlow) string
}

var truthCases = []truthCase{
	{
		// The upload seed: the server's application sets a tiny
		// SO_RCVBUF, so it advertises a window of a few KB.
		name:    "rwnd-limited",
		path:    []string{"--rtt", "30ms", "--rate", "100Mbit/s"},
		server:  []string{"-rcvbuf", "4096"},
		client:  []string{"-send", "250000"},
		verdict: "rwnd-limited",
	},
	{
		// The reader sleeps between small reads: its buffer fills and its
		// window stays closed (under one segment: Linux never shrinks an
		// offer, so it is rarely exactly 0) or opens by what it read.
		name:    "zero-window",
		path:    []string{"--rtt", "20ms", "--rate", "100Mbit/s"},
		server:  []string{"-rcvbuf", "65536", "-read-chunk", "16384", "-read-delay", "100ms"},
		client:  []string{"-send", "500000"},
		verdict: "zero-window",
	},
	{
		// The writer dribbles 8 KB every 100 ms on an idle 100 Mbit/s path.
		name:    "app-limited",
		path:    []string{"--rtt", "20ms", "--rate", "100Mbit/s"},
		client:  []string{"-send", "240000", "-chunk", "8000", "-every", "100ms"},
		verdict: "app-limited",
	},
	{
		// The sender's tcp_wmem caps its flight far below the BDP and the
		// receiver's window; no loss, no queue. (16 KB writes: see -chunk.)
		name:    "sndbuf-limited",
		path:    []string{"--rtt", "50ms", "--rate", "100Mbit/s", "--client-sysctl", "net.ipv4.tcp_wmem=4096 65536 131072"},
		client:  []string{"-send", "5000000"},
		verdict: "sndbuf-limited",
	},
	{
		// 60 KB is over in three round trips of slow start.
		name:    "slow-start",
		path:    []string{"--rtt", "50ms", "--rate", "100Mbit/s"},
		server:  []string{"-send", "60000"},
		verdict: "slow-start",
	},
	{
		// 1% random loss on a path that could carry 100 Mbit/s; 3 MB so
		// that a lucky long slow start does not outlast the losses.
		name:    "loss-limited",
		path:    []string{"--rtt", "20ms", "--rate", "100Mbit/s", "--loss", "1%"},
		client:  []string{"-send", "3000000"},
		verdict: "loss-limited",
	},
	{
		// Large buffers on both ends; the 20 Mbit/s link is the limit.
		name: "bottleneck",
		path: []string{"--rtt", "20ms", "--rate", "20Mbit/s",
			"--client-sysctl", "net.ipv4.tcp_wmem=4096 65536 16777216", "--server-sysctl", "net.ipv4.tcp_rmem=4096 131072 16777216"},
		client:  []string{"-send", "6000000"},
		verdict: "bottleneck",
	},
	{
		// The client (the receiver of a download) has window scaling off,
		// as behind a middlebox that strips the option: its window stops
		// at 64 KB, a fifth of the BDP.
		name:    "no-window-scaling",
		path:    []string{"--rtt", "50ms", "--rate", "50Mbit/s", "--client-sysctl", "net.ipv4.tcp_window_scaling=0"},
		server:  []string{"-send", "2000000"},
		verdict: "rwnd-limited",
		flags:   []string{"no-window-scaling"},
	},
	{
		// Issue 24, class 1: the client sends 18 parts of 100 KB and
		// waits for the server's answer to each, which comes after
		// 100 ms; the client answers at once. The waiting is the server's.
		name:    "waits-on-peer",
		path:    []string{"--rtt", "10ms", "--rate", "100Mbit/s"},
		server:  []string{"-parts", "18", "-think", "100ms"},
		client:  []string{"-parts", "18"},
		verdict: "app-limited",
		flags:   []string{"waits-on-peer"},
		check: func(f *truthFlow) string {
			srv := f.dir("198.18.0.2")
			if srv == nil || srv.Turns < 17 || srv.Think < 0.095 || srv.Think > 0.13 {
				return fmt.Sprintf("the server's answers: %+v, want 18 after ~100 ms", srv)
			}
			if !strings.Contains(f.Fix, "waits on 198.18.0.2") {
				return "the fix does not name the server: " + f.Fix
			}
			return ""
		},
	},
	{
		// Issue 24, class 3: the client holds the handshake's last ACK
		// for its first data 150 ms later (TCP_DEFER_ACCEPT), so the
		// handshake's client half reads 150 ms on a 10 ms path; the
		// server's 4 KB buffer pins the flight. The RTT must fit the
		// window: ~10 ms, the 150 ms reported as ACK delay.
		name:    "rtt-fits-window",
		path:    []string{"--rtt", "10ms", "--rate", "100Mbit/s"},
		server:  []string{"-rcvbuf", "4096"},
		client:  []string{"-send", "1000000", "-defer-ack", "-write-delay", "150ms"},
		verdict: "rwnd-limited",
		check: func(f *truthFlow) string {
			d := f.dir("198.18.0.1")
			switch {
			case f.RTT < 0.009 || f.RTT > 0.013:
				return fmt.Sprintf("RTT %.4f s, want the path's 10 ms", f.RTT)
			case d == nil || d.RTTs.AckDelay < 0.12:
				return fmt.Sprintf("ACK delay not reported: %+v", d)
			case len(f.Inconsistent) > 0:
				return fmt.Sprintf("inconsistent numbers: %v", f.Inconsistent)
			}
			return ""
		},
	},
}

// truthFlow is the part of analyze --json the cases check.
type truthFlow struct {
	Server       string          `json:"server"`
	Sender       string          `json:"sender"`
	Verdict      string          `json:"verdict"`
	Share        float64         `json:"share"`
	Flags        []string        `json:"flags"`
	Shares       json.RawMessage `json:"shares"`
	Summary      string          `json:"summary"`
	Fix          string          `json:"fix"`
	RTT          float64         `json:"rtt_s"`
	Inconsistent []string        `json:"inconsistent"`
	Directions   []truthDir      `json:"directions"`
}

type truthDir struct {
	Sender  string          `json:"sender"`
	Bytes   int64           `json:"bytes"`
	RTT     json.RawMessage `json:"rtt"`
	Retrans json.RawMessage `json:"retransmissions"`
	Rwnd    json.RawMessage `json:"rwnd"`
	Scale   json.RawMessage `json:"window_scale"`
	Inflt   int64           `json:"inflight_bytes"`
	Turns   int             `json:"turns"`
	Think   float64         `json:"think_s"`
	RTTs    struct {
		AckDelay float64 `json:"ack_delay_s"`
	} `json:"-"`
}

// dir is the direction whose sender's address is addr, or nil.
func (f *truthFlow) dir(addr string) *truthDir {
	for i := range f.Directions {
		d := &f.Directions[i]
		if strings.HasPrefix(d.Sender, addr+":") {
			_ = json.Unmarshal(d.RTT, &d.RTTs)
			return d
		}
	}
	return nil
}

// runPeers runs a ground-truth transfer over an emulated path (emulate's
// flags path; cubic, Linux's default, whatever this host's default is,
// as namespaces inherit it: BBR shrugs off random loss): this test
// binary as the server peer with flags server in the server namespace,
// and as the client peer with flags client, dialling it and capturing
// the transfer. It returns the capture and how long the run took.
func runPeers(t *testing.T, bin, prefix string, path, server, client []string) (pcap string, took time.Duration) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pcap = filepath.Join(t.TempDir(), "transfer.pcap")
	srv := append([]string{self, "-listen", fmt.Sprintf(":%d", truthPort)}, server...)
	args := append([]string{"emulate", "--prefix", prefix, "--cc", "cubic"}, path...)
	args = append(args, "--server", shellJoin(srv), "--", self, "-dial", fmt.Sprintf("198.18.0.2:%d", truthPort), "-capture", pcap)
	start := time.Now()
	runEmulated(t, bin, append(args, client...)...)
	return pcap, time.Since(start)
}

func TestIntegrationAnalyzeTruth(t *testing.T) {
	bin, _ := emulateEnv(t, "tcpdump")
	keep := os.Getenv("LONGHAUL_TRUTH_KEEP")
	t.Setenv("LONGHAUL_TRUTH_PEER", "1")
	for _, tc := range truthCases {
		t.Run(tc.name, func(t *testing.T) {
			// Two cases at a time, each on its own path: they carry at
			// most 100 Mbit/s and mostly wait (0.3 of a core all told).
			t.Parallel()
			prefix := emulatePrefix(t)
			rateCase(t, func(try int) string {
				return truthRun(t, bin, prefix, tc, keep, try)
			})
		})
	}
}

// truthRun makes one run of a truth case and returns how analyze's
// verdict, flags or the case's own check are wrong ("" right).
func truthRun(t *testing.T, bin, prefix string, tc truthCase, keep string, try int) string {
	t.Helper()
	pcap, took := runPeers(t, bin, prefix, tc.path, tc.server, tc.client)
	out, errOut, code := exe(t, bin, "analyze", "--json", pcap)
	if code != 0 {
		t.Fatalf("analyze: exit %d\n%s", code, errOut)
	}
	if keep != "" {
		if err := keepCapture(pcap, filepath.Join(keep, tryName(tc.name, try)+".pcap.gz")); err != nil {
			t.Error(err)
		}
	}
	var doc struct {
		Flows []truthFlow `json:"flows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("analyze --json: %v", err)
	}
	var f *truthFlow
	for i := range doc.Flows {
		if strings.HasSuffix(doc.Flows[i].Server, fmt.Sprintf(":%d", truthPort)) {
			if f != nil {
				t.Fatalf("more than one flow to port %d in the capture", truthPort)
			}
			f = &doc.Flows[i]
		}
	}
	if f == nil {
		t.Fatalf("no flow to port %d in the capture:\n%s", truthPort, out)
	}
	got, _ := json.Marshal(f)
	t.Logf("%s in %.1fs: %s (%.0f%%) flags %v shares %s\n  %s", tc.name, took.Seconds(), f.Verdict, 100*f.Share, f.Flags, f.Shares, f.Summary)
	var wrong []string
	if msg := truthMismatch(f.Verdict, f.Flags, tc.verdict, tc.flags); msg != "" {
		wrong = append(wrong, msg)
	}
	if tc.check != nil {
		if msg := tc.check(f); msg != "" {
			wrong = append(wrong, msg)
		}
	}
	if len(wrong) == 0 {
		return ""
	}
	return strings.Join(wrong, "; ") + "\n" + string(got)
}

// truthMismatch says how a verdict and flags differ from what a case
// wants, or returns "". Flags a clean capture of an emulated path must
// never get are checked for every case.
func truthMismatch(verdict string, flags []string, want string, wantFlags []string) string {
	var bad []string
	if want != "" && verdict != want { // "": a case about the retransmissions only
		bad = append(bad, fmt.Sprintf("verdict %s, want %s", verdict, want))
	}
	for _, fl := range wantFlags {
		if !slices.Contains(flags, fl) {
			bad = append(bad, "missing flag "+fl)
		}
	}
	never := []string{"capture-drops", "hardware-duplicates", "window-scale-unknown", "mid-stream", "clock-steps", "coarse-timestamps"}
	if !slices.Contains(wantFlags, "no-window-scaling") {
		never = append(never, "no-window-scaling")
	}
	for _, fl := range never {
		if slices.Contains(flags, fl) {
			bad = append(bad, "unexpected flag "+fl)
		}
	}
	return strings.Join(bad, "; ")
}

// keepCapture writes a gzip'd copy of the capture (how the captures in
// internal/tcpflow/testdata/truth were made).
func keepCapture(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// shellJoin quotes args for sh -c.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
