package emu

import (
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/tun"
	"github.com/longhaul/longhaul/internal/tun/tuntest"
)

// udpFrame builds a plain (non-GSO) IPv4/UDP frame whose first payload
// byte is id, behind a zero virtio_net_hdr.
func udpFrame(id byte, payload int) []byte {
	ipLen := 20 + 8 + payload
	f := make([]byte, tun.VirtioNetHdrLen+ipLen)
	ip := f[tun.VirtioNetHdrLen:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen))
	ip[8], ip[9] = 64, 17
	copy(ip[12:16], []byte{198, 18, 0, 1})
	copy(ip[16:20], []byte{198, 18, 0, 2})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], 40000)
	binary.BigEndian.PutUint16(udp[2:], 5201)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+payload))
	udp[8] = id
	return f
}

func TestForwardsInOrderBothWays(t *testing.T) {
	client, server := tuntest.New("c"), tuntest.New("s")
	e, err := Start(Config{Up: linkemu.Config{Delay: time.Millisecond}, Down: linkemu.Config{Delay: time.Millisecond}}, client, server)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	const n = 50
	for i := range n {
		if err := client.Inject(udpFrame(byte(i), 100), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	var got []byte
	for range n {
		f, err := server.Next(5 * time.Second)
		if err != nil {
			t.Fatalf("after %d frames: %v", len(got), err)
		}
		got = append(got, f[tun.VirtioNetHdrLen+28])
	}
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order at the server (-want +got):\n%s", diff)
	}
	if err := server.Inject(udpFrame(7, 10), time.Second); err != nil {
		t.Fatal(err)
	}
	if f, err := client.Next(5 * time.Second); err != nil || f[tun.VirtioNetHdrLen+28] != 7 {
		t.Errorf("down direction: frame %v, err %v", f, err)
	}
	s := e.Stop()
	if s.Up.FramesIn != n || s.Up.Delivered != n || s.Down.Delivered != 1 || s.Up.Unparsed != 0 || s.Overloaded {
		t.Errorf("stats = %+v", s)
	}
}

// A write cut short by Stop (the device closed under it) is the end of
// the run, not a write error: every run used to report one per direction.
func TestStopIsNotAWriteError(t *testing.T) {
	client, server := tuntest.New("c"), tuntest.NewSize("s", 0) // nobody reads the server: its writes block
	e, err := Start(Config{Up: linkemu.Config{Delay: time.Millisecond}, Down: linkemu.Config{Delay: time.Millisecond}}, client, server)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := client.Inject(udpFrame(byte(i), 100), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // due, and the writer blocked in Write
	s := e.Stop()
	if s.Up.WriteErrors != 0 || s.Down.WriteErrors != 0 {
		t.Errorf("write errors up %d, down %d after Stop; want 0", s.Up.WriteErrors, s.Down.WriteErrors)
	}
}

func TestLossDropsAndCounts(t *testing.T) {
	client, server := tuntest.New("c"), tuntest.New("s")
	e, err := Start(Config{Up: linkemu.Config{Loss: linkemu.Bernoulli{P: 1}}}, client, server)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := client.Inject(udpFrame(byte(i), 10), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if f, err := server.Next(100 * time.Millisecond); err == nil {
		t.Errorf("a frame crossed a link with 100%% loss: %x", f)
	}
	s := e.Stop()
	if s.Up.DropsLoss != 10 {
		t.Errorf("DropsLoss = %d, want 10", s.Up.DropsLoss)
	}
}

func TestOverloadIsBoundedAndFlagged(t *testing.T) {
	client, server := tuntest.New("c"), tuntest.New("s")
	// A long delay holds every frame; the byte bound admits only three.
	frame := udpFrame(1, 1000)
	e, err := Start(Config{Up: linkemu.Config{Delay: time.Hour}, MaxPendingBytes: int64(3 * len(frame))}, client, server)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := client.Inject(frame, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.Stats().Up.FramesIn < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	s := e.Stop()
	if s.Up.OverloadFrames != 2 || !s.Overloaded {
		t.Errorf("OverloadFrames = %d, Overloaded = %v; want 2, true", s.Up.OverloadFrames, s.Overloaded)
	}
}

// TestWaitBehindWritesIsNotSlip drives an unlimited link whose receiving
// device takes 2 ms per write (an unbuffered fake: Write returns when the
// test takes the frame). Frames due together leave one write after
// another, so the last is ~40 ms late; the writer passes the end of each
// write to the link, which books that as the data plane's wait, not as
// the emulator's slip. Frames spread out in time wait for nothing.
func TestWaitBehindWritesIsNotSlip(t *testing.T) {
	run := func(t *testing.T, gap time.Duration) linkemu.Stats {
		client, server := tuntest.New("c"), tuntest.NewSize("s", 0)
		e, err := Start(Config{Up: linkemu.Config{Delay: 10 * time.Millisecond}}, client, server)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Stop()
		for i := range 20 {
			if gap > 0 {
				// Send after the previous frame left: the writer waits.
				time.Sleep(gap)
			}
			if err := client.Inject(udpFrame(byte(i), 100), time.Second); err != nil {
				t.Fatal(err)
			}
			if gap > 0 {
				if _, err := server.Next(5 * time.Second); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
			}
		}
		if gap == 0 {
			for i := range 20 {
				time.Sleep(2 * time.Millisecond)
				if _, err := server.Next(5 * time.Second); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
			}
		}
		return e.Stop().Up.Stats
	}
	t.Run("burst", func(t *testing.T) {
		s := run(t, 0)
		if s.Delivered != 20 || s.LateOverMax < 10 || s.WaitMax < 30*time.Millisecond {
			t.Fatalf("delivered %d, late over 5 ms %d, wait max %v; want 20, >= 10, >= 30ms", s.Delivered, s.LateOverMax, s.WaitMax)
		}
		if s.SlipOverMax != 0 || s.OverMax != 0 || s.Overloaded {
			t.Errorf("slip over max %d, over max %d, overloaded %v; want 0, 0, false: the lateness is wait behind writes",
				s.SlipOverMax, s.OverMax, s.Overloaded)
		}
	})
	t.Run("spread", func(t *testing.T) {
		s := run(t, 15*time.Millisecond)
		if s.Delivered != 20 || s.WaitMax != 0 {
			t.Errorf("delivered %d, wait max %v; want 20, 0", s.Delivered, s.WaitMax)
		}
	})
}

func TestStopIsIdempotentAndUnblocks(t *testing.T) {
	client, server := tuntest.New("c"), tuntest.New("s")
	e, err := Start(Config{}, client, server)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { e.Stop(); e.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return")
	}
}

func TestInvalidLinkConfig(t *testing.T) {
	if _, err := Start(Config{Up: linkemu.Config{Delay: -time.Second}}, tuntest.New("c"), tuntest.New("s")); err == nil {
		t.Error("negative delay accepted")
	}
}

func TestStatsJSONKeepsEmulatorFields(t *testing.T) {
	d := DirStats{PlaneStats: PlaneStats{FramesIn: 7, OverloadFrames: 2}}
	d.LateOverMax, d.Delivered = 3, 100000 // under the floor: not overloaded by lateness
	b, err := json.Marshal(Stats{Up: d})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Up map[string]any `json:"up"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Up["frames_in"] != 7.0 || got.Up["overload_frames"] != 2.0 || got.Up["late_over_max"] != 3.0 || got.Up["overloaded"] != true {
		t.Errorf("up = %v", got.Up)
	}
	d.OverloadFrames = 0
	if d.overloaded() {
		t.Error("3 late frames of 100000 flagged overloaded")
	}
	d.LateOverMax = 101
	if d.overloaded() {
		t.Error("101 frames late behind the writer's own writes (OverMax 0) flagged")
	}
	d.OverMax = 101
	if !d.overloaded() {
		t.Error("101 frames over the rule of 100000 (>0.1%) not flagged")
	}
	// Over a 20 s run: the frames one 30 ms stall made late span it
	// alone (0.15% of the run); falling behind for 150 ms (0.75%) is an
	// overload.
	d.ran, d.Behind = 20*time.Second, 30*time.Millisecond
	if d.overloaded() {
		t.Error("101 late frames of one 30 ms stall in a 20 s run flagged")
	}
	d.Behind = 150 * time.Millisecond
	if !d.overloaded() {
		t.Error("150 ms behind in a 20 s run not flagged")
	}
	// One stall early in a run (emulate's watcher asks every second).
	d.ran, d.Behind = time.Second, 30*time.Millisecond
	if d.overloaded() {
		t.Error("one 30 ms stall in the first second flagged")
	}
}
