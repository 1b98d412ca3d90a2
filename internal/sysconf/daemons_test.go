package sysconf

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestFindDaemons(t *testing.T) {
	all := append(TuningDaemons(), NetworkDaemons()...)
	tests := []struct {
		name  string
		tree  tree
		names []string
		want  []Process
	}{
		{
			name: "found by comm",
			tree: tree{
				"/1/comm":      "systemd\n",
				"/1/cmdline":   "/sbin/init\x00splash\x00",
				"/812/comm":    "NetworkManager\n",
				"/812/cmdline": "/usr/sbin/NetworkManager\x00--no-daemon\x00",
				// tuned is a Python script: argv[0] is the interpreter.
				"/1003/comm":    "tuned\n",
				"/1003/cmdline": "/usr/bin/python3\x00-Es\x00/usr/sbin/tuned\x00-l\x00-P\x00",
				// comm is truncated to 15 bytes.
				"/640/comm":    "systemd-network\n",
				"/640/cmdline": "/usr/lib/systemd/systemd-networkd\x00",
			},
			names: all,
			want: []Process{
				{PID: 640, Name: "systemd-networkd"},
				{PID: 812, Name: "NetworkManager"},
				{PID: 1003, Name: "tuned"},
			},
		},
		{
			name: "found by cmdline argv[0] basename",
			tree: tree{
				"/77/comm":    "bpftune-main\n",
				"/77/cmdline": "/usr/sbin/bpftune\x00-s\x00",
				"/78/comm":    "worker\n",
				"/78/cmdline": "/usr/lib/systemd/systemd-networkd\x00",
				// A rewritten process title: one string, no NUL separators.
				"/79/comm":    "nm-helper\n",
				"/79/cmdline": "/usr/sbin/NetworkManager --no-daemon",
				// The name elsewhere in argv does not count.
				"/80/comm":    "vim\n",
				"/80/cmdline": "vim\x00/etc/tuned/tuned-main.conf\x00tuned\x00",
			},
			names: all,
			want: []Process{
				{PID: 77, Name: "bpftune"},
				{PID: 78, Name: "systemd-networkd"},
				{PID: 79, Name: "NetworkManager"},
			},
		},
		{
			name: "non-numeric entries, kernel threads and vanished processes skipped",
			tree: tree{
				"/self":       "-> 42",
				"/sys/":       "",
				"/meminfo":    "MemTotal: 1 kB\n",
				"/0x10/comm":  "tuned\n",
				"/2/comm":     "kthreadd\n",
				"/2/cmdline":  "",
				"/42/comm":    "bpftune\n",
				"/42/cmdline": "bpftune\x00",
				// Exited between readdir and reading comm.
				"/300/": "",
				// Exited between reading comm and cmdline.
				"/301/comm": "sshd\n",
				// A numeric file rather than a directory.
				"/302": "junk",
			},
			names: all,
			want:  []Process{{PID: 42, Name: "bpftune"}},
		},
		{
			name: "only the names asked for",
			tree: tree{
				"/10/comm":    "tuned\n",
				"/10/cmdline": "/usr/bin/python3\x00/usr/sbin/tuned\x00",
				"/11/comm":    "NetworkManager\n",
				"/11/cmdline": "/usr/sbin/NetworkManager\x00",
			},
			names: NetworkDaemons(),
			want:  []Process{{PID: 11, Name: "NetworkManager"}},
		},
		{
			name: "sorted numerically, not lexically",
			tree: tree{
				"/100/comm":  "tuned\n",
				"/99/comm":   "tuned\n",
				"/1000/comm": "tuned\n",
			},
			names: []string{"tuned"},
			want: []Process{
				{PID: 99, Name: "tuned"},
				{PID: 100, Name: "tuned"},
				{PID: 1000, Name: "tuned"},
			},
		},
		{
			name:  "nothing running",
			tree:  tree{"/1/comm": "init\n", "/1/cmdline": "/sbin/init\x00"},
			names: all,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindDaemons(writeTree(t, tt.tree), tt.names)
			if err != nil {
				t.Fatalf("FindDaemons: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("FindDaemons mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindDaemonsMissingProcRoot(t *testing.T) {
	root := t.TempDir() + "/proc"
	_, err := FindDaemons(root, TuningDaemons())
	if err == nil {
		t.Fatal("FindDaemons: got nil error")
	}
	want := "sysconf: read " + root + ": no such file or directory"
	if got := err.Error(); got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

func TestArgv0Base(t *testing.T) {
	tests := []struct {
		name    string
		cmdline string
		want    string
	}{
		{name: "empty", cmdline: "", want: ""},
		{name: "plain", cmdline: "/usr/sbin/bpftune\x00-s\x00", want: "bpftune"},
		{name: "no path", cmdline: "tuned\x00", want: "tuned"},
		{name: "rewritten title", cmdline: "/usr/sbin/NetworkManager --no-daemon", want: "NetworkManager"},
		{name: "rewritten title with trailing NULs", cmdline: "nginx: master process\x00\x00\x00", want: "nginx:"},
		{name: "argv[0] with space kept when more args follow", cmdline: "/opt/my app/d\x00-x\x00", want: "d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := argv0Base([]byte(tt.cmdline)); got != tt.want {
				t.Errorf("argv0Base(%q) = %q, want %q", tt.cmdline, got, tt.want)
			}
		})
	}
}

func TestDaemonNamesAreFresh(t *testing.T) {
	a := TuningDaemons()
	a[0] = "mutated"
	if got := TuningDaemons(); strings.Join(got, ",") != "tuned,bpftune" {
		t.Errorf("TuningDaemons() = %v after mutation", got)
	}
}
