package topo

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// state is the content of a run's state file. Together with the boot id
// and the process start time it identifies the owner across PID reuse.
type state struct {
	Version    int      `json:"version"`
	Prefix     string   `json:"prefix"`
	RunID      string   `json:"run_id"`
	Namespaces []string `json:"namespaces"`
	PID        int      `json:"pid"`
	// StartTime is field 22 of /proc/PID/stat: clock ticks after boot.
	StartTime uint64 `json:"start_time"`
	// BootID is /proc/sys/kernel/random/boot_id.
	BootID  string    `json:"boot_id,omitempty"`
	Created time.Time `json:"created"`
}

const stateVersion = 1

// procStat is what Reap needs from /proc/PID/stat.
type procStat struct {
	State     byte   // field 3: R, S, D, Z, X, ...
	StartTime uint64 // field 22
}

// parseProcStat parses /proc/PID/stat (proc(5)). The command name (field
// 2) is in parentheses and may itself contain spaces and ')', so fields
// are counted from the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat: no command name")
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3
	const startField = 22
	if len(f) < startField-2 {
		return procStat{}, fmt.Errorf("stat: %d fields, want at least %d", len(f)+2, startField)
	}
	if len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("stat: bad state %q", f[0])
	}
	start, err := strconv.ParseUint(string(f[startField-3]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat: bad start time %q", f[startField-3])
	}
	return procStat{State: f[0][0], StartTime: start}, nil
}

// dead reports whether st describes an exited process: a zombie (Z) or
// one being reaped (X) holds no resources of ours any more.
func (st procStat) dead() bool { return st.State == 'Z' || st.State == 'X' }

// runNames matches the names of one prefix's resources.
type runNames struct{ ns, state *regexp.Regexp }

func namesFor(prefix string) runNames {
	p := regexp.QuoteMeta(prefix)
	return runNames{
		ns:    regexp.MustCompile(fmt.Sprintf(`^%s-([0-9a-f]{%d})-[cs]$`, p, runIDLen)),
		state: regexp.MustCompile(fmt.Sprintf(`^%s-([0-9a-f]{%d})\.json$`, p, runIDLen)),
	}
}

// runIDLen is the number of hex digits in a run id (40 random bits).
const runIDLen = 10
