package iperf3

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Interval is one reporting interval (a second, by default) of one stream
// as the server reported it in its output. Fields the server did not
// report are -1: Retransmits, SndCwnd, SndWnd, RTT and RTTVar come from the
// server's tcp_info and appear only when the server sends (reverse mode)
// on a system that has them (Linux); SndWnd from 3.10, RTTVar from 3.5;
// RTT, RTTVar, SndWnd and PMTU only in JSON output (-J), not in text.
type Interval struct {
	Start, End    time.Duration // from the start of the server's test
	Bytes         int64         // bytes the server sent or received in it
	BitsPerSecond float64
	Sender        bool  // the server sent on this stream
	Omitted       bool  // inside iperf's --omit period (never asked by us)
	Retransmits   int64 // segments the server retransmitted in the interval
	SndCwnd       int64 // the server's congestion window at the end, bytes
	SndWnd        int64 // the window its peer (this host) advertised, bytes
	RTT, RTTVar   time.Duration
	PMTU          int // 0 when not reported
	// FromText: parsed from text output, where sizes are rounded to three
	// significant digits ("431 MBytes").
	FromText bool
}

// serverOutput is the part of a -J server's output document we read.
type serverOutput struct {
	Start struct {
		Connected []struct {
			Socket     int `json:"socket"`
			RemotePort int `json:"remote_port"`
		} `json:"connected"`
		Version string `json:"version"`
	} `json:"start"`
	Intervals []struct {
		Streams []jsonInterval `json:"streams"`
	} `json:"intervals"`
	End struct {
		SenderCongestion   string `json:"sender_tcp_congestion"`
		ReceiverCongestion string `json:"receiver_tcp_congestion"`
	} `json:"end"`
	Error string `json:"error"`
}

// jsonInterval uses pointers: absent and zero mean different things.
type jsonInterval struct {
	Socket        int      `json:"socket"`
	Start         float64  `json:"start"`
	End           float64  `json:"end"`
	Bytes         float64  `json:"bytes"`
	BitsPerSecond float64  `json:"bits_per_second"`
	Retransmits   *float64 `json:"retransmits"`
	SndCwnd       *float64 `json:"snd_cwnd"`
	SndWnd        *float64 `json:"snd_wnd"`
	RTT           *float64 `json:"rtt"`    // microseconds
	RTTVar        *float64 `json:"rttvar"` // microseconds
	PMTU          *float64 `json:"pmtu"`
	Omitted       bool     `json:"omitted"`
	Sender        bool     `json:"sender"`
}

// parsedOutput is the server output reduced to what Result carries:
// intervals per server socket, and the socket of each peer port so the
// intervals can be given to our streams.
type parsedOutput struct {
	version   string
	portOf    map[int]int // server socket -> remote (our local) port
	sockets   []int       // in the order the server accepted them
	intervals map[int][]Interval
	errText   string
}

// maxIntervals bounds what one document may make us keep: an hour of
// one-second intervals for the most streams a server accepts.
const maxIntervals = 3600 * maxStreams

func parseJSONOutput(raw json.RawMessage) (*parsedOutput, error) {
	var o serverOutput
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("server_output_json: %v", err)
	}
	p := &parsedOutput{version: o.Start.Version, portOf: map[int]int{}, intervals: map[int][]Interval{}, errText: o.Error}
	for _, c := range o.Start.Connected {
		if _, dup := p.portOf[c.Socket]; !dup {
			p.sockets = append(p.sockets, c.Socket)
		}
		p.portOf[c.Socket] = c.RemotePort
	}
	n := 0
	for _, iv := range o.Intervals {
		for _, s := range iv.Streams {
			if n++; n > maxIntervals {
				return nil, fmt.Errorf("server_output_json: over %d intervals", maxIntervals)
			}
			p.intervals[s.Socket] = append(p.intervals[s.Socket], Interval{
				Start:         seconds(s.Start),
				End:           seconds(s.End),
				Bytes:         count(&s.Bytes),
				BitsPerSecond: s.BitsPerSecond,
				Sender:        s.Sender,
				Omitted:       s.Omitted,
				Retransmits:   count(s.Retransmits),
				SndCwnd:       count(s.SndCwnd),
				SndWnd:        count(s.SndWnd),
				RTT:           micros(s.RTT),
				RTTVar:        micros(s.RTTVar),
				PMTU:          int(max(count(s.PMTU), 0)),
			})
		}
	}
	return p, nil
}

