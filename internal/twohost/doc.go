// Package twohost measures and explains a real path between two hosts:
// the engine of `longhaul serve` (the far end) and `longhaul test` (the
// near end).
//
// The protocol's messages, frames and limits are package wire's
// (internal/twohost/wire), whose comment describes version 1; the
// documents test writes are package testdoc's.
//
// # Judging
//
// [Judge] is pure: from both hosts' snapshots and both ends' samples it
// gives each direction's throughput, the verdict of package flows naming
// the host and the setting that limited it, the path model's prediction
// from the two hosts' settings, and a plan per host.
package twohost
