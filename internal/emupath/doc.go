// Package emupath is the emulated long path that `longhaul emulate`,
// `longhaul lab` and `longhaul verify` run on: two network namespaces
// (package topo) joined by the userspace data plane (package emu) with a
// link model per direction (package linkemu).
//
// # Specs and running paths
//
// [Link] and [Direction] describe a link the way a user does (delay,
// jitter, rate, loss, a queue in bytes, packets or BDPs) and turn into
// the link model's configs; [Spec] is a whole path as a plain value. [Up]
// brings a Spec up as a [Path], which owns the namespaces and the data
// plane until Close.
//
// # Checks
//
// [Check] measures a running path (RTT with UDP echo probes, goodput with
// one TCP download) and [CheckResult.Judge] compares the measurement with
// the configuration: `longhaul emulate --check`.
package emupath
