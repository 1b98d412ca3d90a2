package iperf3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
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

func (r *run) test() (*Result, error) {
	o := r.o
	r.phase = "connecting"
	c, err := r.dial()
	if err != nil {
		return nil, r.fail(err, "could not connect: is an iperf3 server (iperf3 -s) running there, and is its port open?")
	}
	if !r.track(c, true) {
		return nil, r.fail(r.ctx.Err(), "")
	}
	r.phase = "sending the cookie"
	if err := r.write(r.cookie[:]); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.cookieSent = true
	r.mu.Unlock()
	if err := r.expect(stateParamExchange, "after the cookie"); err != nil {
		return nil, err
	}
	p := params{
		TCP:             true,
		Time:            int(math.Ceil(o.Duration.Seconds())),
		Parallel:        o.Streams,
		Reverse:         o.Reverse,
		Len:             o.BlockSize,
		PacingTimer:     1000,
		GetServerOutput: 1,
		ClientVersion:   clientVersion,
	}
	r.phase = "sending the parameters"
	r.ctrl.SetWriteDeadline(r.waitUntil())
	if err := writeJSON(r.ctrl, p); err != nil {
		return nil, r.fail(err, "")
	}
	if err := r.expect(stateCreateStreams, "after the parameters"); err != nil {
		return nil, err
	}

	// Data connections go to the address the control connection reached,
	// not to the name again: a name with several addresses could send them
	// to another server, which would refuse the cookie.
	r.phase = "opening the data streams"
	addr := r.ctrl.RemoteAddr().String()
	conns := make([]net.Conn, 0, o.Streams)
	for i := range o.Streams {
		ctx, cancel := context.WithTimeout(r.ctx, o.DialTimeout)
		dc, err := o.Dial(ctx, "tcp", addr)
		cancel()
		if err != nil {
			return nil, r.fail(err, fmt.Sprintf("could not open data stream %d of %d: does a firewall pass only the first connection?", i+1, o.Streams))
		}
		if !r.track(dc, false) {
			return nil, r.fail(r.ctx.Err(), "")
		}
		dc.SetWriteDeadline(r.waitUntil())
		if _, err := dc.Write(r.cookie[:]); err != nil {
			return nil, r.fail(err, "")
		}
		dc.SetWriteDeadline(time.Time{})
		conns = append(conns, dc)
	}
	if err := r.expect(stateTestStart, "after the data streams opened"); err != nil {
		return nil, r.terminate(err)
	}
	if err := r.expect(stateTestRunning, "after TEST_START"); err != nil {
		return nil, r.terminate(err)
	}

	res := &Result{Addr: addr, Reverse: o.Reverse}
	for i, dc := range conns {
		res.Streams = append(res.Streams, Stream{ID: streamID(i), Local: dc.LocalAddr().String(), Remote: dc.RemoteAddr().String(), ServerRetransmits: -1})
	}
	cpu0 := processCPU()
	start := time.Now()
	if err := r.flow(conns, res); err != nil {
		return nil, r.terminate(err)
	}
	res.Elapsed = time.Since(start)
	cpu := cpuPercent(cpu0, processCPU(), res.Elapsed)

	// Our results: what iperf3's client sends. A receiver has no
	// retransmissions to report (-1); a sender that does not read tcp_info
	// says so with sender_has_retransmits 0.
	doc := resultsDoc{CPUUtilTotal: cpu.Total, CPUUtilUser: cpu.User, CPUUtilSystem: cpu.System, SenderHasRetransmits: 0}
	if o.Reverse {
		doc.SenderHasRetransmits = -1
	}
	for _, s := range res.Streams {
		doc.Streams = append(doc.Streams, resultsStream{ID: s.ID, Bytes: float64(s.Bytes), Retransmits: -1, EndTime: res.Elapsed.Seconds()})
	}
	r.phase = "sending the results"
	r.ctrl.SetWriteDeadline(r.waitUntil())
	if err := writeJSON(r.ctrl, doc); err != nil {
		return nil, r.fail(err, "")
	}
	r.phase = "waiting for the server's results (after EXCHANGE_RESULTS)"
	r.ctrl.SetReadDeadline(r.waitUntil())
	body, err := readJSON(r.ctrl, maxResultsJSON)
	if err != nil {
		if errors.Is(err, errTooLong) {
			return nil, r.errorf("sent a result document too long (%v): is its output (-J) very long? try fewer streams or a shorter --duration", err)
		}
		return nil, r.fail(err, "")
	}
	if err := fillResults(res, body); err != nil {
		return nil, r.errorf("sent a malformed result document: %v", err)
	}
	if err := r.expect(stateDisplayResults, "after the results"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
	// IPERF_DONE lets the server end the test cleanly; it closes the
	// control connection next, so a failed write changes nothing.
	r.ctrl.SetWriteDeadline(time.Now().Add(time.Second))
	r.ctrl.Write([]byte{byte(stateIperfDone)})
	return res, nil
}

// flow moves the data for o.Duration, ends the test (TEST_END) and waits
// for EXCHANGE_RESULTS, draining the streams in reverse mode meanwhile as
// iperf3 does: the server may be blocked writing until it reads TEST_END.
func (r *run) flow(conns []net.Conn, res *Result) error {
	o := r.o
	var stopSampling func()
	if o.OnStreams != nil {
		stopSampling = o.OnStreams(conns)
	}
	counts := make([]int64, len(conns)) // during the test
	drained := make([]int64, len(conns))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		testEnd bool // after TEST_END, reads count as drained
	)
	streamErr := make(chan error, len(conns))
	for i, dc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, o.BlockSize)
			for {
				var n int
				var err error
				if o.Reverse {
					n, err = dc.Read(buf)
				} else {
					n, err = dc.Write(buf)
				}
				mu.Lock()
				if testEnd {
					drained[i] += int64(n)
				} else {
					counts[i] += int64(n)
				}
				ended := testEnd
				mu.Unlock()
				if err != nil {
					if !ended {
						streamErr <- fmt.Errorf("stream %d: %w", streamID(i), err)
					}
					return
				}
			}
		}()
	}
	// The server sends nothing on the control connection until it reads
	// TEST_END, unless it ends the test (SERVER_TERMINATE, SERVER_ERROR) or
	// dies; watching it makes those end the test at once.
	ctrlMsg := make(chan error, 1)
	r.ctrl.SetReadDeadline(r.deadline)
	go func() {
		var b [1]byte
		_, err := io.ReadFull(r.ctrl, b[:])
		if err == nil {
			err = r.unexpected(int8(b[0]), "during the test")
		}
		ctrlMsg <- err
	}()

	timer := time.NewTimer(o.Duration)
	defer timer.Stop()
	var failure error
	// Stop the control watcher: a deadline in the past makes its read
	// return, and then the control connection is ours again. After a
	// stream broke, give the server a moment to say why.
	watchUntil := time.Unix(1, 0)
	r.phase = "running the test"
	select {
	case <-timer.C:
	case err := <-ctrlMsg:
		ctrlMsg <- err
		failure = err
	case err := <-streamErr:
		failure = err
		watchUntil = time.Now().Add(time.Second)
	case <-r.ctx.Done():
		failure = r.ctx.Err()
	}
	if stopSampling != nil {
		stopSampling()
	}
	r.ctrl.SetReadDeadline(watchUntil)
	werr := <-ctrlMsg
	if werr != nil && !errors.Is(werr, os.ErrDeadlineExceeded) && failure == nil {
		failure = werr
	}
	if failure != nil {
		// A stream that broke usually broke because the server ended the
		// test or died: say what the control connection said, if anything.
		var se *serverError
		if errors.As(werr, &se) || (werr != nil && !errors.Is(werr, os.ErrDeadlineExceeded)) {
			failure = werr
		}
		mu.Lock()
		testEnd = true
		mu.Unlock()
		for _, dc := range conns {
			dc.SetDeadline(time.Unix(1, 0))
		}
		wg.Wait()
		return r.fail(failure, "closed the connection during the test: was it stopped, or did a middlebox drop the connection?")
	}

	mu.Lock()
	testEnd = true
	mu.Unlock()
	if !o.Reverse {
		for _, dc := range conns {
			dc.SetWriteDeadline(time.Unix(1, 0))
		}
	} else {
		for _, dc := range conns {
			dc.SetReadDeadline(r.waitUntil())
		}
	}
	r.phase = "ending the test"
	if err := r.write([]byte{byte(stateTestEnd)}); err != nil {
		for _, dc := range conns {
			dc.SetDeadline(time.Unix(1, 0))
		}
		wg.Wait()
		return err
	}
	err := r.expect(stateExchangeResults, "after TEST_END")
	// The server closed its streams before EXCHANGE_RESULTS: the readers
	// end on EOF. Should it not have, do not wait for them.
	if err != nil || !o.Reverse {
		for _, dc := range conns {
			dc.SetDeadline(time.Unix(1, 0))
		}
	}
	wg.Wait()
	for i := range res.Streams {
		res.Streams[i].Bytes = counts[i]
		res.Streams[i].DrainedBytes = drained[i]
	}
	return err
}

