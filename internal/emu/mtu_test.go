package emu

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/tun"
	"github.com/longhaul/longhaul/internal/tun/tuntest"
)

// dfFrame is udpFrame with IPv4's don't-fragment bit set.
func dfFrame(id byte, payload int) []byte {
	f := udpFrame(id, payload)
	ip := f[tun.VirtioNetHdrLen:]
	ip[6] |= 0x40
	binary.BigEndian.PutUint16(ip[10:], 0)
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	return f
}

func TestMTUSendsFragNeededOrBlackholes(t *testing.T) {
	for _, blackhole := range []bool{false, true} {
		client, server := tuntest.New("c"), tuntest.New("s")
		e, err := Start(Config{Up: linkemu.Config{MTU: 1000, MTUBlackhole: blackhole}}, client, server)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range [][]byte{dfFrame(1, 1100), dfFrame(2, 900), udpFrame(3, 1100)} {
			if err := client.Inject(f, time.Second); err != nil {
				t.Fatal(err)
			}
		}
		// The frame over the MTU with DF is refused; the one that fits and
		// the one a router would fragment cross.
		for _, want := range []byte{2, 3} {
			f, err := server.Next(2 * time.Second)
			if err != nil || f[tun.VirtioNetHdrLen+28] != want {
				t.Fatalf("blackhole=%v: frame %d: %v %x", blackhole, want, err, f)
			}
		}
		back, err := client.Next(200 * time.Millisecond)
		switch {
		case blackhole && err == nil:
			t.Errorf("a black hole sent %x back", back)
		case !blackhole && err != nil:
			t.Errorf("no ICMP error came back: %v", err)
		case !blackhole:
			ip := back[tun.VirtioNetHdrLen:]
			icmp := ip[20:]
			if ip[9] != 1 || icmp[0] != 3 || icmp[1] != 4 || binary.BigEndian.Uint16(icmp[6:]) != 1000 || icmp[8+28] != 1 {
				t.Errorf("reply %x is not fragmentation-needed for 1000 bytes quoting frame 1", back)
			}
		}
		s := e.Stop()
		if s.Up.MTUDrops != 1 || (s.Up.ICMPSent == 1) == blackhole || s.Up.FramesIn != 3 {
			t.Errorf("blackhole=%v: mtu drops %d, icmp sent %d, frames in %d", blackhole, s.Up.MTUDrops, s.Up.ICMPSent, s.Up.FramesIn)
		}
	}
}
