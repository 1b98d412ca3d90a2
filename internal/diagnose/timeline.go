package diagnose

import (
	"math"
	"time"
)

// State is what limited the sender over an interval.
type State uint8

// States, in order of precedence (see the package comment).
const (
	StateNone State = iota // before the first data
	StateZeroWindow
	StateRwnd
	StateWindowUnknown
	StateLoss
	StateApp
	StateSndbuf
	StateSlowStart
	StateNetwork
	NumStates
)

var stateNames = [NumStates]string{"none", "zero-window", "rwnd-limited", "window-unknown", "loss-recovery", "app-limited", "sndbuf-limited", "slow-start", "network"}

func (s State) String() string {
	if s < NumStates {
		return stateNames[s]
	}
	return "invalid"
}

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Sample is the sender's state at one instant.
type Sample struct {
	T         time.Duration // since the start of the flow; never decreasing
	Sent      int64         // highest byte sent, relative to the first
	Delivered int64         // bytes cumulatively acknowledged
	Inflight  int64         // sent, not acknowledged, not SACKed
	// Rwnd is the receiver's window as the sender knows it; negative when
	// unknown (window scale not seen). RwndLowerBound is then the least
	// it can be (0: no bound).
	Rwnd           int64
	RwndLowerBound int64
	Cwnd           int64         // congestion window in bytes; 0 unknown (captures)
	RTT            time.Duration // current RTT estimate; 0 unknown
	Retrans        int64         // cumulative retransmitted segments
	InRecovery     bool
	// AppLimited: the sender had nothing more to send. SndbufLimited:
	// its send buffer was full (tcp_info chrono). RwndLimited: the
	// producer knows the receiver's window limited it (tcp_info chrono),
	// whatever Rwnd says.
	AppLimited, SndbufLimited, RwndLimited bool
	// TimeoutRecovery: the sender is recovering from a retransmission
	// timeout (a capture tells it by the silence before the
	// retransmission): loss, whatever the window says.
	TimeoutRecovery bool
	// Stalled: the interval that ends at this sample was the silence
	// before a retransmission timeout; it is loss time, whatever the
	// state was when it began.
	Stalled bool
	// ProbeWait: the interval that ends at this sample was the silence
	// before a tail loss probe (the sender waiting on a lost tail): loss
	// time too, but no timeout's stall.
	ProbeWait bool
	// SendGap: the interval that ends at this sample was a wait with room
	// in both windows and nothing sent (the sender had nothing to send
	// after an ACK freed room); it is application time.
	SendGap bool
	// Turn: the new data at this sample answers the peer (it sent data
	// since the sender's last): a request's answer, not a round's next
	// flight.
	Turn bool
}

// Point is one point of the downsampled series a report draws: the
// time-sequence graph (seq, ack, ack+rwnd) and in flight vs window.
type Point struct {
	T        float64 `json:"t"`
	Seq      int64   `json:"seq"`
	Ack      int64   `json:"ack"`
	Rwnd     int64   `json:"rwnd"` // -1 unknown
	Inflight int64   `json:"inflight"`
	RTT      float64 `json:"rtt_s,omitempty"`
	State    State   `json:"state"`
}

// prevSample is what the next sample is compared with: the fields of the
// last one that are read (copying all of a Sample per packet showed in
// profiles).
type prevSample struct {
	T                       time.Duration
	Sent, Inflight, Retrans int64
	Delivered, Rwnd         int64 // read by Extend alone
}

