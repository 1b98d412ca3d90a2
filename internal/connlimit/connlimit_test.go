package connlimit

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// clock is a settable time for the limiter.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTest(cfg Config) (*Limiter, *clock) {
	l := New(cfg)
	c := &clock{t: time.Unix(1e9, 0)}
	l.now = c.now
	l.roll = func() float64 { return 0.5 }
	return l, c
}

var (
	flooder = netip.MustParseAddr("203.0.113.9")
	other   = netip.MustParseAddr("198.51.100.7")
)

func TestPerSourceCapLeavesOthersIn(t *testing.T) {
	l, _ := newTest(Config{PerSource: 4})
	var held []*Ticket
	for i := range 1000 {
		tk, why := l.Admit(flooder)
		if i < 4 && tk == nil {
			t.Fatalf("connection %d refused: %s", i, why)
		}
		if i >= 4 && (tk != nil || !strings.Contains(why.Reason, "already holds 4") || why.Full) {
			t.Fatalf("connection %d of one source: ticket %v, %q", i, tk, why)
		}
		if tk != nil {
			held = append(held, tk)
		}
	}
	if tk, why := l.Admit(other); tk == nil {
		t.Fatalf("another source refused behind a flood: %s", why)
	}
	held[0].Done(false)
	held[0].Done(false) // twice: no effect
	if l.Open() != 4 {
		t.Errorf("open %d after one release, want 4", l.Open())
	}
	if tk, _ := l.Admit(flooder); tk == nil {
		t.Error("a released slot was not given back")
	}
}

// A source granted extra connections (a phase's streams) may hold that
// many more handshakes; others, and it without the grant, may not.
func TestAdmitExtra(t *testing.T) {
	l, _ := newTest(Config{PerSource: 2})
	for i := range 10 {
		if tk, why := l.AdmitExtra(flooder, 8); tk == nil {
			t.Fatalf("handshake %d of a source granted 8 more refused: %s", i, why)
		}
	}
	if tk, _ := l.AdmitExtra(flooder, 8); tk != nil {
		t.Error("an 11th handshake admitted beyond 2+8")
	}
	if tk, _ := l.Admit(flooder); tk != nil {
		t.Error("admitted beyond the cap without the grant")
	}
	for i := range 2 {
		if tk, _ := l.AdmitExtra(other, 0); tk == nil {
			t.Fatalf("another source's handshake %d refused", i)
		}
	}
	if tk, _ := l.AdmitExtra(other, -5); tk != nil {
		t.Error("a negative grant raised the cap")
	}
}

func TestPenaltiesDouble(t *testing.T) {
	l, c := newTest(Config{Penalty: time.Second, MaxPenalty: 5 * time.Second})
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		tk, why := l.Admit(flooder)
		if tk == nil {
			t.Fatalf("refused before its penalty: %s", why)
		}
		tk.Done(true)
		c.t = c.t.Add(wait - time.Millisecond)
		if tk, why := l.Admit(flooder); tk != nil || !strings.Contains(why.Reason, "penalized") {
			t.Fatalf("admitted %v before a %v penalty ended (%q)", time.Millisecond, wait, why)
		}
		c.t = c.t.Add(time.Millisecond)
	}
	// A success clears the record.
	tk, _ := l.Admit(flooder)
	tk.Done(false)
	tk, _ = l.Admit(flooder)
	tk.Done(true)
	c.t = c.t.Add(time.Second)
	if tk, why := l.Admit(flooder); tk == nil {
		t.Errorf("after a success the next penalty was not the first again: %s", why)
	}
	if tk, _ := l.Admit(other); tk == nil {
		t.Error("a penalty on one source refused another")
	}
}

func TestRandomEarlyDrop(t *testing.T) {
	l, _ := newTest(Config{PerSource: 1000, Start: 10, Full: 20})
	got := 0
	for range 100 {
		if tk, _ := l.Admit(flooder); tk != nil {
			got++
		}
	}
	// With a roll of 0.5 the drop probability (open-start+1)/(full-start+1)
	// reaches 0.5 at the 15th connection; nothing passes Full.
	if got != 15 {
		t.Errorf("admitted %d, want 15", got)
	}
	l.roll = func() float64 { return 0.999 }
	for range 100 {
		l.Admit(flooder)
	}
	if l.Open() != 20 {
		t.Errorf("open %d, want Full (20)", l.Open())
	}
}

func TestIPv6SourcesAreSlash64(t *testing.T) {
	l, _ := newTest(Config{PerSource: 2})
	for i, a := range []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9", "2001:db8:1:2::3"} {
		tk, _ := l.Admit(netip.MustParseAddr(a))
		if (tk != nil) != (i < 2) {
			t.Errorf("%s: admitted %v", a, tk != nil)
		}
	}
	if tk, _ := l.Admit(netip.MustParseAddr("2001:db8:1:3::1")); tk == nil {
		t.Error("another /64 refused")
	}
	if tk, _ := l.Admit(netip.MustParseAddr("::ffff:203.0.113.9")); tk == nil {
		t.Error("a mapped IPv4 address refused")
	}
}

func TestSourcesAreBounded(t *testing.T) {
	l, _ := newTest(Config{MaxSources: 100, PerSource: 1, Full: 1000, Start: 1000})
	for i := range 1000 {
		a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		if tk, _ := l.Admit(a); tk != nil {
			tk.Done(false)
		}
	}
	if n := len(l.peers); n > 100 {
		t.Errorf("%d sources tracked, bound 100", n)
	}
}

func TestRefusedLogsAreRateLimited(t *testing.T) {
	l, c := newTest(Config{LogEvery: 10 * time.Second})
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	for range 196000 {
		l.Refused(log, flooder, "penalized")
	}
	l.Refused(log, other, "penalized")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines for 196,001 refusals from two sources, want 2:\n%s", n, buf.String())
	}
	c.t = c.t.Add(10 * time.Second)
	buf.Reset()
	l.Refused(log, flooder, "penalized")
	if !strings.Contains(buf.String(), "refusals_not_logged=195999") {
		t.Errorf("the next line does not count the silenced ones: %s", buf.String())
	}
}

func TestFitFDs(t *testing.T) {
	c := Config{}.FitFDs(256, 200)
	if c.Full != 56 || c.Start != 14 {
		t.Errorf("budget 256, reserved 200: full %d start %d, want 56 and 14", c.Full, c.Start)
	}
	c = Config{}.FitFDs(1<<20, 100)
	if c.Full != DefaultFull {
		t.Errorf("a large budget changed Full to %d", c.Full)
	}
	if d := AcceptBackoff(1); d != 5*time.Millisecond {
		t.Errorf("first backoff %v", d)
	}
	if d := AcceptBackoff(100); d != time.Second {
		t.Errorf("backoff after 100 errors %v", d)
	}
}
