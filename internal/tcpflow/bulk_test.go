package tcpflow

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

// TestBulkSameFlows: every flow of every truth capture ends in the same
// state, field for field, whether Flow.bulk takes the segments it can or
// Flow.packet takes them all; and bulk takes most of a transfer's.
func TestBulkSameFlows(t *testing.T) {
	var taken, packets int64
	for _, p := range truthPaths(t) {
		fast := followed(t, p)
		bulkOff = true
		all := followed(t, p)
		bulkOff = false
		if all.bulkSegs != 0 {
			t.Fatalf("%s: bulk took %d segments while off", filepath.Base(p), all.bulkSegs)
		}
		if !superFrames(fast) {
			// (Captures of TSO super-frames of varying sizes mostly take
			// the general path: a segment larger than any before changes
			// the MSS bookkeeping. They count for the equality only.)
			taken += fast.bulkSegs
			packets += fast.stats.TCPPackets
		}
		if !reflect.DeepEqual(fast.flows, all.flows) {
			for k, f := range fast.flows {
				if !reflect.DeepEqual(f, all.flows[k]) {
					t.Errorf("%s flow %d: with bulk\n%+v\nwithout\n%+v", filepath.Base(p), f.ID, *f, *all.flows[k])
				}
			}
		}
	}
	// Half the packets are ACKs, and some flows carry data both ways.
	if taken*4 < packets {
		t.Errorf("bulk took %d of %d packets: want a quarter or more", taken, packets)
	}
	t.Logf("bulk took %d of %d packets", taken, packets)
}

// superFrames: a flow of a's carried TSO super-frames (segments of
// up to 64 KB, sixteen MSS or more).
func superFrames(a *Analyzer) bool {
	for _, f := range a.flows {
		for _, d := range f.dir {
			if d.super > 0 || d.maxSeg > 16*max(d.mss, 536) {
				return true
			}
		}
	}
	return false
}

// TestBulkIsPacket: random conversations, packet by packet, leave the
// flow the same with Flow.bulk and without it: data in order and out of
// it, resent, probes of a byte, FINs (also on data), either side's
// window changing (also to zero), SACKs, pauses, TSO super-frames, with
// and without timestamps and window scaling, the sender at the capture
// or away from it, the client or the server sending; a capture that
// begins at the SYN-ACK (the client's scale unknown: a bound from the
// flight); in a quarter of them data from the receiver too (turns; it
// is then no longer silent).
func TestBulkIsPacket(t *testing.T) {
	var taken, packets int64
	for seed := range uint64(48) {
		r := rand.New(rand.NewPCG(seed, 11))
		w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
		c := ct.NewConv(w, "198.18.0.1:50000", "198.18.0.2:443")
		c.TS = seed%2 == 0
		c.Snaplen = 200
		snd := []ct.Side{client, server}[seed/2%2]
		rcv := 1 - snd
		mss := []int{1448, 1448, 536, 1460}[seed%4]
		synOpts := ct.Opts{}.MSS(uint16(mss)).WScale(7)
		if seed%5 == 0 {
			synOpts = ct.Opts{}.MSS(uint16(mss)) // no scaling
		}
		rtt := time.Duration(1+r.IntN(40)) * time.Millisecond
		if seed%6 == 5 {
			// The capture begins at the SYN-ACK.
			c.Emit(server, ct.TCP{Seq: c.ISN[1], Ack: c.ISN[0] + 1, Flags: capture.FlagSYN | capture.FlagACK, Window: c.Win[1], Options: synOpts})
			c.Advance(rtt)
			c.Next = [2]uint32{c.ISN[0] + 1, c.ISN[1] + 1}
			c.Rcvd = [2]uint32{c.ISN[1] + 1, c.ISN[0] + 1}
			c.Emit(client, ct.TCP{Seq: c.Next[0], Ack: c.Rcvd[0], Flags: capture.FlagACK, Window: c.Win[0]})
		} else {
			handshake(c, synOpts, synOpts, rtt, []string{"client", "server", "middle"}[seed%3])
		}
		for range 400 {
			c.Advance(time.Duration(r.IntN(2000)) * time.Microsecond)
			switch k := r.IntN(100); {
			case k < 53:
				c.Data(snd, []int{mss, mss, mss, mss / 2, 1, 2}[r.IntN(6)])
			case k < 55:
				if seed%3 == 1 { // a super-frame (IP length 0), cut by the snaplen
					n := []int{20 * mss, 70000, 45 * mss}[r.IntN(3)]
					c.Emit(snd, ct.TCP{Seq: c.Next[snd], Ack: c.Rcvd[snd], Flags: capture.FlagACK, Window: c.Win[snd], Payload: n, Super: n != 20*mss})
					c.Next[snd] += uint32(n)
				} else {
					c.Data(snd, mss)
				}
			case k < 75:
				c.AckAll(rcv)
			case k < 80:
				c.Ack(rcv, c.Rcvd[rcv]+uint32(r.IntN(3*mss)))
			case k < 83:
				c.Ack(rcv, c.Rcvd[rcv], c.Rcvd[rcv]+uint32(mss), c.Next[snd])
			case k < 86:
				c.Resend(snd, c.Next[snd]-uint32(mss), mss)
			case k < 88:
				c.Next[snd] += uint32(mss) // a segment the capture missed
			case k < 90:
				c.Win[rcv] = []uint16{0, 100, 512, 65535}[r.IntN(4)]
			case k < 91:
				c.Win[snd] = []uint16{0, 700, 30000, 65535}[r.IntN(4)]
			case k < 94:
				if seed%4 == 0 {
					c.Data(rcv, 1+r.IntN(300))
				}
			case k < 96:
				c.Advance(time.Duration(r.IntN(500)) * time.Millisecond)
			case k < 98:
				c.Data(snd, 0) // a keep-alive or window probe shape
			case k < 99:
				c.Fin([]ct.Side{client, server}[r.IntN(2)])
			default: // data and a FIN in one segment
				c.Emit(snd, ct.TCP{Seq: c.Next[snd], Ack: c.Rcvd[snd], Flags: capture.FlagACK | capture.FlagFIN, Window: c.Win[snd], Payload: mss})
				c.Next[snd] += uint32(mss) + 1
			}
		}
		tk, n := bulkSame(t, w.Bytes(), seed)
		taken, packets = taken+tk, packets+n
	}
	if taken*4 < packets {
		t.Errorf("bulk took %d of %d packets: want a quarter or more", taken, packets)
	}
	t.Logf("bulk took %d of %d packets", taken, packets)
}

// bulkSame reads a capture into two analyzers, one with Flow.bulk and
// one without, and compares their flows after every packet.
func bulkSame(t *testing.T, b []byte, seed uint64) (taken, packets int64) {
	t.Helper()
	rd, err := capture.Open(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	fast, all := New(Options{}), New(Options{})
	fast.clock.floor, all.clock.floor = rd.Unit(), rd.Unit()
	var s capture.Segment
	var o capture.Options
	for n := 0; ; n++ {
		ts, res, bad, err := rd.NextSegment(&s, &o)
		if err != nil {
			break
		}
		s2, o2 := s, o
		fast.segment(&s, &o, bad, res, ts)
		bulkOff = true
		all.segment(&s2, &o2, bad, res, ts)
		bulkOff = false
		if !reflect.DeepEqual(fast.flows, all.flows) {
			t.Fatalf("seed %d packet %d (%+v): the flows differ\nwith bulk %+v\nwithout %+v", seed, n, s, *fast.flows[0], *all.flows[0])
		}
	}
	return fast.bulkSegs, fast.stats.TCPPackets
}