// Timeline accumulates a flow direction's samples: time per state
// (exact), slow-start rounds, and, if MaxPoints > 0, a series of at
// most MaxPoints points (downsampled by doubling the bucket width) and
// at most MaxEvents events. Its memory does not grow with samples.
type Timeline struct {
	MSS       int // bytes; the producer sets it (0: 1448)
	MaxPoints int
	MaxEvents int

	StateTime [NumStates]time.Duration
	Samples   int64
	First     time.Duration
	Last      time.Duration
	// MaxInflight is the largest flight seen; MaxRwnd the largest known
	// window.
	MaxInflight int64
	MaxRwnd     int64

	// Rounds: a round ends when the data outstanding at its start is
	// delivered. SlowStartRounds counts rounds before slow start ended.
	Rounds          int
	SlowStartRounds int
	// FlatRounds counts busy rounds after slow start, without loss or a
	// window limit, whose largest flight stayed within 5% of the
	// previous one's; BusyRounds all such rounds.
	FlatRounds, BusyRounds int
	// FirstBusyMax is the largest flight of the first four such rounds;
	// lastBusy the last four rounds' (Plateau compares them).
	FirstBusyMax int64
	lastBusy     [4]int64
	ssDone       bool

	// IdleGaps counts periods with nothing outstanding between data;
	// IdleTime is their total (idle time after the last data is not
	// attributed to any state).
	IdleGaps int
	IdleTime time.Duration
	// SendGaps counts waits with room in both windows after an ACK and
	// nothing sent (Sample.SendGap); SendGapTime is their total.
	SendGaps    int
	SendGapTime time.Duration
	// StallTime is the silence before retransmission timeouts
	// (Sample.Stalled), counted as loss recovery.
	StallTime time.Duration
	// DrainIsApp: a flight that drains to nothing in flight and is
	// followed by new data only after a quarter RTT or more (or by the
	// answer to a request) was the application's last for a while, not
	// the congestion window's; its time moves to app-limited (a send
	// gap); see also Settle. Producers that see every packet set it;
	// tcp_info polls cannot tell a round's end from an idle sender.
	DrainIsApp      bool
	snapSS, snapNet time.Duration // slow-start and network time at the last send
	drainSS         time.Duration
	drainNet        time.Duration
	drainAt         time.Duration
	lastSend        time.Duration
	answering       bool // the current flight began as an answer (Sample.Turn)

	Series        []Point
	Events        []Event
	EventsDropped int64

	bucket      time.Duration
	idle        time.Duration
	prev        prevSample
	prevState   State
	roundEnd    int64
	roundAcked  int64
	roundT      time.Duration // when the last round ended (rounds reads it for the second)
	firstRoundT time.Duration // when the first round ended (Settle: data sent after it was clocked by ACKs)
	roundMax    int64
	prevMax     int64
	roundLoss   bool
	roundLimitT time.Duration
	roundBusyT  time.Duration
}

func (tl *Timeline) mss() int64 {
	if tl.MSS > 0 {
		return int64(tl.MSS)
	}
	return 1448
}

// Closed reports whether a window of rwnd bytes is as good as zero for a
// sender whose segments are mss bytes, given the largest window the
// receiver advertised before (peak): zero, or under one segment and
// under half the peak. Linux never shrinks a window it offered
// (tcp_select_window), so a receiver whose application stops reading
// advertises the few bytes left of its last offer, rarely 0, and the
// sender waits (sender-side silly window avoidance). A window that has
// always been that small is a tiny buffer instead (rwnd-limited).
func Closed(rwnd, mss, peak int64) bool {
	return rwnd == 0 || (rwnd > 0 && rwnd < mss && 2*rwnd < peak)
}

// classify takes a pointer: Add runs once per packet, and a Sample is
// 120 bytes to copy.
func (tl *Timeline) classify(s *Sample) State {
	mss := tl.mss()
	atWindow := s.Rwnd > 0 && s.Inflight > 0 && s.Inflight >= s.Rwnd-mss
	closed := Closed(s.Rwnd, mss, tl.MaxRwnd)
	switch {
	case closed && s.Sent > s.Delivered:
		return StateZeroWindow
	case closed && s.Inflight == 0 && !s.AppLimited:
		return StateZeroWindow
	case s.TimeoutRecovery:
		return StateLoss
	case (atWindow || s.RwndLimited) && s.Rwnd > 0 && 2*s.Rwnd < tl.MaxRwnd:
		// Pinned at a window less than half the largest this receiver
		// offered: its buffer holds data the application has not read
		// (autotuning only grows windows); the reader is the limit, as
		// in a zero-window stall.
		return StateZeroWindow
	case s.RwndLimited, atWindow:
		return StateRwnd
	case s.Rwnd < 0 && s.RwndLowerBound > 0 && s.Inflight >= s.RwndLowerBound-mss:
		return StateWindowUnknown
	case s.InRecovery:
		return StateLoss
	case s.SndbufLimited:
		return StateSndbuf
	case s.Inflight <= 0, s.AppLimited:
		return StateApp
	case s.Cwnd > 0 && s.Inflight < s.Cwnd-2*mss:
		// tcp_info: neither window is full, so the application is.
		return StateApp
	case !tl.ssDone:
		return StateSlowStart
	}
	return StateNetwork
}

// AddSample appends a sample (not kept). Samples must come in time
// order; an earlier T is treated as equal to the last.
func (tl *Timeline) AddSample(s *Sample) { tl.add(s) }

