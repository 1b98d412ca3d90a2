package apply

import (
	"os/exec"
	"testing"
)

// shellWord keeps a value one word, whatever it holds: sh reads it back
// as it was, and runs nothing.
func TestShellWordRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip(err)
	}
	for _, v := range []string{"eth0", "br-lan.100", "0.0.0.0/0 10.0.0.1 initcwnd=20", "a'b", "$(touch /tmp/pwned)", "`id`", "x; reboot", "new\nline", ""} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellWord(v)).Output()
		if err != nil || string(out) != v {
			t.Errorf("%q: sh read back %q (%v) from %s", v, out, err, shellWord(v))
		}
	}
}
