package tun

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/longhaul/longhaul/internal/linkemu"
)

var cmpAddr = cmpopts.EquateComparable(netip.Addr{})

// tsOpts is a TCP timestamp option padded to 12 bytes, as Linux sends.
var tsOpts = []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}

func TestInspect(t *testing.T) {
	tests := []struct {
		name string
		spec spec
		want Info
	}{
		{
			name: "plain IPv4 TCP",
			spec: spec{sport: 40000, dport: 5201, seq: 1000, flags: TCPFlagACK | TCPFlagPSH, tcpOpts: tsOpts, payload: payloadBytes(1448), id: 7, df: true},
			want: Info{
				Hdr:       VirtioNetHdr{Flags: FlagNeedsCsum, HdrLen: 52, CsumStart: 20, CsumOffset: 16},
				IPVersion: 4, Proto: ProtoTCP, DF: true, IPHeaderLen: 20, L4HeaderLen: 32, HeaderLen: 52,
				IPLen: 1500, Payload: 1448, NumSegs: 1, SegSize: 1448, LastSize: 1448,
				Src: v4Src, Dst: v4Dst, SrcPort: 40000, DstPort: 5201, Seq: 1000, TCPFlags: TCPFlagACK | TCPFlagPSH,
			},
		},
		{
			name: "pure ACK",
			spec: spec{sport: 5201, dport: 40000, seq: 1, flags: TCPFlagACK, tcpOpts: tsOpts},
			want: Info{
				Hdr:       VirtioNetHdr{Flags: FlagNeedsCsum, HdrLen: 52, CsumStart: 20, CsumOffset: 16},
				IPVersion: 4, Proto: ProtoTCP, IPHeaderLen: 20, L4HeaderLen: 32, HeaderLen: 52,
				IPLen: 52, Payload: 0, NumSegs: 1, SegSize: 0, LastSize: 0,
				Src: v4Src, Dst: v4Dst, SrcPort: 5201, DstPort: 40000, Seq: 1, TCPFlags: TCPFlagACK,
			},
		},
		{
			name: "IPv4 options, full checksum",
			spec: spec{ipOpts: []byte{1, 1, 1, 0}, sport: 1, dport: 2, payload: payloadBytes(10), fullCsum: true},
			want: Info{
				Hdr:       VirtioNetHdr{HdrLen: 44},
				IPVersion: 4, Proto: ProtoTCP, IPHeaderLen: 24, L4HeaderLen: 20, HeaderLen: 44,
				IPLen: 54, Payload: 10, NumSegs: 1, SegSize: 10, LastSize: 10,
				Src: v4Src, Dst: v4Dst, SrcPort: 1, DstPort: 2,
			},
		},
		{
			name: "plain IPv6 TCP with destination options",
			spec: spec{v6: true, destOpts: true, sport: 1, dport: 2, seq: 5, flags: TCPFlagSYN, payload: payloadBytes(100)},
			want: Info{
				Hdr:       VirtioNetHdr{Flags: FlagNeedsCsum, HdrLen: 68, CsumStart: 48, CsumOffset: 16},
				IPVersion: 6, Proto: ProtoTCP, IPHeaderLen: 48, L4HeaderLen: 20, HeaderLen: 68,
				IPLen: 168, Payload: 100, NumSegs: 1, SegSize: 100, LastSize: 100,
				Src: v6Src, Dst: v6Dst, SrcPort: 1, DstPort: 2, Seq: 5, TCPFlags: TCPFlagSYN,
			},
		},
		{
			name: "TSO4 of 10 full segments",
			spec: spec{gso: 1448, tcpOpts: tsOpts, payload: payloadBytes(10 * 1448), seq: 1 << 31, flags: TCPFlagACK},
			want: Info{
				Hdr:       VirtioNetHdr{Flags: FlagNeedsCsum, GSOType: GSOTCPv4, HdrLen: 52, GSOSize: 1448, CsumStart: 20, CsumOffset: 16},
				IPVersion: 4, Proto: ProtoTCP, IPHeaderLen: 20, L4HeaderLen: 32, HeaderLen: 52,
				IPLen: 52 + 14480, Payload: 14480, NumSegs: 10, SegSize: 1448, LastSize: 1448,
				Src: v4Src, Dst: v4Dst, Seq: 1 << 31, TCPFlags: TCPFlagACK,
			},
		},
		{
			name: "TSO4 with a short last segment",
			spec: spec{gso: 1448, tcpOpts: tsOpts, payload: payloadBytes(3*1448 + 100), flags: TCPFlagACK | TCPFlagPSH},
			want: Info{
				Hdr:       VirtioNetHdr{Flags: FlagNeedsCsum, GSOType: GSOTCPv4, HdrLen: 52, GSOSize: 1448, CsumStart: 20, CsumOffset: 16},
				IPVersion: 4, Proto: ProtoTCP, IPHeaderLen: 20, L4HeaderLen: 32, HeaderLen: 52,
				IPLen: 52 + 3*1448 + 100, Payload: 3*1448 + 100, NumSegs: 4, SegSize: 1448, LastSize: 100,
				Src: v4Src, Dst: v4Dst, TCPFlags: TCPFlagACK | TCPFlagPSH,
			},
		},
		{
			name: "TSO6 with a short last segment",
			spec: spec{v6: true, gso: 1428, tcpOpts: tsOpts, payload: payloadBytes(44*1428 + 1), flags: TCPFlagACK},
			want: Info{
				Hdr:       VirtioNetHdr{Flags: FlagNeedsCsum, GSOType: GSOTCPv6, HdrLen: 72, GSOSize: 1428, CsumStart: 40, CsumOffset: 16},
				IPVersion: 6, Proto: ProtoTCP, IPHeaderLen: 40, L4HeaderLen: 32, HeaderLen: 72,
				IPLen: 72 + 44*1428 + 1, Payload: 44*1428 + 1, NumSegs: 45, SegSize: 1428, LastSize: 1,
				Src: v6Src, Dst: v6Dst, TCPFlags: TCPFlagACK,
			},
		},
		{
			name: "GSO header on a packet that fits one segment",
			spec: spec{gso: 1448, payload: payloadBytes(1448)},
			want: Info{
				Hdr:       VirtioNetHdr{Flags: FlagNeedsCsum, GSOType: GSOTCPv4, HdrLen: 40, GSOSize: 1448, CsumStart: 20, CsumOffset: 16},
				IPVersion: 4, Proto: ProtoTCP, IPHeaderLen: 20, L4HeaderLen: 20, HeaderLen: 40,
				IPLen: 1488, Payload: 1448, NumSegs: 1, SegSize: 1448, LastSize: 1448,
				Src: v4Src, Dst: v4Dst,
			},
		},
		{
			name: "USO over IPv6",
			spec: spec{v6: true, proto: ProtoUDP, sport: 443, dport: 50000, gso: 1200, payload: payloadBytes(5*1200 + 7)},
			want: Info{
				Hdr:       VirtioNetHdr{Flags: FlagNeedsCsum, GSOType: GSOUDPL4, HdrLen: 48, GSOSize: 1200, CsumStart: 40, CsumOffset: 6},
				IPVersion: 6, Proto: ProtoUDP, IPHeaderLen: 40, L4HeaderLen: 8, HeaderLen: 48,
				IPLen: 48 + 6007, Payload: 6007, NumSegs: 6, SegSize: 1200, LastSize: 7,
				Src: v6Src, Dst: v6Dst, SrcPort: 443, DstPort: 50000,
			},
		},
		{
			name: "ICMP",
			spec: spec{proto: 1, payload: payloadBytes(64)},
			want: Info{
				Hdr:       VirtioNetHdr{HdrLen: 20},
				IPVersion: 4, Proto: 1, IPHeaderLen: 20, HeaderLen: 20,
				IPLen: 84, Payload: 64, NumSegs: 1, SegSize: 64, LastSize: 64,
				Src: v4Src, Dst: v4Dst,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := build(t, tt.spec)
			got, err := Inspect(frame)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpAddr); diff != "" {
				t.Errorf("Inspect (-want +got):\n%s", diff)
			}
			// The linkemu view: per-segment payloads that add up.
			p := got.Packet()
			if p.HeaderLen != tt.want.HeaderLen || len(p.SegPayload) != tt.want.NumSegs {
				t.Fatalf("Packet() = HeaderLen %d, %d segments; want %d, %d", p.HeaderLen, len(p.SegPayload), tt.want.HeaderLen, tt.want.NumSegs)
			}
			sum := 0
			for k, s := range p.SegPayload {
				sum += s
				if s != got.SegPayload(k) {
					t.Errorf("SegPayload[%d] = %d, SegPayload(%d) = %d", k, s, k, got.SegPayload(k))
				}
			}
			if sum != tt.want.Payload {
				t.Errorf("segment payloads add up to %d, want %d", sum, tt.want.Payload)
			}
		})
	}
}

