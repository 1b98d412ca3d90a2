package capture_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

var (
	c4 = netip.MustParseAddrPort("198.18.0.1:50000")
	s4 = netip.MustParseAddrPort("198.18.0.2:443")
	c6 = netip.MustParseAddrPort("[2001:db8::1]:50000")
	s6 = netip.MustParseAddrPort("[2001:db8::2]:443")
	t0 = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
)

// got is what a test reads back from one record.
type got struct {
	Result  string
	Src     string
	Dst     string
	Ports   [2]uint16
	Seq     uint32
	Flags   uint8
	Payload int
	Super   bool
	IPID    uint16
}

func readAll(t *testing.T, file []byte) ([]capture.Packet, []got, *capture.Reader) {
	t.Helper()
	r, err := capture.Open(bytes.NewReader(file))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	var pkts []capture.Packet
	var gots []got
	for {
		var p capture.Packet
		err := r.Next(&p)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		var s capture.Segment
		res := capture.Decode(p.LinkType, p.Data, p.OrigLen, &s)
		p.Data = nil
		pkts = append(pkts, p)
		g := got{Result: res.String()}
		if res == capture.OK {
			g = got{res.String(), s.Src.String(), s.Dst.String(), [2]uint16{s.SrcPort, s.DstPort}, s.Seq, s.Flags, s.PayloadLen, s.SuperFrame, s.IPID}
		}
		gots = append(gots, g)
	}
	return pkts, gots, r
}

func seg(v6 bool) ct.TCP {
	s := ct.TCP{Src: c4, Dst: s4, Seq: 4000000000, Ack: 7, Flags: capture.FlagACK | capture.FlagPSH, Window: 500, Payload: 1448, IPID: 77,
		Options: ct.Opts{}.TS(1, 2)}
	if v6 {
		s.Src, s.Dst = c6, s6
	}
	return s
}

func want(s ct.TCP) got {
	id := s.IPID
	if s.Src.Addr().Is6() {
		id = 0
	}
	return got{"ok", s.Src.Addr().String(), s.Dst.Addr().String(), [2]uint16{s.Src.Port(), s.Dst.Port()}, s.Seq, s.Flags, s.Payload, s.Super, id}
}

