package diagnose

import (
	"fmt"
	"math"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// Causes a middlebox makes: window scaling stripped from the handshake, a
// PMTU black hole.

// ScaleEvidence is a flow held by its receiver's window whose handshake
// negotiated no window scaling although both hosts allow it (their
// net.ipv4.tcp_window_scaling is 1, so each SYN left with the option).
type ScaleEvidence struct {
	MinRTT  time.Duration
	Bps     float64 // the flow's throughput
	PathBps float64 // the path's rate (0 unknown)
	// Streams is how many streams measured PathBps together (0: a rate
	// the user gave). Streams held by the same 64 KB windows carry
	// Streams x the window's ceiling, not the path's rate: then the
	// path's rate is not known, only that it is higher.
	Streams  int
	Receiver string // how to name the receiver ("the client")
}

// WindowScaleCause names a middlebox that stripped the window scale
// option: without it no window exceeds 64 KB, whatever the hosts'
// buffers, so the flow is capped at 64 KB per round trip.
func WindowScaleCause(e ScaleEvidence) (Cause, bool) {
	if e.MinRTT <= 0 {
		return Cause{}, false
	}
	ceiling := pathmodel.WindowCeiling(pathmodel.MaxUnscaledWindow, e.MinRTT)
	rtt := units.FormatDuration(e.MinRTT.Round(100 * time.Microsecond))
	nums := map[string]float64{"window_bytes": pathmodel.MaxUnscaledWindow, "ceiling_bps": ceiling, "throughput_bps": e.Bps, "min_rtt_s": e.MinRTT.Seconds()}
	c := Cause{Name: CauseWindowScaleStripped, Numbers: nums,
		Text: fmt.Sprintf("window scaling stripped: both hosts allow window scaling, yet this connection negotiated none, so %s can advertise at most 64 KB: "+
			"%s at %s (measured %s). Something between the hosts (a firewall's TCP normalisation, a load balancer, a proxy) removed the option from the SYNs",
			orWord(e.Receiver, "the receiver"), units.FormatRate(ceiling), rtt, units.FormatRate(e.Bps))}
	c.Fix = append(c.Fix, ActorNetwork+": let the TCP window scale option (RFC 7323) through the firewall, load balancer or proxy between the hosts; no buffer setting on either host can raise a 64 KB window")
	switch {
	case e.Streams > 0 && e.PathBps <= 1.1*float64(e.Streams)*ceiling:
		// The streams measuring the path were capped as this flow was.
		nums["path_bps_at_least"] = e.PathBps
		c.Fix = append(c.Fix, fmt.Sprintf("%s: until then, move the data on more than %d parallel streams, each carrying about %s: the test's %d streams, capped by the same 64 KB windows, carried %s together, so the path's own rate is higher and not measured (test again with --rate)",
			ActorSender, e.Streams, units.FormatRate(ceiling), e.Streams, units.FormatRate(e.PathBps)))
	case e.PathBps > ceiling:
		n := int(math.Ceil(e.PathBps / ceiling))
		nums["path_bps"], nums["streams"] = e.PathBps, float64(n)
		c.Fix = append(c.Fix, fmt.Sprintf("%s: until then, move the data on %d parallel streams: each carries about %s", ActorSender, n, units.FormatRate(ceiling)))
	}
	return c, true
}

// BlackHoleCause names a PMTU black hole: full-size segments from the
// sender never arrived while small ones did, and segments of mss bytes
// got through. Linux finds the path's MTU itself only with
// net.ipv4.tcp_mtu_probing (RFC 4821); without it the connection stalls
// at its first full-size segment, retransmitting it until it times out.
func BlackHoleCause(mss int, sender string) Cause {
	sender = orWord(sender, "the sender")
	return blackHole(sender, fmt.Sprintf("full-size segments from %s never arrived while small ones did, and %d-byte segments got through", sender, mss),
		fmt.Sprintf("; every connection that sends a full-size segment stalls (this test ran with %d-byte segments)", mss),
		map[string]float64{"mss_that_passed": float64(mss)})
}

// BlackHoleSeen names a PMTU black hole a capture at the sender shows:
// its segment of size bytes at the head of the data resent by the timer
// resends times and never acknowledged, while the receiver SACKed data
// above it that came in pieces of at most passed bytes.
func BlackHoleSeen(size, passed, resends int, sender string) Cause {
	sender = orWord(sender, "the sender")
	return blackHole(sender, fmt.Sprintf("%s resent its %d-byte segment %d times by its timer and it never arrived, while the receiver acknowledged (SACK) the data after it, which came in pieces of at most %d bytes",
		sender, size, resends, passed), "; every connection that sends a full-size segment stalls",
		map[string]float64{"segment_bytes": float64(size), "passed_bytes": float64(passed), "resends": float64(resends)})
}

// BlackHoleStuck names a PMTU black hole a live socket shows (flows):
// its head segment (up to mss bytes) resent by the timer resends times in
// a row, unanswered, while the receiver SACKed sacked bytes after it.
func BlackHoleStuck(mss, sacked, resends int64, sender string) Cause {
	sender = orWord(sender, "the sender")
	return blackHole(sender, fmt.Sprintf("%s resent its head segment (up to %d bytes) %d times in a row by its timer and it never arrived, while the receiver acknowledged (SACK) %s after it: "+
		"smaller segments get through, full-size ones do not", sender, mss, resends, units.FormatBytes(float64(sacked))), "",
		map[string]float64{"segment_bytes": float64(mss), "sacked_bytes": float64(sacked), "resends": float64(resends)})
}

// BlackHoleShrunk names a PMTU black hole a capture at the sender shows
// when the sender finds the MTU itself (net.ipv4.tcp_mtu_probing): its
// head segment of size bytes resent by the timer resends times and never
// acknowledged, then resent at passed bytes and acknowledged at once.
func BlackHoleShrunk(size, passed, resends int, sender string) Cause {
	sender = orWord(sender, "the sender")
	c := blackHole(sender, fmt.Sprintf("%s resent its %d-byte segment %d times by its timer and it never arrived; resent in %d-byte pieces, the same data passed",
		sender, size, resends, passed), "; "+sender+" probes the path's MTU (net.ipv4.tcp_mtu_probing), which ended the stall, but every connection that sends a full-size segment stalls first",
		map[string]float64{"segment_bytes": float64(size), "passed_bytes": float64(passed), "resends": float64(resends)})
	c.Fix = c.Fix[:1] // the sender probes already
	return c
}

// BlackHoleNeverPassed names the likely PMTU black hole of a capture at
// the sender whose connection never delivered a full-size segment: the
// handshake's small segments passed, then its first segment of size
// bytes, resent by the timer resends times, never arrived and nothing
// was acknowledged. An outage that began right after the handshake looks
// the same from here; a ping of full-size packets that may not be
// fragmented tells them apart.
func BlackHoleNeverPassed(size, resends int, sender string) Cause {
	sender = orWord(sender, "the sender")
	return blackHole(sender, fmt.Sprintf("the handshake's small segments passed, then %s's first %d-byte segment, resent %d times by its timer, never arrived and nothing after the handshake was acknowledged",
		sender, size, resends), " (an outage that began right after the handshake looks the same from here: ping -M do -s 1472 across the path tells them apart)",
		map[string]float64{"segment_bytes": float64(size), "resends": float64(resends)})
}

// blackHole is a PMTU black hole's cause: what was seen, why (a link's
// smaller MTU, its ICMP lost), then tail; the fixes for the network and
// sender.
func blackHole(sender, seen, tail string, nums map[string]float64) Cause {
	return Cause{Name: CausePMTUBlackHole, Numbers: nums, Fix: blackHoleFix(sender),
		Text: "a PMTU black hole: " + seen + ": a link on the path has a smaller MTU than the hosts, and the ICMP 'fragmentation needed' (ICMPv6 'packet too big') that should tell " +
			sender + " is lost or filtered" + tail}
}

func blackHoleFix(sender string) []string {
	return []string{
		ActorNetwork + ": let ICMP 'fragmentation needed' (type 3 code 4) and ICMPv6 'packet too big' through the firewalls on the path, or clamp the MSS where the MTU shrinks (iptables -t mangle ... -j TCPMSS --clamp-mss-to-pmtu)",
		ActorSender + ": " + sender + " can find the path's MTU itself: net.ipv4.tcp_mtu_probing=1 (probes after a black hole; 2 always)"}
}
