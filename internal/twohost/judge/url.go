package judge

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/units"
)

// URLRaw is what a download from a URL measured.
type URLRaw struct {
	URL        string
	Remote     string // the server's address
	Status     string // HTTP status line
	Started    time.Time
	Connect    time.Duration // TCP handshake
	Duration   time.Duration // from the request to the end of the body or the limit
	Bytes      int64         // body bytes read
	Complete   bool          // the whole body came
	Samples    []testdoc.URLSample
	Client     *snapshot.Snapshot
	MSS        int
	DurationIn time.Duration // the limit asked for

	// An upload (Direction URLUpload; "" is a download): the method, the
	// body's size, the sending socket's tcp_info every 100 ms, and what
	// the run noticed (the server answered before the body's end).
	Direction string
	Method    string
	BodySize  int64
	Sent      []flows.Sample
	Notes     []string
}

// JudgeURL explains a download from a URL with this host's view only:
// the receiver's window, RTT and out-of-order arrivals. It names this
// host and its tcp_rmem when the window held the flow back; otherwise the
// limit is at the far end or on the path, which only a test against
// longhaul serve (or a capture there) can tell apart.
func JudgeURL(raw *URLRaw, rateBps float64) (*testdoc.URLDoc, error) {
	if raw.Direction == testdoc.URLUpload {
		return judgeUpload(raw, rateBps), nil
	}
	d := urlJudging{&testdoc.URLDoc{Schema: testdoc.URLSchema, Started: raw.Started, Direction: testdoc.URLDownload, URL: raw.URL, Remote: raw.Remote, Status: raw.Status,
		Bytes: raw.Bytes, Complete: raw.Complete, DurationS: raw.Duration.Seconds(), ConnectS: raw.Connect.Seconds(),
		Client: raw.Client, Samples: raw.Samples}}
	if d.Samples == nil {
		d.Samples = []testdoc.URLSample{}
	}
	if raw.Duration > 0 {
		d.ThroughputBps = float64(raw.Bytes) * 8 / raw.Duration.Seconds()
	}
	steady := steadyHalf(raw.Samples)
	d.SteadyBps = d.ThroughputBps
	if len(steady) >= 2 {
		a, b := steady[0], steady[len(steady)-1]
		if dt := b.T - a.T; dt > 0 {
			d.SteadyBps = float64(b.BytesReceived-a.BytesReceived) * 8 / dt
		}
	}
	d.LoadedRTT = loadedRTT(steady, raw.Connect)
	if d.LoadedRTT > 0 {
		d.Rounds = d.DurationS / d.LoadedRTT
	}
	for _, s := range steady {
		d.MaxWindowBytes = max(d.MaxWindowBytes, s.RcvWnd)
	}
	if n := len(raw.Samples); n > 0 {
		d.OutOfOrder = raw.Samples[n-1].OutOfOrder
	}
	d.InFlightBytes = d.SteadyBps / 8 * d.LoadedRTT
	rtt := time.Duration(d.LoadedRTT * float64(time.Second))
	if raw.Client != nil && rtt > 0 {
		in := raw.Client.ModelInput()
		in.Wmem, in.InitCwnd, in.InitRwnd, in.TCPMemPages, in.RAMBytes = in.Rmem, 0, 0, [3]int64{}, 0
		in.RTT, in.RateBps = rtt, unknownRate
		if r, err := pathmodel.Compute(in); err == nil {
			d.WindowCeilingBytes = int64(r.Receiver.WindowBytes)
		}
	}
	d.Limit = d.limit(diagnose.JudgeReceiver(d.view(rtt, rateBps, nil)).Held, rtt, rateBps)
	d.Headline = fmt.Sprintf("%s in %s (%s steady), RTT %s: limited by %s", units.FormatBytes(float64(d.Bytes)), secs(d.DurationS),
		units.FormatRate(d.SteadyBps), units.FormatDuration(rtt.Round(100*time.Microsecond)), d.Limit.Text)
	d.planFor(rtt, rateBps)
	d.Fix = d.fixLines()
	return d.URLDoc, nil
}

// steadyHalf is the second half of the samples by time.
func steadyHalf(s []testdoc.URLSample) []testdoc.URLSample {
	if len(s) < 4 {
		return s
	}
	mid := (s[0].T + s[len(s)-1].T) / 2
	i, _ := slices.BinarySearchFunc(s, mid, func(x testdoc.URLSample, t float64) int { return cmp.Compare(x.T, t) })
	return s[i:]
}

