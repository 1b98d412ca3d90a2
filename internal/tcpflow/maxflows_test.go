package tcpflow

import (
	"bytes"
	"net/netip"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

// shortFlows is a capture of n short request-response connections, one
// after another, each from its own client address and port: a busy web
// server's capture. None is closed (the worst case for the flow table).
func shortFlows(n int) []byte {
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	writeShortFlows(w, n)
	return w.Bytes()
}

func writeShortFlows(w *ct.Writer, n int) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	o := ct.Opts{}.MSS(1460).SACKOK().WScale(7)
	for i := range n {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), uint16(1024+i%60000))
		c := ct.NewConv(w, src.String(), "198.18.0.2:443")
		c.Snaplen = 80 // headers only, as tcpdump -s 80
		c.Now = t0.Add(time.Duration(i) * 100 * time.Microsecond)
		c.Handshake(o, o, 20*time.Microsecond, 20*time.Microsecond)
		c.Data(ct.Client, 300)
		c.Advance(20 * time.Microsecond)
		c.Data(ct.Server, 1448)
		c.Data(ct.Server, 1448)
		c.Advance(20 * time.Microsecond)
		c.AckAll(ct.Client)
	}
}

// bulkThenShort is one bulk transfer followed by n short connections;
// the bulk flow is idle (never closed) while they come.
func bulkThenShort(n int) []byte {
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	c := ct.NewConv(w, "198.18.0.1:40000", "198.18.0.2:5201")
	c.Now = time.Date(2025, 3, 1, 11, 0, 0, 0, time.UTC)
	c.Handshake(ct.Opts{}.MSS(1460).SACKOK().WScale(7), ct.Opts{}.MSS(1460).SACKOK().WScale(7), 10*time.Millisecond, 10*time.Microsecond)
	for range 50 {
		base := c.Next[ct.Client]
		for range 10 {
			c.Data(ct.Client, 1448)
		}
		c.Advance(10 * time.Millisecond)
		c.Ack(ct.Server, base+10*1448)
	}
	writeShortFlows(w, n)
	return w.Bytes()
}

// With more connections than --max-flows, the idle ones are judged and
// dropped from the table, the listed ones are those with the most bytes,
// every packet is counted once (listed or summarised), and a flow judged
// early gets the verdict it gets when nothing is evicted.
func TestMaxFlows(t *testing.T) {
	data := bulkThenShort(500)
	all, err := Analyze(bytes.NewReader(data), Options{MaxFlows: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Flows) != 501 || all.Summarised != nil {
		t.Fatalf("unbounded: %d flows listed, summarised %+v; want 501 and none", len(all.Flows), all.Summarised)
	}
	an, err := Analyze(bytes.NewReader(data), Options{MaxFlows: 100})
	if err != nil {
		t.Fatal(err)
	}
	s := an.Summarised
	if len(an.Flows) != 100 || s == nil || s.Flows != 401 || s.Evicted < 400 {
		t.Fatalf("bounded to 100: %d listed, summarised %+v; want 100 listed, 401 summarised, >= 400 evicted", len(an.Flows), s)
	}
	packets, bytes := s.Packets, s.Bytes
	byID := map[int]*FlowReport{}
	for _, f := range all.Flows {
		byID[f.ID] = f
	}
	for i, f := range an.Flows {
		packets += f.Packets
		bytes += f.Bytes
		if i > 0 && an.Flows[i-1].ID >= f.ID {
			t.Errorf("flows not in ID order: %d after %d", f.ID, an.Flows[i-1].ID)
		}
		want := byID[f.ID]
		if f.Verdict.Verdict != want.Verdict.Verdict || f.Bytes != want.Bytes || f.Packets != want.Packets || f.Client != want.Client {
			t.Errorf("flow %d judged early: %s %d B %d pkts %s; unbounded: %s %d B %d pkts %s", f.ID,
				f.Verdict.Verdict, f.Bytes, f.Packets, f.Client, want.Verdict.Verdict, want.Bytes, want.Packets, want.Client)
		}
	}
	if packets != an.Stats.TCPPackets {
		t.Errorf("listed and summarised flows hold %d packets; the capture %d", packets, an.Stats.TCPPackets)
	}
	var total int64
	for _, f := range all.Flows {
		total += f.Bytes
	}
	if bytes != total {
		t.Errorf("listed and summarised flows hold %d bytes; unbounded %d", bytes, total)
	}
	if an.Flows[0].ID != 1 || an.Flows[0].Bytes != 500*1448 {
		t.Errorf("the bulk flow should stay listed: first flow %d with %d bytes", an.Flows[0].ID, an.Flows[0].Bytes)
	}
	var n int64
	for _, c := range s.Verdicts {
		n += c
	}
	if n != s.Flows {
		t.Errorf("summarised verdicts count %d flows, want %d", n, s.Flows)
	}
}

// BenchmarkAnalyzeShortFlows analyzes 250,000 short connections (25x
// the default --max-flows), none closed, and reports the peak of the
// heap live after a collection, beyond the capture held in memory
// (sampled every 20 ms).
func BenchmarkAnalyzeShortFlows(b *testing.B) {
	data := shortFlows(250_000)
	b.SetBytes(int64(len(data)))
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s := []metrics.Sample{{Name: sample[0].Name}}
				metrics.Read(s)
				if v := s[0].Value.Uint64(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	b.ResetTimer()
	for range b.N {
		an, err := Analyze(bytes.NewReader(data), Options{})
		if err != nil || len(an.Flows) != DefaultMaxFlows || an.Summarised == nil {
			b.Fatalf("%v: %d flows listed", err, len(an.Flows))
		}
	}
	close(done)
	b.ReportMetric(float64(peak.Load()-base)/(1<<20), "peak-heap-MiB")
}
