package capture_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

var updateCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite the seed corpus under testdata/fuzz")

// fileSeeds are small captures covering every link type and both
// formats; the fuzzer mutates them into broken ones.
func fileSeeds(ng bool) [][]byte {
	ip4, ip6 := seg(false), seg(true)
	ip4.Payload, ip6.Payload = 10, 10
	ip6.Ext6 = []uint8{0, 44}
	var out [][]byte
	for i, lt := range []capture.LinkType{capture.LinkEthernet, capture.LinkRaw, capture.LinkLinuxSLL, capture.LinkLinuxSLL2, capture.LinkNull, capture.LinkPPP, capture.LinkPPPoE} {
		w := ct.NewWriter(ct.Format{NG: ng, Big: i%2 == 1, Nanos: i%3 == 0}, lt)
		wrap := map[capture.LinkType]func([]byte) []byte{
			capture.LinkEthernet: func(b []byte) []byte { return ct.Ether(b, 7) },
			capture.LinkRaw:      func(b []byte) []byte { return b },
			capture.LinkLinuxSLL: ct.SLL, capture.LinkLinuxSLL2: ct.SLL2,
			capture.LinkNull: func(b []byte) []byte { return ct.Null(b, false) },
			capture.LinkPPP:  ct.PPP, capture.LinkPPPoE: ct.PPPoE,
		}[lt]
		w.Packet(t0, wrap(ip4.IP()))
		w.Packet(t0.Add(time.Millisecond), wrap(ip6.IP()))
		out = append(out, w.Bytes())
	}
	out = append(out, fileSeeds1(ng)...)
	return append(out, etherSeed(ng))
}

// etherSeed is little-endian Ethernet in microseconds, the records
// NextSegment reads in one pass (full: IPv4 and the timestamps option
// alone), with the frames it must hand to the general path: tagged,
// IPv6, cut short (also within and just past the one-pass shape), a
// fragment, not TCP, bad options, other options, IP options, an IP
// length of 0 (a super-frame) or too short for the TCP header; and a
// type-of-service byte, which the one-pass read ignores.
func etherSeed(ng bool) []byte {
	w := ct.NewWriter(ct.Format{NG: ng}, capture.LinkEthernet)
	ip4 := seg(false)
	ip4.Payload = 100
	full := ct.Ether(ip4.IP())
	frag := ct.Ether(ip4.IP())
	frag[14+6], frag[14+7] = 0x20, 0x10 // more fragments, offset 16
	udp := ct.Ether(ip4.IP())
	udp[14+9] = 17
	badOpt := ct.Ether(ip4.IP())
	badOpt[14+20+20] = 2 // an MSS option of length 0
	badOpt[14+20+21] = 0
	tsFirst := ip4
	tsFirst.Options = ct.Opts{}.TS(1, 2).NOP().NOP()
	super := ip4
	super.Super = true
	ipOpts := ct.Ether(ip4.IP())
	ipOpts[14] = 0x46 // a 24-byte IP header: the TCP header starts 4 bytes later
	short := ct.Ether(ip4.IP())
	short[14+2], short[14+3] = 0, 20+31 // the IP length ends inside the TCP header
	tos := ct.Ether(ip4.IP())
	tos[14+1] = 0xb8
	for i, f := range [][]byte{full, ct.Ether(ip4.IP(), 7), ct.Ether(seg(true).IP()), full[:20], full[:40], full[:60],
		full[:65], full[:66], frag, udp, badOpt, ct.Ether(tsFirst.IP()), ct.Ether(super.IP()), ipOpts, short, tos, full} {
		w.PacketOn(0, t0.Add(time.Duration(i)*time.Microsecond), f, len(full))
	}
	return w.Bytes()
}

func fileSeeds1(ng bool) [][]byte {
	w := ct.NewWriter(ct.Format{NG: ng, Interfaces: []capture.LinkType{capture.LinkRaw, capture.LinkEthernet}}, capture.LinkRaw)
	w.Packet(t0, seg(false).IP()[:60])
	return [][]byte{w.Bytes(), w.Gzip(), {}}
}

func optionSeeds() [][]byte {
	return [][]byte{
		ct.Opts{}.MSS(1460).SACKOK().TS(1, 0).WScale(7),
		ct.Opts{}.TS(100, 200).SACK(1, 2, 3, 4, 5, 6, 7, 8),
		{1, 1, 1, 0},
		{2, 4, 5},
		{5, 10, 0, 0, 0, 0, 0, 0, 0, 0},
		{3, 3, 15},
	}
}

// writeCorpus keeps the checked-in corpus in step with the seeds.
func writeCorpus(t testing.TB, name string, seeds [][]byte) {
	var entries [][]byte
	for _, s := range seeds {
		entries = append(entries, []byte(fmt.Sprintf("[]byte(%q)", s)))
	}
	writeCorpusRaw(t, name, entries)
}

