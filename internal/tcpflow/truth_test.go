package tcpflow

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// Captures of transfers whose limit is known by construction, made on
// emulated paths by cmd/longhaul's TestIntegrationAnalyzeTruth (which
// says how each was built and how to refresh them): the verdicts must
// hold without root, on every change to the analysis.
func TestTruthCaptures(t *testing.T) {
	tests := []struct {
		file    string
		verdict string
		flags   []string
		cause   string // the path cause, "" none
	}{
		{"rwnd-limited", "rwnd-limited", nil, ""},
		{"zero-window", "zero-window", nil, ""},
		{"app-limited", "app-limited", nil, ""},
		{"sndbuf-limited", "sndbuf-limited", nil, ""},
		{"slow-start", "slow-start", nil, ""},
		// 1% random loss: single losses, the round trip at its minimum.
		{"loss-limited", "loss-limited", nil, diagnose.CauseRandomLoss},
		// 20 Mbit/s x 20 ms behind the emulator's least queue, 100
		// packets: 60 ms, 3 BDPs, and CUBIC fills it (64.6 ms median
		// round trip against 21.2 ms).
		{"bottleneck", "bottleneck", nil, diagnose.CauseBufferbloat},
		{"no-window-scaling", "rwnd-limited", []string{"no-window-scaling"}, ""},
		// cmd/longhaul's TestIntegrationAnalyzeTruthFaults: an outage, a
		// path that dies for good, bursty loss (a timeout among them):
		// timeouts held them, which the verdict says.
		{"rto-stall", "loss-limited", []string{"rto-stall"}, ""},
		{"peer-unresponsive", "loss-limited", []string{"peer-unresponsive"}, ""},
		{"burst-loss", "loss-limited", nil, ""},
		// Issue 24: a client waiting 100 ms for each of 18 answers; a
		// client whose handshake ACK waited 150 ms for its data (the
		// RTT fits the window: no inconsistent-numbers, checked below).
		{"waits-on-peer", "app-limited", []string{"waits-on-peer"}, ""},
		{"rtt-fits-window", "rwnd-limited", nil, ""},
		// Issue 23: lab causes' PMTU black hole (50 ms x 100 Mbit/s, a
		// 1400-byte link dropping larger packets without ICMP), the
		// server's end, its first connection (tcpdump 'tcp port 37416'):
		// the session's 1448-byte segment resent 7 times, the 620 after
		// it SACKed.
		{"pmtu-black-hole", "loss-limited", []string{"rto-stall"}, diagnose.CausePMTUBlackHole},
		// Issue 23: lab causes' random loss (50 ms x 100 Mbit/s, 0.01%,
		// the emulator's one-BDP queue), the single-stream download
		// (tcpdump 'tcp port 34212', editcap -s 96): 43 segments lost in
		// slow start's overshoot at a 48 ms queue, one recovery at
		// cubic's standing queue, two of one segment with none. The
		// averages (46 in 4, a 2 ms median queue) named a shallow buffer.
		{"random-loss-full-queue", "bottleneck", nil, diagnose.CauseRandomLoss},
		// Issue 51: a clean 80 ms x 150 Mbit/s path with a one-BDP queue,
		// iperf3 -R with cubic, captured at the sender (the data connection,
		// TSO super-frames, the first 3.5 s): slow start overflowed the queue, 895 segments
		// lost at once while the capture's last RTT sample (106.6 ms) was
		// taken as the queue filled; the next one was 159 ms. Those are
		// the queue's losses, not random ones: called loss-limited before.
		{"clean-overshoot", "bottleneck", nil, ""},
		// The same run captured at the receiver (snaplen 96): its own
		// data-to-ACK times are its ACK delays and show no queue; the
		// sender's timestamps against the arrival times show the queue
		// rise to a full BDP at the overshoot (owdTrack): called
		// loss-limited before.
		{"clean-overshoot-receiver", "bottleneck", []string{"vantage-client"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			an := truthCapture(t, tc.file, Options{})
			if len(an.Flows) != 1 {
				t.Fatalf("%d flows, want 1", len(an.Flows))
			}
			f := an.Flows[0]
			var bad []string
			if f.Verdict.Verdict != tc.verdict {
				bad = append(bad, "verdict "+f.Verdict.Verdict+", want "+tc.verdict)
			}
			for _, fl := range tc.flags {
				if !slices.Contains(f.Flags, fl) {
					bad = append(bad, "missing flag "+fl)
				}
			}
			never := []string{"capture-drops", "hardware-duplicates", "window-scale-unknown", "mid-stream", "clock-steps", "coarse-timestamps"}
			if !slices.Contains(tc.flags, "no-window-scaling") {
				never = append(never, "no-window-scaling")
			}
			for _, fl := range never {
				if slices.Contains(f.Flags, fl) {
					bad = append(bad, "unexpected flag "+fl)
				}
			}
			var cause string
			if c := dirOf(t, f, f.Sender).Cause; c != nil {
				cause = c.Name
			}
			if cause != tc.cause {
				bad = append(bad, "cause "+cause+", want "+tc.cause)
			}
			if msgs := CheckInvariants(f); len(msgs) > 0 {
				bad = append(bad, "inconsistent: "+strings.Join(msgs, "; "))
			}
			if len(bad) > 0 {
				t.Errorf("%s (shares %v: %s)", strings.Join(bad, "; "), f.Shares, f.Summary)
			}
		})
	}
}

