//go:build linux

package cpuuse

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in        string
		run, wait time.Duration
		ok        bool
	}{
		{"420540053 1554165144 30\n", 420540053, 1554165144, true},
		{"0 0 1", 0, 0, true},
		{"12", 0, 0, false},
		{"-1 5 1", 0, 0, false},
		{"x 5 1", 0, 0, false},
	} {
		run, wait, ok := parse(c.in)
		if run != c.run || wait != c.wait || ok != c.ok {
			t.Errorf("parse(%q) = %v %v %v", c.in, run, wait, ok)
		}
	}
}

// Now sums every thread's file and skips what it cannot read.
func TestNowSumsThreads(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"1": "100 50 3\n", "2": "300 150 9\n", "3": "garbage"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "schedstat"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "4"), 0o755); err != nil { // exited: no file
		t.Fatal(err)
	}
	old := procTasks
	procTasks = dir
	defer func() { procTasks = old }()
	u, ok := Now()
	if !ok || u.Run != 400 || u.Wait != 200 {
		t.Errorf("Now() = %+v %v; want 400 ns run, 200 ns wait", u, ok)
	}
	if d := (Use{Run: 10, Wait: 3}).Sub(Use{Run: 4, Wait: 5}); d != (Use{Run: 6}) {
		t.Errorf("Sub = %+v", d)
	}
}

// This process's own threads: a busy loop adds run time (any: how much
// depends on how busy the machine is).
func TestNowMeasuresThisProcess(t *testing.T) {
	a, ok := Now()
	if !ok {
		t.Skip("no /proc/self/task/*/schedstat (CONFIG_SCHED_INFO off)")
	}
	x := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	b, _ := Now()
	if d := b.Sub(a); d.Run <= 0 {
		t.Errorf("a 50 ms loop ran %v (x=%d)", d.Run, x)
	}
}