func (tl *Timeline) add(s *Sample) {
	if tl.Samples > 0 && s.T < tl.prev.T {
		s.T = tl.prev.T
	}
	if tl.Samples == 0 {
		tl.First = s.T
		tl.roundEnd, tl.roundAcked = s.Sent, s.Delivered
		if tl.DrainIsApp && s.Sent > 0 {
			// The first sample is new data: a flight begins (newData).
			tl.answering, tl.lastSend = s.Turn, s.T
		}
	} else {
		dt := s.T - tl.prev.T
		switch {
		case s.Stalled && tl.prevState != StateZeroWindow:
			tl.StateTime[StateLoss] += dt
			tl.StallTime += dt
		case s.ProbeWait && tl.prevState != StateZeroWindow:
			tl.StateTime[StateLoss] += dt
		case s.SendGap && (tl.prevState == StateSlowStart || tl.prevState == StateNetwork || tl.prevState == StateApp):
			tl.StateTime[StateApp] += dt
			tl.SendGaps++
			tl.SendGapTime += dt
		case tl.prevState == StateApp && tl.prev.Inflight <= 0:
			// Idle with nothing outstanding: count it only once the
			// sender sends again, so a connection kept open after its
			// transfer is not called application-limited.
			tl.idle += dt
		default:
			tl.StateTime[tl.prevState] += dt
		}
		if tl.idle > 0 && s.Sent > tl.prev.Sent {
			tl.endIdle()
		}
	}
	if tl.DrainIsApp && tl.Samples > 0 {
		switch {
		case s.Sent > tl.prev.Sent && tl.drainSS+tl.drainNet == 0 && tl.prev.Inflight > 0:
			// The common case, inline: more data in a flight.
			tl.snapSS, tl.snapNet, tl.lastSend = tl.StateTime[StateSlowStart], tl.StateTime[StateNetwork], s.T
		case s.Sent > tl.prev.Sent, tl.prev.Inflight > 0 && s.Inflight <= 0:
			tl.drain(s)
		}
	}
	tl.rounds(s)
	st := tl.classify(s)
	tl.Samples++
	tl.Last = s.T
	// Field by field: a composite literal is built in a temporary and
	// copied.
	tl.prev.T, tl.prev.Sent, tl.prev.Inflight, tl.prev.Retrans = s.T, s.Sent, s.Inflight, s.Retrans
	tl.prev.Delivered, tl.prev.Rwnd = s.Delivered, s.Rwnd
	tl.prevState = st
	tl.MaxInflight = max(tl.MaxInflight, s.Inflight)
	tl.MaxRwnd = max(tl.MaxRwnd, s.Rwnd)
	if tl.MaxPoints > 0 {
		tl.point(s, st)
	}
}

// drain follows the time the congestion window had since the last new
// data, and moves it to the application when the flight drained to
// nothing and no new data came within a quarter RTT (see DrainIsApp).
func (tl *Timeline) drain(s *Sample) {
	if s.Sent > tl.prev.Sent {
		tl.newData(s.T, s.RTT, s.Turn)
		return
	}
	ss, net := tl.StateTime[StateSlowStart], tl.StateTime[StateNetwork]
	// The flight drained: the congestion-window time since the last new
	// data is pending.
	tl.drainSS, tl.drainNet, tl.drainAt = ss-tl.snapSS, net-tl.snapNet, s.T
	if s.RTT > 0 && s.T-tl.lastSend > 2*s.RTT+200*time.Millisecond {
		// Far longer than a round: a sender with data and room would
		// have had ACKs to send on; it had nothing to send.
		tl.settle()
	}
	tl.snapSS, tl.snapNet = tl.StateTime[StateSlowStart], tl.StateTime[StateNetwork]
}

// newData is drain's part for new data at t (turn: it answers the
// peer): a drained flight pending since less than a quarter RTT (rtt)
// was a round's end, not the data's; a longer pause, or an answer, makes
// it the application's.
func (tl *Timeline) newData(t, rtt time.Duration, turn bool) {
	if tl.drainSS+tl.drainNet > 0 {
		if t-tl.drainAt <= max(time.Millisecond, rtt/4) && !turn {
			tl.drainSS, tl.drainNet = 0, 0 // a round's end, not the data's
		} else {
			tl.settle() // the sender paused, or answered a request
		}
	}
	if tl.prev.Inflight <= 0 {
		tl.answering = turn // a new flight: an answer to a request?
	}
	tl.snapSS, tl.snapNet = tl.StateTime[StateSlowStart], tl.StateTime[StateNetwork]
	tl.lastSend = t
}