// A timeout during bursty loss (cmd/longhaul's burst-loss case, a run
// that hit one): after the timeout's retransmission is acknowledged the
// sender sends new data (F-RTO step 2.b), and the receiver then SACKs
// only that new data, so the loss was real (step 3.a) and Linux resent
// the rest of the flight in slow start. The sender's kernel counted
// TCPFastRetrans 81, TCPTimeouts 4, TCPSlowStartRetrans 16 and
// TCPLossProbes 1 segments; analyze used to take the SACK of the new
// data for an undo and call the 16 fast.
func TestFRTOLossWasReal(t *testing.T) {
	an := truthCapture(t, "burst-loss-rto", Options{MaxPoints: 100})
	var fast, rto int64
	for _, d := range an.Flows[0].Directions {
		if d.Timeline == nil {
			continue
		}
		for _, e := range d.Timeline.Events {
			n := (e.Len + 1447) / 1448
			switch e.Kind {
			case diagnose.EvRetransFast:
				fast += n
			case diagnose.EvRetransRTO:
				rto += n
			}
		}
	}
	if fast != 81 || rto < 20 || rto > 21 {
		t.Errorf("retransmitted segments: %d fast, %d timer's; the kernel counted 81 fast and 21 by the timer (4 timeouts, 16 in slow start, 1 probe)", fast, rto)
	}
}

// Retransmission kinds against the kernel's own count (issue 24, class
// 4): captures of cmd/longhaul's TestIntegrationAnalyzeTruthFaults with
// the sender namespace's counters of the same run (segments: fast is
// TCPFastRetrans, timeout TCPTimeouts + TCPSlowStartRetrans, probe what
// RetransSegs holds beyond those, spurious TCPDSACKRecvSegs).
// rto-stall-undo is the outage run whose timeout F-RTO proved spurious
// and whose next losses the kernel recovered fast (TCPSpuriousRTOs=1):
// analyze called 18 of them timeouts before the undo ended the
// timeout's recovery.
func TestTruthRetransKinds(t *testing.T) {
	for _, tc := range []struct {
		file                           string
		fast, timeout, probe, spurious int64
	}{
		{"tail-loss", 8, 0, 4, 0}, // the fourth probe resends the FIN
		{"reordering", 9, 0, 0, 9},
		{"no-sack", 11, 1, 0, 0},
		{"rto-stall-undo", 93, 4, 0, 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			an := truthCapture(t, tc.file, Options{})
			r := dirOf(t, an.Flows[0], an.Flows[0].Client).Retrans
			if r.Fast != tc.fast || r.RTO != tc.timeout || r.Probe != tc.probe || r.Spurious != tc.spurious {
				t.Errorf("retransmissions %+v; the kernel counted %d fast, %d timeout, %d probe, %d spurious", r, tc.fast, tc.timeout, tc.probe, tc.spurious)
			}
		})
	}
}

// truthCapture analyzes testdata/truth/NAME.pcap.gz.
func truthCapture(t *testing.T, name string, opts Options) *Analysis {
	t.Helper()
	fh, err := os.Open(filepath.Join("testdata", "truth", name+".pcap.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	an, err := Analyze(fh, opts)
	if err != nil {
		t.Fatal(err)
	}
	return an
}
