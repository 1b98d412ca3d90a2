package rtnl

import "testing"

// TestIntegrationGather reads this host's routes; it needs no privilege.
func TestIntegrationGather(t *testing.T) {
	st, err := Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Routes {
		if r.Family != "inet" && r.Family != "inet6" {
			t.Errorf("route %+v: family %q", r, r.Family)
		}
	}
	t.Logf("%+v default link %+v", st.Routes, st.DefaultLink)
}
