//go:build linux

package emit

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/netns/nstest"
)

// tunedCheck loads a profile with tuned's own loader, then, for the
// per-namespace keys given, writes each value the way tuned's sysctl
// plugin applies it (unquote, write /proc/sys) and compares it the way
// its verify does (whitespace collapsed, the profile's raw value against
// the kernel's). Run inside a throwaway namespace.
const tunedCheck = `
import json, sys
sys.path.insert(0, sys.argv[1])
import tuned.profiles as profiles
from tuned.utils.global_config import GlobalConfig
from tuned.utils.commands import commands
from tuned.plugins import plugin_sysctl
loader = profiles.Loader(profiles.Locator([sys.argv[2]]), profiles.Factory(), profiles.Merger(),
                         GlobalConfig(config_file=sys.argv[3]), profiles.variables.Variables())
opts = loader.load("longhaul").units["sysctl"].options
cmd = commands()
out = {"options": dict(opts), "verified": {}, "quoted_verifies": {}}
for key in sys.argv[4:]:
    plugin_sysctl._write_sysctl(key, cmd.unquote(opts[key]))
    now = plugin_sysctl._read_sysctl(key)
    out["verified"][key] = cmd.remove_ws(opts[key]) == cmd.remove_ws(now)
    out["quoted_verifies"][key] = cmd.remove_ws('"%s"' % opts[key]) == cmd.remove_ws(now)
print(json.dumps(out))
`

func tunedDir(t *testing.T) string {
	dir := os.Getenv("LONGHAUL_TUNED_DIR")
	if dir == "" {
		dir = "/var/cache/longhaul/tuned" // scripts/deps.sh unpacks Debian's tuned here
	}
	if _, err := os.Stat(filepath.Join(dir, "usr/lib/python3/dist-packages/tuned/profiles")); err != nil {
		t.Skipf("tuned not unpacked in %s (scripts/deps.sh does it): %v", dir, err)
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	return dir
}

// TestIntegrationTuned: Debian's tuned (2.20) loads the emitted profile
// with exactly the plan's sysctls, applies the per-namespace ones in a
// throwaway namespace and its verify accepts them; the same values
// quoted, as tuned's own network-throughput profile writes them, would
// fail its verify (it compares before unquoting), which is why the
// profile leaves them bare.
func TestIntegrationTuned(t *testing.T) {
	dir := tunedDir(t)
	ns := nstest.New(t)
	p := loadPlan(t, "fleet.json")
	out, err := Render(p, "tuned")
	if err != nil {
		t.Fatal(err)
	}
	profiles := t.TempDir()
	if err := os.MkdirAll(filepath.Join(profiles, "longhaul"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(profiles, "longhaul", "tuned.conf"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"netns", "exec", ns, "/usr/bin/python3", "-c", tunedCheck,
		filepath.Join(dir, "usr/lib/python3/dist-packages"), profiles, filepath.Join(dir, "etc/tuned/tuned-main.conf")}
	want := map[string]string{}
	verified, quoted := map[string]bool{}, map[string]bool{}
	for _, s := range Sysctls(p) {
		want[s.Key] = s.Value
		if !s.Host {
			args = append(args, s.Key)
			verified[s.Key] = true
			quoted[s.Key] = s.Value != "0" && s.Value != "1" // single words verify either way
		}
	}
	b, err := exec.Command("ip", args...).Output()
	if err != nil {
		t.Fatalf("tuned: %v", err)
	}
	var got struct {
		Options        map[string]string `json:"options"`
		Verified       map[string]bool   `json:"verified"`
		QuotedVerifies map[string]bool   `json:"quoted_verifies"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if diff := cmp.Diff(want, got.Options); diff != "" {
		t.Errorf("the profile as tuned loads it (-plan +tuned):\n%s", diff)
	}
	if diff := cmp.Diff(verified, got.Verified); diff != "" {
		t.Errorf("tuned's verify after applying (-want +got):\n%s", diff)
	}
	for k, multi := range quoted {
		if multi && got.QuotedVerifies[k] {
			t.Errorf("%s: a quoted value verified: tuned now unquotes in verify, quoting would be safe", k)
		}
	}
}
