//go:build linux

package lab

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// ping: an idle path probed with ping from the client, RTT error against
// the configured RTT.
type ping struct{}

func (ping) Measure(ctx context.Context, e Env) (Measurement, error) {
	m := newMeasurement()
	res, err := runPing(ctx, e, e.Case.Ping, 0)
	if err != nil {
		return Measurement{}, err
	}
	if res.err != nil {
		m.Invalid = res.err.Error()
		return m, nil
	}
	res.errMetrics(m.Metrics, "ping_", e.RTT)
	return m, nil
}

// pingRun is a finished ping and what it printed.
type pingRun struct {
	pingResult
	err error // ping failed or printed nothing usable: the run is invalid
}

// runPing sends count pings 100 ms apart from the client to the server
// after delay. An error is one that stops the lab (ping missing); a
// failed ping is in pingRun.err.
func runPing(ctx context.Context, e Env, count int, delay time.Duration) (pingRun, error) {
	if count < 1 {
		return pingRun{}, fmt.Errorf("lab: case %s: ping count %d, want at least 1", e.Case.ID, count)
	}
	bin, err := lookPath("ping")
	if err != nil {
		return pingRun{}, fmt.Errorf("ping: %w", err)
	}
	select {
	case <-ctx.Done():
		return pingRun{}, ctx.Err()
	case <-time.After(delay):
	}
	// -w bounds the whole run: count replies 100 ms apart, plus the path
	// and a margin for lost replies.
	deadline := int(time.Duration(count)*100*time.Millisecond/time.Second) + int(e.RTT/time.Second) + 5
	cl, sv := e.Path.Topo.Client(), e.Path.Topo.Server()
	out, cerr := cl.Command(ctx, bin, "-n", "-i", "0.1", "-c", strconv.Itoa(count), "-w", strconv.Itoa(deadline), sv.Addr.String()).CombinedOutput()
	if ctx.Err() != nil {
		return pingRun{}, ctx.Err()
	}
	res, perr := parsePing(string(out))
	if perr != nil {
		if cerr != nil {
			perr = fmt.Errorf("ping failed (%v): %w", cerr, perr)
		}
		return pingRun{pingResult: res, err: perr}, nil
	}
	return pingRun{pingResult: res}, nil
}
