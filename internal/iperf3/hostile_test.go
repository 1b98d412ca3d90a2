package iperf3

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostile is a fake "iperf3 server": script plays the server's side on the
// control connection; l is there for the data streams.
func hostile(t *testing.T, script func(c net.Conn, l net.Listener)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		script(c, l)
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String()
}

// upTo plays a well-behaved server until TEST_RUNNING, with n streams.
func upTo(c net.Conn, l net.Listener, n int) []net.Conn {
	io.ReadFull(c, make([]byte, cookieLen))
	c.Write([]byte{byte(stateParamExchange)})
	readJSON(c, maxSmallJSON)
	c.Write([]byte{byte(stateCreateStreams)})
	var data []net.Conn
	for range n {
		d, err := l.Accept()
		if err != nil {
			return data
		}
		io.ReadFull(d, make([]byte, cookieLen))
		data = append(data, d)
	}
	c.Write([]byte{byte(stateTestStart), byte(stateTestRunning)})
	return data
}

func discard(data []net.Conn) {
	for _, d := range data {
		go io.Copy(io.Discard, d)
	}
}

func closeAllConns(data []net.Conn) {
	for _, d := range data {
		d.Close()
	}
}

// untilResults plays a server through EXCHANGE_RESULTS and reads the
// client's results.
func untilResults(c net.Conn, l net.Listener) []net.Conn {
	data := upTo(c, l, 1)
	discard(data)
	c.Read(make([]byte, 1)) // TEST_END
	closeAllConns(data)
	c.Write([]byte{byte(stateExchangeResults)})
	readJSON(c, maxSmallJSON)
	return data
}

func lengthPrefixed(s string) []byte {
	b := make([]byte, 4+len(s))
	binary.BigEndian.PutUint32(b, uint32(len(s)))
	copy(b[4:], s)
	return b
}

const goodResults = `{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":100,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":0.2}]}`

