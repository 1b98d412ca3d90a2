//go:build linux

package twohost

import (
	"context"
	"fmt"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// lossProbes are the phases that follow a download that lost segments
// (ClientOptions.LossProbes, lossProbePlan), as many as the server's
// time cap leaves room for.
func (o ClientOptions) lossProbes(down judge.PhaseRaw, raw *judge.Raw, d, used time.Duration) []lossProbe {
	var lost int64
	for _, s := range down.Server {
		lost = max(lost, s.Sock.Retrans)
	}
	carried := judge.AggregateRate(down.Server)
	if lost == 0 || carried <= 0 {
		return nil
	}
	out := lossProbePlan(carried, serverHasBBR(raw), raw.Caps.UDP, o.CCs, d)
	left := raw.Caps.MaxDurationS - used.Seconds() - wire.EndSlack.Seconds()
	fit := int(left / (d + phaseExtra(judge.MinDur(raw.IdleRTTs))).Seconds())
	if fit < len(out) {
		o.progress("the server's time cap leaves room for %d of the %d phases that tell the path's loss causes apart", max(fit, 0), len(out))
		out = out[:max(fit, 0)]
	}
	return out
}

// phases are the phases to run and their length: rounds x RTT (at least
// MinPhase), or the fixed duration; all must fit the server's caps.
func (o ClientOptions) phases(rtt time.Duration, caps testdoc.Caps, used time.Duration) ([]wire.PhaseReq, time.Duration, error) {
	d := o.Duration
	how := fmt.Sprintf("--duration %s", d)
	if d == 0 {
		d = max(time.Duration(o.Rounds)*rtt, MinPhase)
		how = fmt.Sprintf("%d round trips of %s", o.Rounds, rtt.Round(100*time.Microsecond))
	}
	var out []wire.PhaseReq
	add := func(name string, streams int) {
		out = append(out, wire.PhaseReq{Name: name, Streams: streams, DurationS: d.Seconds(), RateBps: o.RateBps})
	}
	if o.Download {
		add(wire.PhaseDownload, 1)
	}
	if o.Upload {
		add(wire.PhaseUpload, 1)
	}
	if o.Streams > 1 {
		add(wire.PhaseCapacity, o.Streams)
	}
	for _, cc := range o.CCs {
		out = append(out, wire.PhaseReq{Name: wire.PhaseDownload, Streams: 1, DurationS: d.Seconds(), RateBps: o.RateBps, CC: cc})
	}
	if len(out) == 0 {
		return nil, 0, badinput.Errorf("test: nothing to run: give --download, --upload or --streams N")
	}
	need := float64(len(out)) * (d + phaseExtra(rtt)).Seconds()
	left := caps.MaxDurationS - used.Seconds() - wire.EndSlack.Seconds()
	if need > left {
		fit := int((left/float64(len(out)) - phaseExtra(rtt).Seconds()) / max(rtt.Seconds(), 1e-6))
		hint := fmt.Sprintf("use --rounds %d or fewer phases, or ask its operator to raise --max-duration", fit)
		if time.Duration(fit)*rtt < MinPhase {
			hint = "run fewer phases (--download, --upload, --streams 0), or ask its operator to raise --max-duration"
		}
		return nil, 0, badinput.Errorf("test: the path is too long for the server's caps: %d phase(s) of %s (%s) need %s, the server allows %s per test (its --max-duration); %s",
			len(out), units.FormatDuration(d.Round(100*time.Millisecond)), how, units.FormatDuration(time.Duration(need*float64(time.Second)).Round(time.Second)),
			units.FormatDuration(time.Duration(caps.MaxDurationS*float64(time.Second))), hint)
	}
	if o.Streams > caps.MaxStreams {
		o.progress("the server allows %d streams, not %d", caps.MaxStreams, o.Streams)
	}
	return out, d, nil
}

// planPhases is the phases Run runs and their length: sized (phases),
// fitted to ctx's deadline (raw.PhaseCut says how), their pace lowered
// to the byte cap (o.RateBps too: the plain phases are those at it).
func (o *ClientOptions) planPhases(ctx context.Context, raw *judge.Raw, used time.Duration) ([]wire.PhaseReq, time.Duration, error) {
	rtt := judge.MinDur(raw.IdleRTTs)
	plan, d, err := o.phases(rtt, raw.Caps, used)
	if err == nil {
		plan, d, raw.PhaseCut, err = o.fitDeadline(ctx, plan, d, rtt)
	}
	if err != nil {
		return nil, 0, err
	}
	if raw.PhaseCut != "" {
		o.progress("%s", raw.PhaseCut)
	}
	if r := o.phaseRate(d); r != o.RateBps {
		o.RateBps = r
		for i := range plan {
			plan[i].RateBps = r
		}
	}
	return plan, d, nil
}

// phaseExtra is what a phase takes beyond its transfer on a path of rtt
// (its request, its streams' handshakes, its end): TestLength's part.
func phaseExtra(rtt time.Duration) time.Duration { return PhaseOverhead + phaseRoundTrips*max(rtt, 0) }

// phaseRate is the pace a phase of length d asks: RateBps, lowered to
// what moves MaxPhaseBytes in d.
func (o ClientOptions) phaseRate(d time.Duration) float64 {
	r := o.RateBps
	if o.MaxPhaseBytes > 0 && d > 0 {
		if b := float64(o.MaxPhaseBytes) * 8 / d.Seconds(); r == 0 || b < r {
			r = b
		}
	}
	return r
}

// fitDeadline shortens phases sized in round trips (Rounds) to what
// ctx's deadline leaves (a prober's scrape timeout); cut says so when it
// did. A fixed --duration is the user's: it is not shortened. Phases
// that cannot get MinPhase each are an error, not a ramp judged.
func (o ClientOptions) fitDeadline(ctx context.Context, plan []wire.PhaseReq, d, rtt time.Duration) ([]wire.PhaseReq, time.Duration, string, error) {
	end, ok := ctx.Deadline()
	if !ok || o.Duration > 0 || len(plan) == 0 {
		return plan, d, "", nil
	}
	left := time.Until(end) - DeadlineSlack
	per := left/time.Duration(len(plan)) - phaseExtra(rtt)
	if per >= d {
		return plan, d, "", nil
	}
	if per < MinPhase {
		return nil, 0, "", fmt.Errorf("test: the deadline leaves %s for %d phases: each needs at least %s and about %s of set-up; allow more time (a prober: --probe-timeout and the scrape timeout)",
			units.FormatDuration(left.Round(100*time.Millisecond)), len(plan), MinPhase, units.FormatDuration(phaseExtra(rtt).Round(100*time.Millisecond)))
	}
	per = per.Truncate(100 * time.Millisecond)
	for i := range plan {
		plan[i].DurationS = per.Seconds()
	}
	cut := fmt.Sprintf("phases cut to %s (%.0f round trips of %s) to end within the deadline, %s away; %d round trips were asked",
		units.FormatDuration(per), per.Seconds()/max(rtt.Seconds(), 1e-6), units.FormatDuration(rtt.Round(100*time.Microsecond)),
		units.FormatDuration(left.Round(100*time.Millisecond)), o.Rounds)
	return plan, per, cut, nil
}
