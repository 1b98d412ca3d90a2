//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// run2s runs bin with args and stdin (nil: none) for at most 5 s.
func run2s(t *testing.T, bin string, stdin []byte, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v still running after 5 s: %s", args, e.String())
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// oneLine fails t unless the command was refused as bad input: exit 2,
// nothing on stdout, one short line on stderr.
func oneLine(t *testing.T, what, stdout, stderr string, code int) {
	t.Helper()
	if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || len(stderr) > 400 {
		t.Errorf("%s: exit %d, %d bytes on stdout, stderr %.300q; want exit 2 and one short line", what, code, len(stdout), stderr)
	}
}

// A token, certificate or key file that is not a file (/dev/zero, a
// FIFO) is the user's mistake: the exporter exits 2 as serve does (it
// exited 1).
func TestExporterSecretFilesBadInput(t *testing.T) {
	bin := underTest(t)
	dir := t.TempDir()
	fifo, cert := filepath.Join(dir, "fifo"), filepath.Join(dir, "cert.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cert, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"token /dev/zero":       {"--auth-token-file", "/dev/zero"},
		"token fifo":            {"--auth-token-file", fifo},
		"certificate /dev/zero": {"--tls-cert-file", "/dev/zero", "--tls-key-file", "/dev/zero"},
		"key fifo":              {"--tls-cert-file", cert, "--tls-key-file", fifo},
		"certificate not PEM":   {"--tls-cert-file", cert, "--tls-key-file", cert},
	} {
		out, errOut, code := run2s(t, bin, nil, append([]string{"exporter", "--listen", "127.0.0.1:0"}, args...)...)
		oneLine(t, name, out, errOut, code)
	}
}

// One rule for the secret files of every command: a token file that is
// missing is the run's failure (exit 1, as any missing input file), one
// that is not a token the user's (exit 2), each one line. serve and test
// exited 2 for a missing file, the exporter 1.
func TestSecretFilesOneRule(t *testing.T) {
	bin := underTest(t)
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, cmd := range map[string]func(token string) []string{
		"serve": func(tok string) []string { return []string{"serve", "--auth", tok, "--listen", "127.0.0.1:0"} },
		"test":  func(tok string) []string { return []string{"test", "127.0.0.1:1", "--auth", tok} },
		"exporter": func(tok string) []string {
			return []string{"exporter", "--listen", "127.0.0.1:0", "--auth-token-file", tok}
		},
		"probe-auth": func(tok string) []string {
			return []string{"exporter", "--listen", "127.0.0.1:0", "--probe-allow", "198.18.0.0/15", "--probe-auth", tok}
		},
	} {
		out, errOut, code := run2s(t, bin, nil, cmd(filepath.Join(dir, "missing"))...)
		if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no such file") {
			t.Errorf("%s with a missing token file: exit %d, stderr %.300q; want exit 1 and one line", name, code, errOut)
		}
		out, errOut, code = run2s(t, bin, nil, cmd(short)...)
		oneLine(t, name+" with a 3-byte token", out, errOut, code)
	}
}

// A world-writable --state-dir with a planted ".lock" symbolic link:
// rollback took the journal lock before refusing the directory, and the
// lock's open (O_CREATE, following the link) made root create the link's
// target. Every command refuses it untouched, in its own name.
func TestPlantedLockLinkNotFollowed(t *testing.T) {
	bin := underTest(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "created-by-rollback")
	if err := os.Symlink(target, filepath.Join(dir, ".lock")); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if out, errOut, code := exe(t, bin, "plan", "--root", "../../testdata/hosts/ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s", "-o", planFile); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"rollback", "--state-dir", dir},
		{"rollback", "1", "--state-dir", dir},
		{"rollback", "--dry-run", "--state-dir", dir},
		{"rollback", "--list", "--state-dir", dir},
		{"apply", "--root", t.TempDir(), "--state-dir", dir, planFile},
	} {
		out, errOut, code := run2s(t, bin, nil, args...)
		oneLine(t, strings.Join(args, " "), out, errOut, code)
		if !strings.HasPrefix(errOut, "longhaul: "+args[0]+": ") || !strings.Contains(errOut, "writable by group or others") {
			t.Errorf("%v: %q; want the directory refused in %s's name", args, errOut, args[0])
		}
		if _, err := os.Lstat(target); err == nil {
			t.Fatalf("%v created the planted link's target %s", args, target)
		}
	}
}

