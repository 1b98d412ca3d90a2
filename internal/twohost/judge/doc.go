// Package judge is test's judge, pure: from both hosts' snapshots and
// both ends' samples of a test ([Raw]) it gives each direction's
// throughput, the verdict of package flows naming the host and the
// setting that limited it, the path model's prediction from both hosts'
// settings and a plan per host (longhaul.test/v1); [JudgeURL] and
// [JudgeIperf3] judge a URL's download or upload and a test against
// iperf3 from this host's side. No I/O: it builds and tests everywhere.
package judge
