package audit

import "testing"

func TestSummaryAndAtLeast(t *testing.T) {
	fs := []Finding{{Severity: Crit}, {Severity: Warn}, {Severity: Warn}, {Severity: Info}}
	s := Summary(fs)
	if s["crit"] != 1 || s["warn"] != 2 || s["info"] != 1 || len(s) != 3 {
		t.Errorf("Summary = %v", s)
	}
	if z := Summary(nil); z["crit"] != 0 || len(z) != 3 {
		t.Errorf("Summary(nil) = %v: every severity present", z)
	}
	if n := AtLeast(fs, Crit); n != 1 {
		t.Errorf("AtLeast crit = %d", n)
	}
	if n := AtLeast(fs, Warn); n != 3 {
		t.Errorf("AtLeast warn = %d", n)
	}
	if n := AtLeast(fs, Info); n != 4 {
		t.Errorf("AtLeast info = %d", n)
	}
}
