package testdoc

import (
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/snapshot"
)

// URLSchema names the document test URL writes.
const URLSchema = "longhaul.test-url/v1"

// HostServerOrPath is a URL test's limit's host besides client and
// test: the far end is not longhaul, so its send side and the path
// cannot be told apart from here.
const HostServerOrPath = "server-or-path"

// Directions of a URL test.
const (
	URLDownload = PhaseDownload // this host receives: GET
	URLUpload   = PhaseUpload   // this host sends: PUT or POST
)

// URLSample is the downloading socket's tcp_info at one moment (this
// host receives).
type URLSample struct {
	T             float64 `json:"t_s"`
	BytesReceived int64   `json:"bytes_received"`
	// RcvWnd is the window this host advertised last (tcpi_rcv_wnd),
	// RcvSpace what receive autotuning aims at.
	RcvWnd   int64 `json:"rcv_wnd_bytes"`
	RcvSpace int64 `json:"rcv_space_bytes"`
	// RcvRTT is the receiver's own RTT estimate (tcpi_rcv_rtt, 0 until
	// measured), RTT and MinRTT the socket's (from the handshake here).
	RcvRTT float64 `json:"rcv_rtt_s"`
	RTT    float64 `json:"rtt_s"`
	MinRTT float64 `json:"min_rtt_s"`
	// OutOfOrder counts segments that arrived out of order
	// (tcpi_rcv_ooopack): the path lost or reordered them.
	OutOfOrder int64 `json:"out_of_order_segments"`
}

// URLDoc is the result of a download from or an upload to a URL: schema
// longhaul.test-url/v1.
type URLDoc struct {
	Schema  string    `json:"schema"`
	Started time.Time `json:"started"`
	// Direction is URLDownload or URLUpload (documents before uploads
	// lack it: a download).
	Direction string `json:"direction"`
	URL       string `json:"url"`
	Remote    string `json:"remote"`
	Status    string `json:"http_status"`
	Bytes     int64  `json:"bytes"`
	Complete  bool   `json:"complete"`
	// DurationS runs from the request to the end of the body (or of
	// --duration); ThroughputBps is over it, SteadyBps over its second
	// half, the steady state the verdict judges.
	DurationS     float64 `json:"duration_s"`
	ThroughputBps float64 `json:"throughput_bps"`
	SteadyBps     float64 `json:"steady_bps"`
	// RTT: the TCP handshake's, and the receiver's estimate under load.
	ConnectS  float64 `json:"connect_rtt_s"`
	LoadedRTT float64 `json:"loaded_rtt_s"`
	Rounds    float64 `json:"round_trips"`
	// The window: what this host advertised at most in the steady half,
	// what its tcp_rmem allows, and the data in flight the steady rate
	// means at the loaded RTT.
	MaxWindowBytes     int64   `json:"max_window_bytes"`
	WindowCeilingBytes int64   `json:"window_ceiling_bytes"`
	InFlightBytes      float64 `json:"inflight_bytes"`
	OutOfOrder         int64   `json:"out_of_order_segments"`
	Limit              Limit   `json:"limit"`
	Headline           string  `json:"headline"`
	// Plan is this host's plan when its receive buffer limits and
	// --rate gave the path's rate; PlanHint says how to get one
	// otherwise.
	Plan     *plan.Plan         `json:"plan,omitempty"`
	PlanHint string             `json:"plan_hint,omitempty"`
	Client   *snapshot.Snapshot `json:"client"`
	Samples  []URLSample        `json:"samples"`
	Notes    []string           `json:"notes,omitempty"`

	// Fix is what to change, line by line as test prints it and the
	// report shows it: this host's plan, or how to get one.
	Fix []string `json:"fix,omitempty"`

	// An upload's (test URL --upload): the method and the body's size, the
	// sending socket's verdict (flows.Judge over the steady half, as
	// test judges a direction), the server's advertised window at most
	// in the steady half, what this host's tcp_wmem allows in flight,
	// the segments retransmitted, and the socket's samples.
	Method           string           `json:"method,omitempty"`
	BodyBytes        int64            `json:"body_bytes,omitempty"`
	Flow             *flows.Flow      `json:"flow,omitempty"`
	PeerWindowBytes  int64            `json:"peer_window_bytes,omitempty"`
	SendCeilingBytes int64            `json:"send_ceiling_bytes,omitempty"`
	Retrans          int64            `json:"retrans_segments,omitempty"`
	SendSamples      []results.Sample `json:"send_samples,omitempty"`
}
