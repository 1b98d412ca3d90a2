package tun

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

func TestTooBig(t *testing.T) {
	opts := []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2} // NOP NOP timestamps: 32-byte TCP header
	cases := []struct {
		name    string
		s       spec
		mtu     int
		largest int
		want    bool
	}{
		{"v4 DF over", spec{df: true, flags: TCPFlagACK, tcpOpts: opts, payload: payloadBytes(1448)}, 1400, 1500, true},
		{"v4 DF fits", spec{df: true, flags: TCPFlagACK, tcpOpts: opts, payload: payloadBytes(1348)}, 1400, 1400, false},
		{"v4 no DF", spec{flags: TCPFlagACK, tcpOpts: opts, payload: payloadBytes(1448)}, 1400, 1500, false},
		{"v4 GSO", spec{df: true, flags: TCPFlagACK, tcpOpts: opts, payload: payloadBytes(10 * 1448), gso: 1448}, 1400, 1500, true},
		{"v4 GSO small segs", spec{df: true, flags: TCPFlagACK, tcpOpts: opts, payload: payloadBytes(10 * 1348), gso: 1348}, 1400, 1400, false},
		{"v6 over", spec{v6: true, flags: TCPFlagACK, tcpOpts: opts, payload: payloadBytes(1428)}, 1280, 1500, true},
		{"no mtu", spec{df: true, flags: TCPFlagACK, tcpOpts: opts, payload: payloadBytes(1448)}, 0, 1500, false},
	}
	for _, c := range cases {
		i, err := Inspect(build(t, c.s))
		if err != nil {
			t.Fatal(err)
		}
		if i.LargestSegment() != c.largest || i.TooBig(c.mtu) != c.want {
			t.Errorf("%s: largest %d, too big for %d: %v; want %d, %v", c.name, i.LargestSegment(), c.mtu, i.TooBig(c.mtu), c.largest, c.want)
		}
	}
}

func TestAppendTooBig(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		frame := build(t, spec{v6: v6, df: true, sport: 5201, dport: 40000, seq: 99, flags: TCPFlagACK, payload: payloadBytes(1448)})
		i, err := Inspect(frame)
		if err != nil {
			t.Fatal(err)
		}
		prefix := []byte("keep")
		out := i.AppendTooBig(prefix, frame, 1400)
		if !bytes.Equal(out[:4], prefix) {
			t.Fatalf("v6=%v: dst's bytes not kept", v6)
		}
		reply := out[4:]
		ri, err := Inspect(reply)
		if err != nil {
			t.Fatalf("v6=%v: the reply does not inspect: %v", v6, err)
		}
		if ri.Hdr != (VirtioNetHdr{}) || ri.Src != i.Dst || ri.Dst != i.Src {
			t.Errorf("v6=%v: reply header %+v from %v to %v", v6, ri.Hdr, ri.Src, ri.Dst)
		}
		pkt := reply[VirtioNetHdrLen:]
		if !v6 {
			if c := fold16(sum16(0, pkt[:20])); c != 0xffff || pkt[9] != 1 {
				t.Errorf("IPv4 header: checksum sum %#x, protocol %d", c, pkt[9])
			}
			icmp := pkt[20:]
			if icmp[0] != 3 || icmp[1] != 4 || binary.BigEndian.Uint16(icmp[6:]) != 1400 {
				t.Errorf("ICMP type %d code %d mtu %d", icmp[0], icmp[1], binary.BigEndian.Uint16(icmp[6:]))
			}
			if c := fold16(sum16(0, icmp)); c != 0xffff {
				t.Errorf("ICMP checksum does not verify (sum %#x)", c)
			}
			if len(icmp) != 8+548 || !bytes.Equal(icmp[8:], frame[VirtioNetHdrLen:VirtioNetHdrLen+548]) {
				t.Errorf("ICMP quotes %d bytes, not the packet's first 548", len(icmp)-8)
			}
			continue
		}
		icmp := pkt[40:]
		src, dst := netip.AddrFrom16([16]byte(pkt[8:24])), netip.AddrFrom16([16]byte(pkt[24:40]))
		if pkt[6] != ProtoICMPv6 || icmp[0] != 2 || binary.BigEndian.Uint32(icmp[4:]) != 1400 {
			t.Errorf("ICMPv6 next header %d type %d mtu %d", pkt[6], icmp[0], binary.BigEndian.Uint32(icmp[4:]))
		}
		if c := fold16(sum16(uint32(pseudo(src, dst, ProtoICMPv6, len(icmp))), icmp)); c != 0xffff {
			t.Errorf("ICMPv6 checksum does not verify (sum %#x)", c)
		}
		if len(pkt) != 1280 || !bytes.Equal(icmp[8:], frame[VirtioNetHdrLen:VirtioNetHdrLen+1280-48]) {
			t.Errorf("ICMPv6 packet of %d bytes, want the minimum MTU 1280 filled with the quote", len(pkt))
		}
	}
}
