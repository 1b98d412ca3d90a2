//go:build linux

package lab

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
)

// competingPort is where the competing downloads' iperf3 listens, in the
// client's namespace.
const competingPort = 5202

// competingWarmup is how long the competing downloads run before the
// case's own traffic starts: past slow start, sharing the link.
const competingWarmup = 2 * time.Second

// startCompeting starts n bulk cubic downloads sharing the path for at
// most span (scenario.CasePath.Competing): iperf3 -s in the client's
// namespace, iperf3 -c in the server's sending to it, as another user's
// transfer over the same bottleneck. The returned func ends them.
func startCompeting(ctx context.Context, e Env, n int, span time.Duration) (func(), error) {
	bin, err := lookPath("iperf3")
	if err != nil {
		return nil, err
	}
	sv, cl := e.Path.Topo.Server(), e.Path.Topo.Client()
	addr := cl.Addr.String()
	if e.Case.Path != nil && e.Case.Path.IPv6 {
		addr = cl.Addr6.String()
	}
	port := strconv.Itoa(competingPort)
	srv := cl.Command(ctx, bin, "-s", "-1", "-p", port)
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start the competing downloads' iperf3 server: %w", err)
	}
	if err := emupath.WaitListening(ctx, srv, cl.Netns, competingPort, "iperf3 -s (competing downloads)", 10*time.Second); err != nil {
		stop(srv)
		return nil, err
	}
	secs := strconv.Itoa(int(span.Round(time.Second).Seconds()))
	cli := sv.Command(ctx, bin, "-c", addr, "-p", port, "-t", secs, "-P", strconv.Itoa(n), "-C", "cubic")
	if err := cli.Start(); err != nil {
		stop(srv)
		return nil, fmt.Errorf("start the competing downloads (iperf3 -c): %w", err)
	}
	select {
	case <-time.After(competingWarmup):
	case <-ctx.Done():
	}
	return func() { stop(cli); stop(srv) }, nil
}