// audit --against prints the plan's keys: a 100 KB key was printed raw
// (exit 4), and a key with a newline forged an "OK" line. Both are
// refused in one line that quotes the key cut short.
func TestAuditAgainstHostilePlan(t *testing.T) {
	bin := underTest(t)
	const root = "../../testdata/hosts/ubuntu-2004"
	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.json")
	if out, errOut, code := exe(t, bin, "plan", "--root", root, "--rtt", "200ms", "--rate", "1Gbit/s", "-o", planFile); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ key, want string }{
		"100 KB key":     {"net." + strings.Repeat("a", 100<<10), `"net.aaaa`},
		"key with lines": {"net.ipv4.x\nOK      net.ipv4.tcp_rmem\n  4096 131072 6291456", `"net.ipv4.x\nOK`},
		"escape codes":   {"net.ipv4.\x1b[2J\x1b[Hx", `\x1b[2J`},
	} {
		var p map[string]any
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		p["items"].([]any)[0].(map[string]any)["key"] = tc.key
		hostile, _ := json.Marshal(p)
		file := filepath.Join(dir, "hostile.json")
		if err := os.WriteFile(file, hostile, 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := run2s(t, bin, nil, "audit", "--root", root, "--against", file)
		oneLine(t, name, out, errOut, code)
		if !strings.Contains(errOut, tc.want) || strings.ContainsAny(strings.TrimSuffix(errOut, "\n"), "\n\x1b") {
			t.Errorf("%s: %.300q; want the key quoted (%s...), without control characters", name, errOut, tc.want)
		}
	}
}

