// Package snapshot gathers, once, the host state that decides how TCP
// behaves on a long path: kernel version, the TCP sysctls, routes and the
// default link (via rtnl), persistent sysctl configuration and the daemons
// that rewrite it, and memory. Audit, calc and plan judge a Snapshot
// without touching the host again, so tests feed them fixture trees and a
// snapshot taken on one machine can be judged on another (audit
// --snapshot).
package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// Keys are the sysctls a snapshot reads. A key missing on the running
// kernel is recorded in MissingKeys (tcp_adv_win_scale is gone since 6.6).
var Keys = []string{
	"kernel.osrelease",
	"kernel.hostname",
	"net.core.default_qdisc",
	"net.core.rmem_default",
	"net.core.rmem_max",
	"net.core.wmem_default",
	"net.core.wmem_max",
	"net.ipv4.tcp_adv_win_scale",
	"net.ipv4.tcp_allowed_congestion_control",
	"net.ipv4.tcp_available_congestion_control",
	"net.ipv4.tcp_congestion_control",
	"net.ipv4.tcp_mem",
	"net.ipv4.tcp_moderate_rcvbuf",
	"net.ipv4.tcp_mtu_probing",
	"net.ipv4.tcp_no_metrics_save",
	"net.ipv4.tcp_notsent_lowat",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_sack",
	"net.ipv4.tcp_slow_start_after_idle",
	"net.ipv4.tcp_timestamps",
	"net.ipv4.tcp_window_scaling",
	"net.ipv4.tcp_wmem",
}

// Snapshot is the gathered host state. It is plain data and round-trips
// through JSON.
type Snapshot struct {
	// Source says where the data came from: "live" or "root DIR".
	Source   string         `json:"source"`
	Netns    string         `json:"netns,omitempty"`
	Hostname string         `json:"hostname,omitempty"`
	Kernel   sysconf.Kernel `json:"kernel"`
	// Sysctls maps dotted keys to values with white space collapsed.
	Sysctls     map[string]string `json:"sysctls"`
	MissingKeys []string          `json:"missing_keys,omitempty"`
	Net         *rtnl.State       `json:"net,omitempty"`
	MemTotal    int64             `json:"mem_total_bytes,omitempty"`
	PageSize    int64             `json:"page_size"`
	// Config is the persistent sysctl configuration (sysctl.d) and
	// ConfigUnknownKeys the keys it sets that this kernel does not have.
	Config            *sysconf.Config   `json:"sysctl_config,omitempty"`
	ConfigUnknownKeys []string          `json:"config_unknown_keys,omitempty"`
	Daemons           []sysconf.Process `json:"daemons,omitempty"`
	// Notes lists what could not be looked at, one line each.
	Notes []string `json:"notes,omitempty"`
}

// ErrNoHost means there was no host state to gather (a --root without
// proc/sys, nothing readable): an empty snapshot would pass every check
// and read as an all-clear.
var ErrNoHost = badinput.New("no host state")

// Options says where to gather from.
type Options struct {
	// Root is the file system root holding proc/ and etc/; "" means "/".
	// Any other root is a fixture or a copied tree: routes and links are
	// then not gathered, since netlink only answers for the live kernel.
	Root string
	// Netns names a namespace (ip netns) to read network state in.
	Netns string
}

