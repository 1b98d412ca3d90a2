// The host as apply judges a plan against it, gathered once before
// anything changes: the sysctls' values and modes, the routes and the
// files persistence would write, the kernel, the tuning daemons.

package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
)

type sysctlNow struct {
	exists, writable bool
	raw              string
}

type routeNow struct {
	exact, cover     rtnl.Route
	exists, covered  bool
	lookupErr        error
	dev              string // the device the route uses or would use
	networkFile      string // the .network file networkd applies to dev
	networkFileError error
}

type fileNow struct {
	exists, symlink bool
	mode            uint32
	data            []byte
	missingDirs     []string
}

// env is the host state apply judges a plan against: gathered once.
type env struct {
	kernel            string
	memTotal          int64
	pageSize          int64
	sysctls           map[string]sysctlNow
	routes            map[int]routeNow
	files             map[string]fileNow
	networkManager    bool
	config            *sysconf.Config
	daemons           []sysconf.Process
	configUnreadable  string
	daemonsUnreadable string
}

// gather reads what build needs. Only reads.
func gather(p plan.Plan, o Options) (*env, error) {
	e := &env{sysctls: map[string]sysctlNow{}, routes: map[int]routeNow{}, files: map[string]fileNow{}, pageSize: 4096}
	var err error
	if e.kernel, err = readKernel(o); err != nil {
		return nil, fmt.Errorf("read the kernel release: %w", err)
	}
	if o.live() {
		e.pageSize = int64(os.Getpagesize())
	}
	if m, err := sysconf.ReadMemTotal(hostPath(o.Root, "/proc")); err == nil {
		e.memTotal = m
	}
	if err := e.gatherSysctls(p, o); err != nil {
		return nil, err
	}
	if err := e.gatherRoutes(p, o); err != nil {
		return nil, err
	}
	if o.Netns != "" {
		return e, nil // boot configuration and daemons belong to the host
	}
	if err := e.gatherHost(o); err != nil {
		return nil, err
	}
	return e, nil
}

// gatherSysctls reads the current value and writability of every sysctl
// the plan sets, in the options' namespace.
func (e *env) gatherSysctls(p plan.Plan, o Options) error {
	var keys []string
	for _, it := range p.Items {
		if it.Kind == plan.KindSysctl {
			if k, err := sysctl.CheckKey(it.Key); err == nil {
				keys = append(keys, k)
			}
		}
	}
	return o.inNetns(func() error {
		for _, k := range keys {
			name, _ := sysctl.Path(o.sysRoot(), k)
			fi, err := os.Stat(name)
			if errors.Is(err, fs.ErrNotExist) {
				e.sysctls[k] = sysctlNow{}
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %w", k, bare(err))
			}
			b, err := os.ReadFile(name)
			if err != nil {
				return fmt.Errorf("read %s: %w", k, bare(err))
			}
			e.sysctls[k] = sysctlNow{exists: true, writable: fi.Mode().Perm()&0o222 != 0, raw: string(b)}
		}
		return nil
	})
}

// gatherRoutes looks up, for every route item, the route to its
// destination or the one covering it now and, to persist, the
// networkd file of its device and the drop-in apply would write.
func (e *env) gatherRoutes(p plan.Plan, o Options) error {
	for i, it := range p.Items {
		if it.Kind != plan.KindRoute || it.Route == nil {
			continue
		}
		r := it.Route
		var rn routeNow
		rn.dev = r.Dev
		if o.Router != nil {
			rn.exact, rn.exists, rn.lookupErr = o.Router.Get(r.Family, r.Dst, r.Table)
			if rn.lookupErr == nil && !rn.exists {
				rn.cover, rn.covered, rn.lookupErr = o.Router.Cover(r.Family, r.Dst)
			}
			switch {
			case rn.exists:
				rn.dev = rn.exact.Dev
			case rn.covered:
				rn.dev = rn.cover.Dev
			}
		}
		if o.Persist && rn.dev != "" {
			rn.networkFile, rn.networkFileError = networkFile(o.Root, rn.dev)
			if rn.networkFile != "" {
				if err := e.readFile(o.Root, networkdDropIn(rn.networkFile)); err != nil {
					return err
				}
			}
		}
		e.routes[i] = rn
	}
	return nil
}

// gatherHost reads what belongs to the host's own namespace: the sysctl
// drop-in (to persist), the boot sysctl configuration, and the daemons
// that tune or manage the network.
func (e *env) gatherHost(o Options) error {
	if o.Persist {
		if err := e.readFile(o.Root, SysctlDropIn); err != nil {
			return err
		}
	}
	if cfg, err := sysconf.ReadSysctlConfig(o.Root); err == nil {
		e.config = &cfg
	} else {
		e.configUnreadable = err.Error()
	}
	names := append(sysconf.TuningDaemons(), sysconf.NetworkDaemons()...)
	if ds, err := sysconf.FindDaemons(hostPath(o.Root, "/proc"), names); err == nil {
		e.daemons = ds
	} else {
		e.daemonsUnreadable = err.Error()
	}
	for _, d := range e.daemons {
		if d.Name == "NetworkManager" {
			e.networkManager = true
		}
	}
	if _, err := os.Stat(hostPath(o.Root, "/etc/NetworkManager/system-connections")); err == nil {
		e.networkManager = true
	}
	return nil
}

// readFile records a file apply may write, and the directories missing
// on the way to it.
func (e *env) readFile(root, name string) error {
	if _, ok := e.files[name]; ok {
		return nil
	}
	f := fileNow{mode: 0o644}
	hp := hostPath(root, name)
	fi, err := os.Lstat(hp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dir := path.Dir(name)
		var missing []string
		for dir != "/" {
			if _, err := os.Stat(hostPath(root, dir)); err == nil {
				break
			}
			missing = append([]string{dir}, missing...)
			dir = path.Dir(dir)
		}
		f.missingDirs = missing
	case err != nil:
		return fmt.Errorf("%s: %w", name, bare(err))
	case fi.Mode()&fs.ModeSymlink != 0 || !fi.Mode().IsRegular():
		f.exists, f.symlink = true, true
	default:
		f.exists, f.mode = true, uint32(fi.Mode().Perm())
		if f.data, err = os.ReadFile(hp); err != nil {
			return fmt.Errorf("read %s: %w", name, bare(err))
		}
	}
	e.files[name] = f
	return nil
}
