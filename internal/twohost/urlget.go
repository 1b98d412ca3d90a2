//go:build linux

package twohost

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/units"
	"golang.org/x/sys/unix"
)

// URLOptions set up a download from a URL served by anything (nginx, a
// CDN): no longhaul at the far end.
type URLOptions struct {
	URL string
	// Limit ends the download after this long if the body has not
	// ended (0: DefaultURLLimit).
	Limit       time.Duration
	Netns       string
	DialTimeout time.Duration
	UserAgent   string
	// Progress gets a line every few seconds (nil: none).
	Progress io.Writer
}

// DefaultURLLimit is how long a download from a URL runs at most unless
// told otherwise.
const DefaultURLLimit = 30 * time.Second

// urlSampleEvery is the tcp_info sampling interval, as the two-host test's.
const urlSampleEvery = 100 * time.Millisecond

// IsURL reports whether a test target is a URL rather than HOST[:PORT].
func IsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// RunURL downloads from o.URL on one fresh TCP connection (no proxy, no
// compression), sampling the socket's tcp_info every 100 ms, and gathers
// this host's snapshot.
func RunURL(ctx context.Context, o URLOptions) (*URLRaw, error) {
	if !IsURL(o.URL) {
		return nil, badinput.Errorf("test: %q is not an http:// or https:// URL", o.URL)
	}
	if o.Limit <= 0 {
		o.Limit = DefaultURLLimit
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	raw := &URLRaw{URL: o.URL, Started: time.Now().UTC(), DurationIn: o.Limit}
	var err error
	if raw.Client, err = snapshot.Gather(snapshot.Options{Netns: o.Netns}); err != nil {
		return nil, fmt.Errorf("this host's snapshot: %w", err)
	}
	var (
		mu   sync.Mutex
		conn net.Conn
	)
	tr := &http.Transport{
		Proxy: nil, // the path measured is the one to the URL's host
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			start := time.Now()
			c, err := dialIn(ctx, o.Netns, addr, o.DialTimeout, 0)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			conn, raw.Connect = c, time.Since(start)
			mu.Unlock()
			return c, nil
		},
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		DisableCompression:  true,
		DisableKeepAlives:   true,
		TLSHandshakeTimeout: o.DialTimeout,
		// Go's HTTP/2 would also run on this one connection; HTTP/1.1
		// keeps the body a plain byte stream.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, o.Limit+o.DialTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL, nil)
	if err != nil {
		return nil, badinput.Errorf("test: %v", err)
	}
	req.Header.Set("User-Agent", o.UserAgent)
	req.Header.Set("Accept-Encoding", "identity")
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", o.URL, unwrapURL(err))
	}
	defer resp.Body.Close()
	raw.Status = resp.Status
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("GET %s: %s: the URL must serve a file (status 2xx)", o.URL, resp.Status)
	}
	mu.Lock()
	c := conn
	mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("GET %s: no TCP connection was made", o.URL)
	}
	raw.Remote = c.RemoteAddr().String()
	return raw, readBody(ctx, raw, resp.Body, c, start, o)
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return unwrapOp(ue.Err)
	}
	return err
}

// readBody reads the body to its end or to the limit, sampling the
// socket meanwhile.
func readBody(ctx context.Context, raw *URLRaw, body io.Reader, c net.Conn, start time.Time, o URLOptions) error {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var samples []URLSample
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(urlSampleEvery)
		defer tick.Stop()
		lastNote := start
		for {
			if s, err := urlSample(c, time.Since(start)); err == nil {
				samples = append(samples, s)
				if o.Progress != nil && time.Since(lastNote) >= 2*time.Second {
					lastNote = time.Now()
					fmt.Fprintf(o.Progress, "download: %s in %s\n", units.FormatBytes(float64(s.BytesReceived)), units.FormatDuration(time.Since(start).Round(100*time.Millisecond)))
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	end := start.Add(o.Limit)
	buf := make([]byte, 256<<10)
	var err error
	for time.Now().Before(end) {
		_ = c.SetReadDeadline(end)
		var n int
		n, err = body.Read(buf)
		raw.Bytes += int64(n)
		if err != nil {
			break
		}
	}
	raw.Duration = time.Since(start)
	close(stop)
	wg.Wait()
	if s, serr := urlSample(c, raw.Duration); serr == nil {
		samples = append(samples, s)
	}
	raw.Samples = samples
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF):
		raw.Complete = true
		return nil
	case err == nil, errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil:
		return nil // the limit came first
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("GET %s: reading the body: %w", raw.URL, err)
}

// urlSample reads the receiving socket's tcp_info.
func urlSample(c net.Conn, t time.Duration) (URLSample, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return URLSample{}, errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return URLSample{}, err
	}
	var ti *unix.TCPInfo
	var gerr error
	if err := rc.Control(func(fd uintptr) { ti, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return URLSample{}, err
	}
	if gerr != nil {
		return URLSample{}, gerr
	}
	wnd := int64(ti.Rcv_wnd)
	if wnd == 0 {
		// Kernels before 6.7 lack tcpi_rcv_wnd: the window this host
		// may advertise grows up to rcv_ssthresh.
		wnd = int64(ti.Rcv_ssthresh)
	}
	return URLSample{T: t.Seconds(), BytesReceived: int64(ti.Bytes_received), RcvWnd: wnd, RcvSpace: int64(ti.Rcv_space),
		RcvRTT: float64(ti.Rcv_rtt) / 1e6, RTT: float64(ti.Rtt) / 1e6, MinRTT: float64(ti.Min_rtt) / 1e6,
		OutOfOrder: int64(ti.Rcv_ooopack)}, nil
}
