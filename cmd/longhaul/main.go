// Command longhaul explains what limits TCP transfers over long paths, fixes
// it and proves the fix. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/longhaul/longhaul/internal/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	var caught atomic.Value // the first SIGINT or SIGTERM
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		caught.Store(s)
		cancel() // every command's loops and reads watch ctx
		s = <-sigs
		fmt.Fprintln(os.Stderr, "longhaul: interrupted again: exiting now (leftover namespaces are reaped at the next start)")
		os.Exit(cli.SignalStatus(s))
	}()
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	code := cli.ExitCode(err, os.Stderr)
	if s, ok := caught.Load().(os.Signal); ok && !cli.Stopped(err) {
		code = cli.SignalStatus(s)
	}
	os.Exit(code)
}
