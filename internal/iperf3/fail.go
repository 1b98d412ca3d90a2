package iperf3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

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

// ErrBusy is what Run's error matches (errors.Is) when the server was
// running another client's test (ACCESS_DENIED): a caller running several
// tests in a row may wait and try again, as the server frees itself a
// moment after each test.
var ErrBusy = errors.New("iperf3 server busy")

// busyError is the busy server's one line, which errors.Is matches to ErrBusy.
type busyError struct{ serverMsgError }

func (busyError) Is(target error) bool { return target == ErrBusy }

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
