package scenario

import (
	"fmt"
	"strconv"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// EndState is what one end of a run had in effect, read back from the
// kernel and the peers rather than taken from the case.
type EndState struct {
	// Sysctls are the namespace's values of the keys the runner reads
	// back, white space collapsed; a key the kernel lacks is absent.
	Sysctls map[string]string
	// Route says whether the route metrics were set and read back; then
	// InitCwnd and InitRwnd are those of the route to the peer (segments,
	// 0 the kernel default).
	Route              bool
	InitCwnd, InitRwnd int
	// RcvBuf is the application's SO_RCVBUF request (nginx listen
	// rcvbuf=); 0 none.
	RcvBuf int64
	// SORequested is iperf3 -w; SORcvbuf and SOSndbuf what the kernel
	// gave (iperf3 reports them); 0 none or unknown.
	SORequested, SORcvbuf, SOSndbuf int64
}

// State is both ends' EndState.
type State struct{ Client, Server EndState }

// Triple reads a min/default/max sysctl of the end.
func (e EndState) Triple(key string) (pathmodel.Triple, error) {
	v, ok := e.Sysctls[key]
	if !ok {
		return pathmodel.Triple{}, fmt.Errorf("%s was not read back", key)
	}
	return sysctl.ParseTriple(v)
}

// Int reads an integer sysctl of the end; a key the kernel lacks is 0.
func (e EndState) Int(key string) (int64, error) {
	v, ok := e.Sysctls[key]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an integer", key, v)
	}
	return n, nil
}

// Record keys of values that are not sysctls, in the results file's
// settings (schema longhaul.lab/v1).
const (
	recInitCwnd    = "route.initcwnd"
	recInitRwnd    = "route.initrwnd"
	recRcvBuf      = "nginx.listen.rcvbuf"
	recSORequested = "so.requested"
	recSORcvbuf    = "so.rcvbuf"
	recSOSndbuf    = "so.sndbuf"
)

// Record is the state as the results file stores it: per end, the
// sysctls and the other values under their documented keys.
func (s State) Record() map[string]map[string]string {
	return map[string]map[string]string{"client": s.Client.record(), "server": s.Server.record()}
}

func (e EndState) record() map[string]string {
	out := make(map[string]string, len(e.Sysctls)+4)
	for k, v := range e.Sysctls {
		out[k] = v
	}
	if e.Route {
		out[recInitCwnd], out[recInitRwnd] = strconv.Itoa(e.InitCwnd), strconv.Itoa(e.InitRwnd)
	}
	put := func(k string, n int64) {
		if n > 0 {
			out[k] = strconv.FormatInt(n, 10)
		}
	}
	put(recRcvBuf, e.RcvBuf)
	put(recSORequested, e.SORequested)
	put(recSORcvbuf, e.SORcvbuf)
	put(recSOSndbuf, e.SOSndbuf)
	return out
}
