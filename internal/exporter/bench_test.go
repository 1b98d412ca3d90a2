//go:build linux

package exporter

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/longhaul/longhaul/internal/flows"
)

// holdSockets opens n/2 loopback connections (n sockets) for b.
func holdSockets(b *testing.B, n int) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { ln.Close() })
	for range n / 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close(); s.Close() })
	}
}

// BenchmarkDump10k is one sock_diag dump of 10,000 sockets (the
// exporter's per-interval I/O).
func BenchmarkDump10k(b *testing.B) {
	holdSockets(b, 10000)
	d, err := flows.Open("")
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := d.Dump(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSample10k folds one dump of 10,000 sockets into the tracker.
func BenchmarkSample10k(b *testing.B) {
	socks := manyPeers(10000)
	tr := NewTracker(Config{MaxSeries: 2000})
	tr.Sample(t0, socks)
	now := t0
	b.ResetTimer()
	for b.Loop() {
		now = now.Add(time.Second)
		tr.Sample(now, socks)
	}
}

// BenchmarkCollect50kPeers is one scrape after 50,000 distinct peers.
func BenchmarkCollect50kPeers(b *testing.B) {
	tr := NewTracker(Config{MaxSeries: 2000})
	tr.Sample(t0, nil)
	tr.Sample(t0.Add(time.Second), manyPeers(50000))
	c := NewCollector(tr)
	b.ResetTimer()
	for b.Loop() {
		ch := make(chan prometheus.Metric, 4096)
		go func() { c.Collect(ch); close(ch) }()
		for range ch {
		}
	}
}

// BenchmarkTrackerMemory50k reports the tracker's heap with 50,000 open
// sockets to 50,000 distinct peers (bytes per socket, total).
func BenchmarkTrackerMemory50k(b *testing.B) {
	socks := manyPeers(50000)
	for b.Loop() {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		tr := NewTracker(Config{MaxSeries: 2000})
		tr.Sample(t0, socks)
		tr.Sample(t0.Add(time.Second), socks)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		runtime.KeepAlive(tr)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/float64(len(socks)), "heap-B/socket")
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/1e6, "heap-MB")
	}
}
