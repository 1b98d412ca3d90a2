// Package probe is the exporter's /probe?target=HOST[:PORT]: a short
// longhaul test against a target's `longhaul serve`, answered as
// Prometheus metrics (the multi-target exporter pattern of
// blackbox_exporter), so that Prometheus schedules a fleet's path tests,
// keeps their results and alerts on them.
//
// A query chooses only the target, and only among those the exporter's
// flags allow (addresses of prefixes at the serve ports, the lines of a
// targets file; a query's name is never looked up): never the phases'
// length, rate or bytes, which the flags cap. A target is the address
// the probe dials, however the query spells it. At most one probe runs
// per target and at most Config.Concurrent tests in all, counted from
// when the target proved it is a serve (targets that stall hold no test
// slot); a target's result is served again while younger than
// Config.MinInterval, a busy answer or a failure to connect for about a
// probe's length. Every probe ends at its deadline (--probe-timeout,
// shortened by Prometheus's scrape timeout) whatever the target does.
package probe
