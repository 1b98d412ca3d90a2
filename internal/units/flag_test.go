package units

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestFlagTypes(t *testing.T) {
	var (
		rtt  = Duration{Min: time.Millisecond, Max: 5 * time.Second}
		rate = Rate{Min: 1e3, Max: 10e12}
		size = Size{Min: 1538}
		loss = Percent{Max: 0.49}
	)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Var(&rtt, "rtt", "")
	fs.Var(&rate, "rate", "")
	fs.Var(&size, "queue", "")
	fs.Var(&loss, "loss", "")
	if rtt.IsSet() || rate.IsSet() || rtt.String() != "" {
		t.Fatalf("unset flags read as set: %v %v %q", rtt.IsSet(), rate.IsSet(), rtt.String())
	}
	if err := fs.Parse([]string{"--rtt", "200ms", "--rate", "1Gbit/s", "--queue", "25MB", "--loss", "0.1%"}); err != nil {
		t.Fatal(err)
	}
	if rtt.D != 200*time.Millisecond || rate.Bps != 1e9 || size.N != 25_000_000 || loss.F != 0.001 || !rtt.IsSet() || !loss.IsSet() {
		t.Errorf("parsed rtt %v rate %g queue %d loss %g", rtt.D, rate.Bps, size.N, loss.F)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rtt", "0ms"}, `"0ms": must be greater than zero`},
		{[]string{"--rtt", "100us"}, `"100us" is out of range: 1 ms..5 s`},
		{[]string{"--rtt", "200"}, "no unit"},
		{[]string{"--rtt", "-5ms"}, "must not be negative"},
		{[]string{"--rate", "1e30bit/s"}, "out of range: 1 kbit/s..10 Tbit/s"},
		{[]string{"--rate", "0bit/s"}, "must be greater than zero"},
		{[]string{"--queue", "1000"}, "out of range: at least 1538"},
		{[]string{"--loss", "60%"}, "at most 49%"},
	} {
		err := fs.Parse(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
	// A refused value leaves the last good one.
	if rtt.D != 200*time.Millisecond || rate.Bps != 1e9 {
		t.Errorf("refused values changed the flags: rtt %v rate %g", rtt.D, rate.Bps)
	}
}

// A Size with Unit refuses a bare number (packets or bytes?) and says
// how to write bytes; with a unit it parses as any Size.
func TestSizeUnitRequired(t *testing.T) {
	for _, in := range []string{"100000", " 1500 ", "2.5"} {
		z := Size{Unit: true}
		if err := z.Set(in); err == nil || !strings.Contains(err.Error(), "no unit: write bytes like") || z.IsSet() {
			t.Errorf("%q: %d, %v; want refused", in, z.N, err)
		}
	}
	z := Size{Unit: true}
	if err := z.Set("150kB"); err != nil || z.N != 150_000 {
		t.Errorf("150kB: %d, %v", z.N, err)
	}
	if err := (&Size{}).Set("1500"); err != nil {
		t.Errorf("a Size without Unit refused a bare byte count: %v", err)
	}
}

func TestSeconds(t *testing.T) {
	b, err := json.Marshal(struct {
		S Seconds `json:"s"`
	}{Seconds(1500 * time.Microsecond)})
	if err != nil || string(b) != `{"s":0.0015}` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var back struct {
		S Seconds `json:"s"`
	}
	if err := json.Unmarshal(b, &back); err != nil || time.Duration(back.S) != 1500*time.Microsecond {
		t.Errorf("unmarshal: %v, %v", time.Duration(back.S), err)
	}
	if err := json.Unmarshal([]byte(`{"s":"x"}`), &back); err == nil {
		t.Error("a string read as seconds")
	}
	if FromSeconds(0.2) != 200*time.Millisecond || FromSeconds(-0.0000000015) != -2 {
		t.Errorf("FromSeconds: %v %v", FromSeconds(0.2), FromSeconds(-0.0000000015))
	}
}