// fillResults puts the server's results document into res.
func fillResults(res *Result, body []byte) error {
	d, err := decodeResults(body)
	if err != nil {
		return err
	}
	res.ServerCPU = CPU{Total: d.CPUUtilTotal, User: d.CPUUtilUser, System: d.CPUUtilSystem}
	res.ServerCongestion = d.CongestionUsed
	byID := map[int]*Stream{}
	for i := range res.Streams {
		byID[res.Streams[i].ID] = &res.Streams[i]
	}
	for _, s := range d.Streams {
		st := byID[s.ID]
		if st == nil {
			return fmt.Errorf("stream id %d is not one of this test's", s.ID)
		}
		st.ServerBytes = count(&s.Bytes)
		st.ServerRetransmits = count(&s.Retransmits)
		st.ServerTime = seconds(s.EndTime) - seconds(s.StartTime)
	}
	var out *parsedOutput
	switch {
	case len(d.ServerOutputJSON) > 0 && string(d.ServerOutputJSON) != "null":
		if out, err = parseJSONOutput(d.ServerOutputJSON); err != nil {
			return err
		}
		res.ServerOutputJSON = true
		res.ServerVersion = out.version
	case d.ServerOutputText != nil:
		res.ServerOutputText = *d.ServerOutputText
		out = parseTextOutput(res.ServerOutputText)
	default:
		return nil
	}
	assignIntervals(res, out)
	return nil
}

