package main

import (
	"bufio"
	"bytes"
	enc "encoding/binary"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture/capturetest"
	"github.com/longhaul/longhaul/internal/netns"
)

// bigCapture writes a pcap of one long transfer (data and ACK records cut
// at 64 bytes) of about size bytes: long enough that analyze is still
// reading when the signal comes.
func bigCapture(t *testing.T, size int64) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "big.pcap")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	hdr := capturetest.NewWriter(capturetest.Format{}, 1).Bytes() // Ethernet
	w.Write(hdr)
	cl, sv := netip.MustParseAddrPort("198.18.0.1:40000"), netip.MustParseAddrPort("198.18.0.2:443")
	data := capturetest.Ether(capturetest.TCP{Src: cl, Dst: sv, Flags: 0x18, Window: 1000, Payload: 1448}.IP())
	ack := capturetest.Ether(capturetest.TCP{Src: sv, Dst: cl, Flags: 0x10, Window: 1000}.IP())
	rec := make([]byte, 16)
	put := func(usec int64, frame []byte, seqOff int, seq, ackNo uint32) {
		n := min(len(frame), 64)
		enc.LittleEndian.PutUint32(rec[0:], uint32(usec/1e6))
		enc.LittleEndian.PutUint32(rec[4:], uint32(usec%1e6))
		enc.LittleEndian.PutUint32(rec[8:], uint32(n))
		enc.LittleEndian.PutUint32(rec[12:], uint32(len(frame)))
		enc.BigEndian.PutUint32(frame[seqOff:], seq)
		enc.BigEndian.PutUint32(frame[seqOff+4:], ackNo)
		w.Write(rec)
		w.Write(frame[:n])
	}
	const tcpOff = 14 + 20 + 4 // Ethernet, IPv4, ports
	var seq uint32 = 1
	for written := int64(len(hdr)); written < size; written += 2 * (16 + 64) {
		usec := int64(seq/1448) * 10
		put(usec, data, tcpOff, seq, 1)
		seq += 1448
		put(usec+5, ack, tcpOff, 1, seq)
	}
	if err := w.Flush(); err != nil || f.Close() != nil {
		t.Fatal(err)
	}
	return name
}

// interrupt starts bin with args, sends SIGINT after wait (or once
// ready reports true), and returns the exit status and how long the
// command took to exit after the signal.
func interrupt(t *testing.T, bin string, wait time.Duration, ready func(stderr string) bool, args ...string) (int, time.Duration, string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout = &out
	return interruptCmd(t, cmd, wait, ready)
}

// interruptCmd is interrupt for a command set up by the caller (its
// standard input, its output); it sets Stderr.
func interruptCmd(t *testing.T, cmd *exec.Cmd, wait time.Duration, ready func(stderr string) bool) (int, time.Duration, string) {
	t.Helper()
	args := cmd.Args[1:]
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) && (ready == nil || !ready(errOut.String())) {
		select {
		case err := <-done:
			t.Fatalf("%s ended before the signal (%v): the test proves nothing\n%s", args[0], err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	sent := time.Now()
	_ = cmd.Process.Signal(os.Interrupt)
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s still running 10 s after SIGINT", args[0])
	}
	took := time.Since(sent)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, took, errOut.String()
	}
	return ee.ExitCode(), took, errOut.String()
}

