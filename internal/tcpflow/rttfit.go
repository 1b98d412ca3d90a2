package tcpflow

import "time"

// RTTs that fit the window (issue 24): a direction's flight is at most
// the largest window its receiver offered, so its path RTT is at most
// that window over the rate it achieved. An estimate above that bound
// holds a delay that is not the path's: the sender's own delayed ACK in
// its half of the handshake (its lag), or the receiver's delayed ACKs in
// the data-to-ACK times. Both are cut to fit and reported apart
// (RTTReport.AckDelay).

// fitBound is the longest path RTT (ns) direction d's window allows at
// the rate it achieved (as its lag now makes it): the sender's flight is
// at most the largest window the receiver offered, so a round trip is at
// most that window over the rate; 0 when unknown (no rate, or the
// window's scale unknown). The average, not a peak: a peak over short
// intervals is a burst's rate, not the window's.
func (f *Flow) fitBound(d *direction) int64 {
	bps := f.achieved(d)
	i := 0
	if d == &f.dir[1] {
		i = 1
	}
	if bps <= 0 || d.maxRwnd <= 0 || !f.shiftKnown[1-i] {
		return 0
	}
	return int64(float64(d.maxRwnd) * 8 / bps * 1e9)
}

// fitLag cuts direction d's lag (its sender's half, from the handshake)
// to what its window allows (fitBound, with a tenth of slack): a
// half longer than that held an ACK the sender's own stack delayed (the
// ACK of the SYN-ACK, or of the peer's first data, on an old stack's
// 200 ms timer), not path. The cut is kept apart as lagDelay.
func (f *Flow) fitLag(d *direction) {
	fit := f.fitBound(d)
	if d.d <= 0 || d.rttN == 0 || fit <= 0 || d.d+d.rttMin <= fit+fit/10 {
		return
	}
	nd := max(fit-d.rttMin, 0)
	d.lagDelay += d.d - nd
	d.d = nd
}

// moved is the time (ns) direction d moved data: from the first data to
// the last data sent or acknowledged; idle head and tail (a request
// awaited, keep-alives, FINs and resets long after) apart. A sender away
// from the capture sees the last ACK its lag later.
func (f *Flow) moved(d *direction) int64 {
	if d.firstData < 0 {
		return 0
	}
	last := max(d.lastData, d.lastProgress)
	return last - d.firstData + d.d*bool2int(d.lastProgress >= d.lastData && d.sndUna > 0)
}

// achieved is direction d's rate (bit/s) over the time it moved data.
func (f *Flow) achieved(d *direction) float64 {
	if t := f.moved(d); t > 0 {
		return float64(d.sndMax) * 8 / time.Duration(t).Seconds()
	}
	return 0
}

// rttReport is the sender's RTT: data to ACK at the capture point plus
// the sender's half (its lag), else the handshake's. The RTT must fit
// what the window carried at the rate achieved (fitBound); the report's
// lag was already cut to fit (fitLag), and when even the median ACK time
// does not fit, the least one (which cannot hold a delay the others do
// not) is the path's.
func (f *Flow) rttReport(d *direction) RTTReport {
	var r RTTReport
	rt := &r
	rt.AckSamples = d.rttN
	if d.rttN > 0 {
		rt.AckMin, rt.AckMedian, rt.AckP90 = secs(d.rttMin), d.rttQuantile(0.5).Seconds(), d.rttQuantile(0.9).Seconds()
		rt.SenderLag = secs(d.d)
		rt.Path = rt.SenderLag + rt.AckMedian
		rt.Source = "data to ACK at the capture point"
		switch {
		case d.lagDelay > 0:
			rt.Source = "sender's half of the handshake less its delayed ACK (cut to what the window carried) + data to ACK at the capture point"
		case d.lagFromData:
			rt.Source = "sender's half from the other direction's ACK times (10th percentile; the handshake's was slower) + data to ACK at the capture point"
		case d.d > 0:
			rt.Source = "sender's half of the handshake + data to ACK at the capture point"
		}
		rt.AckDelay = secs(d.lagDelay)
		if fit := f.fitBound(d); fit > 0 && d.d+int64(d.rttQuantile(0.5)) > fit+fit/10 && d.d+d.rttMin <= fit+fit/10 {
			rt.AckDelay += rt.AckMedian - rt.AckMin
			rt.Path = rt.SenderLag + rt.AckMin
			rt.Source += " (the least: the median held delayed ACKs, it does not fit the window)"
		}
	} else if h1, h2, ok := f.halves(); ok {
		rt.Path, rt.Source = secs(h1+h2), "handshake"
	}
	return r
}
