package lab

import (
	"math"
	"strings"
	"testing"
	"time"
)

// iputils ping 20221126 (Debian 12) through a 200 ms emulated path.
const pingOut = `PING 198.18.0.2 (198.18.0.2) 56(84) bytes of data.
64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=200 ms
64 bytes from 198.18.0.2: icmp_seq=2 ttl=64 time=201 ms
64 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time=200 ms
64 bytes from 198.18.0.2: icmp_seq=4 ttl=64 time=200 ms

--- 198.18.0.2 ping statistics ---
5 packets transmitted, 4 received, 20% packet loss, time 402ms
rtt min/avg/max/mdev = 200.041/200.298/200.812/0.302 ms, pipe 3
`

func TestParsePing(t *testing.T) {
	r, err := parsePing(pingOut)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 5 || r.Received != 4 || len(r.RTTs) != 4 || r.Avg != 200298*time.Microsecond || r.Max != 200812*time.Microsecond {
		t.Fatalf("parsed %+v", r)
	}
	m := map[string]float64{}
	r.errMetrics(m, "ping_", 200*time.Millisecond)
	for k, want := range map[string]float64{
		"ping_err_mean_s": 0.298e-3, "ping_err_min_s": 0.041e-3, "ping_err_max_s": 0.812e-3,
		// p99 of 4 replies is the largest: the summary's exact maximum,
		// not the rounded 201 ms.
		"ping_err_p99_s": 0.812e-3, "ping_replies": 4, "ping_sent": 5,
	} {
		if math.Abs(m[k]-want) > 1e-9 {
			t.Errorf("%s = %g, want %g", k, m[k], want)
		}
	}
	// With more than 100 replies p99 is a reply's own (rounded) time.
	var b strings.Builder
	for i := range 200 {
		ms := "50.1"
		if i >= 198 {
			ms = "57.0"
		}
		b.WriteString("64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=" + ms + " ms\n")
	}
	b.WriteString("200 packets transmitted, 200 received, 0% packet loss, time 20000ms\nrtt min/avg/max/mdev = 50.050/50.170/57.420/0.700 ms\n")
	r, err = parsePing(b.String())
	if err != nil {
		t.Fatal(err)
	}
	m = map[string]float64{}
	r.errMetrics(m, "ping_", 50*time.Millisecond)
	if got := m["ping_err_p99_s"]; math.Abs(got-0.1e-3) > 1e-9 {
		t.Errorf("p99 of 200 = %g, want the 198th reply's 0.1 ms", got)
	}
}

func TestParsePingFailures(t *testing.T) {
	for name, out := range map[string]string{
		"no reply":   "PING 198.18.0.2 (198.18.0.2) 56(84) bytes of data.\n\n--- 198.18.0.2 ping statistics ---\n20 packets transmitted, 0 received, 100% packet loss, time 1900ms\n",
		"no summary": "ping: connect: Network is unreachable\n",
		"empty":      "",
	} {
		if _, err := parsePing(out); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
