package iperf3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Options says what test to run against which server.
type Options struct {
	// Addr is the server: host or host:port (port 5201 when absent).
	Addr string
	// Streams is the number of parallel TCP streams, 1 to 128 (0: 1).
	Streams int
	// Reverse makes the server send and this host receive (a download).
	Reverse bool
	// Duration is how long the data flows (0: 10 s). The server is told
	// the whole seconds above it; this end decides when the test ends.
	Duration time.Duration
	// BlockSize is the size of each write on a data connection, for both
	// ends (0: 128 KiB, iperf3's default; at most 1 MiB, its maximum).
	BlockSize int
	// DialTimeout bounds each connection's dial (0: 10 s).
	DialTimeout time.Duration
	// StateTimeout bounds each wait for the server's next message (0: 10 s).
	StateTimeout time.Duration
	// Dial opens the control and data connections (nil: net.Dialer); tests
	// and network namespaces put their own here.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnStreams is called once the server said TEST_RUNNING, before any
	// data flows, with the data connections in stream order, so the caller
	// can sample their tcp_info while they run. It must return promptly;
	// the stop it returns (may be nil) is called when the data stops, before
	// the connections close.
	OnStreams func(conns []net.Conn) (stop func())
}

// Result is what one test measured, at this end and at the server.
type Result struct {
	Addr    string        // the server, as dialled
	Reverse bool          // the server sent
	Elapsed time.Duration // from TEST_RUNNING to this end's TEST_END
	Streams []Stream      // in stream order (ids 1, 3, 4, ...)

	ServerCPU CPU
	// ServerCongestion is the congestion control of the server's data
	// sockets (its "congestion_used", 3.5+ on Linux); "" when not said.
	ServerCongestion string
	// ServerVersion is the server's version ("iperf 3.12"), known only when
	// it runs with -J: the protocol does not carry it otherwise.
	ServerVersion string
	// ServerOutputJSON: the server ran with -J and its intervals carry
	// tcp_info's RTT and windows; otherwise they come from its text output.
	ServerOutputJSON bool
	// ServerOutputText is the server's text output when it sent one.
	ServerOutputText string
}

// CPU is a host's CPU use during the test, in percent, as iperf3 reports it.
type CPU struct{ Total, User, System float64 }

// Stream is one data connection.
type Stream struct {
	ID     int // iperf3's stream id
	Local  string
	Remote string
	// Bytes this end sent (forward) or received (reverse) until it sent
	// TEST_END; DrainedBytes were received after it, before the server
	// closed the stream. The server counts both.
	Bytes, DrainedBytes int64
	// ServerBytes is what the server counted: received (forward) or sent
	// (reverse). ServerRetransmits is its count of retransmitted segments
	// as the sender (reverse), -1 when it did not report them.
	ServerBytes       int64
	ServerRetransmits int64
	ServerTime        time.Duration // the server's start_time to end_time
	// Intervals from the server's output, when it sent one and it could be
	// matched to this stream (by this end's port, or else by order).
	Intervals []Interval
}

const (
	defaultPort     = "5201"
	defaultDuration = 10 * time.Second
	defaultBlock    = 128 << 10
	maxBlock        = 1 << 20 // iperf3's MAX_BLOCKSIZE
	maxDuration     = 86400 * time.Second
	defaultTimeout  = 10 * time.Second
)

func (o Options) normalize() (Options, error) {
	if o.Addr == "" {
		return o, errors.New("iperf3: no server address")
	}
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		o.Addr = net.JoinHostPort(o.Addr, defaultPort)
	}
	if o.Streams == 0 {
		o.Streams = 1
	}
	if o.Streams < 1 || o.Streams > maxStreams {
		return o, fmt.Errorf("iperf3: %d streams: iperf3 servers accept 1 to %d", o.Streams, maxStreams)
	}
	if o.Duration == 0 {
		o.Duration = defaultDuration
	}
	if o.Duration < 0 || o.Duration > maxDuration {
		return o, fmt.Errorf("iperf3: duration %v: iperf3 servers accept up to %v", o.Duration, maxDuration)
	}
	if o.BlockSize == 0 {
		o.BlockSize = defaultBlock
	}
	if o.BlockSize < 1 || o.BlockSize > maxBlock {
		return o, fmt.Errorf("iperf3: block size %d: iperf3 servers accept 1 to %d bytes", o.BlockSize, maxBlock)
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = defaultTimeout
	}
	if o.StateTimeout <= 0 {
		o.StateTimeout = defaultTimeout
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{}).DialContext
	}
	return o, nil
}

// Bound is the longest Run takes with these options whatever the server
// does: the dials, the data, and each wait for the server between them.
func (o Options) Bound() time.Duration {
	o, err := o.normalize()
	if err != nil {
		return 0
	}
	return 2*o.DialTimeout + o.Duration + 5*o.StateTimeout
}

// run is one test's state: the connections Run must close on every path.
type run struct {
	o        Options
	ctx      context.Context
	deadline time.Time
	cookie   [cookieLen]byte
	ctrl     net.Conn
	phase    string // what the client is doing, for timeouts and closes
	waiting  int8   // the state expect waits for; 0 when not waiting

	mu         sync.Mutex
	data       []net.Conn
	ended      bool
	cookieSent bool // the server reads states from here on
	finished   bool // the server is past the test: nothing to terminate
}

// Run runs one iperf3 test against o.Addr and returns what both ends
// measured. Its errors are one line, for people: what happened and what to
// do. It returns within o.Bound() and leaves no goroutine or connection.
func Run(ctx context.Context, o Options) (*Result, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Bound())
	defer cancel()
	dl, _ := ctx.Deadline()
	r := &run{o: o, ctx: ctx, deadline: dl}
	if r.cookie, err = newCookie(); err != nil {
		return nil, err
	}
	// Closing the connections when ctx ends is what unblocks every read
	// and write below; the deadlines only make the errors say which wait.
	aborted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(aborted)
		r.abort()
	})
	defer func() {
		if !stop() {
			<-aborted
		}
		r.closeAll()
	}()
	res, err := r.test()
	if err != nil {
		return nil, err
	}
	return res, nil
}

// abort ends the test when ctx ends. A server in a test is told
// (CLIENT_TERMINATE, as iperf3's client does when interrupted) so that it
// is free for its next client at once rather than after its own timeout.
func (r *run) abort() {
	r.mu.Lock()
	c := r.ctrl
	tell := c != nil && r.cookieSent && !r.finished
	r.mu.Unlock()
	if tell {
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		c.Write([]byte{byte(stateClientTerminate)})
	}
	r.closeAll()
}

func (r *run) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if r.ctrl != nil {
		r.ctrl.Close()
	}
	for _, c := range r.data {
		c.Close()
	}
}

// track records a connection for closeAll; one opened after the end is
// closed at once.
func (r *run) track(c net.Conn, ctrl bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		c.Close()
		return false
	}
	if ctrl {
		r.ctrl = c
	} else {
		r.data = append(r.data, c)
	}
	return true
}

func (r *run) dial() (net.Conn, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.o.DialTimeout)
	defer cancel()
	return r.o.Dial(ctx, "tcp", r.o.Addr)
}
