package iperf3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// openStreams opens o.Streams data connections, each sending the cookie,
// and returns them with the address they went to.
func (r *run) openStreams() (string, []net.Conn, error) {
	o := r.o
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
			return "", nil, r.fail(err, fmt.Sprintf("could not open data stream %d of %d: does a firewall pass only the first connection?", i+1, o.Streams))
		}
		if !r.track(dc, false) {
			return "", nil, r.fail(r.ctx.Err(), "")
		}
		dc.SetWriteDeadline(r.waitUntil())
		if _, err := dc.Write(r.cookie[:]); err != nil {
			return "", nil, r.fail(err, "")
		}
		dc.SetWriteDeadline(time.Time{})
		conns = append(conns, dc)
	}
	return addr, conns, nil
}

// streamSet is the data streams while they run: one goroutine each,
// counting the bytes moved before TEST_END and those drained after it.
type streamSet struct {
	conns   []net.Conn
	counts  []int64 // during the test
	drained []int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	testEnd bool // after TEST_END, reads count as drained
	errs    chan error
}

// startStreams starts moving data on every connection.
func startStreams(conns []net.Conn, o Options) *streamSet {
	s := &streamSet{
		conns:   conns,
		counts:  make([]int64, len(conns)),
		drained: make([]int64, len(conns)),
		errs:    make(chan error, len(conns)),
	}
	for i, dc := range conns {
		s.wg.Add(1)
		go s.pump(i, dc, o)
	}
	return s
}

// pump writes (forward) or reads (reverse) one stream until it fails.
func (s *streamSet) pump(i int, dc net.Conn, o Options) {
	defer s.wg.Done()
	buf := make([]byte, o.BlockSize)
	for {
		var n int
		var err error
		if o.Reverse {
			n, err = dc.Read(buf)
		} else {
			n, err = dc.Write(buf)
		}
		s.mu.Lock()
		if s.testEnd {
			s.drained[i] += int64(n)
		} else {
			s.counts[i] += int64(n)
		}
		ended := s.testEnd
		s.mu.Unlock()
		if err != nil {
			if !ended {
				s.errs <- fmt.Errorf("stream %d: %w", streamID(i), err)
			}
			return
		}
	}
}

// end marks TEST_END: bytes read from here on count as drained.
func (s *streamSet) end() {
	s.mu.Lock()
	s.testEnd = true
	s.mu.Unlock()
}

// stop makes every stream's reads and writes fail at once and waits for
// their goroutines.
func (s *streamSet) stop() {
	for _, dc := range s.conns {
		dc.SetDeadline(time.Unix(1, 0))
	}
	s.wg.Wait()
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
	s := startStreams(conns, o)
	ctrlMsg := r.watchCtrl()
	watchUntil, failure := r.runFor(ctrlMsg, s.errs)
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
		s.end()
		s.stop()
		return r.fail(failure, "closed the connection during the test: was it stopped, or did a middlebox drop the connection?")
	}
	return r.endTest(s, res)
}

// watchCtrl reads the control connection while the data flows. The server
// sends nothing on it until it reads TEST_END, unless it ends the test
// (SERVER_TERMINATE, SERVER_ERROR) or dies; watching it makes those end
// the test at once.
func (r *run) watchCtrl() chan error {
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
	return ctrlMsg
}

// runFor waits for o.Duration, a message from the server, a broken stream
// or the context's end, whichever comes first. It returns until when to
// keep watching the control connection and why the test failed (nil when
// the time was up).
func (r *run) runFor(ctrlMsg chan error, streamErr <-chan error) (time.Time, error) {
	timer := time.NewTimer(r.o.Duration)
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
	return watchUntil, failure
}

// endTest sends TEST_END, waits for EXCHANGE_RESULTS, and puts the streams'
// counts into res.
func (r *run) endTest(s *streamSet, res *Result) error {
	s.end()
	if !r.o.Reverse {
		for _, dc := range s.conns {
			dc.SetWriteDeadline(time.Unix(1, 0))
		}
	} else {
		for _, dc := range s.conns {
			dc.SetReadDeadline(r.waitUntil())
		}
	}
	r.phase = "ending the test"
	if err := r.write([]byte{byte(stateTestEnd)}); err != nil {
		s.stop()
		return err
	}
	err := r.expect(stateExchangeResults, "after TEST_END")
	// The server closed its streams before EXCHANGE_RESULTS: the readers
	// end on EOF. Should it not have, do not wait for them.
	if err != nil || !r.o.Reverse {
		for _, dc := range s.conns {
			dc.SetDeadline(time.Unix(1, 0))
		}
	}
	s.wg.Wait()
	for i := range res.Streams {
		res.Streams[i].Bytes = s.counts[i]
		res.Streams[i].DrainedBytes = s.drained[i]
	}
	return err
}
