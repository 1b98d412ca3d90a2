// Package drift compares a host snapshot with a plan (longhaul.plan/v1):
// which of the plan's sysctls and route metrics the host does not have
// (any more). It is what `longhaul audit --against plan.json` reports,
// the check a configuration-management or CI run makes after applying
// the plan by whatever means (apply, Ansible, tuned, a DaemonSet). It is
// pure: the snapshot is gathered elsewhere.
//
// Values are compared with whitespace collapsed (the kernel prints
// tcp_rmem with tabs); a value must equal the plan's exactly, not merely
// be larger: the plan is what config management was told to set.
package drift

import (
	"fmt"

	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// Schema names the JSON form of a Report.
const Schema = "longhaul.drift/v1"

// Status of one plan item on the host.
const (
	OK      = "ok"      // the host has the plan's value
	Drifted = "drifted" // it has another value, or none
	Skipped = "skipped" // it could not be checked here (said in Note)
)

// Check is one plan item compared with the host.
type Check struct {
	Kind   plan.Kind `json:"kind"`
	Key    string    `json:"key"`
	Want   string    `json:"want"`
	Have   string    `json:"have"`
	Status string    `json:"status"`
	Note   string    `json:"note,omitempty"`
}

// Report is the comparison; Drifted counts the items that differ.
type Report struct {
	Schema  string  `json:"schema"`
	Host    string  `json:"host,omitempty"`
	Netns   string  `json:"netns,omitempty"`
	Source  string  `json:"source"`
	Kernel  string  `json:"kernel,omitempty"`
	Checks  []Check `json:"checks"`
	Drifted int     `json:"drifted"`
	// Notes say what differs between the plan's host and this one.
	Notes []string `json:"notes,omitempty"`
}

// Compare checks every sysctl and route item of p against s. Host-wide
// keys are skipped in a network namespace (they cannot be set there);
// routes are skipped when the snapshot has none (--root, or a snapshot
// file without them); application items are not host state.
func Compare(s *snapshot.Snapshot, p plan.Plan) Report {
	r := Report{Schema: Schema, Host: s.Hostname, Netns: s.Netns, Source: s.Source, Kernel: s.Kernel.Release, Checks: []Check{}}
	if p.Kernel != "" && s.Kernel.Release != "" && p.Kernel != s.Kernel.Release {
		r.Notes = append(r.Notes, fmt.Sprintf("the plan was made on Linux %s, this host runs %s: the values are compared all the same", p.Kernel, s.Kernel.Release))
	}
	for _, it := range p.Items {
		var c Check
		switch it.Kind {
		case plan.KindSysctl:
			c = sysctlCheck(s, it)
		case plan.KindRoute:
			c = routeCheck(s, it)
		default:
			continue
		}
		if c.Status == Drifted {
			r.Drifted++
		}
		r.Checks = append(r.Checks, c)
	}
	return r
}

func sysctlCheck(s *snapshot.Snapshot, it plan.Item) Check {
	c := Check{Kind: it.Kind, Key: it.Key, Want: sysctl.Normalize(it.New)}
	if s.Netns != "" && it.Scope == plan.ScopeHost {
		c.Status, c.Note = Skipped, "host-wide: not settable in network namespace "+s.Netns
		return c
	}
	have, ok := s.Sysctls[it.Key]
	switch {
	case ok:
		c.Have = sysctl.Normalize(have)
	case contains(s.MissingKeys, it.Key):
		c.Have, c.Note = "absent", "this kernel has no such key"
	default:
		c.Status, c.Note = Skipped, "not read on this host"
		return c
	}
	c.Status = OK
	if c.Have != c.Want {
		c.Status = Drifted
	}
	return c
}

func routeCheck(s *snapshot.Snapshot, it plan.Item) Check {
	rt := it.Route
	c := Check{Kind: it.Kind, Key: it.Key}
	if rt == nil {
		c.Status, c.Note = Skipped, "a route item without its route"
		return c
	}
	c.Key = "route " + rt.Dst
	c.Want = metrics(rt.InitCwnd, rt.InitRwnd)
	if s.Net == nil {
		c.Status, c.Note = Skipped, "the snapshot has no routes (--root or a snapshot file): not checked"
		return c
	}
	now, ok := rtnl.FindRoute(s.Net.Routes, rt.Family, rt.Dst)
	if !ok {
		c.Have, c.Status, c.Note = "absent", Drifted, "no main-table route to "+rt.Dst
		return c
	}
	// Only the metrics the plan sets are compared: 0 leaves one alone.
	cw, rw := 0, 0
	if rt.InitCwnd > 0 {
		cw = now.InitCwnd
	}
	if rt.InitRwnd > 0 {
		rw = now.InitRwnd
	}
	c.Have, c.Status = metrics(cw, rw), OK
	if cw != rt.InitCwnd || rw != rt.InitRwnd {
		c.Status = Drifted
		if cw == 0 && rw == 0 {
			c.Have = "initcwnd/initrwnd unset"
		}
	}
	return c
}

func metrics(cwnd, rwnd int) string {
	switch {
	case cwnd > 0 && rwnd > 0:
		return fmt.Sprintf("initcwnd %d initrwnd %d", cwnd, rwnd)
	case cwnd > 0:
		return fmt.Sprintf("initcwnd %d", cwnd)
	case rwnd > 0:
		return fmt.Sprintf("initrwnd %d", rwnd)
	}
	return ""
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
