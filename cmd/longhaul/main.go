// Command longhaul explains what limits TCP transfers over long paths, fixes
// it and proves the fix. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/longhaul/longhaul/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.ExitCode(err, os.Stderr))
}