// assignIntervals gives each stream the server's intervals for it. The
// server names its sockets and the peer port of each; that port is this
// end's local port unless a NAT changed it, and then the server's accept
// order, which is the order we dialled, still matches.
func assignIntervals(res *Result, out *parsedOutput) {
	byPort := map[int]int{}
	for i, s := range res.Streams {
		if _, p, err := net.SplitHostPort(s.Local); err == nil {
			n, _ := strconv.Atoi(p)
			byPort[n] = i
		}
	}
	matched := len(out.sockets) == len(res.Streams)
	for _, sock := range out.sockets {
		if _, ok := byPort[out.portOf[sock]]; !ok {
			matched = false
		}
	}
	for k, sock := range out.sockets {
		i := k
		if matched {
			i = byPort[out.portOf[sock]]
		}
		if i < len(res.Streams) {
			res.Streams[i].Intervals = out.intervals[sock]
		}
	}
}

// waitUntil is the deadline of one wait for the server.
func (r *run) waitUntil() time.Time {
	d := time.Now().Add(r.o.StateTimeout)
	if r.deadline.Before(d) {
		return r.deadline
	}
	return d
}

func (r *run) write(b []byte) error {
	r.ctrl.SetWriteDeadline(r.waitUntil())
	if _, err := r.ctrl.Write(b); err != nil {
		return r.fail(err, "")
	}
	return nil
}

