package iperf3

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// replayServer plays the server's side of a recorded exchange against our
// client and checks, message by message, that our client sends what the
// real iperf3 client sent: the same states in the same places, a
// parameters document with the same fields and types, a results document
// with the fields iperf3 requires and the stream ids it numbered.
type replayServer struct {
	t       *testing.T
	x       *exchange
	l       net.Listener
	done    chan struct{}
	params  map[string]any
	results map[string]any
}

func newReplayServer(t *testing.T, x *exchange) *replayServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &replayServer{t: t, x: x, l: l, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.serve()
	}()
	t.Cleanup(func() { l.Close(); <-s.done })
	return s
}

func (s *replayServer) serve() {
	t := s.t
	c, err := s.l.Accept()
	if err != nil {
		t.Errorf("replay: accept: %v", err)
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var (
		cookie []byte
		data   []net.Conn
		wg     sync.WaitGroup
	)
	closeData := func() {
		for _, d := range data {
			d.Close()
		}
		wg.Wait()
		data = nil
	}
	defer closeData()
	for _, m := range s.x.msgs {
		switch {
		case m.from == "c" && m.kind == "cookie":
			cookie = make([]byte, cookieLen)
			if _, err := io.ReadFull(c, cookie); err != nil {
				t.Errorf("replay: reading the cookie: %v", err)
				return
			}
			if cookie[cookieLen-1] != 0 || strings.Trim(string(cookie[:cookieLen-1]), cookieAlphabet) != "" {
				t.Errorf("replay: cookie %q is not 36 characters of iperf's alphabet and a NUL", cookie)
			}
		case m.from == "c" && m.kind == "state":
			var b [1]byte
			if _, err := io.ReadFull(c, b[:]); err != nil {
				t.Errorf("replay: waiting for %v: %v", m, err)
				return
			}
			if int8(b[0]) != m.state {
				t.Errorf("replay: client sent state %d, the real client sent %v", int8(b[0]), m)
				return
			}
			if m.state == stateTestEnd {
				// As iperf3 does: the streams close before EXCHANGE_RESULTS.
				closeData()
			}
		case m.from == "c" && m.kind == "json":
			body, err := readJSON(c, maxResultsJSON)
			if err != nil {
				t.Errorf("replay: reading the client's document: %v", err)
				return
			}
			var ours, real map[string]any
			if err := json.Unmarshal(body, &ours); err != nil {
				t.Errorf("replay: our client's document: %v: %s", err, body)
				return
			}
			json.Unmarshal([]byte(m.text), &real)
			if _, ok := real["tcp"]; ok {
				s.params = ours
				compareParams(t, ours, real)
			} else {
				s.results = ours
				compareResults(t, ours, real)
			}
		case m.from == "s" && m.kind == "state":
			if _, err := c.Write([]byte{byte(m.state)}); err != nil {
				t.Errorf("replay: sending %v: %v", m, err)
				return
			}
			switch m.state {
			case stateCreateStreams:
				n := int(s.params["parallel"].(float64))
				for range n {
					d, err := s.l.Accept()
					if err != nil {
						t.Errorf("replay: accepting a data stream: %v", err)
						return
					}
					data = append(data, d)
					got := make([]byte, cookieLen)
					d.SetReadDeadline(time.Now().Add(5 * time.Second))
					if _, err := io.ReadFull(d, got); err != nil || string(got) != string(cookie) {
						t.Errorf("replay: data stream cookie %q (%v), want the control cookie %q", got, err, cookie)
					}
				}
			case stateTestRunning:
				reverse := s.params["reverse"] == true
				for _, d := range data {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if reverse {
							// A little data, as a slow path would bring.
							d.Write(make([]byte, 10000))
							return
						}
						io.Copy(io.Discard, d)
					}()
				}
			}
		case m.from == "s" && m.kind == "json":
			body := []byte(m.text)
			msg := make([]byte, 4+len(body))
			msg[0], msg[1], msg[2], msg[3] = byte(len(body)>>24), byte(len(body)>>16), byte(len(body)>>8), byte(len(body))
			copy(msg[4:], body)
			c.Write(msg)
		case m.from == "s" && m.kind == "eof":
			c.(*net.TCPConn).CloseWrite()
		case m.from == "c" && m.kind == "eof":
			if n, err := io.Copy(io.Discard, c); n != 0 || err != nil {
				t.Errorf("replay: after the exchange the client sent %d more bytes (%v)", n, err)
			}
		}
	}
}

