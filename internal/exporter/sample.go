//go:build linux

package exporter

import (
	"context"
	"log/slog"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
)

// fullEvery is how often (in samples) the exporter dumps every socket;
// in between it looks up only the sockets that moved data, and the new
// ones. A dump walks the whole socket table (measured with 10,000 idle
// sockets: ~25 ms of kernel time with tcp_info, ~14 ms without it, so a
// dump every second alone costs over 2% of a core); a lookup costs per
// socket asked for. Closed sockets are found by their destroy
// notification.
const fullEvery = 10

// listPer is how many tracked sockets one sample may list (a dump
// without tcp_info, to find new sockets) for free: with more, the list
// is made every Tracked/listPer samples, so that a host with 10,000
// sockets lists every 5 s and one with a few hundred every sample. A new
// socket used to wait for the next full dump (an 8 s transfer was never
// seen while it ran).
const listPer = 2000

// sample folds a sample every interval: a full dump each fullEvery
// samples (and the first two: a baseline, then every socket's activity),
// or when a quarter of the sockets or more are active; otherwise a
// lookup of the active sockets and of the new ones a list finds.
func sample(ctx context.Context, d *flows.RawDumper, t *Tracker, every time.Duration, log *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var socks, active, listed []flows.Sock
	for n := 0; ; n++ {
		start := time.Now()
		active = t.Active(active[:0])
		tracked := t.Tracked()
		full := n%fullEvery == 0 || n == 1 || 4*len(active) >= tracked
		var err error
		switch {
		case full:
			socks, err = d.Dump(socks[:0])
		default:
			if n%max(tracked/listPer, 1) == 0 {
				if listed, err = d.List(listed[:0]); err == nil {
					active = t.Unknown(listed, active)
				}
			}
			if err == nil {
				socks, err = d.Lookup(active, socks[:0])
			}
		}
		if err != nil {
			log.Warn("sample skipped", "err", err)
		} else {
			now := time.Now()
			if full {
				t.Sample(now, socks)
			} else {
				t.SampleSome(now, socks)
			}
			t.SetSampleCost(time.Since(start))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Unknown appends to out the sockets of a list (flows.RawDumper.List)
// that the tracker does not follow yet and would: new connections to
// look up before the next full dump.
func (t *Tracker) Unknown(list, out []flows.Sock) []flows.Sock {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range list {
		if _, ok := t.socks[s.Cookie]; !ok && !t.tomb[s.Cookie] && t.match(s) {
			out = append(out, s)
		}
	}
	return out
}