// TestHostileServers: each broken or hostile server gets one line that
// says what it did, within its time bound, without a large allocation
// and without leaving a goroutine behind.
func TestHostileServers(t *testing.T) {
	const stateTimeout = 300 * time.Millisecond
	cases := []struct {
		name    string
		reverse bool
		script  func(c net.Conn, l net.Listener)
		want    string        // a substring of the error
		within  time.Duration // Run returns within this
	}{
		{
			name: "garbage after the cookie",
			script: func(c net.Conn, l net.Listener) {
				io.ReadFull(c, make([]byte, cookieLen))
				c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			},
			want:   "sent byte 72 after the cookie, where iperf3 sends PARAM_EXCHANGE: is it an iperf3 server (>= 3.1)?",
			within: time.Second,
		},
		{
			name: "silent after the cookie",
			script: func(c net.Conn, l net.Listener) {
				io.Copy(io.Discard, c)
			},
			want:   "did not answer within 300ms while longhaul was waiting for PARAM_EXCHANGE (after the cookie)",
			within: time.Second,
		},
		{
			name: "closes after the cookie",
			script: func(c net.Conn, l net.Listener) {
				io.ReadFull(c, make([]byte, cookieLen))
			},
			want:   "closed the connection after the cookie: is it an iperf3 server (>= 3.1)?",
			within: time.Second,
		},
		{
			name: "closes during the parameter exchange",
			script: func(c net.Conn, l net.Listener) {
				io.ReadFull(c, make([]byte, cookieLen))
				c.Write([]byte{byte(stateParamExchange)})
				readJSON(c, maxSmallJSON)
			},
			want:   "closed the connection during the parameter exchange",
			within: time.Second,
		},
		{
			name: "out of order: TEST_RUNNING first",
			script: func(c net.Conn, l net.Listener) {
				io.ReadFull(c, make([]byte, cookieLen))
				c.Write([]byte{byte(stateTestRunning)})
				io.Copy(io.Discard, c)
			},
			want:   "sent TEST_RUNNING after the cookie, where iperf3 sends PARAM_EXCHANGE",
			within: time.Second,
		},
		{
			name: "out of order: results before the streams",
			script: func(c net.Conn, l net.Listener) {
				io.ReadFull(c, make([]byte, cookieLen))
				c.Write([]byte{byte(stateParamExchange)})
				readJSON(c, maxSmallJSON)
				c.Write([]byte{byte(stateExchangeResults)})
				io.Copy(io.Discard, c)
			},
			want:   "sent EXCHANGE_RESULTS after the parameters, where iperf3 sends CREATE_STREAMS",
			within: time.Second,
		},
		{
			name: "authentication required (3.12: one error number, then close)",
			script: func(c net.Conn, l net.Listener) {
				io.ReadFull(c, make([]byte, cookieLen))
				c.Write([]byte{byte(stateParamExchange)})
				readJSON(c, maxSmallJSON)
				c.Write([]byte{0xfe, 0, 0, 0, 142})
			},
			want:   "requires authentication (iperf3 --rsa-private-key-path); longhaul does not send iperf3 credentials",
			within: time.Second,
		},
		{
			name: "unknown server error (3.19: two numbers)",
			script: func(c net.Conn, l net.Listener) {
				io.ReadFull(c, make([]byte, cookieLen))
				c.Write([]byte{byte(stateParamExchange)})
				readJSON(c, maxSmallJSON)
				c.Write([]byte{0xfe, 0, 0, 0, 99, 0, 0, 0, 98})
				io.Copy(io.Discard, c)
			},
			want:   "refused the test with iperf3 error 99 (errno 98)",
			within: time.Second,
		},
		{
			name: "never opens the test after the streams",
			script: func(c net.Conn, l net.Listener) {
				io.ReadFull(c, make([]byte, cookieLen))
				c.Write([]byte{byte(stateParamExchange)})
				readJSON(c, maxSmallJSON)
				c.Write([]byte{byte(stateCreateStreams)})
				d, _ := l.Accept()
				defer d.Close()
				io.Copy(io.Discard, c)
			},
			want:   "did not answer within 300ms while longhaul was waiting for TEST_START (after the data streams opened)",
			within: time.Second,
		},
		{
			name: "closes mid-test",
			script: func(c net.Conn, l net.Listener) {
				data := upTo(c, l, 1)
				discard(data)
				time.Sleep(100 * time.Millisecond)
				closeAllConns(data)
			},
			want:   "closed the connection during the test",
			within: 2 * time.Second,
		},
		{
			name:    "stops sending mid-test in reverse, then ends it",
			reverse: true,
			script: func(c net.Conn, l net.Listener) {
				data := upTo(c, l, 1)
				data[0].Write(make([]byte, 1000))
				time.Sleep(100 * time.Millisecond)
				c.Write([]byte{byte(stateServerTerminate)})
				time.Sleep(100 * time.Millisecond)
				closeAllConns(data)
			},
			want:   "ended the test (SERVER_TERMINATE): it was stopped; try again",
			within: 2 * time.Second,
		},
		{
			name: "silent after TEST_END",
			script: func(c net.Conn, l net.Listener) {
				data := upTo(c, l, 1)
				discard(data)
				io.Copy(io.Discard, c)
				closeAllConns(data)
			},
			want:   "did not answer within 300ms while longhaul was waiting for EXCHANGE_RESULTS (after TEST_END)",
			within: 3 * time.Second,
		},
		{
			name: "huge length prefix",
			script: func(c net.Conn, l net.Listener) {
				untilResults(c, l)
				c.Write([]byte{0xff, 0xff, 0xff, 0xf0})
				io.Copy(io.Discard, c)
			},
			want:   "sent a result document too long (length prefix over the limit: 4294967280 bytes announced, at most 4194304 accepted)",
			within: 2 * time.Second,
		},
		{
			name: "announces 4 MiB, sends 10 bytes",
			script: func(c net.Conn, l net.Listener) {
				untilResults(c, l)
				c.Write([]byte{0, 0x40, 0, 0})
				c.Write([]byte("{\"cpu_util"))
				io.Copy(io.Discard, c)
			},
			want:   "did not answer within 300ms while longhaul was waiting for the server's results (after EXCHANGE_RESULTS)",
			within: 2 * time.Second,
		},
		{
			name: "garbage results",
			script: func(c net.Conn, l net.Listener) {
				untilResults(c, l)
				c.Write(lengthPrefixed(`{"cpu_util_total":1,]`))
				io.Copy(io.Discard, c)
			},
			want:   "sent a malformed result document: not a JSON object",
			within: 2 * time.Second,
		},
		{
			name: "results without streams",
			script: func(c net.Conn, l net.Listener) {
				untilResults(c, l)
				c.Write(lengthPrefixed(`{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":0}`))
				io.Copy(io.Discard, c)
			},
			want:   `sent a malformed result document: no "streams"`,
			within: 2 * time.Second,
		},
		{
			name: "results for a stream that does not exist",
			script: func(c net.Conn, l net.Listener) {
				untilResults(c, l)
				c.Write(lengthPrefixed(strings.Replace(goodResults, `"id":1`, `"id":2`, 1)))
				io.Copy(io.Discard, c)
			},
			want:   "sent a malformed result document: stream id 2 is not one of this test's",
			within: 2 * time.Second,
		},
		{
			name: "closes before DISPLAY_RESULTS",
			script: func(c net.Conn, l net.Listener) {
				untilResults(c, l)
				c.Write(lengthPrefixed(goodResults))
			},
			want:   "closed the connection while longhaul was waiting for DISPLAY_RESULTS (after the results): was it stopped?",
			within: 2 * time.Second,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := hostile(t, tc.script)
			before := runtime.NumGoroutine()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			start := time.Now()
			_, err := Run(context.Background(), Options{
				Addr: addr, Duration: 200 * time.Millisecond, StateTimeout: stateTimeout,
				DialTimeout: time.Second, BlockSize: 4096, Reverse: tc.reverse,
			})
			took := time.Since(start)
			runtime.ReadMemStats(&ms1)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "iperf3 server "+addr+" ") {
				t.Errorf("error %q\nwant one line with %q", msg, tc.want)
			}
			if took > tc.within {
				t.Errorf("took %v, want under %v", took, tc.within)
			}
			if a := ms1.TotalAlloc - ms0.TotalAlloc; a > 2<<20 {
				t.Errorf("allocated %d bytes", a)
			}
			// Run's goroutines end before it returns; the fake's may take a
			// moment to see the close.
			deadline := time.Now().Add(time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("%d goroutines after Run, %d before", n, before)
			}
		})
	}
}

