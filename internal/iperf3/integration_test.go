package iperf3

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestIntegrationRealServer runs our client against Debian's iperf3 server
// on loopback: forward and reverse, 1 and 4 streams, 2 s each, with the
// server's text output (plain -s) and JSON output (-J). Our byte counts
// must match the server's, and in reverse mode (the server sends) its
// intervals must carry its congestion window, and with -J its RTT.
func TestIntegrationRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 2 s runs against a real iperf3")
	}
	for _, json := range []bool{false, true} {
		for _, reverse := range []bool{false, true} {
			for _, streams := range []int{1, 4} {
				name := fmt.Sprintf("reverse=%v/streams=%d/json=%v", reverse, streams, json)
				t.Run(name, func(t *testing.T) {
					var extra []string
					if json {
						extra = []string{"-J"}
					}
					srv := startIperf3(t, extra...)
					var sampled atomic.Int32
					res, err := Run(context.Background(), Options{
						Addr:     srv.addr,
						Streams:  streams,
						Reverse:  reverse,
						Duration: 2 * time.Second,
						OnStreams: func(conns []net.Conn) func() {
							sampled.Store(int32(len(conns)))
							return nil
						},
					})
					if err != nil {
						t.Fatal(err)
					}
					checkRealResult(t, res, streams, reverse, json)
					if int(sampled.Load()) != streams {
						t.Errorf("OnStreams saw %d connections, want %d", sampled.Load(), streams)
					}
				})
			}
		}
	}
}

func checkRealResult(t *testing.T, res *Result, streams int, reverse, json bool) {
	t.Helper()
	if len(res.Streams) != streams {
		t.Fatalf("%d streams in the result, want %d", len(res.Streams), streams)
	}
	if res.Elapsed < 2*time.Second || res.Elapsed > 3*time.Second {
		t.Errorf("elapsed %v, want about 2 s", res.Elapsed)
	}
	if res.ServerCongestion == "" {
		t.Errorf("no congestion control from a Linux server")
	}
	if res.ServerOutputJSON != json {
		t.Errorf("ServerOutputJSON %v, want %v", res.ServerOutputJSON, json)
	}
	if json && res.ServerVersion == "" {
		t.Errorf("no server version from a -J server")
	}
	if !json && res.ServerOutputText == "" {
		t.Errorf("no server output text from a plain server")
	}
	var ours, theirs int64
	for i, s := range res.Streams {
		if s.ID != streamID(i) {
			t.Errorf("stream %d: id %d, want %d", i, s.ID, streamID(i))
		}
		mine := s.Bytes + s.DrainedBytes
		ours += mine
		theirs += s.ServerBytes
		if s.Bytes < 1<<20 {
			t.Errorf("stream %d: only %d bytes in 2 s on loopback", s.ID, s.Bytes)
		}
		if reverse {
			// Every byte the server wrote arrives before its close: exact.
			if mine != s.ServerBytes {
				t.Errorf("stream %d: we received %d bytes, the server sent %d", s.ID, mine, s.ServerBytes)
			}
			if s.ServerRetransmits < 0 {
				t.Errorf("stream %d: no retransmission count from the sending server", s.ID)
			}
		} else {
			// What we wrote and the server had not read when it closed
			// the stream (our socket buffers) is the difference.
			if s.ServerBytes > mine || float64(mine-s.ServerBytes) > 0.05*float64(mine)+16<<20 {
				t.Errorf("stream %d: we sent %d bytes, the server received %d", s.ID, mine, s.ServerBytes)
			}
		}
		if len(s.Intervals) == 0 {
			t.Errorf("stream %d: no intervals from the server output", s.ID)
			continue
		}
		var sum int64
		for _, iv := range s.Intervals {
			sum += iv.Bytes
			if iv.Sender != reverse {
				t.Errorf("stream %d: interval %v-%v sender=%v in reverse=%v", s.ID, iv.Start, iv.End, iv.Sender, reverse)
			}
			if reverse {
				if iv.SndCwnd <= 0 || iv.Retransmits < 0 {
					t.Errorf("stream %d: the sending server's interval %v-%v has cwnd %d retransmits %d", s.ID, iv.Start, iv.End, iv.SndCwnd, iv.Retransmits)
				}
				if json && (iv.RTT <= 0 || iv.SndWnd <= 0 || iv.PMTU <= 0) {
					t.Errorf("stream %d: the -J server's interval %v-%v has rtt %v snd_wnd %d pmtu %d", s.ID, iv.Start, iv.End, iv.RTT, iv.SndWnd, iv.PMTU)
				}
			} else if iv.SndCwnd != -1 || iv.RTT != -1 {
				t.Errorf("stream %d: a receiving server reported cwnd %d rtt %v", s.ID, iv.SndCwnd, iv.RTT)
			}
		}
		// The intervals are the stream's bytes, to the rounding of text
		// output (three digits).
		if d := float64(sum - s.ServerBytes); d > 0.02*float64(s.ServerBytes) || d < -0.02*float64(s.ServerBytes) {
			t.Errorf("stream %d: intervals sum to %d bytes, the server counted %d", s.ID, sum, s.ServerBytes)
		}
	}
	t.Logf("ours %d theirs %d bytes, %d streams, congestion %s, version %q, elapsed %v", ours, theirs, streams, res.ServerCongestion, res.ServerVersion, res.Elapsed)
}
