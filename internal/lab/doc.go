// Package lab runs repeatable experiments over an emulated long path:
// the cases a scenario expands to (package scenario), each on a fresh
// path (package emupath), with real peers (nginx, curl, iperf3, tcpdump)
// in throwaway namespaces.
//
// # The runner
//
// [Run] executes every case Repeat times: a fresh [emupath.Path] per run
// (new namespaces: no cached route metrics), the case's settings read
// back from the kernel into a [scenario.State], the case's [Workload]
// (HTTP download, object fetch, upload, iperf3) measuring, tcp_info of
// both ends sampled at a fixed interval over sock_diag (package flows),
// the emulator's statistics, and the path model's prediction beside the
// measurement. It streams the header and one results line per run
// (package results).
package lab

import (
	"github.com/longhaul/longhaul/internal/badinput"
)

// inputf is an error caused by the caller's input (a value the kernel
// refuses, a missing peer binary): bad input, the CLI exits 2 on it.
func inputf(format string, a ...any) error { return badinput.Errorf(format, a...) }
