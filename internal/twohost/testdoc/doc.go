// Package testdoc holds the documents `longhaul test` writes, as Go
// types, and their text for people: longhaul.test/v1 ([Doc] and what it
// holds, [WriteText], [Compare]) and longhaul.test-url/v1 ([URLDoc],
// [WriteURLText]). twohost's judge produces them; report, lab and the
// tests read these types. The package does no I/O of its own and has no
// Linux-only dependency, so every reader builds on every platform.
package testdoc

import (
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/snapshot"
)

// Schema names the document test writes.
const Schema = "longhaul.test/v1"

// Host names in a document.
const (
	HostClient = "client"
	HostServer = "server"
	HostPath   = "path"
	HostTest   = "test"
)

// Phase names: a Phase's Name, as the wire asks for the phases.
const (
	PhaseDownload = "download" // the server sends
	PhaseUpload   = "upload"   // the client sends
	PhaseCapacity = "capacity" // the server sends on N streams
	PhaseUDP      = "udp"      // the server paces datagrams
)

// Doc is a test's result: schema longhaul.test/v1.
type Doc struct {
	Schema       string    `json:"schema"`
	Started      time.Time `json:"started"`
	Server       string    `json:"server"`
	Caps         Caps      `json:"server_caps"`
	PhaseLengthS float64   `json:"phase_length_s"`
	RTT          RTT       `json:"rtt"`
	// PathRateBps is the path's rate the model and the plans use, and
	// PathRateBasis where it comes from; 0 when unknown.
	PathRateBps   float64     `json:"path_rate_bps"`
	PathRateBasis string      `json:"path_rate_basis"`
	Capacity      *Capacity   `json:"capacity,omitempty"`
	Directions    []Direction `json:"directions"`
	Phases        []Phase     `json:"phases"`
	Hosts         Hosts       `json:"hosts"`
	Plans         *Plans      `json:"plans,omitempty"`
	// CCPhases are the downloads run with a congestion control asked of
	// the server (test --cc-phase): the same path under another control.
	CCPhases []CCPhase `json:"cc_phases,omitempty"`
	// PacedPhases are the downloads the server paced at a rate (test
	// --loss-probes): how the path's losses depend on the rate.
	PacedPhases []PacedPhase `json:"paced_phases,omitempty"`
	// UDPPhase is the datagram run (test --loss-probes, when the server
	// answers them): datagrams paced above the most a download carried.
	UDPPhase *UDPPhase `json:"udp_phase,omitempty"`
	// Causes are what the path does wrong beyond one direction's flow:
	// a PMTU black hole found before the phases (which then ran with
	// small segments).
	Causes []diagnose.Cause `json:"causes,omitempty"`
	// Fix is what to change, line by line as test prints it and the
	// report shows it: each direction's fix, then each host's plan.
	Fix   []string `json:"fix,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// CCPhase is a download the server sent with a congestion control the
// client asked for.
type CCPhase struct {
	CC string `json:"cc"`
	// Granted: the server sent with it (a server without the control, or
	// too old to know the request, sends with its default).
	Granted       bool    `json:"granted"`
	ThroughputBps float64 `json:"throughput_bps"`
	Verdict       string  `json:"verdict"`
	RetransSegs   int64   `json:"retrans_segments"`
	// LoadedRTTP90S is the 90th percentile of the pings while it ran
	// (as PacedPhase's): bbr fills a queue at the path's ceiling, a
	// policer's ceiling has none. LoadedRTTS is their median.
	LoadedRTTP90S float64 `json:"loaded_rtt_p90_s,omitempty"`
	LoadedRTTS    float64 `json:"loaded_rtt_s,omitempty"`
}

// PacedPhase is a single-stream download the server paced at a rate.
type PacedPhase struct {
	RateBps        float64 `json:"rate_bps"`         // the pace asked
	GrantedRateBps float64 `json:"granted_rate_bps"` // the pace the server granted (its cap may lower it)
	ThroughputBps  float64 `json:"throughput_bps"`
	Verdict        string  `json:"verdict"`
	RetransSegs    int64   `json:"retrans_segments"`
	// LossRate is the share of the phase's data segments retransmitted.
	LossRate   float64 `json:"loss_rate"`
	LoadedRTTS float64 `json:"loaded_rtt_s,omitempty"`
	// LoadedRTTP90S is the 90th percentile of the pings while it ran: a
	// drop-tail queue fills before each loss, and its peaks show there
	// when the median, between them, shows none.
	LoadedRTTP90S float64 `json:"loaded_rtt_p90_s,omitempty"`
}

// UDPPhase is what the datagram run showed: how many arrived, at what
// rate once the queue or the policer's bucket settled, and the queue they
// stood in (over the run's second half, above its least one-way delay).
type UDPPhase struct {
	RateBps       float64 `json:"rate_bps"` // the pace granted
	DatagramBytes int     `json:"datagram_bytes"`
	Sent          int64   `json:"sent"`
	Received      int64   `json:"received"`
	LossRate      float64 `json:"loss_rate"`
	ArrivedBps    float64 `json:"arrived_bps"`
	QueueS        float64 `json:"queue_s"`
}

// RTT is the path's round trip: the least seen, and under load.
type RTT struct {
	MinS float64 `json:"min_s"`
	// IdleS are the ping RTTs over the control connection before any
	// load; LoadedS the median ping RTT while the download phases ran.
	IdleS   []float64 `json:"idle_s"`
	LoadedS float64   `json:"loaded_s,omitempty"`
}

// Capacity is what N parallel streams carried.
type Capacity struct {
	Bps     float64 `json:"bps"`
	Streams int     `json:"streams"`
	// AtLeast: most streams were limited by a host's buffer, so the path
	// may carry more.
	AtLeast  bool     `json:"at_least"`
	Verdicts []string `json:"verdicts"`
	// PeakBps is the most the streams were seen delivering together (the
	// kernel's delivery-rate estimates of one sample, summed).
	PeakBps float64 `json:"peak_bps,omitempty"`
	// CPUBound: an end's process was CPU-bound over the phase (its
	// threads waited for a CPU half of it, or it ran a whole core), so
	// the path may carry more (AtLeast is set too).
	CPUBound string `json:"cpu_bound,omitempty"` // "client", "server" or ""
	// Ramping: the streams were still speeding up when the phase ended,
	// nothing lost (slow start), or had held their rate for under three
	// windows of two round trips: the path carries at least Bps (AtLeast
	// is set too), and no plan is sized from it.
	Ramping bool `json:"ramping,omitempty"`
}

// Direction is the result for one direction of data.
type Direction struct {
	Name          string  `json:"name"` // download or upload
	Sender        string  `json:"sender"`
	Receiver      string  `json:"receiver"`
	ThroughputBps float64 `json:"throughput_bps"`
	// RTTS is the sender's smoothed RTT at the end of the phase.
	RTTS float64    `json:"rtt_s"`
	Flow flows.Flow `json:"flow"`
	// Cause is what the path did to the flow, when it was held by losses
	// the path made (random loss, a shallow buffer, bufferbloat).
	Cause *diagnose.Cause `json:"cause,omitempty"`
	// Seen is what else the path was seen doing that did not limit the
	// flow (a reordering the sender tolerated).
	Seen  []diagnose.Cause `json:"seen,omitempty"`
	Limit Limit            `json:"limit"`
	Model Model            `json:"model"`
	// Headline is the one-line answer.
	Headline string `json:"headline"`
}

// Limit names what limited a direction: a host and its setting, the
// path, or the test itself.
type Limit struct {
	Host    string `json:"host"` // client, server, path, test, unknown
	Setting string `json:"setting,omitempty"`
	Value   string `json:"value,omitempty"`
	Text    string `json:"text"`
}

// Model is the path model's prediction from the two hosts' settings.
type Model struct {
	ExpectedBps float64 `json:"expected_bps"`
	LimitedBy   string  `json:"limited_by"` // path, receiver, sender
	// ReceiverWindowBytes and SenderInFlightBytes are the most each end's
	// buffer allows.
	ReceiverWindowBytes float64 `json:"receiver_window_bytes"`
	SenderInFlightBytes float64 `json:"sender_inflight_bytes"`
	ReceiverCeilingBps  float64 `json:"receiver_ceiling_bps"`
	SenderCeilingBps    float64 `json:"sender_ceiling_bps"`
	// AfterPlansBps is the prediction with both plans applied.
	AfterPlansBps    float64 `json:"after_plans_bps,omitempty"`
	AfterPlansLimit  string  `json:"after_plans_limited_by,omitempty"`
	MeasuredVsModel  float64 `json:"measured_over_model"`
	Note             string  `json:"note"`
	ReceiverSettings string  `json:"receiver_settings"`
	SenderSettings   string  `json:"sender_settings"`
}

// Phase is one phase's record, with both ends' tcp_info samples.
type Phase struct {
	Name string `json:"name"`
	// CC is the congestion control the client asked the server to send
	// with (cc_phases says whether it did).
	CC            string    `json:"cc,omitempty"`
	Streams       int       `json:"streams"`
	DurationS     float64   `json:"duration_s"`
	RateBps       float64   `json:"rate_bps,omitempty"`
	ServerBytes   int64     `json:"server_bytes"`
	ClientBytes   int64     `json:"client_bytes"`
	Seconds       float64   `json:"seconds"`
	EndReason     string    `json:"end_reason"`
	ThroughputBps float64   `json:"throughput_bps"`
	LoadedRTTS    []float64 `json:"loaded_rtt_s"`
	// ServerCPU and ClientCPU are each end's process CPU over the phase,
	// when measured.
	ServerCPU *CPUUse          `json:"server_cpu,omitempty"`
	ClientCPU *CPUUse          `json:"client_cpu,omitempty"`
	Samples   []results.Sample `json:"samples"`
}

// Hosts are both ends' snapshots.
type Hosts struct {
	Client *snapshot.Snapshot `json:"client"`
	Server *snapshot.Snapshot `json:"server"`
}

// Plans are the plan for each host.
type Plans struct {
	Client plan.Plan `json:"client"`
	Server plan.Plan `json:"server"`
}