// expect reads the server's next state and wants it to be want.
func (r *run) expect(want int8, when string) error {
	r.phase = fmt.Sprintf("waiting for %s (%s)", stateName(want), when)
	r.waiting = want
	defer func() { r.waiting = 0 }()
	r.ctrl.SetReadDeadline(r.waitUntil())
	var b [1]byte
	if _, err := io.ReadFull(r.ctrl, b[:]); err != nil {
		return r.fail(err, "")
	}
	if s := int8(b[0]); s != want {
		return r.unexpected(s, fmt.Sprintf("%s, where iperf3 sends %s", when, stateName(want)))
	}
	return nil
}

// unexpected turns a state the client did not wait for into its error.
func (r *run) unexpected(s int8, when string) error {
	switch s {
	case stateAccessDenied:
		return r.errorf("is busy running a test; try again later")
	case stateServerError:
		r.ctrl.SetReadDeadline(time.Now().Add(time.Second))
		ierr, errno, has, err := readServerErrorTail(r.ctrl)
		if err != nil {
			return r.errorf("reported an error but not which (%v)", err)
		}
		return &serverError{addr: r.o.Addr, ierr: ierr, errno: errno, hasErrno: has}
	case stateServerTerminate:
		return r.errorf("ended the test (SERVER_TERMINATE): it was stopped; try again")
	}
	if stateName(s)[0] == 'u' {
		return r.errorf("sent byte %d %s: is it an iperf3 server (>= 3.1)?", uint8(s), when)
	}
	return r.errorf("sent %s %s: is it an iperf3 server (>= 3.1)?", stateName(s), when)
}

// terminate tells the server the test is over (CLIENT_TERMINATE), as
// iperf3's client does when interrupted, so it is free for the next client
// at once rather than after its own timeout; err is returned unchanged.
func (r *run) terminate(err error) error {
	var se *serverError
	if errors.As(err, &se) {
		return err
	}
	r.ctrl.SetWriteDeadline(time.Now().Add(time.Second))
	r.ctrl.Write([]byte{byte(stateClientTerminate)})
	return err
}

func (r *run) errorf(format string, a ...any) error {
	return serverMsgError{fmt.Errorf("iperf3 server %s "+format, append([]any{r.o.Addr}, a...)...)}
}

// fail makes a connection error into the one-line error for the current
// phase: the context's end, a timeout in a named wait, a close.
func (r *run) fail(err error, hint string) error {
	var se *serverError
	if errors.As(err, &se) || isServerMessage(err) {
		return err
	}
	if r.ctx.Err() != nil {
		if errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
			return r.errorf("did not finish within %v (while %s); is the path very slow, or the server stuck?", r.o.Bound().Round(time.Second), r.phase)
		}
		return fmt.Errorf("iperf3 test with %s: %s interrupted: %w", r.o.Addr, r.phase, r.ctx.Err())
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return r.errorf("did not answer within %v while longhaul was %s; is it an iperf3 server, and is the path up?", r.o.StateTimeout, r.phase)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
		switch {
		case r.waiting == stateParamExchange:
			return r.errorf("closed the connection after the cookie: is it an iperf3 server (>= 3.1)?")
		case r.waiting == stateCreateStreams || r.phase == "sending the parameters":
			return r.errorf("closed the connection during the parameter exchange: is it an iperf3 server (>= 3.1)? if it requires authentication (iperf3 --rsa-private-key-path), longhaul does not send iperf3 credentials")
		case hint != "":
			return r.errorf("%s", hint)
		}
		return r.errorf("closed the connection while longhaul was %s: was it stopped?", r.phase)
	}
	if hint != "" {
		return r.errorf("%s (%v)", hint, oneLine(err))
	}
	return r.errorf("failed while longhaul was %s: %v", r.phase, oneLine(err))
}

// serverMsgError marks errors that already say, in full, what the server
// did: fail passes them through unchanged.
type serverMsgError struct{ error }

func isServerMessage(err error) bool {
	var m serverMsgError
	return errors.As(err, &m)
}

func oneLine(err error) string {
	s := err.Error()
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// isReset reports a connection reset or broken pipe: a server that closed
// with unread data, which is how iperf3 closes on errors.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