func TestFormatsAndLinkTypes(t *testing.T) {
	v4, v6 := seg(false), seg(true)
	v6ext := seg(true)
	v6ext.Ext6 = []uint8{0, 60, 43, 44}
	super4, super6 := seg(false), seg(true)
	super4.Super, super4.Payload = true, 200000
	super6.Payload, super6.Super = 100000, true
	tests := []struct {
		name string
		f    ct.Format
		lt   capture.LinkType
		wrap func([]byte) []byte
		seg  ct.TCP
	}{
		{"pcap le micro ethernet v4", ct.Format{}, capture.LinkEthernet, func(b []byte) []byte { return ct.Ether(b) }, v4},
		{"pcap be micro ethernet v6", ct.Format{Big: true}, capture.LinkEthernet, func(b []byte) []byte { return ct.Ether(b) }, v6},
		{"pcap le nano vlan", ct.Format{Nanos: true}, capture.LinkEthernet, func(b []byte) []byte { return ct.Ether(b, 10) }, v4},
		{"pcap be nano qinq v6", ct.Format{Big: true, Nanos: true}, capture.LinkEthernet, func(b []byte) []byte { return ct.Ether(b, 100, 200) }, v6},
		{"pcapng le ethernet v6 extension headers", ct.Format{NG: true}, capture.LinkEthernet, func(b []byte) []byte { return ct.Ether(b) }, v6ext},
		{"pcapng be nano raw", ct.Format{NG: true, Big: true, Nanos: true}, capture.LinkRaw, func(b []byte) []byte { return b }, v4},
		{"raw dlt 12", ct.Format{}, capture.LinkRawDLT12, func(b []byte) []byte { return b }, v6},
		{"raw dlt 14", ct.Format{}, capture.LinkRawDLT14, func(b []byte) []byte { return b }, v4},
		{"linktype ipv4", ct.Format{}, capture.LinkIPv4, func(b []byte) []byte { return b }, v4},
		{"sll", ct.Format{}, capture.LinkLinuxSLL, ct.SLL, v4},
		{"sll2 v6", ct.Format{NG: true}, capture.LinkLinuxSLL2, ct.SLL2, v6},
		{"bsd null", ct.Format{}, capture.LinkNull, func(b []byte) []byte { return ct.Null(b, false) }, v6},
		{"bsd null big-endian host", ct.Format{}, capture.LinkNull, func(b []byte) []byte { return ct.Null(b, true) }, v4},
		{"openbsd loop", ct.Format{}, capture.LinkLoop, func(b []byte) []byte { return ct.Null(b, true) }, v4},
		{"ppp hdlc", ct.Format{}, capture.LinkPPP, ct.PPP, v4},
		{"ppp in hdlc framing v6", ct.Format{}, capture.LinkPPPHDLC, ct.PPP, v6},
		{"pppoe linktype", ct.Format{}, capture.LinkPPPoE, ct.PPPoE, v4},
		{"pppoe over ethernet", ct.Format{}, capture.LinkEthernet, ct.PPPoEther, v6},
		{"802.11 data", ct.Format{}, capture.Link80211, ct.Wifi, v4},
		{"radiotap 802.11 v6", ct.Format{NG: true}, capture.LinkRadiotap, ct.Radiotap, v6},
		{"ipv4 super-frame (total length 0)", ct.Format{}, capture.LinkEthernet, func(b []byte) []byte { return ct.Ether(b) }, super4},
		{"ipv6 jumbo super-frame", ct.Format{NG: true}, capture.LinkEthernet, func(b []byte) []byte { return ct.Ether(b) }, super6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := ct.NewWriter(tc.f, tc.lt)
			w.Packet(t0, tc.wrap(tc.seg.IP()))
			w.Packet(t0.Add(time.Millisecond), tc.wrap(tc.seg.IP()))
			for _, file := range [][]byte{w.Bytes(), w.Gzip()} {
				pkts, gots, _ := readAll(t, file)
				if len(gots) != 2 {
					t.Fatalf("read %d packets, want 2", len(gots))
				}
				if diff := cmp.Diff(want(tc.seg), gots[0]); diff != "" {
					t.Errorf("decoded (-want +got):\n%s", diff)
				}
				wantT := t0.UnixNano()
				if !tc.f.Nanos {
					wantT = t0.Truncate(time.Microsecond).UnixNano()
				}
				if pkts[0].Time != wantT || pkts[1].Time-pkts[0].Time != 1e6 {
					t.Errorf("times %d, %d; want %d and 1 ms later", pkts[0].Time, pkts[1].Time, wantT)
				}
			}
		})
	}
}

func TestSnaplenKeepsPayloadLength(t *testing.T) {
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	frame := ct.Ether(seg(false).IP())
	w.PacketOn(0, t0, frame[:96], len(frame)) // tcpdump -s 96
	_, gots, _ := readAll(t, w.Bytes())
	if gots[0].Payload != 1448 {
		t.Errorf("payload %d from a 96-byte record, want 1448 from the IP header", gots[0].Payload)
	}
}

func TestPcapngInterfaces(t *testing.T) {
	w := ct.NewWriter(ct.Format{NG: true, Interfaces: []capture.LinkType{capture.LinkEthernet, capture.LinkRaw, capture.LinkLinuxSLL}}, capture.LinkEthernet)
	ip := seg(false).IP()
	w.PacketOn(1, t0, ip, len(ip))
	w.PacketOn(2, t0, ct.SLL(ip), len(ip)+16)
	w.PacketOn(0, t0, ct.Ether(ip), len(ip)+14)
	pkts, gots, _ := readAll(t, w.Bytes())
	for i, wantIf := range []int{1, 2, 0} {
		if pkts[i].Interface != wantIf || gots[i].Result != "ok" {
			t.Errorf("packet %d: interface %d result %s, want interface %d ok", i, pkts[i].Interface, gots[i].Result, wantIf)
		}
	}
}

