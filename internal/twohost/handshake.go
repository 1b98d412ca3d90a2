//go:build linux

package twohost

// The client's side of a connection's start: dial (in a namespace, with
// an MSS clamp), TLS, the server's hello, and the HMAC proofs both ways.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/twohost/streamio"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// dialIn connects from namespace ns: a socket stays in the namespace it
// was created in.
func dialIn(ctx context.Context, ns, addr string, timeout time.Duration, mss int) (net.Conn, error) {
	var c net.Conn
	dial := func() error {
		var err error
		d := net.Dialer{Timeout: timeout}
		if mss > 0 {
			d.Control = streamio.ClampMSS(mss)
		}
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	}
	var err error
	if ns == "" {
		err = dial()
	} else {
		err = netns.Do(ns, dial)
	}
	return c, err
}

// clientHandshake reads hello, authenticates and checks the server's
// proof. Its errors name the server but not the command: the control
// connection's say "test:" before them, a stream's its phase.
func clientHandshake(ctx context.Context, o ClientOptions, a wire.Auth) (net.Conn, error) {
	raw, err := dialIn(ctx, o.Netns, o.Addr, o.DialTimeout, o.MSS)
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %w: is longhaul serve running there, and is the port (default %d) open?", o.Addr, unwrapOp(err), wire.DefaultPort)
	}
	c := raw
	hello := o.helloWithin()
	_ = c.SetDeadline(time.Now().Add(hello))
	// A caller's deadline (a probe's) ends the handshake too: a server
	// that accepts and stays silent must not hold it for the hello's time.
	defer context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Unix(1, 0)) })()
	if o.TLS != nil {
		tc := tls.Client(raw, o.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("tls with %s: %w", o.Addr, err)
		}
		c = tc
	}
	h, err := readHello(c, o.Addr, hello)
	if err != nil {
		c.Close()
		return nil, err
	}
	a.ClientNonce = wire.NewNonce()
	a.MAC = wire.ClientMAC(o.Token, h.Nonce, a)
	if err := wire.WriteMsg(c, wire.TypeAuth, a); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", o.Addr, err)
	}
	f, err := wire.ReadFrame(c, wire.MaxServerFrame)
	var w wire.Welcome
	if err == nil {
		if re := wire.AsError(f); re != nil {
			err = re
		} else {
			err = wire.Decode(f, wire.TypeWelcome, &w)
		}
	}
	if err == nil && !wire.CheckMAC(w.MAC, wire.ServerMAC(o.Token, h.Nonce, a.ClientNonce)) {
		err = errWrongProof
	}
	if err != nil {
		c.Close()
		return nil, afterProof(o.Addr, hello, err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

var errWrongProof = errors.New("the server does not hold the token (its proof is wrong)")

// afterProof names what went wrong once this host had sent its proof of
// the token. A refused token or a wrong proof of the server's is
// authentication; silence is a server too slow to answer, and so is a
// refusal of the request: this host sent a well-formed proof at once, so
// a server that did not read it gave up waiting first (its handshake
// timeout ran out while it was starved of CPU; a serve before this one
// said "expected an auth message" then, a newer one says so).
func afterProof(addr string, within time.Duration, err error) error {
	var re *wire.RemoteError
	isRe := errors.As(err, &re)
	switch {
	case errors.Is(err, errWrongProof) || isRe && re.Code == wire.CodeAuth:
		return fmt.Errorf("%s: authentication: %w", addr, err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s did not answer this host's proof of the token within %s (%w): it may be overloaded (CPU)", addr, within, os.ErrDeadlineExceeded)
	case isRe && re.Code == wire.CodeRequest:
		return fmt.Errorf("%s did not read this host's proof of the token in time (%w): it may be overloaded (CPU)", addr, err)
	}
	return fmt.Errorf("%s: handshake: %w", addr, err)
}

// readHello reads the server's first frame and names what is wrong when
// the peer is not a longhaul server of this protocol version.
func readHello(c net.Conn, addr string, within time.Duration) (wire.Hello, error) {
	var h wire.Hello
	f, err := wire.ReadFrame(c, wire.MaxPreAuthFrame)
	switch {
	case errors.Is(err, wire.ErrVersion):
		return h, fmt.Errorf("%s speaks longhaul test protocol version %d, this longhaul speaks %d: run the same longhaul release on both hosts", addr, f.V, wire.ProtoVersion)
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Wrapped: a prober reads a silent host as a timeout.
		return h, fmt.Errorf("%s sent no longhaul hello within %s (%w): is it longhaul serve? (default port %d)", addr, within, os.ErrDeadlineExceeded, wire.DefaultPort)
	case err != nil && !errors.Is(err, wire.ErrFrame):
		return h, fmt.Errorf("%s closed the connection before its hello (%w): is it longhaul serve, does its --allow include this host, and is it not refusing this host for now (too many connections from it, or failed ones: the server's log says which)?", addr, err)
	case err == nil:
		err = wire.Decode(f, wire.TypeHello, &h)
	}
	if err != nil {
		return h, fmt.Errorf("%s is not a longhaul server (%v): check the port (default %d)", addr, err, wire.DefaultPort)
	}
	return h, nil
}

// helloWithin is the most a connection's handshake may take.
func (o ClientOptions) helloWithin() time.Duration {
	if o.HelloTimeout <= 0 {
		return helloTimeout
	}
	return o.HelloTimeout
}

func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}
