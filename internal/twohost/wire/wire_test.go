package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/golden"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// wireSock1 is a socket with every field set to a value of its own.
var wireSock1 = flows.Sock{
	Local: netip.MustParseAddrPort("198.18.0.2:9978"), Remote: netip.MustParseAddrPort("[2001:2::1]:40000"),
	Cookie: 1 << 40, State: "established", MSS: 1448, Cwnd: 2_000_000, Ssthresh: 1_500_000,
	SndWnd: 4_000_000, RcvSpace: 65_536, Inflight: 1_900_000, SackedBytes: 2896, NotSent: 131_072,
	RTT: 101 * time.Millisecond, MinRTT: 100 * time.Millisecond,
	BytesAcked: 9e8, BytesReceived: 300, BytesSent: 9.1e8, BytesRetrans: 1e7, Retrans: 6900, DataSegsOut: 630_000,
	Busy: 8 * time.Second, RwndLimited: 2 * time.Second, SndbufLimited: 500 * time.Millisecond,
	CAState: 3, WindowScale: true, DeliveryBps: 4.5e8, Sndbuf: 8 << 20, WmemQueued: 3 << 20, CC: "cubic",
}

// v1Frames is one frame of every message type, as v1 writes them.
func v1Frames() []struct {
	typ  string
	body any
} {
	nonce := bytes.Repeat([]byte{7}, NonceLen)
	mac := bytes.Repeat([]byte{9}, macLen)
	snap := &snapshot.Snapshot{Source: "live", Hostname: "far", Kernel: sysconf.Kernel{Release: "6.1.0"},
		Sysctls: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 6291456"}, PageSize: 4096,
		Config: &sysconf.Config{Files: []string{"/etc/sysctl.d/99-x.conf"}, Problems: []string{"x:1: no ="},
			Assignments: []sysconf.Assignment{{Key: "net.core.rmem_max", Value: "1", File: "/etc/sysctl.d/99-x.conf", Line: 2, IgnoreMissing: true, Glob: true}}},
		Daemons: []sysconf.Process{{PID: 42, Name: "tuned"}}}
	return []struct {
		typ  string
		body any
	}{
		{TypeHello, Hello{Proto: ProtoVersion, Software: "longhaul 1.0", Nonce: nonce}},
		{TypeAuth, Auth{Purpose: PurposeData, ClientNonce: nonce, MAC: mac, Session: strings.Repeat("ab", 16), Phase: 2, Stream: 3}},
		{TypeWelcome, Welcome{MAC: mac}},
		{TypeError, ErrorMsg{Code: CodeBusy, Message: "one test at a time", RetryAfterS: 5}},
		{TypeStart, Start{Software: "longhaul 1.0"}},
		{TypeAccepted, Accepted{Session: strings.Repeat("cd", 16), Caps: testdoc.Caps{MaxDurationS: 60, MaxBytes: 1 << 30, MaxRateBps: 1e9, MaxStreams: 8}, Snapshot: snap}},
		{TypePing, Ping{Seq: 4}},
		{TypePong, Ping{Seq: 4}},
		{TypePhase, PhaseReq{Name: PhaseCapacity, Streams: 8, DurationS: 6, RateBps: 5e8}},
		{TypeGrant, Grant{Phase: 2, Name: PhaseCapacity, Streams: 8, DurationS: 6, RateBps: 5e8, MaxBytes: 1 << 29}},
		{TypeSamples, Samples{Phase: 2, Samples: ToWire([]flows.Sample{{T: 1.25, Sock: wireSock1}})}},
		{TypePhaseDone, PhaseDone{Phase: 2, Bytes: 123_456_789, Seconds: 6.01, Reason: "duration"}},
		{TypeBye, nil},
	}
}

// TestWireV1Golden: every message of protocol v1 encodes byte for byte
// as testdata/wire/v1.frames holds it (written by the release that
// shipped v1, where the samples were flows.Sock under Go's default
// names). A renamed JSON name, a dropped field or a new field without
// omitempty breaks the protocol between versions and this test.
func TestWireV1Golden(t *testing.T) {
	var buf bytes.Buffer
	for _, f := range v1Frames() {
		if err := WriteMsg(&buf, f.typ, f.body); err != nil {
			t.Fatal(err)
		}
	}
	want := golden.Read(t, filepath.Join("testdata", "wire", "v1.frames"), buf.Bytes())
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("v1 frames changed:\n got %s\nwant %s", buf.Bytes(), want)
	}
	// And the golden frames decode to what was written.
	r := bytes.NewReader(want)
	for _, f := range v1Frames() {
		fr, err := ReadFrame(r, MaxServerFrame)
		if err != nil || fr.Type != f.typ {
			t.Fatalf("%s: %v (type %q)", f.typ, err, fr.Type)
		}
		if f.typ != TypeSamples {
			continue
		}
		var s Samples
		if err := Decode(fr, TypeSamples, &s); err != nil {
			t.Fatal(err)
		}
		if got := FromWire(s.Samples); len(got) != 1 || got[0].T != 1.25 || got[0].Sock != wireSock1 {
			t.Fatalf("samples decode to %+v", got)
		}
	}
}

