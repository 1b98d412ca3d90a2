//go:build linux

package lab

import (
	"errors"
	"golang.org/x/sys/unix"

	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/scenario"
	"github.com/longhaul/longhaul/internal/topo"
)

// peerPackages names the Debian package that provides each peer.
var peerPackages = map[string]string{
	"nginx":   "nginx-light (or nginx)",
	"curl":    "curl",
	"iperf3":  "iperf3",
	"tcpdump": "tcpdump",
	"ip":      "iproute2",
	"ping":    "iputils-ping",
}

// peersFor lists the programs a scenario's cases need.
func peersFor(s *scenario.Scenario) []string {
	need := []string{"ip"}
	add := func(names ...string) {
		for _, n := range names {
			if !slices.Contains(need, n) {
				need = append(need, n)
			}
		}
	}
	for _, c := range s.Cases {
		switch c.Kind {
		case scenario.KindDownload, scenario.KindObject, scenario.KindUpload:
			add("nginx", "curl")
		case scenario.KindIperf:
			add("iperf3")
		case scenario.KindPing:
			add("ping")
		case scenario.KindCauses:
			add("tcpdump")
		}
		if c.Ping > 0 {
			add("ping")
		}
		if c.Capture {
			add("tcpdump")
		}
	}
	return need
}

// CheckPeers fails with bad input (badinput) naming the package to install when a
// program the scenario needs is missing.
func CheckPeers(s *scenario.Scenario) error { return checkNames(s, peersFor(s)) }

func checkNames(s *scenario.Scenario, names []string) error {
	for _, name := range names {
		if _, err := lookPath(name); err != nil {
			return inputf("scenario %s needs %s, which is not installed: apt-get install %s", s.Name, name, peerPackages[name])
		}
	}
	return nil
}

// lookPath finds a program also in the sbin directories, which a
// non-login root shell may not have on PATH.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// Ports the peers listen on in the server namespace.
const (
	httpPort  = 8080
	iperfPort = 5201
)

// bigFile is the download object: sparse, so it costs no disk, and far
// larger than any timed run can move.
const bigFileSize = 1 << 40

// site is a directory with an nginx configuration and the files it
// serves, shared by every run of a lab invocation.
type site struct {
	dir string
	// shm holds the big file when it is on tmpfs (see bigFile).
	shm string
}

// shmDir is where the big file goes when it is a tmpfs.
const shmDir = "/dev/shm"

// bigFile creates the sparse download object. On a disk file system
// every page of a hole that nginx sends is first allocated and zeroed in
// the page cache, in nginx's thread: at 450 Mbit/s that took a core's
// worth of bursts and stalled the emulator's writers 15-30 ms in the
// first run of each invocation (measured with perf: nginx in
// ext4_mpage_readpages/zero_user_segments while the writers waited), so
// that run was thrown out. On tmpfs a hole reads as the shared zero page:
// no allocation, no zeroing, no memory. The file is linked into www.
func (s *site) bigFile() error {
	target := filepath.Join(s.dir, "www", "big")
	var st unix.Statfs_t
	if unix.Statfs(shmDir, &st) == nil && st.Type == unix.TMPFS_MAGIC {
		if d, err := os.MkdirTemp(shmDir, sitePrefix()); err == nil {
			s.shm = d
			if err := os.Chmod(d, 0o755); err == nil {
				if err := sparse(filepath.Join(d, "big")); err == nil {
					return os.Symlink(filepath.Join(d, "big"), target)
				}
			}
		}
	}
	return sparse(target)
}

func sparse(name string) error {
	f, err := os.Create(name)
	if err == nil {
		err = f.Truncate(bigFileSize)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// newSite creates the files: a sparse big file and objects of the given
// sizes (obj-<bytes>), and an upload body of uploadBytes.
func newSite(objects []int64, uploadBytes int64) (*site, error) {
	reapSites(os.TempDir(), shmDir)
	dir, err := os.MkdirTemp("", sitePrefix())
	if err != nil {
		return nil, err
	}
	s := &site{dir: dir}
	for _, d := range []string{"www", "tmp", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			s.remove()
			return nil, err
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		s.remove()
		return nil, err
	}
	err = s.bigFile()
	for _, n := range objects {
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "www", fmt.Sprintf("obj-%d", n)), bytes.Repeat([]byte{'x'}, int(n)), 0o644)
		}
	}
	if err == nil && uploadBytes > 0 {
		err = os.WriteFile(s.uploadBody(), bytes.Repeat([]byte{'u'}, int(uploadBytes)), 0o644)
	}
	if err != nil {
		s.remove()
		return nil, fmt.Errorf("lab: prepare files: %w", err)
	}
	return s, nil
}

