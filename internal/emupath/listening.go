package emupath

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// parseListening counts LISTEN (state 0A) entries of a /proc/net/tcp
// table whose local port is port (any if 0).
func parseListening(r io.Reader, port int) (int, error) {
	sc := bufio.NewScanner(r)
	n, first := 0, true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		if port > 0 {
			_, hex, ok := strings.Cut(f[1], ":")
			p, err := strconv.ParseUint(hex, 16, 16)
			if !ok || err != nil || int(p) != port {
				continue
			}
		}
		n++
	}
	return n, sc.Err()
}
