package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Ground truth for the faults analyze must name (issue 14, classes 2 and
// 3) and for retransmission kinds as the stack made them (issue 24,
// class 4): transfers on emulated paths with an outage (a
// retransmission-timeout stall), a peer that stops answering for good
// (an outage that outlasts the transfer), bursty loss (Gilbert-Elliott),
// tail losses (tail loss probes), reordering (spurious retransmissions,
// D-SACK) and loss with SACK off (timeouts after one or two duplicate
// ACKs). Each checks the verdict and flags; all of them check analyze's
// retransmission kinds against the kernel's own count in the sender's
// namespace, in segments (kernelRetrans).
var faultCases = []truthCase{
	{
		// Everything dropped for 3 s in the middle of a 3 s transfer: the
		// sender backs off 0.2, 0.4, 0.8, 1.6 s.
		name:    "rto-stall",
		path:    []string{"--rtt", "40ms", "--rate", "10Mbit/s", "--outage", "3s@1500ms"},
		client:  []string{"-send", "4000000"},
		verdict: "loss-limited",
		flags:   []string{"rto-stall"},
	},
	{
		// The path dies for good 1.5 s in; the sender retries until the
		// application gives up and resets.
		name:    "peer-unresponsive",
		path:    []string{"--rtt", "40ms", "--rate", "10Mbit/s", "--outage", "120s@1500ms"},
		client:  []string{"-send", "40000000", "-timeout", "9s", "-tolerate"},
		verdict: "loss-limited",
		flags:   []string{"peer-unresponsive"},
	},
	{
		// 2% of the data segments lost in bursts of 4 on average, on a path
		// that could carry 50 Mbit/s.
		name:    "burst-loss",
		path:    []string{"--rtt", "30ms", "--rate", "50Mbit/s", "--up-burst-loss", "2%/4"},
		client:  []string{"-send", "4000000"},
		verdict: "loss-limited",
	},
	{
		// 60 writes of two segments 100 ms apart, 10% of them lost: a
		// lost tail is probed (TLP fires at about two RTTs, long before
		// the next write, so it resends the tail); a lost probe waits
		// for the timer.
		name:    "tail-loss",
		path:    []string{"--rtt", "20ms", "--rate", "100Mbit/s", "--up-loss", "10%"},
		client:  []string{"-send", "173760", "-chunk", "2896", "-every", "100ms"},
		verdict: "app-limited",
	},
	{
		// 2% of the data held back 8 ms on a 20 ms path: the receiver
		// SACKs past each, fast retransmissions before the reordering
		// is learnt prove spurious by D-SACK.
		name:    "reordering",
		path:    []string{"--rtt", "20ms", "--rate", "50Mbit/s", "--up-reorder", "2%/8ms"},
		client:  []string{"-send", "3000000"},
		verdict: "",
	},
	{
		// SACK off at the sender, 3% loss, 4 KB writes 60 ms apart: one
		// or two duplicate ACKs only, so losses wait for the timer.
		name:    "no-sack",
		path:    []string{"--rtt", "20ms", "--rate", "100Mbit/s", "--up-loss", "5%", "--client-sysctl", "net.ipv4.tcp_sack=0"},
		client:  []string{"-send", "240000", "-chunk", "4000", "-every", "60ms"},
		verdict: "",
	},
}

// retransKinds are the kinds compared with the kernel's counters.
var retransKinds = []string{"fast", "timeout", "probe", "spurious"}

// fRTOCase is the case whose retransmission kinds after the outage hang
// on F-RTO (RFC 5682, tcp_frto=2): when the timeout proves spurious the
// kernel undoes its Loss state and resends the rest in fast recovery
// (TCPFastRetrans), and analyze still calls some of those timeout
// retransmissions: 88-94% right in about half the runs (measured at
// fa3a188 and d2bc832), 100% in the others; with issue 24's kinds (tail
// loss probes apart, timeouts after one or two duplicate ACKs) 100% in
// five runs of five. This case is still held to 85% on its own; all the
// cases together to 97% (issue 24's acceptance).
const fRTOCase, fRTOMin = "rto-stall", 0.85

func TestIntegrationAnalyzeTruthFaults(t *testing.T) {
	bin, _ := emulateEnv(t, "tcpdump")
	keep := os.Getenv("LONGHAUL_TRUTH_KEEP")
	t.Setenv("LONGHAUL_TRUTH_PEER", "1")
	var mu sync.Mutex
	var right, total int64
	// The cases run two at a time, each on its own path (at most
	// 100 Mbit/s; the outages mostly wait); the group returns when all
	// are done.
	t.Run("cases", func(t *testing.T) {
		for _, tc := range faultCases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				counters := filepath.Join(t.TempDir(), "netstat")
				pcap, took := runPeers(t, bin, emulatePrefix(t), tc.path, append([]string{"-tolerate"}, tc.server...),
					append([]string{"-netstat", counters}, tc.client...))
				out, errOut, code := exe(t, bin, "analyze", "--json", "--timeline", pcap)
				if code != 0 {
					t.Fatalf("analyze: exit %d\n%s", code, errOut)
				}
				if keep != "" {
					if err := keepCapture(pcap, filepath.Join(keep, tc.name+".pcap.gz")); err != nil {
						t.Error(err)
					}
				}
				f := truthFlowOf(t, out)
				t.Logf("%s in %.1fs: %s (%.0f%%) flags %v shares %s\n  %s", tc.name, took.Seconds(), f.Verdict, 100*f.Share, f.Flags, f.Shares, f.Summary)
				if msg := truthMismatch(f.Verdict, f.Flags, tc.verdict, tc.flags); msg != "" {
					t.Errorf("%s", msg)
				}
				kernel, got := kernelRetrans(t, counters), f.retransSegments()
				var r, all int64
				for _, k := range retransKinds {
					r += min(got[k], kernel[k])
					all += max(got[k], kernel[k])
				}
				t.Logf("retransmissions (segments): analyze %v; kernel %v (%s)", got, kernel, kernelDetail(counters))
				if tc.name == fRTOCase {
					if all > 0 && float64(r) < fRTOMin*float64(all) {
						t.Errorf("retransmission kinds after the outage: %d of %d right (%.1f%%), want >= %.0f%%", r, all, 100*float64(r)/float64(all), 100*fRTOMin)
					}
				}
				mu.Lock()
				right += r
				total += all
				mu.Unlock()
			})
		}
	})
	if total == 0 {
		t.Fatal("no retransmissions in the fault cases")
	}
	if right*100 < total*97 {
		t.Errorf("retransmission kinds: %d of %d right (%.1f%%), want >= 97%%", right, total, 100*float64(right)/float64(total))
	} else {
		t.Logf("retransmission kinds: %d of %d right (%.1f%%)", right, total, 100*float64(right)/float64(total))
	}
}

