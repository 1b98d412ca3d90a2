//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/netns/nstest"
)

// underTest is the binary these tests run: the tree's own
// build, or LONGHAUL_TEST_BINARY (a build of an older commit, to see a
// test fail without the fix it checks).
func underTest(t *testing.T) string {
	if b := os.Getenv("LONGHAUL_TEST_BINARY"); b != "" {
		t.Logf("running %s (LONGHAUL_TEST_BINARY)", b)
		return b
	}
	return binary(t)
}

// startExporter runs bin's exporter on addr (with the extra flags) until
// the test ends (SIGTERM by PID), waits until it serves, and logs the end
// of its log if the test failed.
func startExporter(t *testing.T, bin, addr string, extra ...string) *lockedBuf {
	t.Helper()
	logs := &lockedBuf{}
	exp := exec.Command(bin, append([]string{"exporter", "--listen", addr, "--interval", "1s"}, extra...)...)
	exp.Stderr = logs
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exp.Process.Signal(syscall.SIGTERM)
		_ = exp.Wait()
		if t.Failed() {
			l := logs.String()
			t.Logf("exporter log (its end):\n%s", l[max(len(l)-6000, 0):])
		}
	})
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "serving metrics"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("exporter not serving:\n%s", logs.String())
		}
	}
	return logs
}

// keepAlive connects from src, makes one HTTP/1.1 request on the
// connection, reads the whole answer and returns the connection still
// open: an idle keep-alive, as a scraper leaves one between two scrapes.
// nil when the exporter refused or did not answer within 1 s.
func keepAlive(src, addr string) net.Conn {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil
	}
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		c.Close()
		return nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		c.Close()
		return nil
	}
	_ = c.SetDeadline(time.Time{})
	return c
}

// holdKeepAlives opens n keep-alives from each source, one after the
// other as scrapers come, for at most 5 s, and returns those the
// exporter answered; they are closed when the test ends.
func holdKeepAlives(t *testing.T, addr string, n int, srcs ...string) []net.Conn {
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	end := time.Now().Add(5 * time.Second)
	for range n {
		for _, src := range srcs {
			if time.Now().After(end) {
				return held
			}
			if c := keepAlive(src, addr); c != nil {
				held = append(held, c)
			}
		}
	}
	return held
}

// stillOpen counts the connections the exporter has not closed.
func stillOpen(conns []net.Conn) int {
	n := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		var b [1]byte
		if _, err := c.Read(b[:]); errors.Is(err, os.ErrDeadlineExceeded) {
			n++
		}
		_ = c.SetReadDeadline(time.Time{})
	}
	return n
}

// scrapeFrom fetches /metrics from src on a new connection, as a scraper
// that reconnects does; it returns how long the answer took.
func scrapeFrom(src, addr string) (time.Duration, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}, Timeout: 2 * time.Second}
	t0 := time.Now()
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return time.Since(t0), err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(t0)
	switch {
	case err != nil:
		return took, err
	case resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "longhaul_"):
		return took, fmt.Errorf("status %d, %d bytes without longhaul_ metrics", resp.StatusCode, len(body))
	}
	return took, nil
}

// Keep-alive connections that each made a request and went idle do not
// keep scrapers out (16 of them timed every scrape out for 60 s: the old
// cap counted them until the exporter's idle timeout). The flood test's
// connections send nothing, which the header timeout frees anyway; these
// completed a request, as real scrapers' connections have.
func TestIntegrationExporterKeepAlives(t *testing.T) {
	nstest.New(t) // root: the exporter reads sock_diag
	bin := underTest(t)
	for _, tc := range []struct {
		name string
		srcs []string
	}{
		// One address holding 20: its share is a few, the rest refused.
		{"one source", []string{"127.0.0.2"}},
		// 20 addresses holding 4 each: more than the exporter takes in
		// all, so the longest idle ones must make room.
		{"many sources", loopbackSources("127.0.0.", 10, 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freePort(t)
			logs := startExporter(t, bin, addr)
			per := 20 / len(tc.srcs)
			if per < 4 {
				per = 4
			}
			held := holdKeepAlives(t, addr, per, tc.srcs...)
			t.Logf("%d of %d keep-alive connections from %d address(es) answered, %d still open", len(held), per*len(tc.srcs), len(tc.srcs), stillOpen(held))
			if len(held) == 0 {
				t.Fatalf("no keep-alive connection was answered: the test proves nothing\n%s", logs)
			}
			for i, src := range []string{"127.0.0.1", "127.0.0.3", "127.0.0.1", "127.0.0.3"} {
				took, err := scrapeFrom(src, addr)
				t.Logf("scrape %d from %s: %v (%v)", i, src, took.Round(time.Millisecond), err)
				if err != nil || took > time.Second {
					t.Errorf("scrape %d from %s beside %d idle keep-alives: %v after %v; want an answer within 1 s", i, src, len(held), err, took.Round(time.Millisecond))
				}
			}
		})
	}
}

// loopbackSources returns n addresses prefix+first, prefix+first+1, ...
func loopbackSources(prefix string, first, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%d", prefix, first+i))
	}
	return out
}