// endIdle gives the idle time before new data to the application.
func (tl *Timeline) endIdle() {
	tl.StateTime[StateApp] += tl.idle
	tl.IdleGaps++
	tl.IdleTime += tl.idle
	tl.idle = 0
}

// Settle is called by the producer once the samples end: a transfer that
// was one flight (all its data sent before the first round ended, or all
// its congestion-window time in the flight that drained last), or whose
// last flight answered a request, had nothing more to send after it, so
// that time is the application's (one request, one answer); the last
// flight of a longer transfer stays the congestion window's.
//
// ended: the transfer is over (the connection was closed or
// reset, or all of it acknowledged), so a flight still out when the
// samples end (its ACK never came: a client that reset on the answer; or
// the sender, away from the capture, would have seen it only after the
// capture's end) was the last too, and is judged the same way; otherwise
// the samples may only have stopped (a capture cut short in a
// transfer), and the flight stays the congestion window's.
func (tl *Timeline) Settle(ended bool) {
	if ended && tl.DrainIsApp && tl.prev.Inflight > 0 && tl.drainSS+tl.drainNet == 0 {
		tl.drainSS = tl.StateTime[StateSlowStart] - tl.snapSS
		tl.drainNet = tl.StateTime[StateNetwork] - tl.snapNet
	}
	// One flight: all the data left before the first round ended (before
	// any ACK of it reached the sender).
	oneFlight := tl.Rounds == 0 || tl.firstRoundT > tl.lastSend
	if d := tl.drainSS + tl.drainNet; d > 0 && (tl.answering || oneFlight || tl.StateTime[StateSlowStart]+tl.StateTime[StateNetwork] <= d) {
		tl.settle()
	}
	tl.drainSS, tl.drainNet = 0, 0
}

// settle moves a pending drained flight to the application.
func (tl *Timeline) settle() {
	d := tl.drainSS + tl.drainNet
	if d <= 0 {
		return
	}
	tl.StateTime[StateSlowStart] -= tl.drainSS
	tl.StateTime[StateNetwork] -= tl.drainNet
	tl.StateTime[StateApp] += d
	tl.SendGaps++
	tl.SendGapTime += d
	tl.drainSS, tl.drainNet = 0, 0
}

func (tl *Timeline) point(s *Sample, st State) {
	if tl.bucket == 0 {
		tl.bucket = time.Millisecond
	}
	p := Point{T: s.T.Seconds(), Seq: s.Sent, Ack: s.Delivered, Rwnd: s.Rwnd, Inflight: s.Inflight, RTT: s.RTT.Seconds(), State: st}
	if s.Rwnd < 0 {
		p.Rwnd = -1
	}
	if n := len(tl.Series); n > 0 {
		last := &tl.Series[n-1]
		if s.T < time.Duration(last.T*1e9)+tl.bucket {
			p.T = last.T
			p.Inflight = max(p.Inflight, last.Inflight)
			*last = p
			return
		}
	}
	if len(tl.Series) >= tl.MaxPoints {
		// Halve the resolution: merge neighbours, keep the later values
		// and the larger flight.
		j := 0
		for i := 0; i < len(tl.Series); i += 2 {
			a := tl.Series[i]
			if i+1 < len(tl.Series) {
				b := tl.Series[i+1]
				b.T = a.T
				b.Inflight = max(a.Inflight, b.Inflight)
				a = b
			}
			tl.Series[j] = a
			j++
		}
		tl.Series = tl.Series[:j]
		tl.bucket *= 2
	}
	tl.Series = append(tl.Series, p)
}

// Total is the time attributed to any state after the first data.
func (tl *Timeline) Total() time.Duration {
	var t time.Duration
	for st := StateZeroWindow; st < NumStates; st++ {
		t += tl.StateTime[st]
	}
	return t
}

// Share returns the fraction of the attributed time spent in st.
func (tl *Timeline) Share(st State) float64 {
	tot := tl.Total()
	if tot <= 0 {
		return 0
	}
	return float64(tl.StateTime[st]) / float64(tot)
}

// Shares returns the share of every state with time in it, by name.
func (tl *Timeline) Shares() map[string]float64 {
	m := map[string]float64{}
	for st := StateZeroWindow; st < NumStates; st++ {
		if v := math.Round(tl.Share(st)*1e4) / 1e4; v > 0 {
			m[st.String()] = v
		}
	}
	return m
}
