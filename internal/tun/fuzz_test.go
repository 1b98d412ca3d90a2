package tun

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/linkemu"
)

var updateCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite the seed corpus under testdata/fuzz")

// inspectSeeds are valid and slightly broken frames for FuzzInspect. They
// are kept small (small gso_size) so that the fuzzer mutates and minimizes
// quickly; FuzzSplit covers full-size super-packets.
func inspectSeeds(t testing.TB) [][]byte {
	gso4 := build(t, spec{gso: 100, tcpOpts: tsOpts, payload: payloadBytes(5*100 + 9), flags: TCPFlagACK | TCPFlagPSH, id: 3, seq: 77})
	trunc := append([]byte(nil), gso4[:60]...)
	return [][]byte{
		build(t, spec{payload: payloadBytes(100), flags: TCPFlagACK}),
		build(t, spec{tcpOpts: tsOpts, flags: TCPFlagSYN}),
		gso4,
		trunc,
		build(t, spec{v6: true, destOpts: true, gso: 100, payload: payloadBytes(301), flags: TCPFlagFIN | TCPFlagCWR}),
		build(t, spec{proto: ProtoUDP, gso: 120, payload: payloadBytes(360)}),
		build(t, spec{v6: true, proto: ProtoUDP, gso: 120, payload: payloadBytes(130)}),
		build(t, spec{proto: 1, payload: payloadBytes(56)}),
		build(t, spec{ipOpts: []byte{1, 1, 1, 0}, payload: payloadBytes(3), fullCsum: true}),
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	}
}

func hdrSeeds() [][]byte {
	return [][]byte{
		{},
		{1, 1, 0x34, 0, 0xa8, 0x05, 0x14, 0, 0x10, 0},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{1, 5, 0, 0, 0, 0, 0, 0, 6},
	}
}

type splitSeed struct {
	v6, udp, destOpts bool
	payloadLen, gso   uint16
	seq               uint32
	id                uint16
	flags             uint8
	cuts              []byte
}

func splitSeeds() []splitSeed {
	return []splitSeed{
		{payloadLen: 10 * 1448, gso: 1448, seq: 1000, id: 100, flags: 0x19, cuts: []byte{3, 1, 6}},
		{v6: true, destOpts: true, payloadLen: 9*1400 + 1, gso: 1400, flags: 0x99, cuts: []byte{0, 1, 1, 1, 1}},
		{udp: true, payloadLen: 7*1200 + 5, gso: 1200, id: 0xffff, cuts: []byte{2, 2, 200}},
		{payloadLen: 65000, gso: 536, seq: 0xfffffff0, flags: 0x80, cuts: []byte{1, 0, 5, 7, 9, 11, 13}},
		{v6: true, udp: true, payloadLen: 100, gso: 1, cuts: []byte{50, 1, 49}},
	}
}

// TestWriteFuzzCorpus rewrites testdata/fuzz/<Fuzz...>/seed-* from the seeds
// above when run with -update-fuzz-corpus.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*updateCorpus {
		t.Skip("run with -update-fuzz-corpus to rewrite the seed corpus")
	}
	write := func(target string, i int, lines ...string) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.WriteString("go test fuzz v1\n")
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range inspectSeeds(t) {
		write("FuzzInspect", i, fmt.Sprintf("[]byte(%q)", s))
	}
	for i, s := range hdrSeeds() {
		write("FuzzVirtioHdr", i, fmt.Sprintf("[]byte(%q)", s))
	}
	for i, s := range splitSeeds() {
		write("FuzzSplit", i,
			fmt.Sprintf("bool(%v)", s.v6), fmt.Sprintf("bool(%v)", s.udp), fmt.Sprintf("bool(%v)", s.destOpts),
			fmt.Sprintf("uint16(%d)", s.payloadLen), fmt.Sprintf("uint16(%d)", s.gso),
			fmt.Sprintf("uint32(%d)", s.seq), fmt.Sprintf("uint16(%d)", s.id), fmt.Sprintf("byte(%d)", s.flags),
			fmt.Sprintf("[]byte(%q)", s.cuts))
	}
}

func FuzzVirtioHdr(f *testing.F) {
	for _, s := range hdrSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var h VirtioNetHdr
		err := h.Decode(data)
		if len(data) < VirtioNetHdrLen {
			if err == nil {
				t.Fatalf("Decode of %d bytes: no error", len(data))
			}
			return
		}
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		out := make([]byte, VirtioNetHdrLen)
		if err := h.Encode(out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, data[:VirtioNetHdrLen]) {
			t.Fatalf("Encode(Decode(%x)) = %x", data[:VirtioNetHdrLen], out)
		}
		var h2 VirtioNetHdr
		if err := h2.Decode(out); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(h, h2); diff != "" {
			t.Fatalf("Decode(Encode(h)) (-want +got):\n%s", diff)
		}
	})
}

