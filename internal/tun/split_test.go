package tun

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/linkemu"
)

// runInfo is what TestSplit checks explicitly of each output frame.
type runInfo struct {
	GSOType  uint8
	GSOSize  uint16
	NumSegs  int
	IPLen    int
	IPID     uint16 // IPv4 only
	Seq      uint32 // TCP only
	TCPFlags uint8
	LastSize int
}

func describeRun(t *testing.T, frame []byte) runInfo {
	t.Helper()
	info, err := Inspect(frame)
	if err != nil {
		t.Fatalf("Inspect of a split frame: %v", err)
	}
	r := runInfo{
		GSOType: info.Hdr.GSOType, GSOSize: info.Hdr.GSOSize, NumSegs: info.NumSegs,
		IPLen: info.IPLen, Seq: info.Seq, TCPFlags: info.TCPFlags, LastSize: info.LastSize,
	}
	if info.IPVersion == 4 {
		r.IPID = binary.BigEndian.Uint16(frame[VirtioNetHdrLen+4:])
	}
	return r
}

func TestSplit(t *testing.T) {
	const (
		mss  = 1448
		tcp  = GSOTCPv4
		ack  = TCPFlagACK
		psh  = TCPFlagPSH
		fin  = TCPFlagFIN
		cwr  = TCPFlagCWR
		hl4  = 20 + 32 // IPv4 + TCP with timestamps
		hl6  = 48 + 20 // IPv6 + destination options + TCP
		udp4 = 20 + 8
	)
	runs := []linkemu.Run{{First: 0, Count: 3}, {First: 4, Count: 6}}
	tests := []struct {
		name string
		spec spec
		runs []linkemu.Run
		want []runInfo
	}{
		{
			name: "IPv4 10 full segments",
			spec: spec{gso: mss, tcpOpts: tsOpts, payload: payloadBytes(10 * mss), id: 100, df: true, seq: 1000, flags: ack | psh | fin | cwr},
			runs: runs,
			want: []runInfo{
				{GSOType: tcp, GSOSize: mss, NumSegs: 3, IPLen: hl4 + 3*mss, IPID: 100, Seq: 1000, TCPFlags: ack | cwr, LastSize: mss},
				{GSOType: tcp, GSOSize: mss, NumSegs: 6, IPLen: hl4 + 6*mss, IPID: 104, Seq: 1000 + 4*mss, TCPFlags: ack | psh | fin, LastSize: mss},
			},
		},
		{
			name: "IPv4 short last segment",
			spec: spec{gso: mss, tcpOpts: tsOpts, payload: payloadBytes(9*mss + 100), id: 100, seq: 1000, flags: ack | psh},
			runs: runs,
			want: []runInfo{
				{GSOType: tcp, GSOSize: mss, NumSegs: 3, IPLen: hl4 + 3*mss, IPID: 100, Seq: 1000, TCPFlags: ack, LastSize: mss},
				{GSOType: tcp, GSOSize: mss, NumSegs: 6, IPLen: hl4 + 5*mss + 100, IPID: 104, Seq: 1000 + 4*mss, TCPFlags: ack | psh, LastSize: 100},
			},
		},
		{
			name: "IPv4 single segments become plain packets",
			spec: spec{gso: mss, tcpOpts: tsOpts, payload: payloadBytes(9*mss + 100), id: 100, seq: 1000, flags: ack | psh | cwr},
			runs: []linkemu.Run{{First: 0, Count: 1}, {First: 3, Count: 1}, {First: 9, Count: 1}},
			want: []runInfo{
				{GSOType: GSONone, NumSegs: 1, IPLen: hl4 + mss, IPID: 100, Seq: 1000, TCPFlags: ack | cwr, LastSize: mss},
				{GSOType: GSONone, NumSegs: 1, IPLen: hl4 + mss, IPID: 103, Seq: 1000 + 3*mss, TCPFlags: ack, LastSize: mss},
				{GSOType: GSONone, NumSegs: 1, IPLen: hl4 + 100, IPID: 109, Seq: 1000 + 9*mss, TCPFlags: ack | psh, LastSize: 100},
			},
		},
		{
			name: "IPv4 ID and sequence wrap",
			spec: spec{gso: mss, tcpOpts: tsOpts, payload: payloadBytes(10 * mss), id: 0xfffe, seq: 0xffffff00, flags: ack},
			runs: runs,
			want: []runInfo{
				{GSOType: tcp, GSOSize: mss, NumSegs: 3, IPLen: hl4 + 3*mss, IPID: 0xfffe, Seq: 0xffffff00, TCPFlags: ack, LastSize: mss},
				{GSOType: tcp, GSOSize: mss, NumSegs: 6, IPLen: hl4 + 6*mss, IPID: 2, Seq: 4*mss - 0x100, TCPFlags: ack, LastSize: mss}, // wrapped,
			},
		},
		{
			name: "IPv4 with options, whole run passes unchanged",
			spec: spec{ipOpts: []byte{1, 1, 1, 0}, gso: 1000, payload: payloadBytes(2500), id: 5, seq: 7, flags: ack | fin},
			runs: []linkemu.Run{{First: 0, Count: 3}},
			want: []runInfo{
				{GSOType: tcp, GSOSize: 1000, NumSegs: 3, IPLen: 44 + 2500, IPID: 5, Seq: 7, TCPFlags: ack | fin, LastSize: 500},
			},
		},
		{
			name: "IPv6 with extension header",
			spec: spec{v6: true, destOpts: true, gso: 1400, payload: payloadBytes(9*1400 + 1), seq: 42, flags: ack | psh | fin | cwr},
			runs: runs,
			want: []runInfo{
				{GSOType: GSOTCPv6, GSOSize: 1400, NumSegs: 3, IPLen: hl6 + 3*1400, Seq: 42, TCPFlags: ack | cwr, LastSize: 1400},
				{GSOType: GSOTCPv6, GSOSize: 1400, NumSegs: 6, IPLen: hl6 + 5*1400 + 1, Seq: 42 + 4*1400, TCPFlags: ack | psh | fin, LastSize: 1},
			},
		},
		{
			name: "USO over IPv4",
			spec: spec{proto: ProtoUDP, sport: 443, dport: 4433, gso: 1200, payload: payloadBytes(9*1200 + 3), id: 9},
			runs: runs,
			want: []runInfo{
				{GSOType: GSOUDPL4, GSOSize: 1200, NumSegs: 3, IPLen: udp4 + 3*1200, IPID: 9, LastSize: 1200},
				{GSOType: GSOUDPL4, GSOSize: 1200, NumSegs: 6, IPLen: udp4 + 5*1200 + 3, IPID: 13, LastSize: 3},
			},
		},
		{
			name: "USO over IPv6, single segment",
			spec: spec{v6: true, proto: ProtoUDP, gso: 1200, payload: payloadBytes(10 * 1200)},
			runs: []linkemu.Run{{First: 5, Count: 1}},
			want: []runInfo{
				{GSOType: GSONone, NumSegs: 1, IPLen: 48 + 1200, LastSize: 1200},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := build(t, tt.spec)
			snapshot := append([]byte(nil), orig...)
			origInfo, err := Inspect(orig)
			if err != nil {
				t.Fatal(err)
			}
			origSegs := segment(t, orig)
			if len(origSegs) != origInfo.NumSegs {
				t.Fatalf("reference segmenter: %d segments, Inspect says %d", len(origSegs), origInfo.NumSegs)
			}
			verifyWire(t, origSegs)

			out, err := splitRuns(orig, tt.runs, nil)
			if err != nil {
				t.Fatalf("Split: %v", err)
			}
			if diff := cmp.Diff(snapshot, orig); diff != "" {
				t.Fatalf("Split modified its input (-before +after):\n%s", diff)
			}
			if len(out) != len(tt.runs) {
				t.Fatalf("Split returned %d frames for %d runs", len(out), len(tt.runs))
			}
			var got []runInfo
			for _, f := range out {
				got = append(got, describeRun(t, f))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("split frames (-want +got):\n%s", diff)
			}
			for k, r := range tt.runs {
				f := out[k]
				info, _ := Inspect(f)
				// The partial checksum is the pseudo-header sum for the new
				// L4 length, as the kernel expects from a NEEDS_CSUM writer.
				csumAt := VirtioNetHdrLen + int(info.Hdr.CsumStart) + int(info.Hdr.CsumOffset)
				gotPartial := binary.BigEndian.Uint16(f[csumAt:])
				if want := pseudo(info.Src, info.Dst, info.Proto, info.IPLen-info.IPHeaderLen); gotPartial != want {
					t.Errorf("run %v: partial checksum %#04x, want pseudo-header sum %#04x", r, gotPartial, want)
				}
				if int(info.Hdr.HdrLen) != info.HeaderLen {
					t.Errorf("run %v: hdr_len %d, want %d", r, info.Hdr.HdrLen, info.HeaderLen)
				}
				if info.Hdr.Flags != FlagNeedsCsum || int(info.Hdr.CsumStart) != info.IPHeaderLen {
					t.Errorf("run %v: flags %#x csum_start %d, want NEEDS_CSUM at %d", r, info.Hdr.Flags, info.Hdr.CsumStart, info.IPHeaderLen)
				}
				// The strongest check: the wire segments of the run are
				// byte-identical to those of the original super-packet.
				gotSegs := segment(t, f)
				verifyWire(t, gotSegs)
				if diff := cmp.Diff(origSegs[r.First:r.First+r.Count], gotSegs); diff != "" {
					t.Errorf("run %v: wire segments differ from the original's (-want +got):\n%s", r, diff)
				}
			}
		})
	}
}

