// The handshake: options, window scale, and the delays between the
// capture point and each end.

package tcpflow

import (
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	"github.com/longhaul/longhaul/internal/diagnose"
)

func (f *Flow) syn(i int, s *capture.Segment, o *capture.Options, t int64) {
	d := &f.dir[i]
	isAck := s.Flags&capture.FlagACK != 0
	if isAck {
		if f.synAckSeen {
			f.synRetrans = true
		} else {
			f.synAckT = t
		}
		f.synAckSeen = true
		if f.client < 0 {
			f.client = 1 - i
		}
	} else {
		if f.synSeen {
			f.synRetrans = true
		} else {
			f.synT = t
		}
		f.synSeen = true
		f.client = i
	}
	d.synSeen = true
	d.syn = *o
	d.setEff()
	// Data starts one past the SYN.
	d.setBase(s.Seq + 1)
	// The SYN's window is never scaled (RFC 7323 2.2); it is the first
	// window the peer may fill.
	peer := &f.dir[1-i]
	if o.HasMSS {
		peer.peerMSS = int(o.MSS)
		peer.setEff()
	}
	peer.rwnd, peer.raw, peer.winSeen = int64(s.Window), s.Window, true
	peer.firstRwnd, peer.maxRwnd, peer.minRwnd = int64(s.Window), int64(s.Window), int64(s.Window)
	peer.cur = ackRec{t, 0, int64(s.Window), 0}
	f.resolveScale()
	f.setHandshakeRTT()
}

// resolveScale sets the window scale state from the SYNs seen.
func (f *Flow) resolveScale() {
	c := f.client
	if c < 0 {
		return
	}
	cs, ss := &f.dir[c], &f.dir[1-c]
	switch {
	case cs.synSeen && !cs.syn.HasWScale:
		f.scale, f.noScaleSide = diagnose.ScaleNotNegotiated, c
	case ss.synSeen && !ss.syn.HasWScale:
		f.scale, f.noScaleSide = diagnose.ScaleNotNegotiated, 1-c
	case cs.synSeen && ss.synSeen:
		f.scale = diagnose.ScaleKnown
		f.shift[c], f.shift[1-c] = cs.syn.Shift(), ss.syn.Shift()
		f.shiftKnown = [2]bool{true, true}
		return
	case ss.synSeen: // SYN-ACK with the option: the SYN had it too
		f.shift[1-c], f.shiftKnown[1-c] = ss.syn.Shift(), true
		return
	default:
		return
	}
	f.shift, f.shiftKnown = [2]uint8{}, [2]bool{true, true}
}

// handshakeAck notes the client's ACK of the SYN-ACK.
func (f *Flow) handshakeAck(i int, s *capture.Segment, t int64) {
	if f.ackT >= 0 || !f.synAckSeen || i != f.client {
		return
	}
	srv := &f.dir[1-i]
	if srv.haveBase && s.Ack == srv.base {
		f.ackT = t
		f.setHandshakeRTT()
		f.setVantageDelays()
	}
}

// halves returns capture-server-capture and capture-client-capture
// times from the handshake; ok is false without a clean handshake.
func (f *Flow) halves() (h1, h2 int64, ok bool) {
	if f.synT < 0 || f.synAckT < 0 || f.ackT < 0 || f.synRetrans {
		return 0, 0, false
	}
	return f.synAckT - f.synT, f.ackT - f.synAckT, f.synAckT >= f.synT && f.ackT >= f.synAckT
}

// setHandshakeRTT works hsRTT out again: call it when the handshake's
// times change.
func (f *Flow) setHandshakeRTT() {
	f.hsRTT = 0
	if h1, h2, ok := f.halves(); ok {
		f.hsRTT = h1 + h2
	}
}

// lagFromData checks the lag of direction d (its sender's half of the
// path, from the handshake) against the data: the other direction's ACK
// times at the capture measure the same half (capture - d's sender -
// capture). A slow SYN-ACK (a busy accept queue, a SYN proxy) makes the
// handshake's half far longer than the data's; the data's low percentile
// wins then, and the report says so. It only ever lowers the lag.
func (f *Flow) lagFromData(d, other *direction) {
	if d.d <= 0 {
		return
	}
	if q := int64(other.rttQuantile(0.1)); q > 0 && 2*q < d.d {
		d.d, d.lagFromData = q, true
	}
}

// pathHalves are the handshake's halves less what fitLag found to be a
// delayed ACK: the capture point's place on the path.
func (f *Flow) pathHalves() (h1, h2 int64, ok bool) {
	h1, h2, ok = f.halves()
	if !ok || f.client < 0 {
		return h1, h2, ok
	}
	return h1 - f.dir[1-f.client].lagDelay, h2 - f.dir[f.client].lagDelay, ok
}

// setVantageDelays gives each direction its sender's lag behind the
// capture point: the client's data sees ACKs h2 late, the server's h1.
func (f *Flow) setVantageDelays() {
	h1, h2, ok := f.halves()
	if !ok {
		return
	}
	c := f.client
	// Below a millisecond the lag does not matter and we keep no history.
	if h2 >= int64(time.Millisecond) {
		f.dir[c].d = h2
	}
	if h1 >= int64(time.Millisecond) {
		f.dir[1-c].d = h1
	}
}