func FuzzInspect(f *testing.F) {
	for _, s := range inspectSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		snapshot := append([]byte(nil), frame...)
		info, err := Inspect(frame)
		if !bytes.Equal(snapshot, frame) {
			t.Fatal("Inspect modified its input")
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Inspect error %q wraps neither ErrMalformed nor ErrUnsupported", err)
			}
			return
		}
		checkInfo(t, frame, info)
		// Whatever Inspect accepts, cutting runs out of it must not panic,
		// and a successful cut must inspect cleanly.
		n := info.NumSegs
		for _, r := range [][2]int{{0, n}, {0, 1}, {n - 1, 1}, {1, n - 2}, {n / 2, n - n/2}} {
			out, err := info.AppendRun(nil, frame, r[0], r[1])
			if err != nil {
				if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
					t.Fatalf("AppendRun%v error %q wraps neither ErrMalformed nor ErrUnsupported", r, err)
				}
				continue
			}
			oi, err := Inspect(out)
			if err != nil {
				t.Fatalf("AppendRun%v produced a frame Inspect rejects: %v", r, err)
			}
			checkInfo(t, out, oi)
			if oi.NumSegs != r[1] {
				t.Fatalf("AppendRun%v: %d segments", r, oi.NumSegs)
			}
		}
		// A middlebox's rewrite of whatever Inspect accepts must not panic
		// nor change the frame's length or its headers' parse.
		for _, m := range []linkemu.Middlebox{{ClampMSS: 536}, {WScale: linkemu.WScaleStrip}, {WScale: linkemu.WScaleSet, Shift: 14}} {
			RewriteSYN(frame, info, m)
			again, err := Inspect(frame)
			if err != nil || again.HeaderLen != info.HeaderLen || again.IPLen != info.IPLen {
				t.Fatalf("RewriteSYN(%v) changed the frame's parse: %v", m, err)
			}
		}
	})
}

// checkInfo checks the invariants of a successful Inspect.
func checkInfo(t *testing.T, frame []byte, info Info) {
	t.Helper()
	if info.IPLen != len(frame)-VirtioNetHdrLen || info.HeaderLen+info.Payload != info.IPLen || info.Payload < 0 {
		t.Fatalf("lengths: frame %d, IPLen %d, HeaderLen %d, Payload %d", len(frame), info.IPLen, info.HeaderLen, info.Payload)
	}
	if info.NumSegs < 1 || info.LastSize < 0 || info.LastSize > info.SegSize || (info.NumSegs > 1 && info.LastSize == 0) {
		t.Fatalf("segments: %d x %d, last %d", info.NumSegs, info.SegSize, info.LastSize)
	}
	var p linkemu.Packet
	info.FillPacket(&p)
	sum := 0
	for _, s := range p.SegPayload {
		sum += s
	}
	if sum != info.Payload || len(p.SegPayload) != info.NumSegs || p.HeaderLen != info.HeaderLen {
		t.Fatalf("FillPacket: HeaderLen %d, %d segments adding up to %d; Info: %d, %d, %d",
			p.HeaderLen, len(p.SegPayload), sum, info.HeaderLen, info.NumSegs, info.Payload)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range splitSeeds() {
		f.Add(s.v6, s.udp, s.destOpts, s.payloadLen, s.gso, s.seq, s.id, s.flags, s.cuts)
	}
	f.Fuzz(func(t *testing.T, v6, udp, destOpts bool, payloadLen, gso uint16, seq uint32, id uint16, flags uint8, cuts []byte) {
		// A valid super-packet: IP length <= 65535, and for USO at most
		// 128 segments. TCP is kept to 512 segments so that the reference
		// segmenter stays fast (the kernel sends at most 45 of 1448 bytes).
		pl := int(payloadLen) % (65535 - 128)
		g := 1 + int(gso)%9000
		proto := ProtoTCP
		maxSegs := 512
		if udp {
			proto = ProtoUDP
			maxSegs = udpMaxSegments
		}
		g = max(g, (pl+maxSegs-1)/maxSegs)
		s := spec{v6: v6, proto: proto, destOpts: destOpts && v6, gso: uint16(g), seq: seq, id: id, payload: payloadBytes(pl), tcpOpts: tsOpts}
		if !udp {
			s.flags = flags
		}
		orig := build(t, s)
		info, err := Inspect(orig)
		if err != nil {
			t.Fatalf("Inspect of a built super-packet: %v", err)
		}
		// Runs to keep: the cut bytes alternate keep and drop lengths.
		n := info.NumSegs
		var runs []linkemu.Run
		pos := 0
		for k, c := range cuts {
			if pos >= n {
				break
			}
			l := min(int(c), n-pos)
			if k%2 == 0 && l > 0 {
				runs = append(runs, linkemu.Run{First: pos, Count: l})
			}
			pos += l
		}
		out, err := splitRuns(orig, runs, nil)
		if err != nil {
			t.Fatalf("Split(%v) of %d segments: %v", runs, n, err)
		}
		origSegs := segment(t, orig)
		for k, r := range runs {
			oi, err := Inspect(out[k])
			if err != nil {
				t.Fatalf("run %v: Inspect: %v", r, err)
			}
			if oi.NumSegs != r.Count {
				t.Fatalf("run %v: %d segments", r, oi.NumSegs)
			}
			got, want := segment(t, out[k]), origSegs[r.First:r.First+r.Count]
			if !equalSegs(want, got) {
				t.Fatalf("run %v of %d: wire segments differ (-want +got):\n%s", r, n, cmp.Diff(want, got))
			}
		}
	})
}

func equalSegs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
