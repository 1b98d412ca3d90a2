package tcpflow

import (
	"bytes"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

// synFlood is a capture of n connection attempts seen only as a SYN
// (distinct sources, as in a SYN flood or a scan captured at a server),
// with one bulk transfer in the middle of them.
func synFlood(n int) []byte {
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	dst := netip.MustParseAddrPort("198.18.0.2:443")
	syn := func(i int) {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), uint16(1024+i%60000))
		seg := ct.TCP{Src: src, Dst: dst, Seq: uint32(i) * 7919, Flags: 0x02, Window: 64240, Options: ct.Opts{}.MSS(1460).SACKOK().WScale(7)}
		w.Packet(t0.Add(time.Duration(i)*10*time.Microsecond), ct.Ether(seg.IP()))
	}
	for i := 0; i < n/2; i++ {
		syn(i)
	}
	c := ct.NewConv(w, "198.18.0.1:40000", "198.18.0.2:5201")
	c.Now = t0.Add(time.Duration(n/2) * 10 * time.Microsecond)
	c.Handshake(ct.Opts{}.MSS(1460).SACKOK().WScale(7), ct.Opts{}.MSS(1460).SACKOK().WScale(7), 10*time.Millisecond, 10*time.Microsecond)
	for k := 0; k < 50; k++ {
		base := c.Next[ct.Client]
		for range 10 {
			c.Data(ct.Client, 1448)
		}
		c.Advance(10 * time.Millisecond)
		c.Ack(ct.Server, base+10*1448)
	}
	for i := n / 2; i < n; i++ {
		syn(i)
	}
	return w.Bytes()
}

// A flood of unanswered SYNs is counted, not listed, and the data flow
// among them is still judged; a few unanswered SYNs are listed as before,
// numbered in the order they came.
func TestUnansweredSYNs(t *testing.T) {
	an, err := Analyze(bytes.NewReader(synFlood(2*maxListedAttempts)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if an.UnansweredSYNs != 2*maxListedAttempts || len(an.Flows) != 1 {
		t.Fatalf("unanswered %d, listed flows %d; want %d and the one data flow", an.UnansweredSYNs, len(an.Flows), 2*maxListedAttempts)
	}
	if f := an.Flows[0]; f.Bytes < 50*10*1448 || f.Verdict.Verdict == "" {
		t.Errorf("data flow: %d bytes, verdict %q", f.Bytes, f.Verdict.Verdict)
	}
	few, err := Analyze(bytes.NewReader(synFlood(6)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if few.UnansweredSYNs != 0 || len(few.Flows) != 7 {
		t.Fatalf("few: unanswered %d, flows %d; want 0 and 7", few.UnansweredSYNs, len(few.Flows))
	}
	for i, f := range few.Flows {
		if f.ID != i+1 {
			t.Errorf("flow %d has ID %d: not in the order seen", i, f.ID)
		}
	}
	if few.Flows[3].Bytes == 0 || few.Flows[0].Bytes != 0 {
		t.Errorf("the data flow should be fourth (after three SYNs): %v", fmt.Sprint(few.Flows[3].Bytes, few.Flows[0].Bytes))
	}
}

// BenchmarkAnalyzeSYNFlood analyzes a million unanswered SYNs and one
// data flow and reports how much memory the Go runtime took from the
// system for it beyond the capture held in memory (the binary on the
// same capture from a file: 226 MB RSS, see docs/analyze.md).
func BenchmarkAnalyzeSYNFlood(b *testing.B) {
	data := synFlood(1_000_000)
	b.SetBytes(int64(len(data)))
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	for range b.N {
		an, err := Analyze(bytes.NewReader(data), Options{})
		if err != nil || an.UnansweredSYNs != 1_000_000 || len(an.Flows) != 1 {
			b.Fatalf("%v: %d unanswered, %d flows", err, an.UnansweredSYNs, len(an.Flows))
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.Sys-m0.Sys)/(1<<20), "grown-MiB")
}
