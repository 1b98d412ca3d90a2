// Package judgetest builds a test's raw measurements for tests, as a
// test's two ends would record them: a host's snapshot with the given
// buffers, a sender's tcp_info samples at a rate, a round trip, a
// flight, shares of rwnd- and sndbuf-limited time and loss. The judge's
// tests and the client's (package twohost) import it; only tests do.
// It imports no judge (the judge's own tests import it), so each test
// package puts the samples into judge's PhaseRaw and Raw itself.
package judgetest
