//go:build linux && !longhaul_portable

package cli

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/spf13/cobra"
)

// iperf3Port is iperf3's default port.
const iperf3Port = 5201

// runTestIperf3 tests the path to an unmodified iperf3 server
// (iperf3://HOST[:PORT]): an upload, a download (reverse mode) and, with
// --streams N > 1, a download on N streams, judged as test judges them.
func runTestIperf3(c *cobra.Command, a testArgs, target string) error {
	for _, name := range []string{"auth", "tls-pin", "rounds", "cc-phase", "loss-probes"} {
		if c.Flags().Changed(name) {
			return usagef("test iperf3://: --%s is for a longhaul serve host; an iperf3 server runs phases of --duration", name)
		}
	}
	addr, err := iperf3Addr(target)
	if err != nil {
		return err
	}
	streams := 0
	if c.Flags().Changed("streams") {
		if a.streams < 0 || a.streams > 128 {
			return usagef("--streams must be 0..128 for an iperf3 server, got %d", a.streams)
		}
		streams = a.streams
	}
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	raw, err := twohost.RunIperf3(c.Context(), twohost.IperfOptions{Addr: addr, Netns: a.netns, Duration: a.duration.D,
		Download: a.download || !a.upload, Upload: a.upload || !a.download, Streams: streams, Progress: stderr})
	if err != nil {
		return fmt.Errorf("test: %w", err)
	}
	doc, err := judge.JudgeIperf3(raw, a.rate.Bps)
	if err != nil {
		return fmt.Errorf("test: %w", err)
	}
	if a.out != "" {
		files := map[string]any{"test.json": doc}
		if doc.Plans != nil {
			files["client-plan.json"] = doc.Plans.Client
		}
		if err := writeFiles("test", a.out, files, stderr); err != nil {
			return err
		}
	}
	return printTest(stdout, a, doc, "test.json, client-plan.json (longhaul apply on this host)",
		"test.json (no plan: this host is not the limit, or the path's rate is unknown)")
}

// iperf3Addr reads iperf3://HOST[:PORT] into host:port.
func iperf3Addr(target string) (string, error) {
	u, err := url.Parse(target)
	bad := err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" || u.Fragment != ""
	if bad {
		return "", usagef("test: %q is not iperf3://HOST[:PORT] (write IPv6 as iperf3://[2001:db8::1]:5201)", target)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = strconv.Itoa(iperf3Port)
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", usagef("test: %q: the port must be 1..65535", target)
	}
	if host == "" || strings.ContainsAny(host, " /") {
		return "", usagef("test: %q is not iperf3://HOST[:PORT]", target)
	}
	return net.JoinHostPort(host, port), nil
}
