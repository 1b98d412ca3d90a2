package tun

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/longhaul/longhaul/internal/linkemu"
)

// linuxSYNOpts are the options of a Linux SYN: MSS 1460, SACK permitted,
// timestamps, NOP, window scale 7.
func linuxSYNOpts() []byte {
	return []byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10, 1, 2, 3, 4, 0, 0, 0, 0, 1, 3, 3, 7}
}

// synOptions returns the MSS and window scale options of frame's TCP
// header (-1 when absent), parsed independently of RewriteSYN.
func synOptions(t *testing.T, frame []byte) (mss, wscale int) {
	t.Helper()
	_, iphl, l4hl, _, err := refHeaders(frame[VirtioNetHdrLen:])
	if err != nil {
		t.Fatal(err)
	}
	opts := frame[VirtioNetHdrLen+iphl+20 : VirtioNetHdrLen+iphl+l4hl]
	mss, wscale = -1, -1
	for k := 0; k < len(opts); {
		switch opts[k] {
		case 0:
			return mss, wscale
		case 1:
			k++
			continue
		case 2:
			mss = int(binary.BigEndian.Uint16(opts[k+2:]))
		case 3:
			wscale = int(opts[k+2])
		}
		k += int(opts[k+1])
	}
	return mss, wscale
}

func TestRewriteSYN(t *testing.T) {
	cases := []struct {
		name       string
		m          linkemu.Middlebox
		wantMSS    int
		wantWScale int
	}{
		{"clamp", linkemu.Middlebox{ClampMSS: 1200}, 1200, 7},
		{"clamp above", linkemu.Middlebox{ClampMSS: 9000}, 1460, 7},
		{"strip", linkemu.Middlebox{WScale: linkemu.WScaleStrip}, 1460, -1},
		{"set", linkemu.Middlebox{WScale: linkemu.WScaleSet, Shift: 2}, 1460, 2},
		{"both", linkemu.Middlebox{ClampMSS: 1380, WScale: linkemu.WScaleStrip}, 1380, -1},
	}
	for _, c := range cases {
		for _, v6 := range []bool{false, true} {
			for _, full := range []bool{false, true} {
				for _, flags := range []uint8{TCPFlagSYN, TCPFlagSYN | TCPFlagACK} {
					frame := build(t, spec{v6: v6, sport: 40000, dport: 5201, seq: 7, flags: flags, tcpOpts: linuxSYNOpts(), fullCsum: full})
					info, err := Inspect(frame)
					if err != nil {
						t.Fatal(err)
					}
					n := len(frame)
					changed := RewriteSYN(frame, info, c.m)
					mss, ws := synOptions(t, frame)
					if mss != c.wantMSS || ws != c.wantWScale || len(frame) != n || changed != (mss != 1460 || ws != 7) {
						t.Errorf("%s v6=%v full=%v flags=%#x: mss %d wscale %d changed %v", c.name, v6, full, flags, mss, ws, changed)
					}
					// The checksum still verifies: complete it first when
					// the kernel was to finish it.
					wire := frame[VirtioNetHdrLen:]
					if !full {
						wire = segment(t, frame)[0]
					}
					verifyWire(t, [][]byte{wire})
				}
			}
		}
	}
}

func TestRewriteSYNLeavesOthersAlone(t *testing.T) {
	m := linkemu.Middlebox{ClampMSS: 536, WScale: linkemu.WScaleStrip}
	for name, s := range map[string]spec{
		"ack":          {flags: TCPFlagACK, tcpOpts: linuxSYNOpts(), fullCsum: true},
		"data":         {flags: TCPFlagACK | TCPFlagPSH, payload: payloadBytes(100), fullCsum: true},
		"udp":          {proto: ProtoUDP, payload: payloadBytes(40)},
		"syn no opts":  {flags: TCPFlagSYN, fullCsum: true},
		"bad opt len":  {flags: TCPFlagSYN, tcpOpts: []byte{2, 9, 5, 0xb4}, fullCsum: true},
		"zero opt len": {flags: TCPFlagSYN, tcpOpts: []byte{3, 0, 7, 1}, fullCsum: true},
	} {
		frame := build(t, s)
		info, err := Inspect(frame)
		if err != nil {
			t.Fatal(err)
		}
		before := bytes.Clone(frame)
		if RewriteSYN(frame, info, m) || !bytes.Equal(before, frame) {
			t.Errorf("%s: rewritten", name)
		}
	}
}
