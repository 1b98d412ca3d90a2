//go:build linux && !longhaul_portable

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
)

// flows says how many idle sockets it left out, beside the flows it
// judged (issue 53), and nothing about them when there are none.
func TestPrintFlowsIdleCount(t *testing.T) {
	doc := flows.Doc{Time: time.Unix(0, 0), Interval: 1, Sockets: 66,
		Flows: []flows.Flow{{Local: "127.0.0.1:1", Remote: "127.0.0.1:2", Direction: flows.DirReceive}}}
	var b strings.Builder
	printFlows(&b, doc, 64, 5)
	if head, _, _ := strings.Cut(b.String(), "\n"); !strings.HasSuffix(head, "1 TCP flow(s) over the last 1 s (this host; 64 idle socket(s) left out, --all lists them)") {
		t.Errorf("head %q", head)
	}
	b.Reset()
	printFlows(&b, doc, 0, 5)
	if strings.Contains(b.String(), "idle") {
		t.Errorf("no idle socket, yet:\n%s", b.String())
	}
}
