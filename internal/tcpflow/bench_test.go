package tcpflow

import (
	"bytes"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

var (
	benchOnce sync.Once
	benchFile []byte
)

// benchCapture is ~70 MB of pcap as tcpdump -s 128 writes it: 4 bulk
// flows with timestamps, SACK and a loss every 200 flights, interleaved.
func benchCapture() []byte {
	benchOnce.Do(func() {
		w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
		var convs []*ct.Conv
		for i := range 4 {
			c := ct.NewConv(w, "10.0.0.1:"+string(rune('1'+i))+"0000", "10.0.0.2:5201")
			c.Snaplen, c.TS = 128, true
			c.Win[ct.Server] = 65535
			c.Handshake(ct.Opts{}.MSS(1460).SACKOK().WScale(7), ct.Opts{}.MSS(1460).SACKOK().WScale(7), 10*time.Millisecond, 10*time.Microsecond)
			convs = append(convs, c)
		}
		for k := 0; k < 1000; k++ {
			for _, c := range convs {
				c.Now = convs[0].Now
				base := c.Next[ct.Client]
				for range 100 {
					c.Data(ct.Client, 1448)
					c.Advance(time.Microsecond)
				}
				if k%200 == 7 {
					c.Ack(ct.Server, base, base+1448, base+50*1448)
					c.Resend(ct.Client, base, 1448)
				}
				for j := 2; j <= 100; j += 2 {
					c.Ack(ct.Server, base+uint32(j)*1448)
				}
			}
			convs[0].Advance(10 * time.Millisecond)
		}
		benchFile = bytes.Clone(w.Bytes())
	})
	return benchFile
}

func BenchmarkAnalyze(b *testing.B) {
	file := benchCapture()
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		an, err := Analyze(bytes.NewReader(file), Options{})
		if err != nil || len(an.Flows) != 4 {
			b.Fatalf("err %v, %d flows", err, len(an.Flows))
		}
	}
}

// BenchmarkReadDecode is the capture layer alone.
func BenchmarkReadDecode(b *testing.B) {
	file := benchCapture()
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		r, _ := capture.Open(bytes.NewReader(file))
		var p capture.Packet
		var s capture.Segment
		var o capture.Options
		for r.Next(&p) == nil {
			if capture.Decode(p.LinkType, p.Data, p.OrigLen, &s) == capture.OK {
				capture.ParseOptions(s.Options, &o)
			}
		}
	}
}

// TestWriteBenchCapture writes the benchmark capture to
// $LONGHAUL_BENCH_OUT, to time other tools on the same bytes.
func TestWriteBenchCapture(t *testing.T) {
	out := os.Getenv("LONGHAUL_BENCH_OUT")
	if out == "" {
		t.Skip("set LONGHAUL_BENCH_OUT=FILE to write the benchmark capture")
	}
	if err := os.WriteFile(out, benchCapture(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAnalyzeFile times a real capture file, $LONGHAUL_BENCH_CAPTURE
// (skipped without). cmd/longhaul/default.pgo, the profile the Go
// toolchain uses to optimize the binary (PGO, ~5% here), comes from it
// on the capture scripts/bench-analyze.sh makes (KEEP_CAPTURE=FILE):
//
//	LONGHAUL_BENCH_CAPTURE=FILE go test ./internal/tcpflow -run '^$' \
//	  -bench AnalyzeFile -benchtime 100x -cpuprofile cmd/longhaul/default.pgo -o /tmp/tcpflow.test
func BenchmarkAnalyzeFile(b *testing.B) {
	path := os.Getenv("LONGHAUL_BENCH_CAPTURE")
	if path == "" {
		b.Skip("set LONGHAUL_BENCH_CAPTURE=FILE")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		fh, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		// Mapped, as longhaul analyze reads a file.
		var src io.Reader = fh
		m, merr := capture.MapFile(fh)
		if merr == nil {
			src = m
		}
		_, err = Analyze(src, Options{})
		m.Close()
		fh.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}
