//go:build linux && !longhaul_portable

package cli

import "github.com/spf13/cobra"

// platformCommands are the commands that need Linux: network namespaces,
// TUN devices, sock_diag.
func platformCommands() []*cobra.Command {
	return []*cobra.Command{newFlowsCmd(), newEmulateCmd(), newLabCmd(), newVerifyCmd(), newExporterCmd(), newServeCmd(), newTestCmd()}
}
