//go:build linux

package server_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// attach opens a data stream of a phase and waits for its go.
func attach(addr, session string, phase, stream int) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	var h wire.Hello
	f, err := wire.ReadFrame(c, wire.MaxPreAuthFrame)
	if err == nil {
		err = wire.Decode(f, wire.TypeHello, &h)
	}
	a := wire.Auth{Purpose: wire.PurposeData, ClientNonce: wire.NewNonce(), Session: session, Phase: phase, Stream: stream}
	a.MAC = wire.ClientMAC(servertest.Token, h.Nonce, a)
	if err == nil {
		err = wire.WriteMsg(c, wire.TypeAuth, a)
	}
	for _, want := range []string{wire.TypeWelcome, wire.TypeGo} {
		if err != nil {
			break
		}
		if f, err = wire.ReadFrame(c, wire.MaxServerFrame); err == nil && f.Type != want {
			err = errors.New("unexpected " + f.Type)
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// The server paces every byte at most at its --max-rate, whatever rate
// the client asks for, both directions: a rate that rounded to nothing
// (below 8 bit/s) turned both the kernel's and the userspace pacing off
// (21-23 Gbit/s against a 100 Mbit/s cap), and uploads were read unpaced
// in their last second.
func TestRateCapHolds(t *testing.T) {
	const capBps, dur = 8e6, 1.0
	caps := testdoc.Caps{MaxDurationS: 30, MaxBytes: 1 << 34, MaxStreams: 4, MaxRateBps: capBps}
	for _, name := range []string{wire.PhaseDownload, wire.PhaseUpload} {
		for _, asked := range []float64{1e-9, 1, 1e15} {
			t.Run(fmt.Sprintf("%s/%g", name, asked), func(t *testing.T) {
				t.Parallel() // each its own server: the bound holds per server
				addr := servertest.Start(t, server.ServerConfig{Caps: caps})
				c, acc := servertest.StartSession(t, addr)
				g := ask(t, c, wire.PhaseReq{Name: name, Streams: 2, DurationS: dur, RateBps: asked})
				if g.RateBps <= 0 || g.RateBps > capBps {
					t.Errorf("granted rate %g for a cap of %g", g.RateBps, capBps)
				}
				var wg sync.WaitGroup
				for i := range g.Streams {
					wg.Go(func() {
						s, err := attach(addr, acc.Session, g.Phase, i)
						if err != nil {
							t.Error(err)
							return
						}
						defer s.Close()
						if name == wire.PhaseDownload {
							_, _ = io.Copy(io.Discard, s)
							return
						}
						buf := make([]byte, 256<<10)
						for end := time.Now().Add(time.Duration(dur+2) * time.Second); time.Now().Before(end); {
							if _, err := s.Write(buf); err != nil {
								return
							}
						}
					})
				}
				var done wire.PhaseDone
				for done.Phase == 0 {
					f, err := servertest.Next(t, c)
					if err != nil {
						t.Fatal(err)
					}
					if f.Type == wire.TypePhaseDone {
						if err := wire.Decode(f, wire.TypePhaseDone, &done); err != nil {
							t.Fatal(err)
						}
					}
				}
				c.Close()
				wg.Wait()
				// The cap over the phase and an upload's second of grace,
				// plus what socket buffers hold at the start.
				if most := capBps/8*(dur+1)*1.2 + 1<<20; float64(done.Bytes) > most {
					t.Errorf("%d bytes moved in %.1f s under a %g bit/s cap (at most %.0f)", done.Bytes, done.Seconds, capBps, most)
				}
			})
		}
	}
}