// writeCorpusRaw writes corpus entries given as their value lines.
func writeCorpusRaw(t testing.TB, name string, entries [][]byte) {
	if !*updateCorpus {
		return
	}
	dir := filepath.Join("testdata", "fuzz", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		body := "go test fuzz v1\n" + string(e) + "\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// drain reads and decodes every packet; any error must be one of ours
// and bounded in what it read. NextSegment must read the file as Next,
// Decode and ParseOptions do.
func drain(t *testing.T, b []byte) {
	want, _ := trace(bytes.NewReader(b), false)
	if got, _ := trace(bytes.NewReader(b), true); got != want {
		t.Fatalf("NextSegment:\n%s\nNext, Decode, ParseOptions:\n%s", got, want)
	}
	r, err := capture.Open(bytes.NewReader(b))
	if err != nil {
		var fe *capture.FormatError
		var ce *capture.CorruptError
		if !errors.As(err, &fe) && !errors.As(err, &ce) && !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Fatalf("Open: unexpected error type %T: %v", err, err)
		}
		return
	}
	var p capture.Packet
	var s capture.Segment
	var o capture.Options
	for n := 0; ; n++ {
		err := r.Next(&p)
		if err == io.EOF {
			return
		}
		if err != nil {
			var ce *capture.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Next: unexpected error type %T: %v", err, err)
			}
			return
		}
		if n > len(b) {
			t.Fatalf("more packets (%d) than bytes (%d)", n, len(b))
		}
		if p.CapLen != len(p.Data) || p.OrigLen < p.CapLen {
			t.Fatalf("caplen %d, %d bytes, orig %d", p.CapLen, len(p.Data), p.OrigLen)
		}
		if capture.Decode(p.LinkType, p.Data, p.OrigLen, &s) == capture.OK {
			if s.PayloadLen < 0 {
				t.Fatalf("negative payload %d", s.PayloadLen)
			}
			capture.ParseOptions(s.Options, &o)
		}
	}
}

func FuzzPcap(f *testing.F) {
	seeds := fileSeeds(false)
	writeCorpus(f, "FuzzPcap", seeds)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { drain(t, b) })
}

func FuzzPcapng(f *testing.F) {
	seeds := fileSeeds(true)
	writeCorpus(f, "FuzzPcapng", seeds)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) { drain(t, b) })
}

func FuzzParseOptions(f *testing.F) {
	seeds := optionSeeds()
	writeCorpus(f, "FuzzParseOptions", seeds)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var o capture.Options
		err := capture.ParseOptions(b, &o)
		if o.NSACK > 4 || o.Shift() > 14 {
			t.Fatalf("nsack %d shift %d", o.NSACK, o.Shift())
		}
		// A leading MSS option is always seen; a later MSS option
		// overrides it, as in Linux's tcp_parse_options (the last wins).
		if err == nil && len(b) >= 4 && b[0] == 2 && b[1] == 4 && !o.HasMSS {
			t.Fatalf("mss not seen in % x", b)
		}
	})
}

// FuzzDecode feeds single frames of any link type to Decode.
func FuzzDecode(f *testing.F) {
	ip := seg(true)
	ip.Ext6 = []uint8{0, 43, 60, 44}
	seeds := [][]byte{ct.Ether(seg(false).IP(), 1, 2), ct.PPPoEther(ip.IP()), ct.SLL2(ip.IP()), ct.Wifi(seg(false).IP()), ct.Radiotap(ip.IP())}
	lts := []uint16{1, 1, 276, 105, 127}
	var entries [][]byte
	for i, s := range seeds {
		f.Add(lts[i], s, 0)
		entries = append(entries, []byte(fmt.Sprintf("uint16(%d)\n[]byte(%q)\nint(0)", lts[i], s)))
	}
	writeCorpusRaw(f, "FuzzDecode", entries)
	f.Fuzz(func(t *testing.T, lt uint16, b []byte, extra int) {
		var s capture.Segment
		if capture.Decode(capture.LinkType(lt), b, len(b)+max(0, extra%100000), &s) == capture.OK && s.PayloadLen < 0 {
			t.Fatalf("negative payload")
		}
	})
}

// Two MSS options: the last wins, as in Linux's tcp_parse_options.
func TestParseOptionsDuplicateMSS(t *testing.T) {
	var o capture.Options
	if err := capture.ParseOptions([]byte{2, 4, 0x05, 0xb4, 2, 4, 0x05, 0x84}, &o); err != nil {
		t.Fatal(err)
	}
	if !o.HasMSS || o.MSS != 1412 {
		t.Errorf("mss %v %d, want the second option's 1412", o.HasMSS, o.MSS)
	}
}