func TestInspectFragments(t *testing.T) {
	t.Run("IPv4 later fragment", func(t *testing.T) {
		frame := build(t, spec{proto: ProtoUDP, payload: payloadBytes(100), fullCsum: true})
		ip := frame[VirtioNetHdrLen:]
		binary.BigEndian.PutUint16(ip[6:], 185) // offset 1480
		got, err := Inspect(frame)
		if err != nil {
			t.Fatal(err)
		}
		want := Info{
			Hdr:       VirtioNetHdr{HdrLen: 28},
			IPVersion: 4, Proto: ProtoUDP, Fragment: true, IPHeaderLen: 20, HeaderLen: 20,
			IPLen: 128, Payload: 108, NumSegs: 1, SegSize: 108, LastSize: 108, Src: v4Src, Dst: v4Dst,
		}
		if diff := cmp.Diff(want, got, cmpAddr); diff != "" {
			t.Errorf("Inspect (-want +got):\n%s", diff)
		}
	})
	t.Run("IPv6 fragment header", func(t *testing.T) {
		// IPv6 + fragment header (next header UDP) + 16 bytes.
		frame := make([]byte, VirtioNetHdrLen+40+8+16)
		ip := frame[VirtioNetHdrLen:]
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], 24)
		ip[6] = ipv6Fragment
		copy(ip[8:], v6Src.AsSlice())
		copy(ip[24:], v6Dst.AsSlice())
		ip[40] = ProtoUDP
		got, err := Inspect(frame)
		if err != nil {
			t.Fatal(err)
		}
		want := Info{
			IPVersion: 6, Proto: ProtoUDP, Fragment: true, IPHeaderLen: 48, HeaderLen: 48,
			IPLen: 64, Payload: 16, NumSegs: 1, SegSize: 16, LastSize: 16, Src: v6Src, Dst: v6Dst,
		}
		if diff := cmp.Diff(want, got, cmpAddr); diff != "" {
			t.Errorf("Inspect (-want +got):\n%s", diff)
		}
	})
}

