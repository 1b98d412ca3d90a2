//go:build linux

package lab

import (
	"slices"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/scenario"
)

func TestCheckPeers(t *testing.T) {
	s, _ := scenario.Expand("longrtt", scenario.Params{Quick: true}, scenario.Facts{})
	if got := peersFor(s); !slices.Equal(got, []string{"ip", "iperf3"}) {
		t.Errorf("longrtt peers %v", got)
	}
	u, _ := scenario.Expand("upload", scenario.Params{Quick: true}, scenario.Facts{})
	if got := peersFor(u); !slices.Equal(got, []string{"ip", "nginx", "curl", "tcpdump"}) {
		t.Errorf("upload peers %v", got)
	}
	t.Setenv("PATH", t.TempDir())
	// lookPath also searches the sbin directories; a name no system has
	// shows the message.
	peerPackages["longhaul-no-such-peer"] = "longhaul-no-such-package"
	defer delete(peerPackages, "longhaul-no-such-peer")
	u.Cases = []scenario.Case{{ID: "x", Kind: "none"}}
	err := checkNames(u, []string{"longhaul-no-such-peer"})
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "apt-get install longhaul-no-such-package") {
		t.Errorf("missing peer: %v", err)
	}
}
