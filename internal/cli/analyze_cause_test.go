package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

// renoOver plays a bulk transfer from snd captured at the sender, round
// by round: Reno (slow start, then a segment more a round, halved at a
// loss) over a path of rtt that carries bdp segments a round trip behind
// a drop-tail queue of queue segments; what a flight puts beyond both is
// lost at the queue (near its end), and every lossEvery-th segment on
// the way. A round trip is rtt plus the time the flight's standing queue
// takes to drain.
func renoOver(c *ct.Conv, snd ct.Side, rtt time.Duration, bdp, queue, lossEvery, rounds int) {
	const mss = 1448
	cwnd, sent, slowStart := 10, 0, true
	for range rounds {
		over := max(cwnd-bdp-queue, 0)
		rt := rtt + rtt*time.Duration(min(max(cwnd-bdp, 0), queue))/time.Duration(bdp)
		var lost []uint32
		for i := range cwnd {
			seq := c.Data(snd, mss)
			sent++
			if i < cwnd-2 && ((lossEvery > 0 && sent%lossEvery == 0) || i >= cwnd-over-2) {
				lost = append(lost, seq)
			}
			c.Advance(5 * time.Microsecond)
		}
		c.Advance(rt)
		if len(lost) == 0 {
			c.AckAll(1 - snd)
			c.Advance(5 * time.Microsecond)
			if slowStart {
				cwnd *= 2
			} else {
				cwnd++
			}
			continue
		}
		// The ACK up to the first hole, SACKing what came after the last.
		c.Ack(1-snd, lost[0], lost[len(lost)-1]+mss, c.Next[snd])
		c.Advance(20 * time.Microsecond)
		for _, seq := range lost {
			c.Resend(snd, seq, mss)
			c.Advance(5 * time.Microsecond)
		}
		c.Advance(rt)
		c.AckAll(1 - snd)
		c.Advance(5 * time.Microsecond)
		cwnd, slowStart = max(cwnd/2, 2), false
	}
	c.Fin(snd)
	c.Advance(rtt)
	c.Fin(1 - snd)
}

// causesCapture writes a pcap with two flows whose path causes are
// known by construction:
// 1. an upload over 50 ms that loses one segment in 300 on the way,
// with no queue (random loss);
// 2. a download over 30 ms x 16 Mbit/s (a BDP of 40 segments) behind a
// queue of 4 BDPs that Reno keeps filling (bufferbloat);
// 3. a download over 40 ms captured at the client, its receiver, losing
// a segment every fifth round: the capture cannot time the queue before
// it, and says so.
func causesCapture(t *testing.T) string {
	t.Helper()
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	syn := ct.Opts{}.MSS(1460).SACKOK().WScale(7)

	c := ct.NewConv(w, "198.18.0.1:50000", "198.18.0.2:5001")
	c.Handshake(syn, syn, 50*time.Millisecond, 50*time.Microsecond)
	renoOver(c, ct.Client, 50*time.Millisecond, 100, 100, 300, 120)

	d := ct.NewConv(w, "198.18.0.1:50001", "198.18.0.3:443")
	d.Now = c.Now.Add(time.Second)
	d.Handshake(syn, syn, 50*time.Microsecond, 30*time.Millisecond)
	d.Data(ct.Client, 300) // the request
	d.Advance(30 * time.Millisecond)
	renoOver(d, ct.Server, 30*time.Millisecond, 40, 160, 0, 60)

	e := ct.NewConv(w, "198.18.0.1:50002", "198.18.0.4:443")
	e.Now = d.Now.Add(time.Second)
	e.Handshake(syn, syn, 40*time.Millisecond, 50*time.Microsecond)
	for r := range 60 {
		var lost uint32
		for i := range 40 {
			if i == 20 && r%5 == 0 {
				lost = e.Next[ct.Server]
				e.Next[ct.Server] += 1448 // lost on the way
				continue
			}
			e.Data(ct.Server, 1448)
			e.Advance(5 * time.Microsecond)
		}
		if r%5 == 0 {
			e.Ack(ct.Client, lost, lost+1448, e.Next[ct.Server])
			e.Advance(40 * time.Millisecond)
			e.Resend(ct.Server, lost, 1448)
			e.Advance(5 * time.Microsecond)
		}
		e.AckAll(ct.Client)
		e.Advance(40 * time.Millisecond)
	}
	e.Fin(ct.Server)
	e.Advance(50 * time.Microsecond)
	e.Fin(ct.Client)

	path := filepath.Join(t.TempDir(), "causes.pcap")
	if err := os.WriteFile(path, w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAnalyzeCausesGolden(t *testing.T) {
	file := causesCapture(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"analyze-causes", nil},
		{"analyze-causes.json", []string{"--json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, append([]string{"analyze", file}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, out)
		})
	}
}
