// Package servertest runs a server of the two-host test on loopback for
// a test's life and speaks the protocol raw, one frame at a time, as a
// client that does what the tests need (or what no client should): the
// hello read, an auth proved or not, a session started. The server's
// tests and the client's (package twohost) import it; only tests do.
package servertest