// Gather reads the host state once.
func Gather(opt Options) (*Snapshot, error) {
	root := opt.Root
	if root == "" {
		root = "/"
	}
	live := filepath.Clean(root) == "/"
	s := &Snapshot{Source: "live", Netns: opt.Netns, PageSize: int64(os.Getpagesize())}
	if !live {
		s.Source, s.PageSize = "root "+root, 4096
	}
	sysRoot := filepath.Join(root, "proc", "sys")
	if st, err := os.Stat(filepath.Join(sysRoot, "net")); !live && (err != nil || !st.IsDir()) {
		return nil, fmt.Errorf("%w: %s has no proc/sys/net to read: give the root of a copied tree (proc/sys, proc, etc; scripts/mkfixture.sh makes one)", ErrNoHost, root)
	}

	gatherNet := func() error {
		vals, missing, err := sysctl.ReadMany(sysRoot, Keys)
		if err != nil {
			return err
		}
		s.Sysctls, s.MissingKeys = vals, missing
		if len(vals) == 0 {
			return fmt.Errorf("%w: none of the TCP sysctls is readable under %s", ErrNoHost, sysRoot)
		}
		if !live {
			return nil
		}
		st, err := rtnl.Gather()
		if err != nil {
			s.Notes = append(s.Notes, err.Error())
			return nil
		}
		s.Net = &st
		return nil
	}
	var err error
	if opt.Netns != "" {
		if !live {
			return nil, errors.New("snapshot: --netns needs the live system, not --root")
		}
		err = netns.Do(opt.Netns, gatherNet)
	} else {
		err = gatherNet()
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if opt.Netns != "" {
		s.readGlobals(sysRoot)
	}
	if !live {
		s.Notes = append(s.Notes, "routes and links not gathered: netlink answers only for the live kernel")
	}
	s.readHost(root, opt.Netns != "")
	return s, nil
}

// readHost fills what is not the network stack: kernel, memory, the
// persistent configuration (not for a namespace: it applies to the
// initial one) and the daemons that change sysctls or routes.
func (s *Snapshot) readHost(root string, inNetns bool) {
	sysRoot, procRoot := filepath.Join(root, "proc", "sys"), filepath.Join(root, "proc")
	s.Hostname = s.Sysctls["kernel.hostname"]
	if rel, ok := s.Sysctls["kernel.osrelease"]; ok {
		if k, err := sysconf.ParseKernelRelease(rel); err == nil {
			s.Kernel = k
		} else {
			s.Notes = append(s.Notes, err.Error())
		}
	}
	if mem, err := sysconf.ReadMemTotal(procRoot); err == nil {
		s.MemTotal = mem
	} else {
		s.Notes = append(s.Notes, err.Error())
	}
	if !inNetns {
		cfg, err := sysconf.ReadSysctlConfig(root)
		if err != nil {
			s.Notes = append(s.Notes, err.Error())
		} else {
			s.Config = &cfg
			s.ConfigUnknownKeys = unknownKeys(sysRoot, cfg)
		}
	} else {
		s.Notes = append(s.Notes, "persistent sysctl configuration applies to the initial namespace: not read for --netns")
	}
	names := append(sysconf.TuningDaemons(), sysconf.NetworkDaemons()...)
	if d, err := sysconf.FindDaemons(procRoot, names); err == nil {
		s.Daemons = d
	} else {
		s.Notes = append(s.Notes, err.Error())
	}
}

// globalKeys exist only in the initial namespace but bound every
// namespace's sockets (kernel-facts: tcp_mem is global).
var globalKeys = []string{"net.ipv4.tcp_mem"}

// readGlobals fills global keys a namespace does not show from the
// initial namespace.
func (s *Snapshot) readGlobals(sysRoot string) {
	var still []string
	for _, k := range s.MissingKeys {
		if !slices.Contains(globalKeys, k) {
			still = append(still, k)
			continue
		}
		if v, err := sysctl.Read(sysRoot, k); err == nil {
			s.Sysctls[k] = v
			s.Notes = append(s.Notes, k+" is global: read from the initial namespace")
		} else {
			still = append(still, k)
		}
	}
	s.MissingKeys = still
}

// unknownKeys lists configured keys the kernel under sysRoot lacks.
func unknownKeys(sysRoot string, cfg sysconf.Config) []string {
	var out []string
	for k, a := range cfg.Effective() {
		if a.Glob {
			continue
		}
		p, err := sysctl.Path(sysRoot, k)
		if err != nil {
			out = append(out, k)
			continue
		}
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Int returns an integer sysctl.
func (s *Snapshot) Int(key string) (int64, bool) {
	v, ok := s.Sysctls[key]
	if !ok {
		return 0, false
	}
	n, err := sysctl.ParseInt(v)
	return n, err == nil
}

// Triple returns a tcp_rmem/tcp_wmem value.
func (s *Snapshot) Triple(key string) (pathmodel.Triple, bool) {
	v, ok := s.Sysctls[key]
	if !ok {
		return pathmodel.Triple{}, false
	}
	t, err := sysctl.ParseTriple(v)
	return t, err == nil
}

// TCPMem returns net.ipv4.tcp_mem in pages.
func (s *Snapshot) TCPMem() ([3]int64, bool) {
	v, ok := s.Sysctls["net.ipv4.tcp_mem"]
	if !ok {
		return [3]int64{}, false
	}
	n, err := sysctl.ParseInts(v, 3)
	if err != nil {
		return [3]int64{}, false
	}
	return [3]int64{n[0], n[1], n[2]}, true
}

// Version is the kernel version the path model needs.
func (s *Snapshot) Version() pathmodel.Version {
	return pathmodel.Version{Major: s.Kernel.Major, Minor: s.Kernel.Minor}
}

// RecvRatio is the window/buffer ratio of this kernel.
func (s *Snapshot) RecvRatio() pathmodel.Ratio {
	adv, ok := s.Int("net.ipv4.tcp_adv_win_scale")
	return pathmodel.ReceiveRatio(s.Version(), int(adv), ok)
}

// ModelInput returns the path-model input with this host's settings at
// both ends of the path.
func (s *Snapshot) ModelInput() pathmodel.Input {
	in := pathmodel.Input{Kernel: s.Version(), RecvRatio: s.RecvRatio(), PageSize: s.PageSize, RAMBytes: s.MemTotal}
	in.Rmem, _ = s.Triple("net.ipv4.tcp_rmem")
	in.Wmem, _ = s.Triple("net.ipv4.tcp_wmem")
	in.CoreRmemMax, _ = s.Int("net.core.rmem_max")
	in.CoreWmemMax, _ = s.Int("net.core.wmem_max")
	// Values the kernel accepts but the model cannot use (an unordered
	// tcp_mem, say) are left out here; audit reports them on their own.
	if m, ok := s.TCPMem(); ok && m[0] > 0 && m[0] <= m[1] && m[1] <= m[2] {
		in.TCPMemPages = m
	}
	if s.Net != nil {
		if d := s.Net.DefaultRoutes(); len(d) > 0 {
			in.InitCwnd, in.InitRwnd = d[0].InitCwnd, d[0].InitRwnd
		}
	}
	if in.InitCwnd < 0 || in.InitCwnd > pathmodel.MaxInitWindow || in.InitRwnd < 0 || in.InitRwnd > pathmodel.MaxInitWindow {
		in.InitCwnd, in.InitRwnd = 0, 0
	}
	return in
}

// Decode reads a snapshot written by longhaul audit --json (its "host"),
// or a bare snapshot document; what is neither is bad input. A snapshot
// without a page size is taken as 4 KiB pages.
func Decode(b []byte) (*Snapshot, error) {
	var doc struct {
		Host *Snapshot `json:"host"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, badinput.Errorf("not an audit --json document: %v", badinput.JSON(err))
	}
	s := doc.Host
	if s == nil {
		s = new(Snapshot)
		if err := json.Unmarshal(b, s); err != nil || s.Sysctls == nil {
			return nil, badinput.Errorf("no host snapshot in it; write one with longhaul audit --json")
		}
	}
	if s.PageSize == 0 {
		s.PageSize = 4096
	}
	return s, nil
}
