// Package probe is the exporter's /probe?target=HOST[:PORT]: a short
// longhaul test against a target's `longhaul serve`, answered as
// Prometheus metrics (the multi-target exporter pattern of
// blackbox_exporter), so that Prometheus schedules a fleet's path tests,
// keeps their results and alerts on them.
//
// A query chooses only the target, and only among those the exporter's
// flags allow (prefixes, a targets file): never the phases' length, rate
// or bytes, which the flags cap. At most one probe runs per target and
// at most Config.Concurrent in all; a target's result is served again
// while younger than Config.MinInterval, and a target that answers busy
// is not asked again before then. Every probe ends at its deadline
// (--probe-timeout, shortened by Prometheus's scrape timeout) whatever
// the target does.
package probe
