//go:build linux && !longhaul_portable

package cli

import (
	"bytes"
	"testing"

	"github.com/longhaul/longhaul/internal/lab"
	"github.com/longhaul/longhaul/internal/termsafe"
)

// The progress line's own controls pass the filter; a case's name from
// the scenario file does not.
func TestProgressLineThroughTheFilter(t *testing.T) {
	var raw bytes.Buffer
	stderr := termsafe.NewWriter(&raw)
	progressLine(stderr)(lab.Progress{Done: 0, Total: 2, Case: "loss\x1b]0;owned\x07"})
	progressLine(stderr)(lab.Progress{Done: 2, Total: 2})
	if want := "\r\x1b[K[1/2] loss\\u001b]0;owned\\u0007 (repeat 0)  elapsed 0:00  ETA 0:00\r\x1b[K"; raw.String() != want {
		t.Errorf("%q, want %q", raw.String(), want)
	}
}