func TestInspectErrors(t *testing.T) {
	v4 := func(t *testing.T) []byte {
		return build(t, spec{gso: 1000, payload: payloadBytes(3000), tcpOpts: tsOpts})
	}
	v6 := func(t *testing.T) []byte {
		return build(t, spec{v6: true, gso: 1000, payload: payloadBytes(3000)})
	}
	udp := func(t *testing.T) []byte {
		return build(t, spec{proto: ProtoUDP, gso: 1000, payload: payloadBytes(3000)})
	}
	setHdr := func(f []byte, mod func(*VirtioNetHdr)) []byte {
		var h VirtioNetHdr
		_ = h.Decode(f)
		mod(&h)
		h.put(f)
		return f
	}
	ip := func(f []byte) []byte { return f[VirtioNetHdrLen:] }
	tests := []struct {
		name      string
		frame     func(t *testing.T) []byte
		unsupport bool
		wantMsg   string
	}{
		{"empty", func(*testing.T) []byte { return nil }, false, "shorter than the 10-byte virtio_net_hdr"},
		{"short vnet header", func(t *testing.T) []byte { return v4(t)[:9] }, false, "shorter than the 10-byte"},
		{"no IP packet", func(t *testing.T) []byte { return v4(t)[:10] }, false, "no IP packet"},
		{"IP version 5", func(t *testing.T) []byte { f := v4(t); ip(f)[0] = 0x55; return f }, false, "IP version 5"},
		{"truncated IPv4 header", func(t *testing.T) []byte { return v4(t)[:10+19] }, false, "truncated IPv4 header: 19 of 20"},
		{"IHL 4", func(t *testing.T) []byte { f := v4(t); ip(f)[0] = 0x44; return f }, false, "IHL 4 < 5"},
		{"IHL beyond the packet", func(t *testing.T) []byte { f := build(t, spec{proto: 1}); ip(f)[0] = 0x4f; return f }, false, "IHL says 60 bytes, packet has 20"},
		{"IPv4 total length too big", func(t *testing.T) []byte {
			f := v4(t)
			binary.BigEndian.PutUint16(ip(f)[2:], uint16(len(ip(f))+1))
			return f
		}, false, "does not match the"},
		{"IPv4 total length too small (trailing bytes)", func(t *testing.T) []byte { return append(v4(t), 0) }, false, "does not match the"},
		{"IPv6 payload length mismatch", func(t *testing.T) []byte { return v6(t)[:10+100] }, false, "IPv6 payload length"},
		{"IPv6 jumbogram", func(t *testing.T) []byte { f := v6(t); binary.BigEndian.PutUint16(ip(f)[4:], 0); return f }, false, "IPv6 payload length 0"},
		{"truncated IPv6 header", func(t *testing.T) []byte { return v6(t)[:10+39] }, false, "truncated IPv6 header"},
		{"truncated IPv6 extension header", func(t *testing.T) []byte {
			f := build(t, spec{v6: true, destOpts: true})
			ip(f)[41] = 200 // 1608 bytes
			return f
		}, false, "extension header 60"},
		{"truncated TCP header", func(t *testing.T) []byte {
			f := build(t, spec{proto: 1, payload: make([]byte, 10)})
			ip(f)[9] = ProtoTCP
			return f
		}, false, "truncated TCP header: 10 of 20"},
		{"TCP data offset 4", func(t *testing.T) []byte { f := v4(t); ip(f)[20+12] = 0x40; return f }, false, "data offset 4 < 5"},
		{"TCP data offset beyond the packet", func(t *testing.T) []byte {
			f := build(t, spec{})
			ip(f)[20+12] = 0xf0
			return f
		}, false, "data offset says 60 bytes, 20 left"},
		{"truncated UDP header", func(t *testing.T) []byte {
			f := build(t, spec{proto: 1, payload: make([]byte, 7)})
			ip(f)[9] = ProtoUDP
			return f
		}, false, "truncated UDP header"},
		{"unknown gso type", func(t *testing.T) []byte { return setHdr(v4(t), func(h *VirtioNetHdr) { h.GSOType = 2 }) }, false, "unknown gso type 0x2"},
		{"AccECN bit", func(t *testing.T) []byte { return setHdr(v4(t), func(h *VirtioNetHdr) { h.GSOType |= 0x10 }) }, false, "unknown gso type 0x11"},
		{"UFO", func(t *testing.T) []byte { return setHdr(udp(t), func(h *VirtioNetHdr) { h.GSOType = GSOUDP }) }, true, "UFO"},
		{"ECN bit on UDP", func(t *testing.T) []byte { return setHdr(udp(t), func(h *VirtioNetHdr) { h.GSOType |= GSOECN }) }, false, "ECN bit only applies to TCP"},
		{"gso_size 0", func(t *testing.T) []byte { return setHdr(v4(t), func(h *VirtioNetHdr) { h.GSOSize = 0 }) }, false, "gso_size 0"},
		{"TCPV4 on IPv6", func(t *testing.T) []byte { return setHdr(v6(t), func(h *VirtioNetHdr) { h.GSOType = GSOTCPv4 }) }, false, "gso type tcpv4 on an IPv6 protocol 6"},
		{"TCPV6 on IPv4", func(t *testing.T) []byte { return setHdr(v4(t), func(h *VirtioNetHdr) { h.GSOType = GSOTCPv6 }) }, false, "gso type tcpv6 on an IPv4"},
		{"TCPV4 on UDP", func(t *testing.T) []byte { return setHdr(udp(t), func(h *VirtioNetHdr) { h.GSOType = GSOTCPv4 }) }, false, "on an IPv4 protocol 17"},
		{"UDP_L4 on TCP", func(t *testing.T) []byte {
			return setHdr(v4(t), func(h *VirtioNetHdr) { h.GSOType = GSOUDPL4; h.CsumOffset = 6 })
		}, false, "gso type udp_l4 on an IPv4 protocol 6"},
		{"GSO on a fragment", func(t *testing.T) []byte {
			f := v4(t)
			ip(f)[6] |= 0x20 // MF
			return f
		}, false, "on an IP fragment"},
		{"csum_start inside the IP header", func(t *testing.T) []byte { return setHdr(v4(t), func(h *VirtioNetHdr) { h.CsumStart = 19 }) }, false, "csum_start 19 points into the IPv4 header"},
		{"checksum beyond the packet", func(t *testing.T) []byte {
			f := build(t, spec{})
			return setHdr(f, func(h *VirtioNetHdr) { h.CsumStart = 30; h.CsumOffset = 9 })
		}, false, "lies beyond the 40-byte packet"},
		{"GSO csum_start not at TCP", func(t *testing.T) []byte { return setHdr(v4(t), func(h *VirtioNetHdr) { h.CsumStart = 24 }) }, false, "csum_start 24 is not the transport header offset 20"},
		{"GSO csum_offset not TCP check", func(t *testing.T) []byte { return setHdr(v4(t), func(h *VirtioNetHdr) { h.CsumOffset = 6 }) }, false, "csum_offset 6, want 16"},
		{"UDP_L4 without NEEDS_CSUM", func(t *testing.T) []byte { return setHdr(udp(t), func(h *VirtioNetHdr) { h.Flags = 0 }) }, false, "without NEEDS_CSUM"},
		{"UDP_L4 of 129 segments", func(t *testing.T) []byte {
			return build(t, spec{proto: ProtoUDP, gso: 100, payload: payloadBytes(128*100 + 1)})
		}, false, "129 segments exceeds the kernel's limit of 128"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Inspect(tt.frame(t))
			if err == nil {
				t.Fatal("Inspect: no error")
			}
			want := ErrMalformed
			if tt.unsupport {
				want = ErrUnsupported
			}
			if !errors.Is(err, want) {
				t.Errorf("Inspect error %q does not wrap %v", err, want)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Inspect error %q does not mention %q", err, tt.wantMsg)
			}
		})
	}
}

func TestFillPacketReuses(t *testing.T) {
	small := build(t, spec{payload: payloadBytes(100)})
	big := build(t, spec{gso: 1448, payload: payloadBytes(45 * 1448)})
	p := linkemu.Packet{SegPayload: make([]int, 0, 64)}
	allocs := testing.AllocsPerRun(100, func() {
		for _, f := range [][]byte{small, big} {
			info, err := Inspect(f)
			if err != nil {
				t.Fatal(err)
			}
			info.FillPacket(&p)
		}
	})
	if allocs != 0 {
		t.Errorf("Inspect+FillPacket allocated %v times per run, want 0", allocs)
	}
	if p.HeaderLen != 40 || len(p.SegPayload) != 45 {
		t.Errorf("FillPacket: HeaderLen %d, %d segments; want 40, 45", p.HeaderLen, len(p.SegPayload))
	}
	info, _ := Inspect(small)
	info.FillPacket(&p)
	if diff := cmp.Diff(linkemu.Packet{HeaderLen: 40, SegPayload: []int{100}}, p); diff != "" {
		t.Errorf("FillPacket after a bigger packet (-want +got):\n%s", diff)
	}
}