// TestIntegrationInterrupt sends SIGINT to each long-running command and
// wants it gone within 1 s with status 130, leaving no namespace behind.
func TestIntegrationInterrupt(t *testing.T) {
	bin, prefix := emulateEnv(t, "nginx", "curl")
	hostCC(t)
	pathUp := func(s string) bool { return strings.Contains(s, "path up") }
	for _, tc := range []struct {
		name  string
		args  []string
		wait  time.Duration
		ready func(string) bool
	}{
		{"analyze", []string{"analyze", bigCapture(t, 1<<30)}, 150 * time.Millisecond, nil},
		{"emulate", []string{"emulate", "--prefix", prefix, "--rtt", "10ms", "--", "sleep", "60"}, 10 * time.Second, pathUp},
		{"lab", []string{"lab", "buffers", "--quick", "--prefix", prefix, "--case", "both-64M", "-o", filepath.Join(t.TempDir(), "lab")}, 4 * time.Second, nil},
		{"flows watch", []string{"flows", "--watch", "--interval", "5s"}, 500 * time.Millisecond, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, took, errOut := interrupt(t, bin, tc.wait, tc.ready, tc.args...)
			if code != 130 || took > time.Second {
				t.Errorf("exit %d %v after SIGINT; want 130 within 1 s\n%s", code, took.Round(time.Millisecond), errOut)
			}
			if left, _ := netns.List(prefix + "-"); len(left) > 0 {
				t.Errorf("namespaces left behind: %v", left)
			}
		})
	}
	// report on a results file being read: a large one, interrupted while
	// reading.
	t.Run("report", func(t *testing.T) {
		res := filepath.Join(t.TempDir(), "results.jsonl")
		f, err := os.Create(res)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		w.WriteString(`{"kind":"header","schema":"longhaul.lab/v1","scenario":"buffers"}` + "\n")
		line := `{"kind":"run","scenario":"buffers","case":"c","valid":true,"notes":["` + strings.Repeat("x", 1<<20) + `"]}` + "\n"
		for i := 0; i < 1500; i++ {
			w.WriteString(line)
		}
		if err := w.Flush(); err != nil || f.Close() != nil {
			t.Fatal(err)
		}
		code, took, errOut := interrupt(t, bin, 100*time.Millisecond, nil, "report", res, "-o", filepath.Join(t.TempDir(), "r.html"))
		if code != 130 || took > time.Second {
			t.Errorf("exit %d %v after SIGINT; want 130 within 1 s\n%s", code, took.Round(time.Millisecond), errOut)
		}
	})

}

// TestInterruptPipes: commands reading a document or a capture from a
// pipe (a FIFO, a shell's <(...), standard input) wait for a writer or
// for data; SIGINT ends the wait within 1 s with status 130, and analyze
// prints the flows it read before.
func TestInterruptPipes(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	fifo := func(name string, hold bool) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		if hold { // a writer that never writes
			go func() {
				if w, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
					t.Cleanup(func() { w.Close() })
				}
			}()
		}
		return p
	}
	silent := func(cmd *exec.Cmd, head []byte) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.Write(head)
		cmd.Stdin = r
		t.Cleanup(func() { r.Close(); w.Close() })
	}
	capture := capturetest.NewConv(capturetest.NewWriter(capturetest.Format{}, 1), "198.18.0.1:40000", "198.18.0.2:443")
	capture.Handshake(nil, nil, time.Millisecond, time.Millisecond)
	capture.Data(capturetest.Client, 1000)
	for _, tc := range []struct {
		name  string
		args  []string
		stdin []byte // a silent pipe on standard input after these bytes
		want  string // on stdout
	}{
		{name: "audit snapshot fifo, no writer", args: []string{"audit", "--snapshot", fifo("snap", false)}},
		{name: "apply fifo, silent writer", args: []string{"apply", fifo("plan", true)}},
		{name: "plan snapshot stdin, silent", args: []string{"plan", "--snapshot", "-", "--rtt", "200ms", "--rate", "1Gbit/s"}, stdin: []byte{}},
		{name: "analyze stdin, silent after one flow", args: []string{"analyze", "-"}, stdin: capture.W.Bytes(), want: "1 TCP flow(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := exec.Command(bin, tc.args...)
			cmd.Stdout = &out
			if tc.stdin != nil {
				silent(cmd, tc.stdin)
			}
			code, took, errOut := interruptCmd(t, cmd, 300*time.Millisecond, nil)
			if code != 130 || took > time.Second || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d %v after SIGINT, stderr %q; want 130 within 1 s and one line", code, took.Round(time.Millisecond), errOut)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("stdout %q; want %q in it", out.String(), tc.want)
			}
		})
	}
}