func TestSplitAllRunPartitions(t *testing.T) {
	// Every way to keep one contiguous run of a 7-segment super-packet, for
	// IPv4 and IPv6, against the reference segmenter.
	for _, v6 := range []bool{false, true} {
		orig := build(t, spec{v6: v6, gso: 1000, tcpOpts: tsOpts, payload: payloadBytes(6*1000 + 17), id: 65530, seq: 99, flags: TCPFlagACK | TCPFlagPSH | TCPFlagFIN | TCPFlagCWR})
		origSegs := segment(t, orig)
		var buf []byte
		for first := range 7 {
			for count := 1; first+count <= 7; count++ {
				var err error
				buf, err = AppendRun(buf[:0], orig, first, count)
				if err != nil {
					t.Fatalf("AppendRun(%d, %d): %v", first, count, err)
				}
				if diff := cmp.Diff(origSegs[first:first+count], segment(t, buf)); diff != "" {
					t.Errorf("v6=%v run {%d,%d}: (-want +got):\n%s", v6, first, count, diff)
				}
			}
		}
	}
}

func TestSplitErrors(t *testing.T) {
	gso := build(t, spec{gso: 1000, payload: payloadBytes(5000)})
	noCsum := build(t, spec{gso: 1000, payload: payloadBytes(5000), fullCsum: true})
	tests := []struct {
		name        string
		frame       []byte
		first, cnt  int
		unsupported bool
	}{
		{"count 0", gso, 0, 0, false},
		{"negative first", gso, -1, 2, false},
		{"past the end", gso, 4, 2, false},
		{"first past the end", gso, 5, 1, false},
		{"huge count", gso, 1, 1 << 62, false},
		{"malformed frame", gso[:50], 0, 1, false},
		{"without NEEDS_CSUM", noCsum, 0, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := AppendRun(dst, tt.frame, tt.first, tt.cnt)
			if err == nil {
				t.Fatal("AppendRun: no error")
			}
			want := ErrMalformed
			if tt.unsupported {
				want = ErrUnsupported
			}
			if !errors.Is(err, want) {
				t.Errorf("AppendRun error %q does not wrap %v", err, want)
			}
			if string(got) != "keep" {
				t.Errorf("AppendRun changed dst on error: %q", got)
			}
		})
	}
	t.Run("Info mismatch", func(t *testing.T) {
		info, _ := Inspect(gso)
		if _, err := info.AppendRun(nil, gso[:len(gso)-1], 0, 1); !errors.Is(err, ErrMalformed) {
			t.Errorf("AppendRun with a frame that does not match its Info: %v", err)
		}
	})
	t.Run("Split bad run", func(t *testing.T) {
		out, err := splitRuns(gso, []linkemu.Run{{First: 0, Count: 1}, {First: 3, Count: 3}}, nil)
		if !errors.Is(err, ErrMalformed) || len(out) != 0 {
			t.Errorf("Split = %d frames, %v; want 0, ErrMalformed", len(out), err)
		}
	})
}

