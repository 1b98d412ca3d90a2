package apply

import (
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/snapshot"
)

const hosts = "../../testdata/hosts/"

// copyTree copies a fixture host tree (files, directories, symlinks)
// into a fresh temporary root, so tests never write the checked-in one.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case fi.IsDir():
			return os.MkdirAll(out, 0o755)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, fi.Mode().Perm())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// tree records every path below root (but the journal directory) with
// its type, mode and content: two trees are equal when they are byte
// for byte the same.
func tree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "var" || strings.HasPrefix(rel, "var/") {
			return nil // var/lib/longhaul/journal: the state directory
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "symlink " + target
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %v", fi.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %q", fi.Mode().Perm(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t testing.TB, what string, want, got map[string]string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: tree differs (-want +got):\n%s", what, diff)
	}
}

// fakeRouter keeps routes in memory and logs what it was asked, like
// `ip route` commands.
type fakeRouter struct {
	routes map[string]rtnl.Route
	log    []string
}

func newFakeRouter(rs ...rtnl.Route) *fakeRouter {
	f := &fakeRouter{routes: map[string]rtnl.Route{}}
	for _, r := range rs {
		if r.Table == 0 {
			r.Table = 254
		}
		f.routes[f.key(r.Family, r.Dst, r.Table)] = r
	}
	return f
}

func (f *fakeRouter) key(family, dst string, table int) string {
	if table == 0 {
		table = 254
	}
	return fmt.Sprintf("%s %s %d", family, dst, table)
}

func (f *fakeRouter) Get(family, dst string, table int) (rtnl.Route, bool, error) {
	r, ok := f.routes[f.key(family, dst, table)]
	return r, ok, nil
}

func (f *fakeRouter) Cover(family, dst string) (rtnl.Route, bool, error) {
	p, err := rtnl.Route{Family: family, Dst: dst}.Prefix()
	if err != nil {
		return rtnl.Route{}, false, err
	}
	r, ok := rtnl.CoveringRoute(f.sorted(), family, p)
	if !ok {
		return rtnl.Route{}, false, nil
	}
	return f.routes[f.key(r.Family, r.Dst, r.Table)], true, nil
}

func (f *fakeRouter) Set(r rtnl.Route) error {
	k := f.key(r.Family, r.Dst, r.Table)
	if cur, ok := f.routes[k]; ok {
		cur.InitCwnd, cur.InitRwnd = r.InitCwnd, r.InitRwnd
		f.routes[k] = cur
		f.log = append(f.log, "ip route change "+cur.String()+" "+cur.MetricsText())
		return nil
	}
	if r.Table == 0 {
		r.Table = 254
	}
	f.routes[k] = r
	f.log = append(f.log, "ip route add "+r.String()+" "+r.MetricsText())
	return nil
}

func (f *fakeRouter) Delete(r rtnl.Route) error {
	k := f.key(r.Family, r.Dst, r.Table)
	if _, ok := f.routes[k]; ok {
		delete(f.routes, k)
		f.log = append(f.log, "ip route del "+r.String())
	}
	return nil
}

func (f *fakeRouter) sorted() []rtnl.Route {
	keys := make([]string, 0, len(f.routes))
	for k := range f.routes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]rtnl.Route, len(keys))
	for i, k := range keys {
		out[i] = f.routes[k]
	}
	return out
}

func (f *fakeRouter) state() map[string]rtnl.Route {
	out := map[string]rtnl.Route{}
	for k, v := range f.routes {
		out[k] = v
	}
	return out
}

var defaultRoute = rtnl.Route{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Dev: "eth0", Table: 254}

// makePlan plans for the host tree at root with the fake router's routes
// in the snapshot.
func makePlan(t testing.TB, root string, fr *fakeRouter, req plan.Request) plan.Plan {
	t.Helper()
	s, err := snapshot.Gather(snapshot.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if fr != nil {
		st := &rtnl.State{}
		for _, r := range fr.sorted() {
			r.Protocol = "static"
			st.Routes = append(st.Routes, r)
		}
		s.Net = st
	}
	p, err := plan.Make(s, req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var req200ms1G = plan.Request{RTT: 200 * time.Millisecond, RateBps: 1e9, Dst: netip.MustParsePrefix("203.0.113.0/24")}

// hostWithNetworkd copies a fixture and gives it a systemd-networkd
// configuration for eth0.
func hostWithNetworkd(t testing.TB, fixture string) string {
	t.Helper()
	root := copyTree(t, hosts+fixture)
	dir := filepath.Join(root, "etc/systemd/network")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "10-eth0.network"), []byte("[Match]\nName=eth0\n\n[Network]\nDHCP=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func fixedNow() time.Time { return time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC) }

func opts(root string, fr *fakeRouter) Options {
	o := Options{Root: root, Now: fixedNow}
	if fr != nil {
		o.Router = fr
	}
	return o
}
