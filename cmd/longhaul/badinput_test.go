package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBadInputEveryCommand feeds every command the inputs that once hurt
// the host or misled the user (endless and huge documents, a FIFO where
// a file must be, directories and devices where a file is expected, a --root that holds
// nothing, numbers out of any physical range) and checks each is refused
// the same way: exit 2, one line on stderr, nothing on stdout, no
// goroutine dump, within 2 s, under a 512 MB data limit.
func TestBadInputEveryCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the binary on every bad input (12 s)")
	}
	bin := binary(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if f, err := os.Create(huge); err != nil || f.Truncate(64<<20) != nil || f.Close() != nil {
		t.Fatalf("sparse file: %v", err)
	}
	path := []string{"--rtt", "200ms", "--rate", "1Gbit/s"}
	// Standard input: /dev/null (a device) unless the case is listed in
	// endless, which gets an endless pipe of zeros.
	endless := map[string]bool{"audit snapshot endless pipe": true, "apply endless pipe": true, "analyze endless pipe": true}
	cases := map[string][]string{
		"audit snapshot endless pipe": {"audit", "--snapshot", "-"},
		"apply endless pipe":          {"apply", "-"},
		"analyze endless pipe":        {"analyze", "-"},
		"plan snapshot stdin device":  append([]string{"plan", "--snapshot", "-"}, path...),
		"audit snapshot device":       {"audit", "--snapshot", "/dev/zero"},
		"audit snapshot directory":    {"audit", "--snapshot", dir},
		"audit snapshot huge":         {"audit", "--snapshot", huge},
		"audit root missing":          {"audit", "--root", filepath.Join(dir, "nothing")},
		"audit root empty":            {"audit", "--root", dir},
		"plan snapshot device":        append([]string{"plan", "--snapshot", "/dev/zero"}, path...),
		"plan snapshot huge":          append([]string{"plan", "--snapshot", huge}, path...),
		"plan root missing":           append([]string{"plan", "--root", filepath.Join(dir, "nothing")}, path...),
		"plan rate overflow":          {"plan", "--rtt", "200ms", "--rate", "1e30bit/s"},
		"apply device":                {"apply", "/dev/zero"},
		"apply directory":             {"apply", dir},
		"apply huge":                  {"apply", huge},
		"rollback state-dir missing":  {"rollback", "--state-dir", filepath.Join(dir, "nothing")},
		"analyze device":              {"analyze", "/dev/zero"},
		"analyze directory":           {"analyze", dir},
		"analyze rate overflow":       {"analyze", "--rate", "1e30bit/s", huge},
		"analyze max-flows zero":      {"analyze", "--max-flows", "0", huge},
		"report fifo":                 {"report", fifo},
		"test judge fifo":             {"test", "--judge", fifo},
		"test judge device":           {"test", "--judge", "/dev/zero"},
		"test judge huge":             {"test", "--judge", huge},
		"test judge with a host":      {"test", "--judge", huge, "198.18.0.2"},
		"test judge with auth":        {"test", "--judge", huge, "--auth", huge},
		"report directory":            {"report", dir},
		"calc rate overflow":          {"calc", "--rtt", "200ms", "--rate", "1e30bit/s"},
		"calc rate zero":              {"calc", "--rtt", "200ms", "--rate", "0bit/s"},
		"calc rtt zero":               {"calc", "--rtt", "0ms", "--rate", "1Gbit/s"},
		"calc ratio NaN":              append([]string{"calc", "--ratio", "NaN"}, path...),
		"calc ratio above one":        append([]string{"calc", "--ratio", "1.5"}, path...),
		"calc flows zero":             append([]string{"calc", "--flows", "0"}, path...),
		"lab rtt zero":                {"lab", "buffers", "--rtt", "0ms"},
		"lab rtt too long":            {"lab", "buffers", "--rtt", "6s"},
		"lab repeat zero":             {"lab", "buffers", "--repeat", "0"},
		"lab repeat negative":         {"lab", "buffers", "--repeat", "-1"},
		"lab retry-invalid too many":  {"lab", "buffers", "--retry-invalid", "6"},
		"lab duration zero":           {"lab", "buffers", "--duration", "0s"},
		"lab queue zero":              {"lab", "buffers", "--queue", "0"},
		"lab queue without unit":      {"lab", "buffers", "--queue", "100000"},
		"emulate queue without unit":  {"emulate", "--rtt", "10ms", "--queue", "100", "--", "true"},
		"lab loss half":               {"lab", "upload", "--loss", "60%"},
		"lab rate overflow":           {"lab", "buffers", "--rate", "1e30bit/s"},
		"emulate queue negative":      {"emulate", "--rtt", "10ms", "--rate", "1Gbit/s", "--queue", "-1bdp", "--", "true"},
		"emulate rtt too long":        {"emulate", "--rtt", "11s", "--", "true"},
		"emulate rate overflow":       {"emulate", "--rtt", "10ms", "--rate", "1e30bit/s", "--", "true"},
		"emulate stats-json missing":  {"emulate", "--rtt", "10ms", "--stats-json", filepath.Join(dir, "no", "s.json"), "--", "true"},
		"verify device":               {"verify", "/dev/zero"},
		"flows interval zero":         {"flows", "--interval", "0s"},
		"flows rate overflow":         {"flows", "--rate", "1e30bit/s"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := exec.Command("sh", append([]string{"-c", `ulimit -d 524288; exec "$0" "$@"`, bin}, args...)...)
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if endless[name] {
				cmd.Stdin = zeros{}
			}
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(2 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("still running after 2 s: %s", errOut.String())
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			msg := errOut.String()
			if code != 2 || out.Len() != 0 || strings.Count(msg, "\n") != 1 || strings.Contains(msg, "goroutine ") {
				t.Errorf("exit %d after %v, stdout %q, stderr %q; want exit 2 and one line", code, time.Since(start).Round(time.Millisecond), out.String(), msg)
			}
		})
	}
}

// zeros is an endless input.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
