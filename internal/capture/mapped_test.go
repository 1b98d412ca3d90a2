//go:build unix

package capture_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

// mapFile writes b to a file and maps it.
func mapFile(t *testing.T, b []byte) (*capture.Mapping, string) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "c.pcap")
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // the mapping outlives the descriptor
	m, err := capture.MapFile(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, name
}

// trace reads every record of src through r.Guard, as tcpflow does, and
// says what it read: the time of each, what it decodes to, and the end.
// bySegment reads with NextSegment, else with Next, Decode and
// ParseOptions: the two must print the same. full adds each record's
// lengths, link and bytes, which only Next hands out (with bySegment,
// full is trace).
func trace(src io.Reader, bySegment bool) (trace, full string) {
	var out, all bytes.Buffer
	r, err := capture.Open(src)
	if err != nil {
		return "open: " + err.Error(), "open: " + err.Error()
	}
	err = r.Guard(func() error {
		var p capture.Packet
		var s capture.Segment
		var o capture.Options
		for {
			var res capture.Result
			bad := false
			if bySegment {
				var err error
				if p.Time, res, bad, err = r.NextSegment(&s, &o); err != nil {
					return err
				}
			} else {
				if err := r.Next(&p); err != nil {
					return err
				}
				if res = capture.Decode(p.LinkType, p.Data, p.OrigLen, &s); res == capture.OK {
					bad = capture.ParseOptions(s.Options, &o) != nil
				}
				fmt.Fprintf(&all, "%d %d %d %d %x ", p.CapLen, p.OrigLen, p.LinkType, p.Interface, p.Data)
			}
			line := fmt.Sprintf("%d %v", p.Time, res)
			if res == capture.OK {
				line += fmt.Sprintf(" %+v %+v %v", s, o, bad)
			}
			out.WriteString(line + "\n")
			all.WriteString(line + "\n")
		}
	})
	end := fmt.Sprintf("%s: %v", r.Format(), err)
	out.WriteString(end)
	if bySegment {
		return out.String(), out.String()
	}
	all.WriteString(end)
	return out.String(), all.String()
}

// bigFile is a capture of n records of every size up to 200 bytes, so
// that records straddle the Reader's steps and the pages.
func bigFile(f ct.Format, n int) []byte {
	w := ct.NewWriter(f, capture.LinkEthernet)
	frame := ct.Ether(seg(false).IP())
	frame = append(frame, make([]byte, 200)...)
	for i := range n {
		w.PacketOn(0, t0.Add(time.Duration(i)*time.Microsecond), frame[:20+i%180], 1500)
	}
	return w.Bytes()
}

// A mapped file reads as the same file read as a stream, to the byte and
// to the error: pcap, pcapng, gzip, cut short, not a capture.
func TestMappedReadsAsStream(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: reads two 40,000-packet files every way (20 s)")
	}
	pcap := bigFile(ct.Format{}, 40000)
	ng := bigFile(ct.Format{NG: true, Nanos: true}, 40000)
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	frame := ct.Ether(seg(true).IP())
	for i := range 100 {
		w.PacketOn(0, t0.Add(time.Duration(i)*time.Millisecond), frame, len(frame))
	}
	for name, b := range map[string][]byte{
		"pcap":          pcap,
		"pcapng":        ng,
		"gzip":          w.Gzip(),
		"cut in record": pcap[:len(pcap)-7],
		"cut in header": pcap[:len(pcap)-(len(pcap)-24)%150],
		"header only":   pcap[:24],
		"short header":  pcap[:10],
		"text":          []byte("12:00:00.000 IP 198.18.0.1.5000 > 198.18.0.2.443: Flags [S]\n"),
	} {
		t.Run(name, func(t *testing.T) {
			want, wantFull := trace(bytes.NewReader(b), false)
			for _, bySegment := range []bool{false, true} {
				m, _ := mapFile(t, b)
				got, gotFull := trace(m, bySegment)
				stream, streamFull := trace(bytes.NewReader(b), bySegment)
				want := want
				if !bySegment {
					// Next hands out each record's bytes: compare them too.
					got, stream, want = gotFull, streamFull, wantFull
				}
				if got != want {
					t.Errorf("mapped (NextSegment %v):\n%.300s\n...%s\nstream:\n%.300s\n...%s", bySegment, got, tail(got), want, tail(want))
				}
				if stream != want {
					t.Errorf("stream (NextSegment %v):\n%.300s\n...%s\nstream:\n%.300s\n...%s", bySegment, stream, tail(stream), want, tail(want))
				}
			}
		})
	}
}

func tail(s string) string { return s[max(0, len(s)-200):] }

// A file cut short while it is mapped faults on the pages it lost
// (SIGBUS): the reading ends with a truncation error, the program goes on;
// gzip too, read through the mapping as a stream.
func TestMappedFileShrinks(t *testing.T) {
	t.Run("pcap", func(t *testing.T) { shrinkWhileMapped(t, bigFile(ct.Format{}, 200000)) }) // ~20 MB: beyond the first steps
	t.Run("gzip", func(t *testing.T) { shrinkWhileMapped(t, gzipped(t, bigFile(ct.Format{}, 200000))) })
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.NoCompression) // stays ~20 MB
	if _, err := zw.Write(b); err != nil || zw.Close() != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func shrinkWhileMapped(t *testing.T, b []byte) {
	m, name := mapFile(t, b)
	r, err := capture.Open(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(name, int64(len(b)/2)); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = r.Guard(func() error {
		var p capture.Packet
		for {
			if err := r.Next(&p); err != nil {
				return err
			}
			n++
		}
	})
	var ce *capture.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, capture.ErrTruncated) || n == 0 || n >= 200000 {
		t.Fatalf("after %d packets: %v; want a truncation error half-way", n, err)
	}
	t.Logf("after %d packets: %v", n, err)
}

// Stop ends the reading of a mapped file with its error: an interruption,
// not corruption.
func TestMappedStop(t *testing.T) {
	m, _ := mapFile(t, bigFile(ct.Format{}, 40000))
	calls := 0
	m.Stop = func() error {
		if calls++; calls > 2 {
			return context.Canceled
		}
		return nil
	}
	r, err := capture.Open(m)
	if err != nil {
		t.Fatal(err)
	}
	var p capture.Packet
	for err == nil {
		err = r.Next(&p)
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, capture.ErrCorrupt) {
		t.Errorf("ends with %v, want the interruption", err)
	}
}

// Only non-empty regular files are mapped; anything else is read.
func TestMapFileRefuses(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if m, err := capture.MapFile(pr); err == nil {
		m.Close()
		t.Error("a pipe was mapped")
	}
	name := filepath.Join(t.TempDir(), "empty.pcap")
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if m, err := capture.MapFile(f); err == nil {
		m.Close()
		t.Error("an empty file was mapped")
	}
}
