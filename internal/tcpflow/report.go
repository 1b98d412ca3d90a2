package tcpflow

import (
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// FlowReport is one flow in an Analysis. The top-level numbers and
// verdict are those of the main direction (the one that sent more).
type FlowReport struct {
	ID         int     `json:"id"`
	Client     string  `json:"client"`
	Server     string  `json:"server"`
	RolesKnown bool    `json:"roles_known"` // false: no SYN seen, client/server are guesses
	Start      float64 `json:"start_s"`
	Duration   float64 `json:"duration_s"`
	Packets    int64   `json:"packets"`
	Bytes      int64   `json:"bytes"` // unique payload bytes of the main direction
	Sender     string  `json:"sender"`
	Receiver   string  `json:"receiver"`
	Closed     string  `json:"closed"` // fin, rst, open
	Vantage    string  `json:"vantage,omitempty"`

	diagnose.Verdict
	Handshake  *Handshake  `json:"handshake,omitempty"`
	Directions []DirReport `json:"directions"`
	// Inconsistent lists what in this report contradicts itself
	// (CheckInvariants); the flow is flagged inconsistent-numbers.
	Inconsistent []string `json:"inconsistent,omitempty"`
}

// Handshake holds the handshake timings at the capture point.
type Handshake struct {
	SynToSynAck   float64 `json:"syn_to_synack_s"` // capture - server - capture
	SynAckToAck   float64 `json:"synack_to_ack_s"` // capture - client - capture
	RTT           float64 `json:"rtt_s"`
	Retransmitted bool    `json:"retransmitted,omitempty"`
}

// SynOptions are the options an endpoint put in its SYN or SYN-ACK.
type SynOptions struct {
	MSS           int  `json:"mss,omitempty"`
	WScale        int  `json:"wscale"` // -1: not offered
	SACKPermitted bool `json:"sack_permitted"`
	Timestamps    bool `json:"timestamps"`
}

// DirReport is one direction: the data Sender sends to Receiver.
type DirReport struct {
	Sender    string  `json:"sender"`
	Receiver  string  `json:"receiver"`
	Bytes     int64   `json:"bytes"`      // unique payload bytes
	BytesSent int64   `json:"bytes_sent"` // including retransmissions
	Segments  int64   `json:"segments"`
	Duration  float64 `json:"duration_s"` // first data to last ACK, at least one RTT
	MSS       int     `json:"mss,omitempty"`
	MaxSeg    int     `json:"max_segment,omitempty"`
	// SenderSyn and ReceiverSyn are the options each end offered (the
	// receiver's is the echo of the sender's offer).
	SenderSyn   *SynOptions `json:"sender_syn,omitempty"`
	ReceiverSyn *SynOptions `json:"receiver_syn,omitempty"`
	WindowScale ScaleReport `json:"window_scale"`
	Rwnd        WindowStats `json:"rwnd"`
	RTT         RTTReport   `json:"rtt"`
	Retrans     Retrans     `json:"retransmissions"`
	HWDups      int64       `json:"hardware_duplicates"`
	Reordered   int64       `json:"reordered"`
	MissedBytes int64       `json:"missed_bytes,omitempty"` // acknowledged but never captured
	ZeroWindow  ZeroWindow  `json:"zero_window"`
	KeepAlives  int64       `json:"keep_alives"`
	IdleGaps    int         `json:"idle_gaps"`
	IdleSeconds float64     `json:"idle_s"`
	// HeadSeconds: from the flow's first packet to this direction's first
	// data; TailSeconds: from its last data moving to the flow's last
	// packet (keep-alives, FINs, resets): not in Duration.
	HeadSeconds float64 `json:"head_s"`
	TailSeconds float64 `json:"tail_s"`
	Stalls      Stalls  `json:"timeout_stalls"`
	// Turns: answers to requests from the peer; ThinkSeconds their mean
	// think time (request reaching the sender to the answer).
	Turns        int     `json:"turns,omitempty"`
	ThinkSeconds float64 `json:"think_s,omitempty"`
	SuperFrames  int64   `json:"super_frames,omitempty"`
	diagnose.Verdict
	// Cause is what the path did to a direction held by its congestion
	// window, when the capture shows it (cause.go); its fix is the
	// direction's.
	Cause *diagnose.Cause `json:"cause,omitempty"`
	// CauseNote says why the capture cannot tell the cause of a direction
	// held by its losses (taken away from the sender), when it cannot.
	CauseNote string `json:"cause_note,omitempty"`
	// Seen is what else the path was seen doing wrong without being
	// what limited the direction (reordering its sender tolerated).
	Seen     []diagnose.Cause `json:"seen,omitempty"`
	Timeline *Series          `json:"timeline,omitempty"`
}

// ScaleReport is the window scale state of the receiver's windows.
type ScaleReport struct {
	State      string `json:"state"` // known, not-negotiated, unknown
	Shift      int    `json:"shift"`
	LowerBound int    `json:"lower_bound,omitempty"` // unknown: least shift the flight proves
}

// WindowStats are the receiver's advertised windows (scaled when known).
type WindowStats struct {
	Min   int64 `json:"min_bytes"`
	Max   int64 `json:"max_bytes"`
	First int64 `json:"first_bytes"`
}

// RTTReport holds the RTT measurements of a direction.
type RTTReport struct {
	// AckMin/AckMedian/AckP90 are data-to-ACK times at the capture point
	// (capture - receiver - capture), Karn's rule applied.
	AckMin     float64 `json:"ack_min_s,omitempty"`
	AckMedian  float64 `json:"ack_median_s,omitempty"`
	AckP90     float64 `json:"ack_p90_s,omitempty"`
	AckSamples int64   `json:"ack_samples"`
	// SenderLag is the capture - sender - capture time from the
	// handshake, added to the ACK times to get the path RTT.
	SenderLag float64 `json:"sender_lag_s,omitempty"`
	Path      float64 `json:"path_s,omitempty"`
	Source    string  `json:"source,omitempty"`
	// AckDelay is what was taken out of the RTT as delayed ACKs so that
	// the RTT fits what the window carried: the part of the sender's
	// half of the handshake its own stack held an ACK, and ACK times
	// at the capture above the least when even their median does not fit.
	AckDelay float64 `json:"ack_delay_s,omitempty"`
}

// Retrans counts retransmitted segments by kind: fast (clocked by
// ACKs), after a timeout, tail loss probes, and those found spurious
// (data already acknowledged, or reported twice by a D-SACK; counted in
// their kind too when found after they left).
type Retrans struct {
	Total    int64 `json:"total"`
	Fast     int64 `json:"fast"`
	RTO      int64 `json:"rto"`
	Probe    int64 `json:"probe"`
	Spurious int64 `json:"spurious"`
}

// Stalls are waits for retransmission timeouts.
type Stalls struct {
	Count            int     `json:"count"`
	Seconds          float64 `json:"seconds"`
	PeerUnresponsive bool    `json:"peer_unresponsive,omitempty"`
}

// ZeroWindow counts zero-window stalls.
type ZeroWindow struct {
	Stalls  int     `json:"stalls"`
	Seconds float64 `json:"seconds"`
	Probes  int64   `json:"probes"`
}

// Series is the time-sequence data of a direction for plots.
type Series struct {
	Points        []diagnose.Point `json:"points"`
	Events        []diagnose.Event `json:"events"`
	EventsDropped int64            `json:"events_dropped,omitempty"`
}

func synOpts(d *direction) *SynOptions {
	if !d.synSeen {
		return nil
	}
	o := &SynOptions{WScale: -1, SACKPermitted: d.syn.SACKPermitted, Timestamps: d.syn.HasTimestamp}
	if d.syn.HasMSS {
		o.MSS = int(d.syn.MSS)
	}
	if d.syn.HasWScale {
		o.WScale = int(d.syn.WScale)
	}
	return o
}

func secs(ns int64) float64 { return time.Duration(ns).Seconds() }

// report builds a flow's report and verdicts.
func (f *Flow) report(a *Analyzer) *FlowReport {
	r := &FlowReport{ID: f.ID, Start: secs(f.start), Duration: secs(f.end - f.start), Packets: f.packets, Closed: "open"}
	c := f.client
	r.RolesKnown = c >= 0
	if c < 0 {
		// Guess: the server is the end with the lower (well-known) port.
		c = 0
		if f.Addr[1].Port() > f.Addr[0].Port() {
			c = 1
		}
	}
	r.Client, r.Server = f.Addr[c].String(), f.Addr[1-c].String()
	switch {
	case f.rst:
		r.Closed = "rst"
	case f.fin[0] || f.fin[1]:
		r.Closed = "fin"
	}
	for i := range f.dir {
		f.fitLag(&f.dir[i])
	}
	flowFlags := f.flowFlags(a, r)
	main := 0
	if f.dir[1].sndMax > f.dir[0].sndMax {
		main = 1
	}
	// Directions in client, server order.
	for _, i := range []int{c, 1 - c} {
		d := &f.dir[i]
		if d.segs == 0 && d.keepalive == 0 && d.zwp == 0 && i != main {
			continue
		}
		dr := f.dirReport(a, i, flowFlags)
		if i == main {
			r.Verdict = dr.Verdict
			r.Bytes = dr.Bytes
			r.Sender, r.Receiver = dr.Sender, dr.Receiver
		}
		r.Directions = append(r.Directions, dr)
	}
	return r
}

// flowFlags works out the vantage point and flags shared by both
// directions, filling r.Handshake and r.Vantage.
func (f *Flow) flowFlags(a *Analyzer, r *FlowReport) []string {
	var fl []string
	if !f.synSeen && !f.synAckSeen {
		fl = append(fl, diagnose.FlagMidStream)
	}
	if h1, h2, ok := f.halves(); ok {
		r.Handshake = &Handshake{SynToSynAck: secs(h1), SynAckToAck: secs(h2), RTT: secs(h1 + h2)}
		h1, h2, _ = f.pathHalves()
		ms := int64(time.Millisecond)
		switch {
		case max(h1, h2) < ms:
			// Too close to tell (a LAN or loopback).
		case h2*10 < h1:
			r.Vantage = "client"
		case h1*10 < h2:
			r.Vantage = "server"
		default:
			r.Vantage = "middle"
		}
		// A SYN answered much faster or slower than data is acknowledged
		// from the same side: something on the path answers the
		// handshake (SYN proxy, load balancer, anti-DDoS, PEP).
		for i, near := range [2]int64{h1, h2} { // near: the other end's half
			snd := f.client
			if i == 1 {
				snd = 1 - f.client
			}
			d := &f.dir[snd]
			if d.rttN < 4 || d.d > 0 {
				continue
			}
			// The data's fastest round trip against the handshake: a
			// queue on the path (bufferbloat) raises the median, not it.
			lo, med := d.rttMin, int64(d.rttQuantile(0.5))
			if lo > 3*near+5*ms || 3*med+5*ms < near {
				fl = append(fl, "vantage-proxy")
				break
			}
		}
	} else if f.synSeen || f.synAckSeen {
		r.Handshake = &Handshake{Retransmitted: f.synRetrans}
	}
	if r.Vantage != "" {
		fl = append(fl, "vantage-"+r.Vantage)
	}
	if c := f.client; c >= 0 {
		std := 1460
		if f.Addr[0].Addr().Is6() {
			std = 1440
		}
		for _, d := range f.dir {
			if d.synSeen && d.syn.HasMSS && int(d.syn.MSS) < std {
				fl = append(fl, diagnose.FlagMSSClamped)
				break
			}
		}
	}
	if a.clock.tick() > 0 {
		fl = append(fl, diagnose.FlagCoarseClock)
	}
	// A few timestamps out of order are normal (per-CPU capture queues).
	if a.clock.steps > 0 || a.clock.backwards*100 > a.clock.n {
		fl = append(fl, diagnose.FlagClockSteps)
	}
	return fl
}

// dirReport is one direction's part of the report.
func (f *Flow) dirReport(a *Analyzer, i int, flowFlags []string) DirReport {
	d, p := &f.dir[i], &f.dir[1-i]
	dr := DirReport{
		Sender: f.Addr[i].String(), Receiver: f.Addr[1-i].String(),
		Bytes: d.sndMax, BytesSent: d.bytes, Segments: d.segs, MSS: int(d.effMSS()), MaxSeg: d.maxSeg,
		SenderSyn: synOpts(d), ReceiverSyn: synOpts(p),
		Retrans:     Retrans{d.retrans, d.fast, d.rto, d.probes, d.spurious},
		HWDups:      d.hwdup,
		Reordered:   d.reordered(),
		MissedBytes: d.missed,
		ZeroWindow:  ZeroWindow{d.zwStalls, secs(d.zwTime), d.zwp},
		KeepAlives:  d.keepalive,
		IdleGaps:    d.tl.IdleGaps,
		IdleSeconds: d.tl.IdleTime.Seconds(),
		SuperFrames: d.super,
	}
	if d.zw { // still stalled at the end
		dr.ZeroWindow.Seconds += secs(f.end - d.zwStart)
	}
	if d.firstData >= 0 {
		last := max(d.lastData, d.lastProgress)
		dr.Duration = secs(f.moved(d))
		dr.HeadSeconds = secs(d.firstData - f.start)
		dr.TailSeconds = secs(f.end - last)
	}
	if d.rtoRun > 0 {
		d.stallTo = f.end
	}
	unresp, dead := f.unresponsive(d)
	stallTime := d.stallTime
	if d.rtoRun > 0 && d.stallTo > d.stallFrom {
		stallTime += d.stallTo - d.stallFrom
	}
	dr.Stalls = Stalls{Count: d.rtoStalls, Seconds: secs(stallTime), PeerUnresponsive: dead}
	dr.Turns = d.turns
	dr.ThinkSeconds = d.thinkMean().Seconds()
	dr.WindowScale = f.scaleReport(i)
	dr.Rwnd = WindowStats{Min: max(d.minRwnd, 0), Max: d.maxRwnd, First: max(d.firstRwnd, 0)}
	if !f.shiftKnown[1-i] {
		dr.Rwnd = WindowStats{} // raw values mean nothing without the scale
	}
	dr.RTT = f.rttReport(d)
	if d.firstData >= 0 && dr.Duration < dr.RTT.Path {
		// Data that left in less than a round trip (one flight, a burst
		// at the capture) is not delivered in less than one: its rate
		// over the burst would be the link's, above any window's.
		dr.Duration = dr.RTT.Path
	}
	info := f.diagInfo(a, i, &dr, flowFlags, stallTime, unresp, dead)
	// The transfer ended: the connection closed, or the receiver had
	// acknowledged all of it at the capture (a sender away from the
	// capture would have seen that its lag later, after the capture's
	// end).
	d.tl.Settle(f.rst || f.fin[0] || f.fin[1] || (d.sndMax > 0 && d.sndUna >= d.sndMax))
	info.CaptureLimited = f.captureLimited(a, d, p, info)
	dr.Verdict = diagnose.Diagnose(&d.tl, info)
	j := diagnose.PathCause(dr.Verdict, f.pathEvidence(d, &dr, info))
	dr.Verdict, dr.Cause, dr.CauseNote = j.Verdict, j.Cause, j.CauseNote
	dr.Seen = append(dr.Seen, j.Seen...)
	dr.Timeline = series(d)
	return dr
}

// series is a direction's timeline for the report, or nil when none was
// kept.
func series(d *direction) *Series {
	if d.tl.MaxPoints == 0 {
		return nil
	}
	out := &Series{Points: d.tl.Series, Events: d.tl.Events, EventsDropped: d.tl.EventsDropped}
	if out.Points == nil {
		out.Points = []diagnose.Point{}
	}
	if out.Events == nil {
		out.Events = []diagnose.Event{}
	}
	return out
}

// scaleReport is what is known of the window scale of the windows the
// receiver of direction i advertised.
func (f *Flow) scaleReport(i int) ScaleReport {
	switch {
	case f.shiftKnown[1-i] && f.scale == diagnose.ScaleNotNegotiated:
		return ScaleReport{State: diagnose.ScaleNotNegotiated}
	case f.shiftKnown[1-i]:
		return ScaleReport{State: diagnose.ScaleKnown, Shift: int(f.shift[1-i])}
	}
	return ScaleReport{State: diagnose.ScaleUnknown, LowerBound: int(f.dir[i].lb)}
}

// diagInfo is what diagnose needs of direction i besides its timeline:
// the report's numbers, the handshake's facts and the flags that qualify
// the verdict.
func (f *Flow) diagInfo(a *Analyzer, i int, dr *DirReport, flowFlags []string, stallTime int64, unresp time.Duration, dead bool) diagnose.Info {
	d, p := &f.dir[i], &f.dir[1-i]
	rt := &dr.RTT
	info := diagnose.Info{
		Sender:           f.Addr[i].Addr().String(),
		Receiver:         f.Addr[1-i].Addr().String(),
		RTT:              time.Duration(rt.Path * 1e9),
		RTTSource:        rt.Source,
		MSS:              int(d.effMSS()),
		Scale:            dr.WindowScale.State,
		ScaleLowerBound:  dr.WindowScale.LowerBound,
		RwndGrew:         d.maxRwnd > d.firstRwnd+d.firstRwnd/2 && d.maxRwnd > 65535,
		Bytes:            dr.Bytes,
		Duration:         time.Duration(dr.Duration * 1e9),
		Segments:         d.segs,
		Retrans:          d.retrans,
		RetransFast:      d.fast,
		RetransRTO:       d.rto,
		RetransProbe:     d.probes,
		RetransSpurious:  d.spurious,
		RetransBytes:     max(d.retransBytes-d.spuriousBytes, 0),
		RetransQueued:    min(d.queuedBytes, max(d.retransBytes-d.spuriousBytes, 0)),
		ZeroWindowStalls: d.zwStalls,
		ZeroWindowTime:   time.Duration(dr.ZeroWindow.Seconds * 1e9),
		Flags:            append([]string(nil), flowFlags...),
		RateBps:          a.opts.RateBps,
		RTOStalls:        d.rtoStalls,
		StallTime:        time.Duration(stallTime),
		PeerUnresponsive: dead,
		UnresponsiveTime: unresp,
		Turns:            d.turns,
		ThinkMean:        d.thinkMean(),
		PeerTurns:        p.turns,
		PeerThinkMean:    p.thinkMean(),
		ReceiverClient:   f.client == 1-i,
		FirstReqAck:      time.Duration(d.firstReqAck),
		FirstThink:       time.Duration(d.firstThink),
		ClockTick:        a.clock.tick(),
		Capture:          true,
	}
	if d.synSeen && p.synSeen {
		info.SACK = "off"
		if d.syn.SACKPermitted && p.syn.SACKPermitted {
			info.SACK = "on"
		}
		info.SenderOS, info.ReceiverOS = stackOf(&d.syn), stackOf(&p.syn)
	}
	if d.rttN > 0 {
		info.MinRTT = time.Duration(d.d) + d.rttQuantile(0.1)
		info.HighRTT = time.Duration(d.d) + d.rttQuantile(0.9)
		info.RTTSamples, info.LoneACKSamples = d.rttN, d.rttLone
		if rt.AckDelay > secs(d.lagDelay) {
			// The median did not fit the window (rttReport): its ACK
			// times are delays, not queueing.
			info.MinRTT, info.HighRTT = info.RTT, info.RTT
		}
	}
	if f.away(d) && d.owd.ok() && info.MinRTT > 0 {
		// Away from the sender the capture's ACK times are the
		// receiver's; the queue is the one-way delay's rise.
		info.HighRTT = info.MinRTT + time.Duration(d.owd.queue90())
		info.RTTSamples = max(info.RTTSamples, d.owd.n)
	}
	if f.noScaleSide >= 0 {
		info.NoScaleSide = f.Addr[f.noScaleSide].Addr().String()
	}
	info.Flags = append(info.Flags, captureFlags(d, p)...)
	return info
}

// captureFlags are what the capture says of direction d (p the other):
// hardware duplicates, reordering, super-frames, packets it missed, a
// payload filter.
func captureFlags(d, p *direction) []string {
	var fl []string
	if d.hwdup > 0 {
		fl = append(fl, diagnose.FlagHardwareDups)
	}
	if n := d.reordered(); n > 0 && n*100 >= max(d.segs/100, 1) {
		fl = append(fl, diagnose.FlagReordering)
	}
	if d.super > 0 {
		fl = append(fl, diagnose.FlagSuperFrames)
	}
	if d.missed > 0 {
		fl = append(fl, diagnose.FlagCaptureDrops)
	}
	if payloadOnly(d, p) {
		fl = append(fl, diagnose.FlagPayloadOnly)
	}
	return fl
}

func bool2int(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
