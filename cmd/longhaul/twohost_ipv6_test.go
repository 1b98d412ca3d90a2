//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/topo"
)

// test over IPv6 (2001:2::/48 on the emulated path): the client's small
// tcp_rmem holds the download, and test names it from both ends' tcp_info
// of IPv6 sockets (sock_diag dumps of AF_INET6; net.ipv4.tcp_rmem applies
// to IPv6 TCP too), as it does over IPv4.
func TestIntegrationTestIPv6(t *testing.T) {
	link := emupath.Symmetric(50*time.Millisecond, 100e6, 0, 0, 1)
	ts := topo.Spec{CC: "cubic", IPv6: true,
		ClientSysctls: sysctls("net.ipv4.tcp_rmem", "4096 131072 262144"),
		ServerSysctls: sysctls("net.ipv4.tcp_wmem", "4096 131072 33554432")}
	h := upPathSpec(t, link, ts)
	h.addr = topo.DefaultServerAddr6.String()
	startTwoHosts(t, h)
	d := h.test(filepath.Join(h.dir, "out"), "--download", "--rounds", "40", "--streams", "0", "--rate", "100Mbit/s")
	down := direction(t, d, "download")
	if v := down.Flow.Verdict.Verdict; v != "rwnd-limited" || down.Limit.Host != "client" || down.Limit.Setting != "net.ipv4.tcp_rmem" {
		t.Errorf("download over IPv6: %s, limit %+v; want rwnd-limited by the client's net.ipv4.tcp_rmem", v, down.Limit)
	}
	if !strings.Contains(down.Flow.Remote, ":") || !strings.HasPrefix(strings.Trim(down.Flow.Remote, "["), "2001:2::") {
		t.Errorf("the judged socket is %s -> %s, not the IPv6 one", down.Flow.Local, down.Flow.Remote)
	}
}
