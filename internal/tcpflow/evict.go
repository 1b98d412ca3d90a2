package tcpflow

import (
	"container/heap"
	"slices"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// DefaultMaxFlows bounds the flow table and the list of flows when
// Options.MaxFlows is 0. A followed connection takes about 7 KB and its
// report about 3 KB: about 100 MB of live heap at most, whatever the
// capture holds (BenchmarkAnalyzeShortFlows).
const DefaultMaxFlows = 10_000

// Summary counts the flows judged but not listed in Analysis.Flows: the
// capture held more connections than --max-flows, and these carried the
// fewest bytes.
type Summary struct {
	Flows   int64 `json:"flows"`
	Packets int64 `json:"packets"`
	Bytes   int64 `json:"bytes"`
	// Verdicts counts the summarised flows by verdict.
	Verdicts map[string]int64 `json:"verdicts"`
	// Evicted counts the connections the analyzer stopped following
	// before the capture ended, the table being full: they were judged on
	// what came before (a later packet of one starts a new flow, without
	// its handshake).
	Evicted int64 `json:"evicted"`
}

func (a *Analyzer) maxFlows() int {
	if a.opts.MaxFlows > 0 {
		return a.opts.MaxFlows
	}
	return DefaultMaxFlows
}

// makeRoom stops following the quarter of the table that went longest
// without a packet, when the table is full: each is judged now and kept
// (or summarised) like a flow at the end of the capture.
func (a *Analyzer) makeRoom() {
	limit := a.maxFlows()
	if len(a.flows) < limit {
		return
	}
	byIdle := slices.Clone(a.flows)
	slices.SortFunc(byIdle, func(x, y *Flow) int { return cmpInt64(x.end, y.end) })
	out := byIdle[:max(1, limit/4)]
	for _, f := range a.flows {
		a.notePairRTT(f)
	}
	for _, f := range out {
		f.evicted = true
		for dir, k := range [2]key{{f.Addr[0], f.Addr[1]}, {f.Addr[1], f.Addr[0]}} {
			if r, ok := a.index[k]; ok && r.f == f && int(r.dir) == dir {
				delete(a.index, k)
			}
		}
		a.keep(a.judge(f))
	}
	a.summary.Evicted += int64(len(out))
	for i := range a.cache {
		if c := &a.cache[i]; c.f != nil && c.f.evicted {
			*c = cacheEntry{}
		}
	}
	a.flows = slices.DeleteFunc(a.flows, func(f *Flow) bool { return f.evicted })
}

func cmpInt64(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// judge reports a flow, flagging any contradiction in the report.
func (a *Analyzer) judge(f *Flow) *FlowReport {
	f.pathRTT = a.pathRTT(f)
	r := f.report(a)
	if msgs := CheckInvariants(r); len(msgs) > 0 {
		// Never print a contradiction as fact: flag it, list it.
		r.Inconsistent = msgs
		r.Flags = append(r.Flags, diagnose.FlagInconsistent)
	}
	return r
}

// keep lists r, unless --max-flows reports are listed already: then the
// report with the fewest bytes of them all is summarised instead.
func (a *Analyzer) keep(r *FlowReport) {
	if r.ID == a.opts.SeriesFlow {
		a.pinned = r // the flow asked for is listed whatever its size
		return
	}
	if len(a.listed) < a.maxFlows() {
		heap.Push(&a.listed, r)
		return
	}
	if a.listed[0].Bytes < r.Bytes {
		r, a.listed[0] = a.listed[0], r
		heap.Fix(&a.listed, 0)
	}
	s := &a.summary
	s.Flows++
	s.Packets += r.Packets
	s.Bytes += r.Bytes
	if s.Verdicts == nil {
		s.Verdicts = map[string]int64{}
	}
	s.Verdicts[r.Verdict.Verdict]++
}

// byBytes is a min-heap of reports by bytes (then by ID, the later
// first, so that among equals the earlier flows stay listed).
type byBytes []*FlowReport

func (h byBytes) Len() int { return len(h) }
func (h byBytes) Less(i, j int) bool {
	if h[i].Bytes != h[j].Bytes {
		return h[i].Bytes < h[j].Bytes
	}
	return h[i].ID > h[j].ID
}
func (h byBytes) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *byBytes) Push(x any)   { *h = append(*h, x.(*FlowReport)) }
func (h *byBytes) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
