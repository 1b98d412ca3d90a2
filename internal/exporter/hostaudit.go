package exporter

import (
	"time"

	"github.com/longhaul/longhaul/internal/audit"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/snapshot"
)

// PeerPath is the path to a peer group as its operator knows it
// (--peer-path NAME=RTT/RATE): the audit judges this host's buffers
// against that path's bandwidth-delay product. Without one, the audit
// knows no RTT, and a 4 MiB tcp_wmem that holds a 170 ms, 1 Gbit/s path
// at a seventh of its rate is only "info".
type PeerPath struct {
	Group   string
	RTT     time.Duration
	RateBps float64
}

// Finding is an audit finding as the exporter exports it: Peer is the
// peer group whose path it was judged against ("" for the audit with no
// path).
type Finding struct {
	audit.Finding
	Peer string
}

// HostFrom judges a snapshot of the host: the largest window each end
// can use, the audit with no path, and for each peer path the findings
// that path changes (a check the path-less audit does not report, or
// reports at another severity), labelled with its group.
func HostFrom(snap *snapshot.Snapshot, paths []PeerPath) Host {
	base := audit.Run(snap, audit.Path{})
	h := Host{MaxWindowBytes: map[string]float64{}}
	seen := map[string]audit.Severity{}
	for _, f := range base {
		h.Findings = append(h.Findings, Finding{Finding: f})
		seen[f.ID] = f.Severity
	}
	for _, p := range paths {
		for _, f := range audit.Run(snap, audit.Path{RTT: p.RTT, RateBps: p.RateBps}) {
			if s, ok := seen[f.ID]; ok && s == f.Severity {
				continue
			}
			h.Findings = append(h.Findings, Finding{Finding: f, Peer: p.Group})
		}
	}
	in := snap.ModelInput()
	// The largest window does not depend on the path: any valid one will do.
	in.RTT, in.RateBps = 100*time.Millisecond, 1e9
	if r, err := pathmodel.Compute(in); err == nil {
		if r.Receiver.WindowBytes > 0 {
			h.MaxWindowBytes["receive"] = r.Receiver.WindowBytes
		}
		if r.Sender.WindowBytes > 0 {
			h.MaxWindowBytes["send"] = r.Sender.WindowBytes
		}
	}
	return h
}