// count turns a JSON number into a count: -1 when absent, negative, not a
// whole number or beyond 2^53. iperf 3.12's cJSON prints -1 ("not known")
// as 18446744073709551615, so those must read as -1 too.
func count(v *float64) int64 {
	if v == nil || *v < 0 || *v > 1<<53 || *v != math.Trunc(*v) {
		return -1
	}
	return int64(*v)
}

func seconds(v float64) time.Duration {
	if math.IsNaN(v) || v < 0 || v > 1e6 {
		return 0
	}
	return time.Duration(v * float64(time.Second))
}

func micros(v *float64) time.Duration {
	c := count(v)
	if c < 0 || c > 1e9 {
		return -1
	}
	return time.Duration(c) * time.Microsecond
}

// The lines of iperf3's text output we read (as 3.12 prints them):
//
//	[  5] local 127.0.0.1 port 35159 connected to 127.0.0.1 port 57434
//	[  5]   0.00-1.00   sec   431 MBytes  3.62 Gbits/sec    7   2.25 MBytes
//
// Summary lines end in "sender" or "receiver" and are not intervals.
var (
	textConnected = regexp.MustCompile(`^\[\s*(\d+)\] local \S+ port \d+ connected to \S+ port (\d+)`)
	textInterval  = regexp.MustCompile(`^\[\s*(\d+)\]\s+([\d.]+)-([\d.]+)\s+sec\s+([\d.]+) ([KMGT]?)Bytes\s+([\d.]+) ([KMGT]?)bits/sec(?:\s+(\d+)(?:\s+([\d.]+) ([KMGT]?)Bytes)?)?\s*$`)
)

// parseTextOutput reads what a server without -J sends: its text output.
// Intervals are kept; the rest is for people and is left alone.
func parseTextOutput(text string) *parsedOutput {
	p := &parsedOutput{portOf: map[int]int{}, intervals: map[int][]Interval{}}
	n := 0
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if m := textConnected.FindStringSubmatch(line); m != nil {
			sock, _ := strconv.Atoi(m[1])
			port, _ := strconv.Atoi(m[2])
			if _, dup := p.portOf[sock]; !dup {
				p.sockets = append(p.sockets, sock)
			}
			p.portOf[sock] = port
			continue
		}
		m := textInterval.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if n++; n > maxIntervals {
			break
		}
		sock, _ := strconv.Atoi(m[1])
		iv := Interval{
			Start:         seconds(atof(m[2])),
			End:           seconds(atof(m[3])),
			Bytes:         scaled(m[4], m[5], 1024),
			BitsPerSecond: float64(max(scaled(m[6], m[7], 1000), 0)),
			Retransmits:   -1,
			SndCwnd:       -1,
			SndWnd:        -1,
			RTT:           -1,
			RTTVar:        -1,
			FromText:      true,
		}
		// Only a sender prints Retr (and Cwnd where tcp_info has it).
		if m[8] != "" {
			iv.Sender = true
			iv.Retransmits, _ = strconv.ParseInt(m[8], 10, 64)
		}
		if m[9] != "" {
			iv.SndCwnd = scaled(m[9], m[10], 1024)
		}
		p.intervals[sock] = append(p.intervals[sock], iv)
	}
	return p
}

func atof(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}

// scaled reads "431" "M" as iperf prints sizes: K, M, G, T are powers of
// 1024 for bytes and of 1000 for bits. -1 when it does not fit.
func scaled(num, unit string, base float64) int64 {
	v := atof(num)
	if unit != "" {
		for range strings.Index("KMGT", unit) + 1 {
			v *= base
		}
	}
	if v < 0 || v > 1<<62 {
		return -1
	}
	return int64(v)
}
