package tun

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVirtioNetHdrLayout(t *testing.T) {
	tests := []struct {
		name  string
		hdr   VirtioNetHdr
		bytes []byte
	}{
		{
			name:  "zero",
			hdr:   VirtioNetHdr{},
			bytes: make([]byte, 10),
		},
		{
			name:  "tso4 super-packet",
			hdr:   VirtioNetHdr{Flags: FlagNeedsCsum, GSOType: GSOTCPv4, HdrLen: 0x0034, GSOSize: 1448, CsumStart: 20, CsumOffset: 16},
			bytes: []byte{0x01, 0x01, 0x34, 0x00, 0xa8, 0x05, 0x14, 0x00, 0x10, 0x00},
		},
		{
			name:  "all bits",
			hdr:   VirtioNetHdr{Flags: 0xff, GSOType: 0x84, HdrLen: 0x0102, GSOSize: 0x0304, CsumStart: 0x0506, CsumOffset: 0x0708},
			bytes: []byte{0xff, 0x84, 0x02, 0x01, 0x04, 0x03, 0x06, 0x05, 0x08, 0x07},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make([]byte, VirtioNetHdrLen)
			if err := tt.hdr.Encode(got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.bytes, got); diff != "" {
				t.Errorf("Encode (-want +got):\n%s", diff)
			}
			var h VirtioNetHdr
			if err := h.Decode(tt.bytes); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.hdr, h); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVirtioNetHdrShort(t *testing.T) {
	var h VirtioNetHdr
	if err := h.Decode(make([]byte, 9)); err == nil {
		t.Error("Decode of 9 bytes: no error")
	}
	if err := h.Encode(make([]byte, 9)); err == nil {
		t.Error("Encode into 9 bytes: no error")
	}
}

func TestGSOTypeString(t *testing.T) {
	tests := []struct {
		in   uint8
		want string
	}{
		{GSONone, "none"},
		{GSOTCPv4, "tcpv4"},
		{GSOTCPv6 | GSOECN, "tcpv6|ecn"},
		{GSOUDPL4, "udp_l4"},
		{GSOUDP, "udp(ufo)"},
		{2, "unknown(0x2)"},
	}
	for _, tt := range tests {
		if got := GSOTypeString(tt.in); got != tt.want {
			t.Errorf("GSOTypeString(%#x) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorsWrap(t *testing.T) {
	_, err := Inspect(nil)
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("Inspect(nil) = %v, want ErrMalformed", err)
	}
}