func TestErrors(t *testing.T) {
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	for i := range 3 {
		w.Packet(t0.Add(time.Duration(i)*time.Millisecond), ct.Ether(seg(false).IP()))
	}
	full := w.Bytes()
	ng := ct.NewWriter(ct.Format{NG: true}, capture.LinkEthernet)
	ng.Packet(t0, ct.Ether(seg(false).IP()))
	ng.Packet(t0, ct.Ether(seg(false).IP()))
	ngFull := ng.Bytes()
	huge := bytes.Clone(full)
	huge[24+8], huge[24+9], huge[24+10], huge[24+11] = 0xff, 0xff, 0xff, 0x7f
	tests := []struct {
		name      string
		file      []byte
		openErr   string
		nextErr   string
		wantPkts  int
		wantIsErr error
	}{
		{"empty", nil, "an empty file", "", 0, capture.ErrFormat},
		{"text", []byte("12:00:00.000 IP 10.0.0.1.22 > 10.0.0.2.5000: Flags [P.]\n"), "a text file", "", 0, capture.ErrFormat},
		{"snoop", []byte("snoop\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x04"), "snoop file (Solaris), not pcap or pcapng: convert it with `editcap -F pcap", "", 0, capture.ErrFormat},
		{"etherpeek tagged", []byte("\x7fver\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "EtherPeek/AiroPeek/OmniPeek tagged file, not pcap or pcapng: convert it with `editcap -F pcap", "", 0, capture.ErrFormat},
		{"etherpeek classic", append([]byte{6, 0, 0, 0, 0x10, 0, 0, 0, 0, 3}, make([]byte, 60)...), "classic EtherPeek/AiroPeek file (version 5-7), not pcap or pcapng: convert it with `editcap -F pcap", "", 0, capture.ErrFormat},
		{"zstd", []byte("\x28\xb5\x2f\xfd\x00\x00"), "zstd", "", 0, capture.ErrFormat},
		{"unknown binary", []byte{0, 1, 2, 3, 0xff, 0xfe}, "unknown format (starts 00 01 02 03)", "", 0, capture.ErrFormat},
		{"truncated pcap header", full[:10], "truncated at byte 0 (after 0 packets): pcap file header needs 24 bytes, 10 present", "", 0, capture.ErrTruncated},
		{"truncated record", full[:len(full)-20], "", "truncated at byte", 2, capture.ErrTruncated},
		{"truncated record header", full[:len(full)-len(full)/3-5], "", "record", 1, capture.ErrTruncated},
		{"absurd length", huge, "", "record claims 2147483647 captured bytes", 0, capture.ErrCorrupt},
		{"truncated pcapng", ngFull[:len(ngFull)-7], "", "truncated", 1, capture.ErrTruncated},
	}
	for _, tc := range tests {
		for _, src := range []string{"reader", "file"} {
			t.Run(tc.name+"/"+src, func(t *testing.T) {
				var in io.Reader = bytes.NewReader(tc.file)
				if src == "file" {
					path := filepath.Join(t.TempDir(), "c.pcap")
					if err := os.WriteFile(path, tc.file, 0o644); err != nil {
						t.Fatal(err)
					}
					fh, err := os.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					defer fh.Close()
					in = fh
				}
				testOpenError(t, in, tc.openErr, tc.nextErr, tc.wantPkts, tc.wantIsErr)
			})
		}
	}
}

func testOpenError(t *testing.T, in io.Reader, openErr, nextErr string, wantPkts int, wantIsErr error) {
	t.Helper()
	r, err := capture.Open(in)
	if openErr != "" {
		if err == nil || !strings.Contains(err.Error(), openErr) || !errors.Is(err, wantIsErr) {
			t.Fatalf("Open error %v, want one containing %q", err, openErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	n := 0
	var p capture.Packet
	for {
		err = r.Next(&p)
		if err != nil {
			break
		}
		n++
	}
	if n != wantPkts || !strings.Contains(err.Error(), nextErr) || !errors.Is(err, wantIsErr) {
		t.Errorf("%d packets then %v; want %d then an error containing %q", n, err, wantPkts, nextErr)
	}
}

func TestTSResolution(t *testing.T) {
	// A pcapng with if_tsresol 2^-10 and if_tsoffset 100 s, built by hand
	// from the spec's fields (a writer we do not have elsewhere).
	tests := []struct {
		res, off byte
		ts       uint64
		want     int64
	}{
		{0x80 | 10, 0, 1024 + 512, 1_500_000_000},
		{3, 100, 2500, 102_500_000_000},
	}
	for _, tc := range tests {
		b := buildRaw(tc.res, tc.off, tc.ts)
		pkts, _, _ := readAll(t, b)
		if len(pkts) != 1 || pkts[0].Time != tc.want {
			t.Errorf("tsresol %#x offset %d ts %d: got %+v, want time %d", tc.res, tc.off, tc.ts, pkts, tc.want)
		}
	}
}

// buildRaw writes a little-endian pcapng with one raw-IP interface that
// has if_tsresol res and if_tsoffset off seconds, and one packet at ts.
func buildRaw(res, off byte, ts uint64) []byte {
	var b bytes.Buffer
	le := func(v uint32) { b.Write([]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}) }
	le(0x0a0d0d0a)
	le(28)
	le(0x1a2b3c4d)
	le(1)
	le(0xffffffff)
	le(0xffffffff)
	le(28)
	// IDB with two options and the end marker
	le(1)
	le(44)
	le(101)
	le(0)
	b.Write([]byte{9, 0, 1, 0, res, 0, 0, 0})
	b.Write([]byte{14, 0, 8, 0, off, 0, 0, 0, 0, 0, 0, 0})
	le(0)
	le(44)
	ip := seg(false).IP()[:60]
	n := uint32(12 + 20 + len(ip))
	le(6)
	le(n)
	le(0)
	le(uint32(ts >> 32))
	le(uint32(ts))
	le(uint32(len(ip)))
	le(uint32(len(ip)))
	b.Write(ip)
	le(n)
	return b.Bytes()
}

func TestDecodeSkips(t *testing.T) {
	udp := seg(false).IP()
	udp[9] = 17
	frag := seg(false).IP()
	frag[7] = 10
	short := ct.Ether(seg(false).IP())[:40]
	arp := ct.Ether(seg(false).IP())
	arp[12], arp[13] = 0x08, 0x06
	tests := []struct {
		name string
		lt   capture.LinkType
		b    []byte
		want capture.Result
	}{
		{"udp", capture.LinkRaw, udp, capture.NotTCP},
		{"fragment", capture.LinkRaw, frag, capture.Fragment},
		{"short", capture.LinkEthernet, short, capture.Short},
		{"arp", capture.LinkEthernet, arp, capture.NotIP},
		{"unknown link", 147, udp, capture.UnknownLink},
		{"802.11 encrypted", capture.Link80211, func() []byte { b := ct.Wifi(seg(false).IP()); b[1] |= 0x40; return b }(), capture.NotIP},
		{"802.11 management", capture.Link80211, func() []byte { b := ct.Wifi(seg(false).IP()); b[0] = 0x80; return b }(), capture.NotIP},
		{"radiotap short", capture.LinkRadiotap, []byte{0, 0, 40, 0, 1}, capture.Short},
		{"bad version", capture.LinkRaw, []byte{0x50, 1, 2}, capture.Malformed},
	}
	for _, tc := range tests {
		var s capture.Segment
		if got := capture.Decode(tc.lt, tc.b, len(tc.b), &s); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name    string
		b       []byte
		want    capture.Options
		wantErr bool
	}{
		{"syn", ct.Opts{}.MSS(1460).SACKOK().TS(5, 0).WScale(7), capture.Options{HasMSS: true, MSS: 1460, SACKPermitted: true, HasTimestamp: true, TSval: 5, HasWScale: true, WScale: 7}, false},
		{"sack blocks", ct.Opts{}.SACK(10, 20, 30, 40), capture.Options{NSACK: 2, SACK: [4]capture.SACKBlock{{10, 20}, {30, 40}}}, false},
		{"end of list stops", append(ct.Opts{}.MSS(536), 0, 2, 4, 5, 0), capture.Options{HasMSS: true, MSS: 536}, false},
		{"zero length", []byte{2, 0, 0, 0}, capture.Options{}, true},
		{"runs past", []byte{8, 10, 0, 0}, capture.Options{}, true},
		{"bad mss length", []byte{2, 3, 5}, capture.Options{}, true},
		{"no length byte", []byte{1, 1, 2}, capture.Options{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var o capture.Options
			err := capture.ParseOptions(tc.b, &o)
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, o, cmpopts.IgnoreFields(capture.Options{}, "Layout", "NKinds")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The order of the SYN's options is kept (it tells stacks apart).
func TestOptionLayout(t *testing.T) {
	var o capture.Options
	// MSS, SACK-permitted, NOP NOP timestamps, NOP window scale.
	b := ct.Opts{}.MSS(1460).SACKOK().TS(1, 0).WScale(7)
	if err := capture.ParseOptions(b, &o); err != nil {
		t.Fatal(err)
	}
	o.SetLayout(b)
	if want := uint64(0x02040101080103); o.Layout != want || o.NKinds != 7 {
		t.Errorf("layout %#x (%d kinds), want %#x (7)", o.Layout, o.NKinds, want)
	}
	// A bad length stops the walk without a panic.
	o.SetLayout([]byte{2, 0, 1, 3, 3})
	if o.NKinds == 0 {
		t.Error("no kinds from a malformed option list")
	}
}

func TestDecodeDoesNotAllocate(t *testing.T) {
	frame := ct.Ether(seg(true).IP(), 10)
	var s capture.Segment
	var o capture.Options
	n := testing.AllocsPerRun(100, func() {
		capture.Decode(capture.LinkEthernet, frame, len(frame), &s)
		capture.ParseOptions(s.Options, &o)
	})
	if n != 0 {
		t.Errorf("Decode+ParseOptions allocate %v times per packet, want 0", n)
	}
}

// Records near the largest allowed (BIG TCP super-frames captured whole)
// grow the read buffer; unknown pcapng blocks larger than that are
// skipped without being held; both whatever sizes the source's reads
// return, and through gzip.
func TestBigRecordsAndSkippedBlocks(t *testing.T) {
	big := seg(false)
	big.Payload = 900_000
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	w.Packet(t0, ct.Ether(seg(false).IP()))
	w.Packet(t0, ct.Ether(big.IP()))
	w.Packet(t0, ct.Ether(seg(false).IP()))

	ng1 := ct.NewWriter(ct.Format{NG: true}, capture.LinkEthernet)
	ng1.Packet(t0, ct.Ether(seg(false).IP()))
	ng2 := ct.NewWriter(ct.Format{NG: true}, capture.LinkEthernet)
	ng2.Packet(t0, ct.Ether(big.IP()))
	const n = 3 << 20 // an unknown block of 3 MB, over the record limit
	custom := make([]byte, n)
	binary.LittleEndian.PutUint32(custom, 0x40000bad)
	binary.LittleEndian.PutUint32(custom[4:], n)
	binary.LittleEndian.PutUint32(custom[n-4:], n)
	ng := append(append(bytes.Clone(ng1.Bytes()), custom...), ng2.Bytes()...)

	for _, tc := range []struct {
		name string
		file []byte
		want []int
	}{
		{"pcap", w.Bytes(), []int{1448, 900_000, 1448}},
		{"pcap gzip", w.Gzip(), []int{1448, 900_000, 1448}},
		{"pcapng with a skipped block", ng, []int{1448, 900_000}},
	} {
		file := func(r io.Reader) io.Reader {
			path := filepath.Join(t.TempDir(), "c.pcap")
			b, _ := io.ReadAll(r)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fh.Close() })
			return fh
		}
		for _, rd := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"halves", iotest.HalfReader}, {"data and EOF", iotest.DataErrReader}, {"file", file}} {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				r, err := capture.Open(rd.wrap(bytes.NewReader(tc.file)))
				if err != nil {
					t.Fatal(err)
				}
				var sizes []int
				var p capture.Packet
				for {
					if err := r.Next(&p); err != nil {
						if err != io.EOF {
							t.Fatalf("after %v: %v", sizes, err)
						}
						break
					}
					var s capture.Segment
					if res := capture.Decode(p.LinkType, p.Data, p.OrigLen, &s); res != capture.OK {
						t.Fatalf("packet %d: %v", len(sizes), res)
					}
					sizes = append(sizes, s.PayloadLen)
				}
				if diff := cmp.Diff(tc.want, sizes); diff != "" {
					t.Errorf("payloads (-want +got):\n%s", diff)
				}
			})
		}
	}
}
