package iperf3

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"time"
)

// test runs the control state machine: connect, parameters, data streams,
// the test itself, the results, and IPERF_DONE.
func (r *run) test() (*Result, error) {
	if err := r.connect(); err != nil {
		return nil, err
	}
	if err := r.sendParams(); err != nil {
		return nil, err
	}
	addr, conns, err := r.openStreams()
	if err != nil {
		return nil, err
	}
	if err := r.expect(stateTestStart, "after the data streams opened"); err != nil {
		return nil, r.terminate(err)
	}
	if err := r.expect(stateTestRunning, "after TEST_START"); err != nil {
		return nil, r.terminate(err)
	}
	res, cpu, err := r.measure(addr, conns)
	if err != nil {
		return nil, err
	}
	if err := r.exchangeResults(res, cpu); err != nil {
		return nil, err
	}
	r.done()
	return res, nil
}

// connect opens the control connection, sends the cookie and waits for
// PARAM_EXCHANGE.
func (r *run) connect() error {
	r.phase = "connecting"
	c, err := r.dial()
	if err != nil {
		return r.fail(err, "could not connect: is an iperf3 server (iperf3 -s) running there, and is its port open?")
	}
	if !r.track(c, true) {
		return r.fail(r.ctx.Err(), "")
	}
	r.phase = "sending the cookie"
	if err := r.write(r.cookie[:]); err != nil {
		return err
	}
	r.mu.Lock()
	r.cookieSent = true
	r.mu.Unlock()
	return r.expect(stateParamExchange, "after the cookie")
}

// sendParams sends the test's parameters and waits for CREATE_STREAMS.
func (r *run) sendParams() error {
	o := r.o
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
		return r.fail(err, "")
	}
	return r.expect(stateCreateStreams, "after the parameters")
}

// measure runs the data flow on conns and returns this end's result so
// far and its CPU use; on an error the server has been told the test is over.
func (r *run) measure(addr string, conns []net.Conn) (*Result, CPU, error) {
	res := &Result{Addr: addr, Reverse: r.o.Reverse}
	for i, dc := range conns {
		res.Streams = append(res.Streams, Stream{ID: streamID(i), Local: dc.LocalAddr().String(), Remote: dc.RemoteAddr().String(), ServerRetransmits: -1})
	}
	cpu0 := processCPU()
	start := time.Now()
	if err := r.flow(conns, res); err != nil {
		return nil, CPU{}, r.terminate(err)
	}
	res.Elapsed = time.Since(start)
	cpu := cpuPercent(cpu0, processCPU(), res.Elapsed)
	return res, cpu, nil
}

// done marks the server past the test and tells it IPERF_DONE.
func (r *run) done() {
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
	// IPERF_DONE lets the server end the test cleanly; it closes the
	// control connection next, so a failed write changes nothing.
	r.ctrl.SetWriteDeadline(time.Now().Add(time.Second))
	r.ctrl.Write([]byte{byte(stateIperfDone)})
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
		return busyError{serverMsgError{fmt.Errorf("iperf3 server %s is busy running a test; try again later", r.o.Addr)}}
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