// loadedRTT is the median of the receiver's RTT estimates, or the
// handshake's when the receiver measured none.
func loadedRTT(s []testdoc.URLSample, connect time.Duration) float64 {
	var v []float64
	for _, x := range s {
		if x.RcvRTT > 0 {
			v = append(v, x.RcvRTT)
		}
	}
	if len(v) == 0 {
		return connect.Seconds()
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// view is the download as its receiver saw it, for
// diagnose.JudgeReceiver, with what the sender reported (nil none).
func (d urlJudging) view(rtt time.Duration, rateBps float64, sender *diagnose.SenderReport) diagnose.ReceiverView {
	return diagnose.ReceiverView{Bytes: d.Bytes, Bps: d.SteadyBps, RTT: rtt, Rounds: d.Rounds, InFlight: d.InFlightBytes,
		MaxWindow: d.MaxWindowBytes, Ceiling: d.WindowCeilingBytes, OutOfOrder: d.OutOfOrder, PathBps: pathmodel.Goodput(rateBps), Sender: sender}
}

// limit names the host and the setting where the receiver's judgement
// placed what held the download back (diagnose.Held*).
func (d urlJudging) limit(held string, rtt time.Duration, rateBps float64) testdoc.Limit {
	at := units.FormatDuration(rtt.Round(100 * time.Microsecond))
	rmem := ""
	if d.Client != nil {
		rmem = d.Client.Sysctls["net.ipv4.tcp_rmem"]
	}
	open := fmt.Sprintf("this host's window was open (%s in flight of a %s window)", units.FormatBytes(d.InFlightBytes), units.FormatBytes(float64(d.MaxWindowBytes)))
	switch held {
	case diagnose.HeldByLength:
		return testdoc.Limit{Host: testdoc.HostTest, Text: fmt.Sprintf("the transfer's length: %s took %.1f round trips, mostly slow start; the server's initcwnd and this host's initrwnd set how many (a longer download measures the path)",
			units.FormatBytes(float64(d.Bytes)), d.Rounds)}
	case diagnose.HeldUnknown:
		return testdoc.Limit{Host: "unknown", Text: "unknown: the kernel reported no receive window or RTT for the download"}
	case diagnose.HeldAtRate:
		return d.rateLimit(rateBps)
	case diagnose.HeldByRcvbuf:
		return testdoc.Limit{Host: testdoc.HostClient, Setting: "net.ipv4.tcp_rmem", Value: rmem,
			Text: fmt.Sprintf("this host's receive buffer: net.ipv4.tcp_rmem max %s allows a %s window: %s at %s",
				maxIEC(rmem), units.FormatBytes(float64(d.WindowCeilingBytes)), units.FormatRate(pathmodel.WindowCeiling(float64(d.WindowCeilingBytes), rtt)), at)}
	case diagnose.HeldByWindow:
		return testdoc.Limit{Host: testdoc.HostClient, Text: fmt.Sprintf("this host's receive window: autotuning had grown it to %s of the %s net.ipv4.tcp_rmem allows (%s at %s); a longer download lets it grow",
			units.FormatBytes(float64(d.MaxWindowBytes)), units.FormatBytes(float64(d.WindowCeilingBytes)), units.FormatRate(pathmodel.WindowCeiling(float64(d.MaxWindowBytes), rtt)), at)}
	case diagnose.HeldByOutOfOrder:
		return testdoc.Limit{Host: testdoc.HostServerOrPath, Text: fmt.Sprintf("the path or the server: %d segments arrived out of order (loss or reordering: %.2g of them, enough to hold a Reno or CUBIC flow near this rate), and %s; a test against longhaul serve there tells loss from the server's send side",
			d.OutOfOrder, diagnose.SegmentShare(d.OutOfOrder, d.Bytes, 0), open)}
	}
	return testdoc.Limit{Host: testdoc.HostServerOrPath, Text: fmt.Sprintf("the server's send side (send buffer, congestion window, application) or the path's rate: %s; run longhaul serve there and longhaul test to tell them apart", open)}
}

// rateLimit names the path's rate as the limit: the transfer's steady
// rate reached what the rate the user gave (--rate) carries as TCP.
func (d urlJudging) rateLimit(rateBps float64) testdoc.Limit {
	return testdoc.Limit{Host: testdoc.HostPath, Text: fmt.Sprintf("the path's rate, reached: the %s ran at %s, what --rate %s carries as TCP (%s); nothing to fix on this host or the server",
		d.Direction, units.FormatRate(d.SteadyBps), units.FormatRate(rateBps), units.FormatRate(pathmodel.Goodput(rateBps)))}
}

// planFor makes this host's plan when its buffer is the limit: its
// receive buffer on a download, its send buffer on an upload (the plan's
// role is the one of the host that sends, "server").
func (d urlJudging) planFor(rtt time.Duration, rateBps float64) {
	role := plan.Client
	switch {
	case d.Client == nil || d.Limit.Host != testdoc.HostClient:
		return
	case d.Limit.Setting == "net.ipv4.tcp_wmem":
		role = plan.Server
	case d.Limit.Setting != "net.ipv4.tcp_rmem":
		return
	}
	if rateBps <= 0 {
		d.PlanHint = fmt.Sprintf("longhaul plan --rtt %s --rate RATE --role %s (RATE: the path's rate; or test again with --rate)",
			rtt.Round(time.Millisecond), role)
		return
	}
	p, err := plan.Make(d.Client, plan.Request{RTT: rtt, RateBps: rateBps, Role: role})
	if err != nil {
		d.Notes = append(d.Notes, "no plan: "+err.Error())
		return
	}
	d.Plan = &p
}
