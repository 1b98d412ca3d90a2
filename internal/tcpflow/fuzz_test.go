package tcpflow

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

var updateCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite the seed corpus under testdata/fuzz")

// analyzeSeeds are short conversations with handshakes, SACK, a
// retransmission, a zero window and a keep-alive.
func analyzeSeeds() [][]byte {
	c := ct.NewConv(ct.NewWriter(ct.Format{}, capture.LinkRaw), "198.18.0.1:50000", "198.18.0.2:443")
	c.Wrap = func(b []byte) []byte { return b }
	c.Handshake(ct.Opts{}.MSS(1460).SACKOK().WScale(7), ct.Opts{}.MSS(1400).SACKOK().WScale(2), 5*time.Millisecond, time.Millisecond)
	a := c.Data(client, 100)
	c.Data(client, 100)
	c.Ack(server, a, a+100, a+200)
	c.Resend(client, a, 100)
	c.Win[server] = 0
	c.AckAll(server)
	c.Emit(client, ct.TCP{Seq: c.Next[client] - 1, Ack: c.Rcvd[client], Flags: capture.FlagACK})
	c.Win[server] = 100
	c.AckAll(server)
	c.Fin(client)
	mid := newConv()
	mid.W = ct.NewWriter(ct.Format{NG: true}, capture.LinkRaw)
	mid.Wrap = func(b []byte) []byte { return b }
	mid.Data(server, 50)
	mid.Advance(time.Millisecond)
	mid.AckAll(client)
	return [][]byte{c.W.Bytes(), mid.W.Bytes()}
}

// FuzzAnalyze runs whole captures through the flow tracker and the
// verdicts: whatever the bytes, no panic and a bounded result.
func FuzzAnalyze(f *testing.F) {
	seeds := analyzeSeeds()
	if *updateCorpus {
		dir := filepath.Join("testdata", "fuzz", "FuzzAnalyze")
		os.MkdirAll(dir, 0o755)
		for i, s := range seeds {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)), 0o644)
		}
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		an := analyzeSerial(b)
		if an == nil {
			return
		}
		if int64(len(an.Flows)) > an.Stats.TCPPackets {
			t.Fatalf("%d flows from %d packets", len(an.Flows), an.Stats.TCPPackets)
		}
		for _, fl := range an.Flows {
			if fl.Share < 0 || fl.Share > 1 {
				t.Fatalf("share %v", fl.Share)
			}
		}
	})
}

// analyzeSerial is Analyze without the reading goroutine (the fuzzer
// runs many short inputs; the pipeline is covered by the other tests).
func analyzeSerial(b []byte) *Analysis {
	rd, err := capture.Open(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	a := New(Options{MaxPoints: 16})
	var p capture.Packet
	for rd.Next(&p) == nil {
		a.Packet(&p)
	}
	return a.Finish()
}
