package flows

import (
	"context"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// LossTrack follows one sending socket sample by sample (tcp_info read
// at a fixed interval) and keeps the evidence of how it lost segments
// that diagnose.LossCause reads: test's phases and flows' intervals build
// it alike. Random loss puts a segment here and there; a queue
// overflowing loses several in one sample.
type LossTrack struct {
	prev Sock // the last sample (the base before the first)
	// Events counts samples in which the retransmission count rose, Lost
	// the segments retransmitted in all, Intervals the samples in which
	// data was acknowledged.
	Events    int
	Lost      int64
	Intervals int
	// PeakBps is the highest delivery rate (the kernel's estimate) seen.
	PeakBps float64
	// onsets tallies the loss events by the queue the sample before each
	// showed (its smoothed RTT over the minimum; lastRTT), as analyze's
	// recoveries (diagnose.Onsets).
	onsets  diagnose.Onsets
	lastRTT time.Duration
	rtts    []time.Duration // smoothed RTTs of the samples that moved data (at most maxRTTs)
	first   Sock
	n       int
}

// maxRTTs bounds the RTTs a track keeps (the first ones of a long run;
// an interval of flows has 20 samples, an exporter window about 10), so
// a track costs under a kilobyte (the exporter keeps one per sender).
const maxRTTs = 64

// NewLossTrack starts a track from base: the socket's counters before
// the first sample (the zero Sock for a socket opened for the purpose).
func NewLossTrack(base Sock) *LossTrack { return &LossTrack{prev: base, first: base} }

// Add takes the next sample of the socket.
func (l *LossTrack) Add(s Sock) {
	if d := s.Retrans - l.prev.Retrans; d > 0 {
		l.Events++
		l.Lost += d
		if l.lastRTT > 0 && s.MinRTT > 0 {
			l.onsets.Add(d, max(l.lastRTT-s.MinRTT, 0), s.MinRTT)
		}
	}
	if s.RTT > 0 {
		l.lastRTT = s.RTT
	}
	if s.BytesAcked > l.prev.BytesAcked {
		l.Intervals++
		if s.RTT > 0 && len(l.rtts) < maxRTTs {
			l.rtts = append(l.rtts, s.RTT)
		}
	}
	l.PeakBps = max(l.PeakBps, s.DeliveryBps)
	l.prev.Retrans, l.prev.BytesAcked = max(l.prev.Retrans, s.Retrans), max(l.prev.BytesAcked, s.BytesAcked)
	l.prev.DataSegsOut = max(l.prev.DataSegsOut, s.DataSegsOut)
	l.n++
}

// Samples is how many samples the track took.
func (l *LossTrack) Samples() int { return l.n }

// Fill writes the track's loss evidence into e: events, segments lost,
// intervals and the loss rate (of the data segments sent since the base).
func (l *LossTrack) Fill(e *diagnose.LossEvidence) {
	e.LossEvents, e.Lost, e.Intervals = l.Events, l.Lost, l.Intervals
	if l.onsets != (diagnose.Onsets{}) {
		o := l.onsets
		e.Onsets = &o
	}
	if segs := l.prev.DataSegsOut - l.first.DataSegsOut; segs > 0 {
		e.LossRate = float64(l.Lost) / float64(segs)
	}
}

// quietLosses is how many losses the socket's loss rate before a track
// must predict over the track's segments for a track that lost none to
// say the earlier ones came in a burst: random loss at that rate leaves
// an interval without any with a chance of e^-5, under 1%.
const quietLosses = 5

// burstBefore is the fewest segments lost before a track that FillBefore
// takes for a burst: one random loss may count two retransmissions (its
// tail loss probe and the repair), and a download over 0.01% random loss
// that lost 1 segment in slow start was named shallow-buffer (lab causes
// at 9908e37, 2 of 5 runs).
const burstBefore = 4

// FillBefore writes, for a track that lost nothing, the losses its
// socket had before the track began as one burst, when they were too
// many to be random: at the rate they came (of the data segments sent
// before), random loss would have put quietLosses or more in the
// track's segments. A cubic flow that overflowed a shallow queue in
// slow start grows back for seconds without losing (measured: 100 ms x
// 500 Mbit/s, a 0.05 BDP queue: 82-98 Mbit/s, no loss in 4 s after
// 200-300 segments lost in one burst); random loss keeps losing.
// It reports whether it wrote them.
func (l *LossTrack) FillBefore(e *diagnose.LossEvidence) bool {
	before, segs := l.first.Retrans, l.first.DataSegsOut
	now := l.prev.DataSegsOut - l.first.DataSegsOut
	if l.Lost > 0 || before < burstBefore || segs <= 0 || now <= 0 || float64(before)*float64(now) < quietLosses*float64(segs) {
		return false
	}
	e.LossEvents, e.Lost, e.Intervals, e.Onsets = 1, before, max(l.Intervals, 1), nil
	e.LossRate = float64(before) / float64(segs+now)
	return true
}

// MedianRTT is the median smoothed RTT of the samples that moved data; 0
// without any.
func (l *LossTrack) MedianRTT() time.Duration {
	if len(l.rtts) == 0 {
		return 0
	}
	s := slices.Clone(l.rtts)
	slices.Sort(s)
	return s[len(s)/2]
}

// maxTracks bounds the sockets one interval follows (the first seen).
const maxTracks = 4096

// TrackUntil reads the sockets (dump) every step until the deadline or
// the context's end, and follows each that passes filter in a LossTrack
// from its state in prev (zero counters for a socket new since): the
// samples between an interval's two dumps (Options.Tracks). A failed
// read ends the sampling early, with what it had.
func TrackUntil(ctx context.Context, dump func() ([]Sock, error), prev []Sock, filter Filter, step time.Duration, until time.Time) map[string]*LossTrack {
	base := make(map[string]Sock, len(prev))
	for _, s := range prev {
		base[s.Key()] = s
	}
	tracks := map[string]*LossTrack{}
	for {
		wait := min(step, time.Until(until))
		if wait <= 0 {
			return tracks
		}
		select {
		case <-ctx.Done():
			return tracks
		case <-time.After(wait):
		}
		if time.Until(until) <= 0 {
			return tracks // the interval's own dump ends it
		}
		socks, err := dump()
		if err != nil {
			return tracks
		}
		for _, s := range socks {
			if !filter.Match(s) {
				continue
			}
			k := s.Key()
			tr := tracks[k]
			if tr == nil {
				if len(tracks) >= maxTracks {
					continue
				}
				tr = NewLossTrack(base[k])
				tracks[k] = tr
			}
			tr.Add(s)
		}
	}
}