// faultFlow is the part of analyze --json --timeline these cases read.
type faultFlow struct {
	truthFlow
	Dirs []struct {
		Sender  string `json:"sender"`
		MSS     int64  `json:"mss"`
		Retrans struct {
			Spurious int64 `json:"spurious"`
		} `json:"retransmissions"`
		Timeline struct {
			Events []struct {
				Kind string `json:"kind"`
				Len  int64  `json:"len"`
			} `json:"events"`
		} `json:"timeline"`
	} `json:"directions"`
}

func truthFlowOf(t *testing.T, out string) *faultFlow {
	t.Helper()
	var doc struct {
		Flows []faultFlow `json:"flows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("analyze --json: %v", err)
	}
	for i := range doc.Flows {
		if strings.HasSuffix(doc.Flows[i].Server, fmt.Sprintf(":%d", truthPort)) {
			return &doc.Flows[i]
		}
	}
	t.Fatalf("no flow to port %d in the capture", truthPort)
	return nil
}

// retransSegments counts the sender's retransmissions by kind in MSS
// segments (a capture at a TSO sender may hold several in one frame):
// fast, timeout, probe, and spurious (as analyze found them: D-SACKed or
// told by timestamps, and resends of data already acknowledged).
func (f *faultFlow) retransSegments() map[string]int64 {
	out := map[string]int64{}
	for _, d := range f.Dirs {
		if d.Sender != f.Sender || d.MSS <= 0 {
			continue
		}
		// The kernel counts a resend of data already acknowledged with
		// the recovery it was part of (the kind before it).
		last := "retrans-fast"
		for _, e := range d.Timeline.Events {
			n := max((e.Len+d.MSS-1)/d.MSS, 1) // a FIN sent again: one segment
			kind := e.Kind
			switch kind {
			case "retrans-spurious":
				kind = last
			case "retrans-fast", "retrans-rto", "retrans-probe":
				last = kind
			}
			switch kind {
			case "retrans-fast":
				out["fast"] += n
			case "retrans-rto":
				out["timeout"] += n
			case "retrans-probe":
				out["probe"] += n
			}
		}
		out["spurious"] += d.Retrans.Spurious
	}
	return out
}

// kernelRetrans reads the sender namespace's counters, in segments: fast
// retransmissions (TCPFastRetrans: from duplicate ACKs, SACK, RACK), the
// timer's (each TCPTimeouts resends one segment; TCPSlowStartRetrans the
// rest of the flight after it), tail loss probes that resent data (what
// RetransSegs holds beyond those: a probe may send new data instead,
// which TCPLossProbes counts too) and spurious ones (TCPDSACKRecvSegs:
// segments the receiver reported twice).
func kernelRetrans(t *testing.T, file string) map[string]int64 {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	vals := map[string]int64{}
	sc := bufio.NewScanner(fh)
	var names []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			names = fields
			continue
		}
		for i := 1; i < len(fields) && i < len(names); i++ {
			v, _ := strconv.ParseInt(fields[i], 10, 64)
			vals[strings.TrimSuffix(names[0], ":")+names[i]] = v
		}
	}
	fast, timeout := vals["TcpExtTCPFastRetrans"], vals["TcpExtTCPSlowStartRetrans"]+vals["TcpExtTCPTimeouts"]
	return map[string]int64{"fast": fast, "timeout": timeout,
		"probe": max(vals["TcpRetransSegs"]-fast-timeout, 0), "spurious": vals["TcpExtTCPDSACKRecvSegs"]}
}

// kernelDetail lists the counters behind the kernel's numbers.
func kernelDetail(file string) string {
	b, _ := os.ReadFile(file)
	var out []string
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) != len(vals) || len(names) == 0 || names[0] != vals[0] {
			continue
		}
		for j, n := range names {
			switch n {
			case "TCPFastRetrans", "TCPSlowStartRetrans", "TCPTimeouts", "TCPLossProbes", "RetransSegs", "TCPDSACKRecvSegs", "TCPSpuriousRTOs":
				out = append(out, n+"="+vals[j])
			}
		}
	}
	return strings.Join(out, " ")
}