// TestWireSockCarriesEveryField: a socket survives the wire with every
// field of flows.Sock, so a field added there fails here until the wire
// type carries it (under a name of its own).
func TestWireSockCarriesEveryField(t *testing.T) {
	var k flows.Sock
	v := reflect.ValueOf(&k).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int64:
			f.SetInt(int64(1000 + i))
		case reflect.Uint64, reflect.Uint8:
			f.SetUint(uint64(10 + i))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		case reflect.String:
			f.SetString("s" + string(rune('a'+i)))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Struct: // netip.AddrPort
			f.Set(reflect.ValueOf(netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}), uint16(i))))
		default:
			t.Fatalf("flows.Sock.%s: kind %s not handled by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	b, err := json.Marshal(wireSock(k))
	if err != nil {
		t.Fatal(err)
	}
	var w WireSock
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if got := w.Sock(); got != k {
		t.Fatalf("lost on the wire:\n got %+v\nwant %+v", got, k)
	}
}

// TestWireTypesNameEveryField: every field of every message (and of
// what they carry) has its JSON name written out, so that its Go name
// can change freely.
func TestWireTypesNameEveryField(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		if reflect.PointerTo(ty).Implements(reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()) {
			return // encodes as text (netip.AddrPort, time.Time)
		}
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" && !f.Anonymous {
				t.Errorf("%s.%s has no JSON name", path, f.Name)
			}
			walk(f.Type, path+"."+f.Name)
		}
	}
	for _, f := range v1Frames() {
		if f.body != nil {
			walk(reflect.TypeOf(f.body), f.typ)
		}
	}
	walk(reflect.TypeFor[Frame](), "frame")
}

// A congestion control asked for is a kernel name or the request is
// refused; a phase without one stays the v1 frame it was.
func TestPhaseCCValidated(t *testing.T) {
	ok := PhaseReq{Name: PhaseDownload, Streams: 1, DurationS: 5, CC: "bbr"}
	if err := ok.Validate(); err != nil {
		t.Errorf("bbr refused: %v", err)
	}
	for _, cc := range []string{"BBR", "bbr; reboot", "../x", strings.Repeat("a", 17)} {
		r := ok
		r.CC = cc
		if err := r.Validate(); err == nil {
			t.Errorf("%q accepted", cc)
		}
		if err := (Grant{Name: PhaseDownload, Streams: 1, DurationS: 5, CC: cc}).Validate(); err == nil {
			t.Errorf("grant with %q accepted", cc)
		}
	}
}

// A phase-done's CPU (added after v1) is optional and checked: a v1
// frame without it decodes, one with it round-trips, a negative or NaN
// one is refused.
func TestPhaseDoneCPU(t *testing.T) {
	for _, c := range []struct {
		cpu *testdoc.CPUUse
		ok  bool
	}{{nil, true}, {&testdoc.CPUUse{RunS: 0.8, WaitS: 3}, true}, {&testdoc.CPUUse{RunS: -1}, false}, {&testdoc.CPUUse{WaitS: math.NaN()}, false}, {&testdoc.CPUUse{RunS: math.Inf(1)}, false}} {
		d := PhaseDone{Phase: 1, Seconds: 4, Reason: "duration", CPU: c.cpu}
		if err := d.Validate(); (err == nil) != c.ok {
			t.Errorf("cpu %+v: Validate %v", c.cpu, err)
		}
		if !c.ok {
			continue
		}
		var buf bytes.Buffer
		if err := WriteMsg(&buf, TypePhaseDone, d); err != nil {
			t.Fatal(err)
		}
		if c.cpu == nil && strings.Contains(buf.String(), "cpu") {
			t.Errorf("an unmeasured cpu is on the wire: %s", buf.String())
		}
		f, err := ReadFrame(&buf, MaxServerFrame)
		var got PhaseDone
		if err == nil {
			err = Decode(f, TypePhaseDone, &got)
		}
		if err != nil || (c.cpu != nil && (got.CPU == nil || *got.CPU != *c.cpu)) {
			t.Errorf("cpu %+v: decoded %+v, %v", c.cpu, got.CPU, err)
		}
	}
}