// sitePrefix names a site's directories after the process that owns
// them ("longhaul-lab-p1234-..."), so that a later lab can tell a killed
// run's leftovers (a 1 TB sparse file in /dev/shm among them) from a
// live run's.
func sitePrefix() string { return fmt.Sprintf("longhaul-lab-p%d-", os.Getpid()) }

// reapSites removes the site directories in dirs whose owner is gone.
func reapSites(dirs ...string) {
	for _, d := range dirs {
		matches, _ := filepath.Glob(filepath.Join(d, "longhaul-lab-p*-*"))
		for _, m := range matches {
			var pid int
			if _, err := fmt.Sscanf(filepath.Base(m), "longhaul-lab-p%d-", &pid); err != nil || pid <= 0 || pid == os.Getpid() {
				continue
			}
			if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
				_ = os.RemoveAll(m)
			}
		}
	}
}

func (s *site) uploadBody() string { return filepath.Join(s.dir, "upload.bin") }

func (s *site) remove() {
	_ = os.RemoveAll(s.dir)
	if s.shm != "" {
		_ = os.RemoveAll(s.shm)
	}
}

var nginxConf = template.Must(template.New("nginx").Parse(`# written by longhaul lab for one run
daemon off;
master_process on;
worker_processes 1;
user root;
pid {{.Dir}}/tmp/nginx.pid;
error_log {{.Dir}}/logs/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 5;
    client_body_temp_path {{.Dir}}/tmp/body;
    proxy_temp_path {{.Dir}}/tmp/proxy;
    fastcgi_temp_path {{.Dir}}/tmp/fastcgi;
    uwsgi_temp_path {{.Dir}}/tmp/uwsgi;
    scgi_temp_path {{.Dir}}/tmp/scgi;
    server {
        listen {{.Addr}}:{{.Port}}{{if .RcvBuf}} rcvbuf={{.RcvBuf}}{{end}};
        root {{.Dir}}/www;
        location /upload {
            # Read the whole body before answering, like an application
            # behind a proxy: the upload time is the body's transfer.
            client_max_body_size 1g;
            client_body_buffer_size 16m;
            proxy_pass http://127.0.0.1:{{.Internal}};
        }
    }
    server {
        listen 127.0.0.1:{{.Internal}};
        location / { return 200 "stored\n"; }
    }
}
`))

// startNginx writes the configuration for one run and starts nginx in
// the server's namespace; it returns when nginx listens.
func (s *site) startNginx(ctx context.Context, sv topo.End, rcvbuf int64) (*exec.Cmd, error) {
	conf := filepath.Join(s.dir, "nginx.conf")
	var b bytes.Buffer
	if err := nginxConf.Execute(&b, map[string]any{"Dir": s.dir, "Addr": sv.Addr, "Port": httpPort, "RcvBuf": rcvbuf, "Internal": httpPort + 1}); err != nil {
		return nil, err
	}
	if err := os.WriteFile(conf, b.Bytes(), 0o644); err != nil {
		return nil, err
	}
	bin, err := lookPath("nginx")
	if err != nil {
		return nil, err
	}
	cmd := sv.Command(ctx, bin, "-p", s.dir, "-c", conf, "-e", filepath.Join(s.dir, "logs", "error.log"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	if err := emupath.WaitListening(ctx, cmd, sv.Netns, httpPort, "nginx", 10*time.Second); err != nil {
		stop(cmd)
		log, _ := os.ReadFile(filepath.Join(s.dir, "logs", "error.log"))
		return nil, fmt.Errorf("%w: %s", err, lastLine(stderr.String()+string(log)))
	}
	return cmd, nil
}

// stop ends a peer: SIGTERM so that it can flush (tcpdump), then SIGKILL
// of its process group after a grace period; it waits for it.
func stop(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = cmd.Cancel()
		<-done
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