// compareParams wants our parameters to be the real client's, field for
// field and type for type (a 3.17+ server checks the types), with the
// values of the same test; only client_version may differ.
func compareParams(t *testing.T, ours, real map[string]any) {
	t.Helper()
	if k1, k2 := sortedKeys(ours), sortedKeys(real); !slices.Equal(k1, k2) {
		t.Errorf("parameters: our fields %v, the real client's %v", k1, k2)
	}
	for k, v := range real {
		if k == "client_version" {
			continue
		}
		if ours[k] != v {
			t.Errorf("parameters: %s = %v, the real client sent %v", k, ours[k], v)
		}
	}
}

// compareResults wants our results document to have the real client's
// fields (congestion_used is optional: iperf3 sends it when its socket
// named one) and its streams the same ids with the same fields.
func compareResults(t *testing.T, ours, real map[string]any) {
	t.Helper()
	delete(real, "congestion_used")
	if k1, k2 := sortedKeys(ours), sortedKeys(real); !slices.Equal(k1, k2) {
		t.Errorf("results: our fields %v, the real client's %v", k1, k2)
	}
	if ours["sender_has_retransmits"] != 0.0 && ours["sender_has_retransmits"] != -1.0 {
		t.Errorf("results: sender_has_retransmits %v", ours["sender_has_retransmits"])
	}
	os, _ := ours["streams"].([]any)
	rs, _ := real["streams"].([]any)
	if len(os) != len(rs) {
		t.Fatalf("results: %d streams, the real client sent %d", len(os), len(rs))
	}
	for i := range os {
		o, r := os[i].(map[string]any), rs[i].(map[string]any)
		if k1, k2 := sortedKeys(o), sortedKeys(r); !slices.Equal(k1, k2) {
			t.Errorf("results: stream %d fields %v, the real client's %v", i, k1, k2)
		}
		if o["id"] != r["id"] {
			t.Errorf("results: stream %d id %v, the real client's %v", i, o["id"], r["id"])
		}
		if o["retransmits"] != -1.0 {
			t.Errorf("results: stream %d retransmits %v, want -1 (not measured)", i, o["retransmits"])
		}
	}
}

func sortedKeys(m map[string]any) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	slices.Sort(k)
	return k
}

