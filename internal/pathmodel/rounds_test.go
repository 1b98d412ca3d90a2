package pathmodel

import (
	"math"
	"testing"
)

func TestSlowStartRounds(t *testing.T) {
	tests := []struct {
		name          string
		window        float64
		initCwnd, mss int
		want          int
	}{
		{"initial window covers it", 10000, 10, 1448, 0},
		{"exactly the initial window", 14480, 10, 1448, 0},
		{"one byte more needs a round", 14481, 10, 1448, 1},
		{"200ms x 1Gbit/s from IW10", 25e6, 10, 1448, 11}, // 25e6/14480 = 1726.5 -> 2^11
		{"same from IW20", 25e6, 20, 1448, 10},
		{"defaults for zero", 25e6, 0, 0, 11},
		{"capped at the largest window", 1e12, 10, 1448, 17}, // 65535<<14 / 14480 = 74152: 2^16 < it <= 2^17
		{"NaN gives zero", math.NaN(), 10, 1448, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SlowStartRounds(tc.window, tc.initCwnd, tc.mss); got != tc.want {
				t.Errorf("SlowStartRounds(%g, %d, %d) = %d, want %d", tc.window, tc.initCwnd, tc.mss, got, tc.want)
			}
		})
	}
}
