package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// commit is the source revision; the build sets it with -ldflags
// "-X github.com/longhaul/longhaul/internal/cli.commit=..." (Debian's
// and CI's builds run with -buildvcs=false, so the binary's own VCS
// stamp is only a fallback).
var commit = ""

// BuildInfo says which longhaul this is.
type BuildInfo struct {
	Schema    string `json:"schema"`
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// Build returns the running binary's build information: the version and
// commit the build stamped, else what the Go toolchain recorded
// (runtime/debug: the module version of go install, vcs.revision).
func Build() BuildInfo {
	b := BuildInfo{Schema: "longhaul.version/v1", Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return orUnknownCommit(b)
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	if b.Commit == "" {
		dirty := ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if b.Commit != "" {
			b.Commit += dirty
		}
	}
	return orUnknownCommit(b)
}

func orUnknownCommit(b BuildInfo) BuildInfo {
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

// versionLine is what --version prints.
func (b BuildInfo) versionLine() string {
	return fmt.Sprintf("longhaul %s (commit %s, %s, %s)\n", b.Version, b.Commit, b.GoVersion, b.Platform)
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print longhaul's version, commit and Go version",
		Long: `version prints which longhaul this is: the version and commit it was built
from and the Go toolchain that built it (also: longhaul --version).`,
		Example: `  longhaul version
  longhaul version --json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return printVersion(c.OutOrStdout(), asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema longhaul.version/v1)")
	return c
}

func printVersion(w io.Writer, asJSON bool) error {
	b := Build()
	if asJSON {
		return writeJSON(w, b)
	}
	_, err := fmt.Fprintf(w, "longhaul %s\ncommit:   %s\ngo:       %s\nplatform: %s\n", b.Version, b.Commit, b.GoVersion, b.Platform)
	return err
}
