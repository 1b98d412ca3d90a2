package netns

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means valid
	}{
		{name: "simple", in: "lh-x"},
		{name: "dots inside", in: "a.b..c"},
		{name: "leading dots", in: "..a"},
		{name: "max length", in: strings.Repeat("a", maxNameLen)},
		{name: "empty", in: "", wantErr: "must not be empty"},
		{name: "dot", in: ".", wantErr: `must not be "." or ".."`},
		{name: "dotdot", in: "..", wantErr: `must not be "." or ".."`},
		{name: "slash", in: "a/b", wantErr: "must not contain '/'"},
		{name: "only slash", in: "/", wantErr: "must not contain '/'"},
		{name: "traversal", in: "../etc", wantErr: "must not contain '/'"},
		{name: "nul", in: "a\x00b", wantErr: "must not contain NUL"},
		{name: "too long", in: strings.Repeat("a", maxNameLen+1), wantErr: "longer than 64 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateName(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("validateName(%q) = %v, want nil", tt.in, err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("validateName(%q) = %v, want ErrInvalidName containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		step     string
		in       error
		wantMsg  string
		wantPerm bool
		wantIs   error
	}{
		{name: "eperm", step: "unshare", in: syscall.EPERM, wantMsg: "operation not permitted", wantPerm: true, wantIs: syscall.EPERM},
		{name: "eacces in path error", step: "create /run/netns/x", in: &os.PathError{Op: "open", Path: "/run/netns/x", Err: syscall.EACCES},
			wantMsg: "permission denied", wantPerm: true, wantIs: syscall.EACCES},
		{name: "other errno keeps step", step: "setns", in: syscall.EINVAL, wantMsg: "setns: invalid argument", wantIs: syscall.EINVAL},
		{name: "no step", in: syscall.ENOENT, wantMsg: "no such file or directory", wantIs: os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := opError("create", "lh-x", classify(tt.step, tt.in))
			if want := "netns: create lh-x: " + tt.wantMsg; err.Error() != want {
				t.Errorf("message = %q, want %q", err, want)
			}
			if got := errors.Is(err, ErrNotPermitted); got != tt.wantPerm {
				t.Errorf("errors.Is(err, ErrNotPermitted) = %v, want %v", got, tt.wantPerm)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(err, %v) = false", tt.wantIs)
			}
		})
	}
	if classify("x", nil) != nil {
		t.Error("classify(nil) != nil")
	}
}

func TestOpErrorQuotesInvalidNames(t *testing.T) {
	err := opError("create", "a\nb", fmt.Errorf("%w: must not contain '/'", ErrInvalidName))
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}

func TestPath(t *testing.T) {
	if got, want := Path("lh-x"), "/run/netns/lh-x"; got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
}
