package cli

import (
	"github.com/spf13/cobra"
)

// runTestIperf3 tests the path to an iperf3 server (iperf3://HOST[:PORT]).
func runTestIperf3(c *cobra.Command, a testArgs, target string) error {
	return usagef("test %s: testing against an iperf3 server is not in this build yet", target)
}
