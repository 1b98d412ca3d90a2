// What the collector reads: a copy of the tracker's totals, by group and
// (with --per-flow) by socket.

package exporter

import (
	"cmp"
	"slices"
	"time"
)

// GroupView is one group's totals and gauges.
type GroupView struct {
	Name string
	Counters
	Open   int
	MinRTT time.Duration
}

// FlowView is one socket's totals (--per-flow).
type FlowView struct {
	Peer, Local, Remote string
	Counters
}

// View is a copy of the tracker's state for one scrape.
type View struct {
	Groups    []GroupView // by name
	Flows     []FlowView  // by socket cookie, at most the maxFlows asked for
	MoreFlows int         // flows left out of Flows
	Verdicts  map[string]int
	// Causes counts open sockets by the path cause their last window
	// named (within two windows).
	Causes map[string]int
	Self   SelfStats
}

// View copies the state; at most maxFlows flows (with --per-flow).
func (t *Tracker) View(maxFlows int) View {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := View{Verdicts: map[string]int{}, Self: t.self}
	for _, g := range t.groups {
		v.Groups = append(v.Groups, GroupView{Name: g.name, Counters: g.Counters, Open: g.open, MinRTT: g.minRTT})
	}
	slices.SortFunc(v.Groups, func(a, b GroupView) int { return cmp.Compare(a.Name, b.Name) })
	for k, n := range t.verdicts {
		v.Verdicts[k] = n
	}
	v.Causes = map[string]int{}
	for _, st := range t.socks {
		if !st.gone && st.loss.cause != "" && t.last.Sub(st.loss.at) <= 2*causeEvery {
			v.Causes[st.loss.cause]++
		}
	}
	if !t.cfg.PerFlow {
		return v
	}
	cookies := make([]uint64, 0, len(t.socks))
	for c, st := range t.socks {
		if !st.gone && st.group != "" {
			cookies = append(cookies, c)
		}
	}
	slices.Sort(cookies)
	v.MoreFlows = max(len(cookies)-maxFlows, 0)
	for _, c := range cookies[:min(len(cookies), max(maxFlows, 0))] {
		st := t.socks[c]
		v.Flows = append(v.Flows, FlowView{Peer: st.group, Local: st.last.Local.String(), Remote: st.last.Remote.String(), Counters: st.flow})
	}
	return v
}
