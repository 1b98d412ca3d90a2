package cli

import (
	"encoding/json"
	"testing"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// TestIntegrationAuditNetns sets tcp_rmem inside a throwaway namespace and
// checks that audit --netns sees it and its verdict changes, while the
// host's own value is left alone.
func TestIntegrationAuditNetns(t *testing.T) {
	ns := nstest.New(t)
	hostBefore, err := sysctl.Read(sysctl.DefaultRoot, "net.ipv4.tcp_rmem")
	if err != nil {
		t.Fatal(err)
	}
	rmemFinding := func(value string) (sev, observed string) {
		t.Helper()
		if err := netns.Do(ns, func() error { return sysctl.Write(sysctl.DefaultRoot, "net.ipv4.tcp_rmem", value) }); err != nil {
			t.Fatal(err)
		}
		out, _, err := run(t, "audit", "--netns", ns, "--rtt", "200ms", "--rate", "1Gbit/s", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var doc auditJSON
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Host.Netns != ns || doc.Host.Sysctls["net.ipv4.tcp_rmem"] != value {
			t.Fatalf("snapshot of %s: netns %q, tcp_rmem %q; want %q", ns, doc.Host.Netns, doc.Host.Sysctls["net.ipv4.tcp_rmem"], value)
		}
		if _, ok := doc.Host.Sysctls["net.ipv4.tcp_mem"]; !ok {
			t.Errorf("tcp_mem (global) missing from the namespace's snapshot")
		}
		for _, f := range doc.Findings {
			if f.ID == "tcp-rmem-max" {
				return string(f.Severity), f.Observed
			}
		}
		t.Fatalf("no tcp-rmem-max finding for tcp_rmem %q", value)
		return "", ""
	}
	sev, obs := rmemFinding("4096 131072 6291456")
	if sev != "crit" {
		t.Errorf("6 MiB at 200ms/1Gbit/s: severity %s (%s), want crit", sev, obs)
	}
	sev, obs = rmemFinding("4096 131072 67108864")
	if sev != "info" {
		t.Errorf("64 MiB at 200ms/1Gbit/s: severity %s (%s), want info", sev, obs)
	}
	if after, _ := sysctl.Read(sysctl.DefaultRoot, "net.ipv4.tcp_rmem"); after != hostBefore {
		t.Errorf("host tcp_rmem changed: %q -> %q", hostBefore, after)
	}
}
