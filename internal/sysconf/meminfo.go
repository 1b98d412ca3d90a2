package sysconf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ReadMemTotal returns MemTotal, in bytes, from procRoot/meminfo.
func ReadMemTotal(procRoot string) (int64, error) {
	name := filepath.Join(procRoot, "meminfo")
	f, err := os.Open(name)
	if err != nil {
		return 0, fmt.Errorf("sysconf: read %s: %w", name, bare(err))
	}
	defer f.Close()
	m, err := parseMeminfo(f)
	if err != nil {
		return 0, fmt.Errorf("sysconf: parse %s: %w", name, err)
	}
	total, ok := m["MemTotal"]
	if !ok {
		return 0, fmt.Errorf("sysconf: parse %s: no MemTotal line", name)
	}
	return total, nil
}

// parseMeminfo parses /proc/meminfo. Values are in bytes: fields in "kB"
// (which the kernel means as KiB) are multiplied by 1024, fields without a
// unit (HugePages_Total) are kept as they are.
func parseMeminfo(r io.Reader) (map[string]int64, error) {
	m := make(map[string]int64)
	sc := bufio.NewScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		key, rest, ok := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("line %d: want \"Key: value [kB]\", got %q", lineNo, line)
		}
		fields := strings.Fields(rest)
		if len(fields) < 1 || len(fields) > 2 {
			return nil, fmt.Errorf("line %d: want \"Key: value [kB]\", got %q", lineNo, line)
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) {
				err = ne.Err
			}
			return nil, fmt.Errorf("line %d: %s value %q: %w", lineNo, key, fields[0], err)
		}
		if len(fields) == 2 {
			if fields[1] != "kB" {
				return nil, fmt.Errorf("line %d: %s: unknown unit %q", lineNo, key, fields[1])
			}
			if v > math.MaxInt64/1024 || v < math.MinInt64/1024 {
				return nil, fmt.Errorf("line %d: %s value %s kB: %w", lineNo, key, fields[0], strconv.ErrRange)
			}
			v *= 1024
		}
		m[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}
