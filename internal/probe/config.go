//go:build linux

package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Defaults and bounds of Config.
const (
	// DefaultRounds sizes a probe's phases from the RTT it measures
	// (at least twohost.MinPhase each): slow start to 1 Gbit/s at 170 ms
	// takes about 11 round trips, and the judge needs the steady part
	// after it. Fewer than test's 60, so that three phases of a 200 ms
	// path fit the shipped 30 s scrape timeout.
	DefaultRounds = 40
	MaxRounds     = 1000
	// DefaultTimeout is the shipped scrape timeout: a scrape's own
	// timeout header shortens it.
	DefaultTimeout     = 30 * time.Second
	MaxTimeout         = 5 * time.Minute
	DefaultConcurrent  = 4
	DefaultStreams     = 4
	DefaultMinInterval = 60 * time.Second
	// maxEntries bounds the targets remembered (last result, running
	// probe); the oldest idle one is forgotten first.
	maxEntries = 4096
	// scrapeMargin is left of Prometheus's scrape timeout for the answer.
	scrapeMargin = 500 * time.Millisecond
	// DialTimeout and HelloTimeout bound a probe's connection until its
	// target has proved it is a longhaul serve holding the token: a serve
	// answers in a few round trips, so a target that blackholes, or
	// accepts and stays silent, is given up on in seconds.
	DialTimeout  = 3 * time.Second
	HelloTimeout = 4 * time.Second
	// MaxPorts bounds --probe-ports: they name serves, not a port range
	// to scan.
	MaxPorts = 64
)

// Config is what the exporter's flags allow a probe: whatever a query
// says, a probe never goes past them.
type Config struct {
	Allowed Allowed
	Token   []byte
	// Phase, if set, is each phase's fixed length (a download and an
	// upload, one stream each); 0 sizes them at Rounds round trips of
	// the RTT the probe measures, at least twohost.MinPhase, shortened
	// to fit the probe's deadline (the document says so). MaxBytes and
	// MaxRateBps cap what one phase may move: the server is asked to pace
	// at most min(MaxRateBps, MaxBytes*8/length) (0: no cap of the
	// exporter's; the server's own caps hold anyway).
	Phase  time.Duration
	Rounds int
	// Streams > 1 adds a download on that many streams: the path's
	// capacity (longhaul_probe_path_rate_bits_per_second).
	Streams    int
	MaxBytes   int64
	MaxRateBps float64
	// Timeout is the most a probe may take; a scrape's own timeout
	// (X-Prometheus-Scrape-Timeout-Seconds) shortens it.
	Timeout time.Duration
	// Concurrent is the most probes running at once (at most one per
	// target); MinInterval the age under which a target's last result
	// is served again instead of testing again (0: every scrape tests).
	Concurrent  int
	MinInterval time.Duration
	Netns       string // probe from this namespace ("": the process's)
	Log         *slog.Logger

	// Run is twohost.Run; tests replace it. It must call the options'
	// Admit once the target has proved it is a serve: a probe holds one
	// of the Concurrent slots only from then on.
	Run func(context.Context, twohost.ClientOptions) (*judge.Raw, error)
}

func (c Config) withDefaults() Config {
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Concurrent == 0 {
		c.Concurrent = DefaultConcurrent
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Run == nil {
		c.Run = twohost.Run
	}
	return c
}

// probeLen is about what one probe takes: its phases and handshakes. A
// busy target's answer is served again that long (the far serve's own
// retry-after may be minutes: another prober's test, or a long one, is
// no reason to report the path busy for that long), and so is a failure
// before the target proved itself (a target that stalls is not dialled
// again at once, even with --probe-min-interval 0).
func (c Config) probeLen() time.Duration {
	if c.Phase == 0 {
		return c.Timeout // sized from the path, up to the deadline
	}
	return min(c.phases()*c.Phase+5*time.Second, c.Timeout)
}

// connectingMax is how many probes may be connecting at once (dialled,
// their target not yet proved a serve), and perSourceMax how many of
// them one scraper may start. Each ends within DialTimeout+HelloTimeout
// and a failed target is not dialled again for probeLen: to keep the
// stage full a scraper needs many stalling targets, and one scraper
// (an address, an IPv6 /64) can fill only a quarter of it.
func (c Config) connectingMax() int { return min(max(8*c.Concurrent, 32), 256) }
func (c Config) perSourceMax() int  { return max(c.connectingMax()/4, 4) }

// phases is how many phases a probe runs.
func (c Config) phases() time.Duration {
	if c.Streams > 1 {
		return 3
	}
	return 2
}

// Validate checks the configuration as the exporter's flags give it.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Allowed.Empty():
		return errors.New("probes need the targets they may test: --probe-allow PREFIX or --probe-targets FILE")
	case len(c.Token) == 0:
		return errors.New("probes need the servers' token: --probe-auth FILE")
	case c.Phase != 0 && (c.Phase < twohost.MinPhase || c.Phase > time.Minute):
		return fmt.Errorf("--probe-phase must be 0 (sized from the path) or %s..1m, got %s", twohost.MinPhase, c.Phase)
	case c.Rounds < 1 || c.Rounds > MaxRounds:
		return fmt.Errorf("--probe-rounds must be 1..%d, got %d", MaxRounds, c.Rounds)
	case c.Timeout > MaxTimeout:
		return fmt.Errorf("--probe-timeout must be at most %s, got %s", MaxTimeout, c.Timeout)
	case c.Streams < 0 || c.Streams > wire.MaxStreams:
		return fmt.Errorf("--probe-streams must be 0..%d, got %d", wire.MaxStreams, c.Streams)
	case c.Timeout < c.phases()*max(c.Phase, twohost.MinPhase)+5*time.Second:
		return fmt.Errorf("--probe-timeout must leave room for %d phases of %s and the handshakes: at least %s, got %s",
			c.phases(), max(c.Phase, twohost.MinPhase), c.phases()*max(c.Phase, twohost.MinPhase)+5*time.Second, c.Timeout)
	case c.Concurrent < 1 || c.Concurrent > 64:
		return fmt.Errorf("--probe-concurrency must be 1..64, got %d", c.Concurrent)
	case c.MinInterval < 0 || c.MinInterval > 24*time.Hour:
		return fmt.Errorf("--probe-min-interval must be 0..24h, got %s", c.MinInterval)
	case c.MaxBytes < 0 || c.MaxRateBps < 0:
		return errors.New("--probe-max-bytes and --probe-max-rate cannot be negative")
	case len(c.Allowed.Ports) > MaxPorts:
		return fmt.Errorf("--probe-ports names %d ports, at most %d: name the ports your serves listen on", len(c.Allowed.Ports), MaxPorts)
	case slices.Contains(c.Allowed.Ports, 0):
		return errors.New("--probe-ports: a port is 1..65535")
	}
	for _, pfx := range c.Allowed.Prefixes {
		if err := checkPrefix(pfx); err != nil {
			return err
		}
	}
	return nil
}
