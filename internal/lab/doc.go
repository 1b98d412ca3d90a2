// Package lab runs repeatable experiments over an emulated long path:
// the field reports' scenarios (buffers, initcwnd, longrtt, upload) with
// real peers (nginx, curl, iperf3, tcpdump) in throwaway namespaces.
//
// # Specs and runners
//
// A scenario expands a [Config] into a list of [Case] values (pure, see
// [Expand]): the settings of each end, the peer to run and the model's
// prediction. [Run] executes every case Config.Repeat times, each on a
// fresh [Path] (new namespaces: no cached route metrics, settings read
// back from the kernel), samples tcp_info from both ends at a fixed
// interval, and streams one results line per run (package results).
//
// [Path] is also what `longhaul emulate` runs on: the topology
// (package topo) plus the data plane (package emu).
package lab

import "errors"

// ErrInput marks errors caused by the caller's input (an unknown
// scenario, a value the kernel refuses, a missing peer binary): the CLI
// exits 2 on them.
var ErrInput = errors.New("lab")