// bigLab writes a lab results file of about size bytes: the upload
// bench's header and its 3 repeats of 4 cases, then further repeats of
// the same runs (each first case's carries 1,490 tcp_info samples). size 0: the header
// and the runs without samples.
func bigLab(t *testing.T, size int) string {
	t.Helper()
	b, err := os.ReadFile("../../bench/lab-upload/results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var out bytes.Buffer
	out.WriteString(lines[0] + "\n")
	repeat := regexp.MustCompile(`"repeat":(\d+),`)
	for r := 0; out.Len() < size || r == 0; r++ {
		for _, l := range lines[1:] {
			if size == 0 && strings.Contains(l, `"samples"`) {
				continue
			}
			l = repeat.ReplaceAllStringFunc(l, func(m string) string {
				n, _ := strconv.Atoi(repeat.FindStringSubmatch(m)[1])
				return `"repeat":` + strconv.Itoa(n+3*r) + `,`
			})
			out.WriteString(l + "\n")
		}
	}
	return writeInput(t, "results.jsonl", out.Bytes())
}

// bigTest writes a test document (longhaul.test/v1) of about size bytes:
// the walkthrough's, each phase's tcp_info samples copied a little later
// until it is that large. size 0: the document as it is.
func bigTest(t *testing.T, size int) string {
	t.Helper()
	b, err := os.ReadFile("../../internal/report/testdata/test-walkthrough.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, ph := range doc["phases"].([]any) {
		ph := ph.(map[string]any)
		samples := ph["samples"].([]any)
		var more []any
		for i := range size / len(b) {
			for _, s := range samples {
				c := maps.Clone(s.(map[string]any))
				c["t"] = c["t"].(float64) + float64(i)*1e-4
				more = append(more, c)
			}
		}
		all := append(samples, more...)
		sort.SliceStable(all, func(i, j int) bool {
			return all[i].(map[string]any)["t"].(float64) < all[j].(map[string]any)["t"].(float64)
		})
		ph["samples"] = all
	}
	// The schema first, as test writes it: report tells documents
	// apart by their first bytes.
	schema := doc["schema"]
	delete(doc, "schema")
	rest, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := json.Marshal(schema)
	return writeInput(t, "test.json", append([]byte(`{"schema":`+string(head)+`,`), rest[1:]...))
}

func writeInput(t *testing.T, name string, b []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// rssOf names, in the environment of this test binary run again, a
// command to run and measure (JSON: its arguments).
const rssOf = "LONGHAUL_TEST_RSS_OF"

// peakRSS runs report on in and returns the command's peak resident set.
// It runs it from this test binary started afresh: a child's ru_maxrss
// starts at its parent's high-water mark (Go starts children with
// vfork, and exec keeps the old memory's peak), and this process holds
// the inputs it generated.
func peakRSS(t *testing.T, bin, in string) int64 {
	t.Helper()
	argv, _ := json.Marshal([]string{bin, "report", in, "-o", filepath.Join(t.TempDir(), "report.html")})
	cmd := exec.Command(os.Args[0], "-test.run=^TestReportMemoryChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), rssOf+"="+string(argv))
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`(?m)^maxrss (\d+)$`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("report %s: %v\n%s", filepath.Base(in), err, out)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// TestReportMemoryChild is TestReportMemory's small parent: run with
// LONGHAUL_TEST_RSS_OF, it runs that command and prints its peak RSS.
func TestReportMemoryChild(t *testing.T) {
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv(rssOf)), &argv); err != nil || len(argv) == 0 {
		t.Skip("TestReportMemory runs it")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, e.String())
	}
	fmt.Printf("maxrss %d\n", cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10) // KiB on Linux
}

// report's memory grows with its input by a small factor, beyond the
// binary's own (issue: "report uses ~27x its input", which was the
// binary's baseline over a small input). Each kind of document, ~50 MB
// of it, must stay under the baseline measured on a small one plus 5x
// its size.
func TestReportMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: writes and reports 50 MB documents (9 s)")
	}
	bin := underTest(t)
	const size = 50 << 20
	for name, gen := range map[string]func(*testing.T, int) string{"lab results": bigLab, "test document": bigTest} {
		t.Run(name, func(t *testing.T) {
			base := peakRSS(t, bin, gen(t, 0))
			big := gen(t, size)
			fi, err := os.Stat(big)
			if err != nil {
				t.Fatal(err)
			}
			peak := peakRSS(t, bin, big)
			ratio := float64(peak-base) / float64(fi.Size())
			t.Logf("%s: %.1f MB input, peak RSS %.1f MB, %.1f MB for a small one: %.2fx the input beyond it", name, float64(fi.Size())/1e6, float64(peak)/1e6, float64(base)/1e6, ratio)
			if peak > base+5*fi.Size() {
				t.Errorf("report of %.1f MB peaked at %.1f MB (%.2fx the input beyond the %.1f MB of a small one); want under 5x", float64(fi.Size())/1e6, float64(peak)/1e6, ratio, float64(base)/1e6)
			}
		})
	}
}

// serve and the exporter end on SIGINT and SIGTERM with status 0, their
// normal end (the README says so; systemd counts it a clean stop).
func TestServersExitZeroOnSignal(t *testing.T) {
	bin := underTest(t)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("signal-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	servers := map[string]struct {
		args  []string
		ready string
	}{
		"serve":    {[]string{"serve", "--auth", token, "--listen", "127.0.0.1:0"}, "msg=serving"},
		"exporter": {[]string{"exporter", "--listen", "127.0.0.1:0"}, "serving metrics"},
	}
	for name, s := range servers {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(name+" "+sig.String(), func(t *testing.T) {
				if name == "exporter" && os.Geteuid() != 0 {
					t.Skip("the exporter reads every socket: root")
				}
				logs := &lockedBuf{}
				cmd := exec.Command(bin, s.args...)
				cmd.Stderr = logs
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), s.ready); time.Sleep(20 * time.Millisecond) {
					select {
					case err := <-done:
						t.Fatalf("%s ended before the signal: %v\n%s", name, err, logs)
					default:
					}
					if time.Now().After(deadline) {
						_ = cmd.Process.Kill()
						<-done
						t.Fatalf("%s not serving after 10 s:\n%s", name, logs)
					}
				}
				sent := time.Now()
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-done
					t.Fatalf("%s still running 10 s after %v", name, sig)
				}
				if code := cmd.ProcessState.ExitCode(); code != 0 {
					t.Errorf("%s: exit %d %v after %v; want 0\n%s", name, code, time.Since(sent).Round(time.Millisecond), sig, logs)
				}
			})
		}
	}
}
