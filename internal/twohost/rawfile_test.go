package twohost

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// lossyRaw is a download at the path's rate whose paced run lost at
// random, with the hosts' snapshots: what test --judge reads back.
func lossyRaw() *judge.Raw {
	big := "4096 131072 33554432"
	rtt := 50 * time.Millisecond
	down := phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 92e6, RTT: rtt, Flight: 600_000, Ssthresh: 1 << 20})
	down.LoadedRTTs = []time.Duration{51 * time.Millisecond, 52 * time.Millisecond, 50500 * time.Microsecond}
	down.ClientCPU = &testdoc.CPUUse{RunS: 0.12, WaitS: 0.03}
	short := phaseOf(wire.PhaseDownload, stream{Port: 40001, Rate: 26e6, RTT: rtt, Flight: 160_000, Ssthresh: 150_000, LossEvery: 1})
	short.Grant.Phase, short.Grant.RateBps, short.AskedPace = 2, 70e6, 70e6
	return rawWith(host(big, big), host(big, big), down, short)
}

// TestJudgeRawRoundTrip: what test -o writes as raw.json, read back,
// judges to the same document, byte for byte, as the measurements did
// in the process that made them.
func TestJudgeRawRoundTrip(t *testing.T) {
	raw := lossyRaw()
	var b bytes.Buffer
	if err := WriteRaw(&b, raw); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRaw(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(raw, back, cmpopts.EquateComparable(netip.AddrPort{})); diff != "" {
		t.Errorf("read back differs (-written +read):\n%s", diff)
	}
	judge := func(r *judge.Raw) []byte {
		d, err := judge.Judge(r, judge.JudgeOptions{RateBps: 100e6})
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := judge(raw), judge(back)
	if !bytes.Equal(want, got) {
		t.Errorf("judged again:\n%s\nwant:\n%s", got, want)
	}
	if !bytes.Contains(got, []byte(`"random-loss"`)) {
		t.Errorf("the paced run's random loss is not in the document: %s", got)
	}
}

func TestReadRawRejects(t *testing.T) {
	encode := func(edit func(*judge.Raw)) string {
		r := lossyRaw()
		edit(r)
		var b bytes.Buffer
		if err := WriteRaw(&b, r); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	cases := map[string]struct{ in, want string }{
		"not JSON":       {"PK\x03\x04", "not a longhaul test's measurements"},
		"a test result":  {`{"schema":"longhaul.test/v1","directions":[]}`, `schema "longhaul.test/v1", want longhaul.test-raw/v1`},
		"no raw":         {`{"schema":"longhaul.test-raw/v1"}`, "without measurements"},
		"negative ping":  {encode(func(r *judge.Raw) { r.Phases[0].LoadedRTTs[1] = -time.Millisecond }), "phase 1's pings: a negative round trip"},
		"negative idle":  {encode(func(r *judge.Raw) { r.IdleRTTs = []time.Duration{-1} }), "idle pings: a negative round trip"},
		"many phases":    {encode(func(r *judge.Raw) { r.Phases = make([]judge.PhaseRaw, maxRawPhases+1) }), "65 phases, at most 64"},
		"streams":        {encode(func(r *judge.Raw) { r.Phases[1].Grant.Streams = wire.MaxStreams + 1 }), "phase 2: 65 streams"},
		"negative phase": {encode(func(r *judge.Raw) { r.PhaseLength = -time.Second }), "negative phase length"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadRaw(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// FuzzJudgeRaw: a raw file test --judge reads is an error or a document,
// never a panic.
func FuzzJudgeRaw(f *testing.F) {
	var b bytes.Buffer
	_ = WriteRaw(&b, lossyRaw())
	f.Add(b.Bytes())
	f.Add([]byte(`{"schema":"longhaul.test-raw/v1","raw":{"Phases":[{"Grant":{"name":"download","streams":1}}]}}`))
	f.Add([]byte(`{"schema":"longhaul.test-raw/v1","raw":{"IdleRTTs":[0],"Phases":[{"Grant":{"name":"capacity","streams":8},"Server":[{"T":0},{"T":-1}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := ReadRaw(bytes.NewReader(data))
		if err != nil {
			return
		}
		_, _ = judge.Judge(raw, judge.JudgeOptions{})
	})
}