// TestCancelMidTest: cancelling the context ends Run at once, and the
// server is told (CLIENT_TERMINATE) so it is free for the next client.
func TestCancelMidTest(t *testing.T) {
	got := make(chan int8, 1)
	addr := hostile(t, func(c net.Conn, l net.Listener) {
		data := upTo(c, l, 1)
		discard(data)
		defer closeAllConns(data)
		var b [1]byte
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		io.ReadFull(c, b[:])
		got <- int8(b[0])
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := Run(ctx, Options{Addr: addr, Duration: 10 * time.Second, BlockSize: 4096})
	if err == nil || !strings.Contains(err.Error(), "context canceled") || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %v, want context canceled at once", err, time.Since(start))
	}
	if s := <-got; s != stateClientTerminate {
		t.Errorf("the server got state %d, want CLIENT_TERMINATE", s)
	}
}

// TestRunBound: a server that accepts and never says anything costs each
// wait at most StateTimeout, and Run at most Options.Bound().
func TestRunBound(t *testing.T) {
	o := Options{Addr: "x", Duration: time.Second, DialTimeout: time.Second, StateTimeout: time.Second}
	if b := o.Bound(); b != 2*time.Second+time.Second+5*time.Second {
		t.Errorf("Bound %v", b)
	}
	for _, bad := range []Options{{Addr: "x", Streams: 129}, {Addr: "x", BlockSize: 2 << 20}, {Addr: "x", Duration: -1}, {}} {
		if _, err := Run(context.Background(), bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
