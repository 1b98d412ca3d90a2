package sysconf

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKernelRelease(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    Kernel
		wantErr string
	}{
		{name: "custom build", input: "6.18.44-fc-v657", want: Kernel{Release: "6.18.44-fc-v657", Major: 6, Minor: 18, Patch: 44}},
		{name: "debian", input: "6.1.0-27-amd64", want: Kernel{Release: "6.1.0-27-amd64", Major: 6, Minor: 1, Patch: 0}},
		{name: "ubuntu", input: "5.15.0-91-generic", want: Kernel{Release: "5.15.0-91-generic", Major: 5, Minor: 15, Patch: 0}},
		{name: "plain three part", input: "4.19.0", want: Kernel{Release: "4.19.0", Major: 4, Minor: 19, Patch: 0}},
		{name: "two part", input: "6.6", want: Kernel{Release: "6.6", Major: 6, Minor: 6}},
		{name: "rhel 7", input: "3.10.0-1160.el7.x86_64", want: Kernel{Release: "3.10.0-1160.el7.x86_64", Major: 3, Minor: 10, Patch: 0}},
		{name: "release candidate", input: "6.13.0-rc3+", want: Kernel{Release: "6.13.0-rc3+", Major: 6, Minor: 13}},
		{name: "two part with suffix", input: "6.6-rc1", want: Kernel{Release: "6.6-rc1", Major: 6, Minor: 6}},
		{name: "trailing newline from osrelease", input: "6.8.0-45-generic\n", want: Kernel{Release: "6.8.0-45-generic", Major: 6, Minor: 8}},
		{name: "four part", input: "2.6.32.71", want: Kernel{Release: "2.6.32.71", Major: 2, Minor: 6, Patch: 32}},
		{name: "empty", input: "", wantErr: `sysconf: parse kernel release "": empty release`},
		{name: "blank", input: " \n", wantErr: `sysconf: parse kernel release " \n": empty release`},
		{name: "letters", input: "abc", wantErr: `sysconf: parse kernel release "abc": major version: not a number`},
		{name: "major only", input: "6", wantErr: `sysconf: parse kernel release "6": no minor version, want MAJOR.MINOR[.PATCH]`},
		{name: "major with suffix", input: "6-generic", wantErr: `sysconf: parse kernel release "6-generic": no minor version, want MAJOR.MINOR[.PATCH]`},
		{name: "dot without minor", input: "6.x", wantErr: `sysconf: parse kernel release "6.x": minor version: not a number`},
		{name: "signed", input: "+6.1", wantErr: `sysconf: parse kernel release "+6.1": major version: not a number`},
		{name: "huge", input: "99999999999999999999.1", wantErr: `sysconf: parse kernel release "99999999999999999999.1": major version: value out of range`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKernelRelease(tt.input)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseKernelRelease(%q) error = %v, want %q", tt.input, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKernelRelease(%q): %v", tt.input, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseKernelRelease(%q) mismatch (-want +got):\n%s", tt.input, diff)
			}
		})
	}
}

func TestKernelAtLeast(t *testing.T) {
	k := Kernel{Release: "5.15.0-91-generic", Major: 5, Minor: 15}
	tests := []struct {
		name         string
		major, minor int
		want         bool
	}{
		{name: "same", major: 5, minor: 15, want: true},
		{name: "older minor", major: 5, minor: 4, want: true},
		{name: "older major, larger minor", major: 4, minor: 19, want: true},
		{name: "newer minor", major: 5, minor: 16, want: false},
		{name: "newer major, smaller minor", major: 6, minor: 1, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := k.AtLeast(tt.major, tt.minor); got != tt.want {
				t.Errorf("%s AtLeast(%d, %d) = %v, want %v", k.Release, tt.major, tt.minor, got, tt.want)
			}
		})
	}
}

func TestKernelJSON(t *testing.T) {
	b, err := json.Marshal(Kernel{Release: "6.1.0-27-amd64", Major: 6, Minor: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"release":"6.1.0-27-amd64","major":6,"minor":1,"patch":0}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON mismatch (-want +got):\n%s", diff)
	}
}

func TestReadKernel(t *testing.T) {
	root := writeTree(t, tree{"/sys/kernel/osrelease": "6.1.0-27-amd64\n"})
	got, err := ReadKernel(root)
	if err != nil {
		t.Fatalf("ReadKernel: %v", err)
	}
	want := Kernel{Release: "6.1.0-27-amd64", Major: 6, Minor: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadKernel mismatch (-want +got):\n%s", diff)
	}
	if _, err := ReadKernel(t.TempDir()); err == nil {
		t.Error("ReadKernel on an empty root: got nil error")
	}
}
