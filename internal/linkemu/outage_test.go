package linkemu

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOutageDropsEverythingInItsInterval(t *testing.T) {
	l := mustNew(t, Config{Delay: 10 * time.Millisecond, Outages: []Outage{{Start: time.Second, Duration: 500 * time.Millisecond}}})
	tests := []struct {
		at      time.Duration
		dropped bool
	}{
		{999 * time.Millisecond, false},
		{time.Second, true},
		{1499 * time.Millisecond, true},
		{1500 * time.Millisecond, false},
	}
	for i, tc := range tests {
		v := l.Enqueue(tc.at, gso(3), uint64(i))
		if v.Dropped() != tc.dropped || (tc.dropped && v.Drops.Loss != 3) {
			t.Errorf("at %v: verdict %+v, want dropped %v (all 3 segments)", tc.at, v, tc.dropped)
		}
	}
	if st := l.Stats(); st.DropsLoss != 6 {
		t.Errorf("drops %d, want 6", st.DropsLoss)
	}
}

func TestParseOutages(t *testing.T) {
	tests := []struct {
		in      string
		want    []Outage
		wantErr bool
	}{
		{"1s@5s", []Outage{{5 * time.Second, time.Second}}, false},
		{"500ms@1s, 2s@10s", []Outage{{time.Second, 500 * time.Millisecond}, {10 * time.Second, 2 * time.Second}}, false},
		{"1s", nil, true},
		{"0s@1s", nil, true},
		{"1s@soon", nil, true},
	}
	for _, tc := range tests {
		got, err := ParseOutages(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseOutages(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr {
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseOutages(%q) (-want +got):\n%s", tc.in, diff)
			}
		}
	}
	if err := (Config{Outages: []Outage{{Start: -time.Second, Duration: time.Second}}}).Validate(); err == nil {
		t.Error("a negative outage start validated")
	}
}

// BurstLoss gives the mean loss and burst length asked for.
func TestBurstLoss(t *testing.T) {
	ge, err := BurstLoss(0.02, 8)
	if err != nil {
		t.Fatal(err)
	}
	rate, burst := burstStats(t, ge, 400000)
	if math.Abs(rate-0.02) > 0.004 || math.Abs(burst-8) > 1 {
		t.Errorf("loss %.4f in bursts of %.2f, want 0.02 in bursts of 8", rate, burst)
	}
	for _, bad := range [][2]float64{{0, 8}, {1, 8}, {0.02, 0.5}, {0.9, 1}} {
		if _, err := BurstLoss(bad[0], bad[1]); err == nil {
			t.Errorf("BurstLoss(%v, %v) accepted", bad[0], bad[1])
		}
	}
}
