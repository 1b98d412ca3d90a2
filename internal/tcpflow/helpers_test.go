package tcpflow

import (
	"bytes"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

const (
	client = ct.Client
	server = ct.Server
)

func newConv() *ct.Conv {
	return ct.NewConv(ct.NewWriter(ct.Format{}, capture.LinkEthernet), "198.18.0.1:50000", "198.18.0.2:443")
}

// serverDir is the analysis of c's one flow: the server's direction, nil
// if the capture holds no single flow.
func serverDir(c *ct.Conv) *DirReport {
	an, err := Analyze(bytes.NewReader(c.W.Bytes()), Options{})
	if err != nil || len(an.Flows) != 1 {
		return nil
	}
	for _, d := range an.Flows[0].Directions {
		if d.Sender == "198.18.0.2:443" {
			return &d
		}
	}
	return nil
}

// analyze runs the analyzer over the conversation's capture.
func analyze(t *testing.T, c *ct.Conv, opts Options) *Analysis {
	t.Helper()
	an, err := Analyze(bytes.NewReader(c.W.Bytes()), opts)
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	if len(an.Flows) == 0 {
		t.Fatal("no flows")
	}
	return an
}

// windowed plays a bulk transfer of total bytes from snd in flights of
// at most win bytes (segments of mss) over a path of rtt, with the
// capture at the given vantage: "sender" sees data then the ACK an RTT
// later; "receiver" sees the ACK right after the data and the next
// flight an RTT later.
func windowed(c *ct.Conv, snd ct.Side, total, win, mss int, rtt time.Duration, vantage string) {
	rcv := 1 - snd
	for sent := 0; sent < total; {
		flight := 0
		for flight+mss <= win && sent < total {
			n := min(mss, total-sent)
			c.Data(snd, n)
			c.Advance(10 * time.Microsecond)
			flight += n
			sent += n
		}
		if vantage == "sender" {
			c.Advance(rtt)
			c.AckAll(rcv)
			c.Advance(10 * time.Microsecond)
		} else {
			c.Advance(100 * time.Microsecond)
			c.AckAll(rcv)
			c.Advance(rtt)
		}
	}
}

// handshake plays SYN, SYN-ACK, ACK for a path of rtt at the vantage.
func handshake(c *ct.Conv, synOpts, synAckOpts ct.Opts, rtt time.Duration, vantage string) {
	near := 50 * time.Microsecond
	switch vantage {
	case "sender", "client":
		c.Handshake(synOpts, synAckOpts, rtt, near)
	case "receiver", "server":
		c.Handshake(synOpts, synAckOpts, near, rtt)
	default:
		c.Handshake(synOpts, synAckOpts, rtt/2, rtt/2)
	}
}

// rounds plays a bulk transfer from the sender's vantage: in round k the
// sender sends flights[k] bytes in mss segments, the ACK comes rtts[k]
// later (the last RTT repeats).
func rounds(c *ct.Conv, snd ct.Side, flights []int, mss int, rtts []time.Duration) {
	for k, f := range flights {
		flight(c, snd, f, mss)
		c.Advance(rtts[min(k, len(rtts)-1)])
		c.AckAll(1 - snd)
		c.Advance(5 * time.Microsecond)
	}
}

// flight sends n bytes from snd in segments of mss, 5 µs apart.
func flight(c *ct.Conv, snd ct.Side, n, mss int) {
	for sent := 0; sent < n; sent += mss {
		c.Data(snd, min(mss, n-sent))
		c.Advance(5 * time.Microsecond)
	}
}

func repeat(n, v int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func hasFlag(fl []string, f string) bool {
	for _, x := range fl {
		if x == f {
			return true
		}
	}
	return false
}

// dirOf returns the direction whose data addr sends.
func dirOf(t *testing.T, f *FlowReport, addr string) DirReport {
	t.Helper()
	for _, d := range f.Directions {
		if d.Sender == addr {
			return d
		}
	}
	t.Fatalf("no direction sent by %s in %+v", addr, f.Directions)
	return DirReport{}
}
