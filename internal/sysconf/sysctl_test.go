package sysconf

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseSysctlFile(t *testing.T) {
	tests := []struct {
		name      string
		input     string
		want      []Assignment
		wantProbs []string
	}{
		{
			name:  "spaces around equals",
			input: "net.core.rmem_max = 16777216\n",
			want:  []Assignment{{Key: "net.core.rmem_max", Value: "16777216", File: "f.conf", Line: 1}},
		},
		{
			name:  "no spaces around equals",
			input: "net.core.wmem_max=16777216",
			want:  []Assignment{{Key: "net.core.wmem_max", Value: "16777216", File: "f.conf", Line: 1}},
		},
		{
			name:  "slash key normalised to dots",
			input: "net/ipv4/tcp_rmem = 4096 87380 6291456\n",
			want:  []Assignment{{Key: "net.ipv4.tcp_rmem", Value: "4096 87380 6291456", File: "f.conf", Line: 1}},
		},
		{
			name:  "leading slash and doubled separators dropped",
			input: "/net//ipv4/tcp_mtu_probing = 1\nnet..core.somaxconn = 4096\n",
			want: []Assignment{
				{Key: "net.ipv4.tcp_mtu_probing", Value: "1", File: "f.conf", Line: 1},
				{Key: "net.core.somaxconn", Value: "4096", File: "f.conf", Line: 2},
			},
		},
		{
			name:  "dotted interface name in slash form keeps its dot as a slash",
			input: "net/ipv4/conf/enp3s0.200/forwarding = 1\nnet.ipv4.conf.enp3s0/200.rp_filter = 2\n",
			want: []Assignment{
				{Key: "net.ipv4.conf.enp3s0/200.forwarding", Value: "1", File: "f.conf", Line: 1},
				{Key: "net.ipv4.conf.enp3s0/200.rp_filter", Value: "2", File: "f.conf", Line: 2},
			},
		},
		{
			name:  "whitespace inside value collapsed",
			input: "net.ipv4.tcp_rmem =   4096  87380\t6291456   \r\n",
			want:  []Assignment{{Key: "net.ipv4.tcp_rmem", Value: "4096 87380 6291456", File: "f.conf", Line: 1}},
		},
		{
			name:  "dash prefix ignores missing key",
			input: "-net.ipv4.tcp_congestion_control = bbr\n- net.core.default_qdisc = fq\n",
			want: []Assignment{
				{Key: "net.ipv4.tcp_congestion_control", Value: "bbr", File: "f.conf", Line: 1, IgnoreMissing: true},
				{Key: "net.core.default_qdisc", Value: "fq", File: "f.conf", Line: 2, IgnoreMissing: true},
			},
		},
		{
			name:  "comments and blank lines",
			input: "# hash comment\n; semicolon comment\n\n   # indented comment\n\t\nkernel.pid_max = 4194304\n",
			want:  []Assignment{{Key: "kernel.pid_max", Value: "4194304", File: "f.conf", Line: 6}},
		},
		{
			name:  "no inline comments: the value keeps a trailing hash",
			input: "vm.swappiness = 10 # low\n",
			want:  []Assignment{{Key: "vm.swappiness", Value: "10 # low", File: "f.conf", Line: 1}},
		},
		{
			name:  "equals in value",
			input: "kernel.core_pattern = |/bin/x a=b\n",
			want:  []Assignment{{Key: "kernel.core_pattern", Value: "|/bin/x a=b", File: "f.conf", Line: 1}},
		},
		{
			name:  "empty value",
			input: "kernel.domainname =\n",
			want:  []Assignment{{Key: "kernel.domainname", Value: "", File: "f.conf", Line: 1}},
		},
		{
			name:  "glob keys flagged",
			input: "net.ipv4.conf.*.rp_filter = 2\nnet/ipv6/conf/eth?/accept_ra = 0\n",
			want: []Assignment{
				{Key: "net.ipv4.conf.*.rp_filter", Value: "2", File: "f.conf", Line: 1, Glob: true},
				{Key: "net.ipv6.conf.eth?.accept_ra", Value: "0", File: "f.conf", Line: 2, Glob: true},
			},
		},
		{
			name:  "glob exclusion without value is not a problem",
			input: "net.ipv4.conf.*.rp_filter = 2\n-net.ipv4.conf.lo.rp_filter\n",
			want: []Assignment{
				{Key: "net.ipv4.conf.*.rp_filter", Value: "2", File: "f.conf", Line: 1, Glob: true},
			},
		},
		{
			name:      "lines without equals are problems and parsing continues",
			input:     "net.core.rmem_max 16777216\nnet.core.wmem_max = 16777216\n  garbage  \n",
			want:      []Assignment{{Key: "net.core.wmem_max", Value: "16777216", File: "f.conf", Line: 2}},
			wantProbs: []string{"f.conf:1: net.core.rmem_max 16777216", "f.conf:3: garbage"},
		},
		{
			name:      "empty and blank keys are problems",
			input:     "= 1\n- = 2\n/ = 3\nnet core = 4\n",
			wantProbs: []string{"f.conf:1: = 1", "f.conf:2: - = 2", "f.conf:3: / = 3", "f.conf:4: net core = 4"},
		},
		{
			name:  "last line without newline",
			input: "a.b = 1\nc.d = 2",
			want: []Assignment{
				{Key: "a.b", Value: "1", File: "f.conf", Line: 1},
				{Key: "c.d", Value: "2", File: "f.conf", Line: 2},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotProbs := ParseSysctlFile("f.conf", strings.NewReader(tt.input))
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("assignments mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantProbs, gotProbs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, syscall.EIO }

func TestParseSysctlFileReadError(t *testing.T) {
	got, gotProbs := ParseSysctlFile("f.conf", failingReader{})
	if len(got) != 0 {
		t.Errorf("got assignments %v, want none", got)
	}
	want := []string{"f.conf:1: read: input/output error"}
	if diff := cmp.Diff(want, gotProbs); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestReadSysctlConfigFiles(t *testing.T) {
	tests := []struct {
		name string
		tree tree
		want []string
	}{
		{
			name: "no configuration at all",
			tree: tree{"/etc/": ""},
		},
		{
			name: "lexicographic order by basename across directories",
			tree: tree{
				"/usr/lib/sysctl.d/50-default.conf":     "a.b = 1\n",
				"/etc/sysctl.d/10-first.conf":           "a.b = 1\n",
				"/run/sysctl.d/30-run.conf":             "a.b = 1\n",
				"/usr/local/lib/sysctl.d/20-local.conf": "a.b = 1\n",
				"/lib/sysctl.d/40-lib.conf":             "a.b = 1\n",
				"/etc/sysctl.d/99-last.conf":            "a.b = 1\n",
			},
			want: []string{
				"/etc/sysctl.d/10-first.conf",
				"/usr/local/lib/sysctl.d/20-local.conf",
				"/run/sysctl.d/30-run.conf",
				"/lib/sysctl.d/40-lib.conf",
				"/usr/lib/sysctl.d/50-default.conf",
				"/etc/sysctl.d/99-last.conf",
			},
		},
		{
			name: "earlier directory masks same basename",
			tree: tree{
				"/usr/lib/sysctl.d/50-default.conf":     "a.b = 1\n",
				"/etc/sysctl.d/50-default.conf":         "a.b = 2\n",
				"/usr/lib/sysctl.d/60-run.conf":         "a.b = 1\n",
				"/run/sysctl.d/60-run.conf":             "a.b = 2\n",
				"/lib/sysctl.d/70-local.conf":           "a.b = 1\n",
				"/usr/local/lib/sysctl.d/70-local.conf": "a.b = 2\n",
			},
			want: []string{
				"/etc/sysctl.d/50-default.conf",
				"/run/sysctl.d/60-run.conf",
				"/usr/local/lib/sysctl.d/70-local.conf",
			},
		},
		{
			name: "symlink to /dev/null and empty file mask",
			tree: tree{
				"/etc/sysctl.d/50-default.conf":     "-> /dev/null",
				"/usr/lib/sysctl.d/50-default.conf": "a.b = 1\n",
				"/etc/sysctl.d/50-pid-max.conf":     "",
				"/usr/lib/sysctl.d/50-pid-max.conf": "kernel.pid_max = 4194304\n",
				"/run/sysctl.d/60-gone.conf":        "-> ../../dev/null",
				"/usr/lib/sysctl.d/60-gone.conf":    "a.b = 1\n",
				"/usr/lib/sysctl.d/70-kept.conf":    "a.b = 1\n",
			},
			want: []string{"/usr/lib/sysctl.d/70-kept.conf"},
		},
		{
			name: "sysctl.conf applied last",
			tree: tree{
				"/etc/sysctl.conf":               "a.b = 1\n",
				"/etc/sysctl.d/zz-late.conf":     "a.b = 1\n",
				"/usr/lib/sysctl.d/99-last.conf": "a.b = 1\n",
			},
			want: []string{
				"/usr/lib/sysctl.d/99-last.conf",
				"/etc/sysctl.d/zz-late.conf",
				"/etc/sysctl.conf",
			},
		},
		{
			name: "relative 99-sysctl.conf symlink counted once",
			tree: tree{
				"/etc/sysctl.conf":              "a.b = 1\n",
				"/etc/sysctl.d/99-sysctl.conf":  "-> ../sysctl.conf",
				"/etc/sysctl.d/99-tuning.conf":  "a.b = 1\n",
				"/usr/lib/sysctl.d/50-pid.conf": "a.b = 1\n",
			},
			want: []string{
				"/usr/lib/sysctl.d/50-pid.conf",
				"/etc/sysctl.d/99-tuning.conf",
				"/etc/sysctl.conf",
			},
		},
		{
			name: "absolute 99-sysctl.conf symlink resolved inside root and counted once",
			tree: tree{
				"/etc/sysctl.conf":             "a.b = 1\n",
				"/etc/sysctl.d/99-sysctl.conf": "-> /etc/sysctl.conf",
			},
			want: []string{"/etc/sysctl.conf"},
		},
		{
			name: "99-sysctl.conf symlink masks a vendor file of the same name",
			tree: tree{
				"/etc/sysctl.conf":                 "a.b = 1\n",
				"/etc/sysctl.d/99-sysctl.conf":     "-> ../sysctl.conf",
				"/usr/lib/sysctl.d/99-sysctl.conf": "a.b = 2\n",
			},
			want: []string{"/etc/sysctl.conf"},
		},
		{
			name: "99-sysctl.conf as a regular file is a separate source",
			tree: tree{
				"/etc/sysctl.conf":             "a.b = 1\n",
				"/etc/sysctl.d/99-sysctl.conf": "a.b = 1\n",
			},
			want: []string{"/etc/sysctl.d/99-sysctl.conf", "/etc/sysctl.conf"},
		},
		{
			name: "dangling 99-sysctl.conf when sysctl.conf is missing",
			tree: tree{
				"/etc/sysctl.d/99-sysctl.conf": "-> ../sysctl.conf",
				"/etc/sysctl.d/10-a.conf":      "a.b = 1\n",
			},
			want: []string{"/etc/sysctl.d/10-a.conf"},
		},
		{
			name: "empty or masked sysctl.conf is not applied",
			tree: tree{
				"/etc/sysctl.conf":             "-> /dev/null",
				"/etc/sysctl.d/99-sysctl.conf": "-> ../sysctl.conf",
			},
		},
		{
			name: "non-conf, hidden, directory and dangling entries ignored and do not mask",
			tree: tree{
				"/etc/sysctl.d/README":               "a.b = 1\n",
				"/etc/sysctl.d/10-x.conf.dpkg-old":   "a.b = 1\n",
				"/etc/sysctl.d/.hidden.conf":         "a.b = 1\n",
				"/etc/sysctl.d/20-dir.conf/":         "",
				"/usr/lib/sysctl.d/20-dir.conf":      "a.b = 1\n",
				"/etc/sysctl.d/30-dangling.conf":     "-> /nowhere.conf",
				"/usr/lib/sysctl.d/30-dangling.conf": "a.b = 1\n",
				"/etc/sysctl.d/40-loop.conf":         "-> 40-loop.conf",
			},
			want: []string{
				"/usr/lib/sysctl.d/20-dir.conf",
				"/usr/lib/sysctl.d/30-dangling.conf",
			},
		},
		{
			name: "merged /usr: /lib symlink does not duplicate /usr/lib",
			tree: tree{
				"/lib":                          "-> usr/lib",
				"/usr/lib/sysctl.d/50-pid.conf": "a.b = 1\n",
			},
			want: []string{"/usr/lib/sysctl.d/50-pid.conf"},
		},
		{
			name: "absolute symlinks stay inside the root",
			tree: tree{
				"/etc/sysctl.d/60-shared.conf":  "-> /usr/share/tuning/shared.conf",
				"/usr/share/tuning/shared.conf": "a.b = 1\n",
				"/etc/sysctl.d/61-escape.conf":  "-> ../../../../../../../../etc/hostname",
			},
			want: []string{"/etc/sysctl.d/60-shared.conf"},
		},
		{
			name: "symlinked directory",
			tree: tree{
				"/etc/sysctl.d":         "-> /srv/sysctl",
				"/srv/sysctl/10-a.conf": "a.b = 1\n",
			},
			want: []string{"/etc/sysctl.d/10-a.conf"},
		},
		{
			name: "sysctl.d that is a file is ignored",
			tree: tree{
				"/run/sysctl.d":               "a.b = 1\n",
				"/usr/lib/sysctl.d/10-a.conf": "a.b = 1\n",
			},
			want: []string{"/usr/lib/sysctl.d/10-a.conf"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, tt.tree)
			got, err := ReadSysctlConfig(root)
			if err != nil {
				t.Fatalf("ReadSysctlConfig: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Files, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Files mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadSysctlConfigAssignments(t *testing.T) {
	root := writeTree(t, tree{
		"/usr/lib/sysctl.d/50-default.conf": "# vendor defaults\nnet.core.default_qdisc = fq_codel\n-net.ipv4.conf.*.rp_filter = 2\n",
		"/etc/sysctl.d/60-bbr.conf":         "; BBR for long paths\nnet.core.default_qdisc=fq\nnet.ipv4.tcp_congestion_control=bbr\n",
		"/etc/sysctl.d/99-sysctl.conf":      "-> ../sysctl.conf",
		"/etc/sysctl.conf":                  "net/ipv4/tcp_rmem = 4096\t87380   6291456\nbroken line\n",
	})
	want := Config{
		Files: []string{
			"/usr/lib/sysctl.d/50-default.conf",
			"/etc/sysctl.d/60-bbr.conf",
			"/etc/sysctl.conf",
		},
		Assignments: []Assignment{
			{Key: "net.core.default_qdisc", Value: "fq_codel", File: "/usr/lib/sysctl.d/50-default.conf", Line: 2},
			{Key: "net.ipv4.conf.*.rp_filter", Value: "2", File: "/usr/lib/sysctl.d/50-default.conf", Line: 3, IgnoreMissing: true, Glob: true},
			{Key: "net.core.default_qdisc", Value: "fq", File: "/etc/sysctl.d/60-bbr.conf", Line: 2},
			{Key: "net.ipv4.tcp_congestion_control", Value: "bbr", File: "/etc/sysctl.d/60-bbr.conf", Line: 3},
			{Key: "net.ipv4.tcp_rmem", Value: "4096 87380 6291456", File: "/etc/sysctl.conf", Line: 1},
		},
		Problems: []string{"/etc/sysctl.conf:2: broken line"},
	}
	got, err := ReadSysctlConfig(root)
	if err != nil {
		t.Fatalf("ReadSysctlConfig: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Config mismatch (-want +got):\n%s", diff)
	}
}

func TestReadSysctlConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		tree    tree
		readErr error
		wantErr string
		wantIs  error
	}{
		{
			name:    "unreadable file in sysctl.d",
			tree:    tree{"/etc/sysctl.d/x.conf": "a.b = 1\n"},
			readErr: fs.ErrPermission,
			wantErr: "sysconf: read /etc/sysctl.d/x.conf: permission denied",
			wantIs:  fs.ErrPermission,
		},
		{
			name:    "unreadable sysctl.conf",
			tree:    tree{"/etc/sysctl.conf": "a.b = 1\n"},
			readErr: syscall.EIO,
			wantErr: "sysconf: read /etc/sysctl.conf: input/output error",
			wantIs:  syscall.EIO,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, tt.tree)
			orig := readFile
			t.Cleanup(func() { readFile = orig })
			readFile = func(name string) ([]byte, error) {
				return nil, &fs.PathError{Op: "open", Path: name, Err: tt.readErr}
			}
			_, err := ReadSysctlConfig(root)
			if err == nil {
				t.Fatal("ReadSysctlConfig: got nil error")
			}
			if got := err.Error(); got != tt.wantErr {
				t.Errorf("error = %q, want %q", got, tt.wantErr)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
		})
	}
}

func TestConfigEffectiveAndConflicts(t *testing.T) {
	tests := []struct {
		name          string
		tree          tree
		wantEffective map[string]string // key -> "value @ file:line"
		wantConflicts []Conflict
	}{
		{
			name: "whitespace-only difference is not a conflict",
			tree: tree{
				"/usr/lib/sysctl.d/50-a.conf": "net.ipv4.tcp_rmem = 4096 87380 6291456\n",
				"/etc/sysctl.d/60-b.conf":     "net.ipv4.tcp_rmem =4096\t87380    6291456\n",
			},
			wantEffective: map[string]string{"net.ipv4.tcp_rmem": "4096 87380 6291456 @ /etc/sysctl.d/60-b.conf:1"},
		},
		{
			name: "same value twice is not a conflict",
			tree: tree{
				"/etc/sysctl.d/10-a.conf": "net.core.rmem_max = 1\nnet/core/rmem_max = 1\n",
			},
			wantEffective: map[string]string{"net.core.rmem_max": "1 @ /etc/sysctl.d/10-a.conf:2"},
		},
		{
			name: "conflict across two sysctl.d files, later file wins",
			tree: tree{
				"/usr/lib/sysctl.d/50-default.conf": "net.core.default_qdisc = fq_codel\nkernel.pid_max = 4194304\n",
				"/etc/sysctl.d/90-tuning.conf":      "net.core.default_qdisc = fq\n",
			},
			wantEffective: map[string]string{
				"net.core.default_qdisc": "fq @ /etc/sysctl.d/90-tuning.conf:1",
				"kernel.pid_max":         "4194304 @ /usr/lib/sysctl.d/50-default.conf:2",
			},
			wantConflicts: []Conflict{{
				Key: "net.core.default_qdisc",
				Assignments: []Assignment{
					{Key: "net.core.default_qdisc", Value: "fq_codel", File: "/usr/lib/sysctl.d/50-default.conf", Line: 1},
					{Key: "net.core.default_qdisc", Value: "fq", File: "/etc/sysctl.d/90-tuning.conf", Line: 1},
				},
			}},
		},
		{
			name: "sysctl.conf beats a later-sorting sysctl.d file",
			tree: tree{
				"/etc/sysctl.d/zz-tuning.conf": "net.ipv4.tcp_wmem = 4096 16384 33554432\nnet.core.wmem_max = 33554432\n",
				"/etc/sysctl.d/99-sysctl.conf": "-> ../sysctl.conf",
				"/etc/sysctl.conf":             "net.ipv4.tcp_wmem = 4096 16384 4194304\nnet.core.wmem_max = 4194304\nnet.core.wmem_max = 8388608\n",
			},
			wantEffective: map[string]string{
				"net.ipv4.tcp_wmem": "4096 16384 4194304 @ /etc/sysctl.conf:1",
				"net.core.wmem_max": "8388608 @ /etc/sysctl.conf:3",
			},
			wantConflicts: []Conflict{
				{
					Key: "net.core.wmem_max",
					Assignments: []Assignment{
						{Key: "net.core.wmem_max", Value: "33554432", File: "/etc/sysctl.d/zz-tuning.conf", Line: 2},
						{Key: "net.core.wmem_max", Value: "4194304", File: "/etc/sysctl.conf", Line: 2},
						{Key: "net.core.wmem_max", Value: "8388608", File: "/etc/sysctl.conf", Line: 3},
					},
				},
				{
					Key: "net.ipv4.tcp_wmem",
					Assignments: []Assignment{
						{Key: "net.ipv4.tcp_wmem", Value: "4096 16384 33554432", File: "/etc/sysctl.d/zz-tuning.conf", Line: 1},
						{Key: "net.ipv4.tcp_wmem", Value: "4096 16384 4194304", File: "/etc/sysctl.conf", Line: 1},
					},
				},
			},
		},
		{
			name: "masked vendor file does not conflict",
			tree: tree{
				"/usr/lib/sysctl.d/50-default.conf": "net.core.default_qdisc = fq_codel\n",
				"/etc/sysctl.d/50-default.conf":     "-> /dev/null",
				"/etc/sysctl.d/60-qdisc.conf":       "net.core.default_qdisc = fq\n",
			},
			wantEffective: map[string]string{"net.core.default_qdisc": "fq @ /etc/sysctl.d/60-qdisc.conf:1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ReadSysctlConfig(writeTree(t, tt.tree))
			if err != nil {
				t.Fatalf("ReadSysctlConfig: %v", err)
			}
			gotEffective := make(map[string]string)
			for k, a := range c.Effective() {
				if k != a.Key {
					t.Errorf("Effective()[%q] has Key %q", k, a.Key)
				}
				gotEffective[k] = a.Value + " @ " + a.File + ":" + strconv.Itoa(a.Line)
			}
			if diff := cmp.Diff(tt.wantEffective, gotEffective, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Effective() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantConflicts, c.Conflicts(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Conflicts() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConflictsNormalisesHandBuiltValues(t *testing.T) {
	c := Config{Assignments: []Assignment{
		{Key: "k", Value: " 1  2 "},
		{Key: "k", Value: "1\t2"},
	}}
	if got := c.Conflicts(); len(got) != 0 {
		t.Errorf("Conflicts() = %v, want none", got)
	}
}