func TestSplitDoesNotAllocate(t *testing.T) {
	frame := build(t, spec{gso: 1448, tcpOpts: tsOpts, payload: payloadBytes(44 * 1448)})
	runs := []linkemu.Run{{First: 0, Count: 10}, {First: 11, Count: 1}, {First: 13, Count: 31}}
	out, err := splitRuns(frame, runs, nil) // grows the buffers
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		out, err = splitRuns(frame, runs, out)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Split with reused buffers: %v allocations per run, want 0", allocs)
	}
}

func BenchmarkSplit(b *testing.B) {
	frame := build(b, spec{gso: 1448, tcpOpts: tsOpts, payload: payloadBytes(44 * 1448)})
	runs := []linkemu.Run{{First: 0, Count: 20}, {First: 21, Count: 23}}
	var out [][]byte
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		var err error
		out, err = splitRuns(frame, runs, out)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInspect(b *testing.B) {
	frame := build(b, spec{gso: 1448, tcpOpts: tsOpts, payload: payloadBytes(44 * 1448)})
	p := linkemu.Packet{SegPayload: make([]int, 0, 64)}
	for b.Loop() {
		info, err := Inspect(frame)
		if err != nil {
			b.Fatal(err)
		}
		info.FillPacket(&p)
	}
}

func TestAppendRunInconsistentInfo(t *testing.T) {
	frame := build(t, spec{gso: 1000, payload: payloadBytes(5000)})
	good, err := Inspect(frame)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*Info)
	}{
		{"segment size too big", func(i *Info) { i.SegSize = 2000 }},
		{"segment size 0", func(i *Info) { i.SegSize = 0 }},
		{"header longer than the packet", func(i *Info) { i.HeaderLen, i.L4HeaderLen = 6000, 5980 }},
		{"short TCP header", func(i *Info) { i.L4HeaderLen, i.HeaderLen = 8, 28 }},
		{"IPv6 header too short", func(i *Info) { i.IPVersion = 6 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := good
			tt.mod(&info)
			if _, err := info.AppendRun(nil, frame, 1, 2); !errors.Is(err, ErrMalformed) {
				t.Errorf("AppendRun: %v, want ErrMalformed", err)
			}
		})
	}
}

// splitRuns cuts frame into one frame per run (linkemu.Run.First and Count;
// Due is ignored) and returns them in out[:len(runs)]. The byte slices
// already in out, up to its capacity, are reused as buffers (truncated to
// zero length first), so a caller that passes the previous result back in
// does not allocate once the buffers have grown. frame is not modified.
func splitRuns(frame []byte, runs []linkemu.Run, out [][]byte) ([][]byte, error) {
	info, err := Inspect(frame)
	if err != nil {
		return out[:0], err
	}
	out = out[:cap(out)]
	for k, r := range runs {
		var buf []byte
		if k < len(out) {
			buf = out[k][:0]
		}
		buf, err = info.AppendRun(buf, frame, r.First, r.Count)
		if err != nil {
			return out[:0], err
		}
		if k < len(out) {
			out[k] = buf
		} else {
			out = append(out, buf)
		}
	}
	return out[:len(runs)], nil
}