// TestReplay runs our client against each recorded real server.
func TestReplay(t *testing.T) {
	for _, c := range recordCases {
		t.Run(c.name, func(t *testing.T) {
			x := readExchange(t, filepath.Join("testdata", c.name+".exchange"))
			srv := newReplayServer(t, x)
			o := Options{Addr: srv.l.Addr().String(), Duration: 300 * time.Millisecond, StateTimeout: 2 * time.Second}
			o.Reverse = slices.Contains(c.clientArgs, "-R")
			if i := slices.Index(c.clientArgs, "-P"); i >= 0 {
				o.Streams = int(c.clientArgs[i+1][0] - '0')
			}
			res, err := Run(context.Background(), o)
			<-srv.done
			if c.busy {
				want := "iperf3 server " + o.Addr + " is busy running a test; try again later"
				if err == nil || err.Error() != want {
					t.Fatalf("err = %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkReplayResult(t, x, res, o)
		})
	}
}

// checkReplayResult checks the result against the recorded server's
// results document: its byte counts, retransmissions, congestion control,
// and the intervals of its output.
func checkReplayResult(t *testing.T, x *exchange, res *Result, o Options) {
	var doc struct {
		Congestion string `json:"congestion_used"`
		Streams    []struct {
			ID          int     `json:"id"`
			Bytes       int64   `json:"bytes"`
			Retransmits float64 `json:"retransmits"`
		} `json:"streams"`
		Text *string `json:"server_output_text"`
	}
	var jsonOut bool
	for _, m := range x.msgs {
		if m.from == "s" && m.kind == "json" {
			if err := json.Unmarshal([]byte(m.text), &doc); err != nil {
				t.Fatal(err)
			}
			jsonOut = strings.Contains(m.text, `"server_output_json"`)
		}
	}
	if res.ServerCongestion != doc.Congestion {
		t.Errorf("congestion %q, the server said %q", res.ServerCongestion, doc.Congestion)
	}
	if len(res.Streams) != len(doc.Streams) {
		t.Fatalf("%d streams, the server reported %d", len(res.Streams), len(doc.Streams))
	}
	for i, s := range doc.Streams {
		got := res.Streams[i]
		if got.ID != s.ID || got.ServerBytes != s.Bytes {
			t.Errorf("stream %d: id %d server bytes %d, the server reported id %d bytes %d", i, got.ID, got.ServerBytes, s.ID, s.Bytes)
		}
		wantRetr := int64(s.Retransmits)
		if !o.Reverse {
			wantRetr = -1 // 3.12 prints -1 as 18446744073709551615
		}
		if got.ServerRetransmits != wantRetr {
			t.Errorf("stream %d: server retransmits %d, want %d", i, got.ServerRetransmits, wantRetr)
		}
		if o.Reverse && got.Bytes+got.DrainedBytes != 10000 {
			t.Errorf("stream %d: received %d+%d bytes, the fake sent 10000", i, got.Bytes, got.DrainedBytes)
		}
		if !o.Reverse && got.Bytes <= 0 {
			t.Errorf("stream %d: sent %d bytes", i, got.Bytes)
		}
	}
	if res.ServerOutputJSON != jsonOut {
		t.Errorf("ServerOutputJSON %v, want %v", res.ServerOutputJSON, jsonOut)
	}
	if jsonOut && res.ServerVersion != "iperf 3.12" {
		t.Errorf("server version %q, want iperf 3.12", res.ServerVersion)
	}
	if !jsonOut && (doc.Text == nil || res.ServerOutputText != *doc.Text) {
		t.Errorf("server output text not kept")
	}
	// The recorded server's ports are not ours: intervals are given by
	// order. Each stream gets its own, with the sender's fields in reverse.
	for i, s := range res.Streams {
		if len(s.Intervals) == 0 {
			t.Errorf("stream %d: no intervals", i)
			continue
		}
		iv := s.Intervals[0]
		if iv.Start != 0 || iv.End < 990*time.Millisecond || iv.Bytes <= 0 || iv.BitsPerSecond <= 0 || iv.FromText == jsonOut {
			t.Errorf("stream %d: first interval %+v", i, iv)
		}
		if o.Reverse != iv.Sender || o.Reverse != (iv.SndCwnd > 0) || o.Reverse != (iv.Retransmits >= 0) {
			t.Errorf("stream %d: first interval %+v in reverse=%v", i, iv, o.Reverse)
		}
		if jsonOut && o.Reverse && (iv.RTT <= 0 || iv.RTTVar <= 0 || iv.SndWnd <= 0 || iv.PMTU != 65535) {
			t.Errorf("stream %d: first interval %+v lacks the -J sender's tcp_info", i, iv)
		}
	}
}

// TestReplayTextIntervals pins the text output parse on the recorded
// reverse-2 server: "[  5]   0.00-1.00   sec   431 MBytes  3.62 Gbits/sec
// 7   2.25 MBytes" is 431 MiB, 3.62e9 bit/s, 7 retransmissions, a 2.25 MiB
// cwnd; summary lines (sender/receiver) and [SUM] are not intervals.
func TestReplayTextIntervals(t *testing.T) {
	x := readExchange(t, filepath.Join("testdata", "reverse-2.exchange"))
	var text string
	for _, m := range x.msgs {
		if m.from == "s" && m.kind == "json" {
			var d resultsDoc
			if err := json.Unmarshal([]byte(m.text), &d); err != nil {
				t.Fatal(err)
			}
			text = *d.ServerOutputText
		}
	}
	p := parseTextOutput(text)
	if !slices.Equal(p.sockets, []int{5, 8}) || p.portOf[5] != 57434 || p.portOf[8] != 57436 {
		t.Fatalf("sockets %v ports %v", p.sockets, p.portOf)
	}
	got := p.intervals[5]
	if len(got) != 2 {
		t.Fatalf("socket 5: %d intervals, want 2: %+v", len(got), got)
	}
	want := Interval{End: time.Second, Bytes: 431 << 20, BitsPerSecond: 3.62e9, Sender: true, Retransmits: 7, SndCwnd: 2.25 * (1 << 20), SndWnd: -1, RTT: -1, RTTVar: -1, FromText: true}
	if got[0] != want {
		t.Errorf("socket 5 first interval\n got %+v\nwant %+v", got[0], want)
	}
	if got[1].Bytes != 0 || got[1].SndCwnd != 2.75*(1<<20) || got[1].Start != time.Second {
		t.Errorf("socket 5 second interval %+v", got[1])
	}
	if c := p.intervals[8][1].SndCwnd; c != 1023<<10 {
		t.Errorf("socket 8 second interval cwnd %d, want 1023 KiB", c)
	}
}
