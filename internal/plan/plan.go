package plan

import (
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/units"
)

// Schema names the JSON form of a Plan; apply refuses other schemas.
const Schema = "longhaul.plan/v1"

const (
	// Headroom multiplies the model's buffer need (pathmodel.PlannedBuffer).
	Headroom = pathmodel.Headroom
	// DefaultBudgetShare is the share of RAM the planned flows' buffers
	// may take when no budget is given.
	DefaultBudgetShare = 0.25
	// DefaultResponseBytes is the short response the initcwnd item is
	// judged for when none is given (a typical web object).
	DefaultResponseBytes = 64_000
	// PlannedInitCwnd is the initial window planned for a destination: twice
	// IW10 (RFC 6928); larger bursts into an unknown path risk loss.
	PlannedInitCwnd = 20
	// tcpMemHeadroom leaves room under tcp_mem's pressure point for the
	// host's other sockets.
	tcpMemHeadroom = 1.25
	// longRTT is where idle restarts start to cost seconds.
	longRTT = 20 * time.Millisecond
	mib     = 1 << 20
)

// inputErr is a request the plan cannot be made for (flows that do not
// fit the memory budget, a bad prefix): bad input, the command line
// exits 2.
func inputErr(format string, a ...any) error {
	return badinput.Errorf("plan: %s", fmt.Sprintf(format, a...))
}

// Role is the part this host plays in the long transfers.
type Role string

const (
	Client Role = "client" // receives the bulk data (downloads)
	Server Role = "server" // sends the bulk data
	Both   Role = "both"   // either direction
)

// ParseRole accepts client, server or both; "" means both.
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case "":
		return Both, nil
	case Client, Server, Both:
		return Role(s), nil
	}
	return "", inputErr("role %q: want client (receives the data), server (sends it) or both", s)
}

func (r Role) receives() bool { return r == Client || r == Both }
func (r Role) sends() bool    { return r == Server || r == Both }

// Request is what a plan is made for.
type Request struct {
	RTT     time.Duration
	RateBps float64
	Flows   int  // concurrent long flows; 0 means 1
	Role    Role // "" means Both
	// MemoryBudget is the most the flows' buffers may take, in bytes; 0
	// means BudgetShare (default DefaultBudgetShare) of RAM, or no check
	// when RAM is unknown.
	MemoryBudget int64
	BudgetShare  float64
	// Dst is the destination prefix to plan initial windows for; the zero
	// Prefix plans none. DstDefault plans them on the default route.
	Dst        netip.Prefix
	DstDefault bool
	// ResponseBytes is the short response initcwnd is judged for; 0 means
	// DefaultResponseBytes.
	ResponseBytes int64
	// AppBuffers says applications set SO_RCVBUF/SO_SNDBUF themselves and
	// cannot be changed: plan net.core.rmem_max/wmem_max for them.
	AppBuffers bool
	// MTUProbing: a PMTU black hole was measured on the path (test): a
	// sender with net.ipv4.tcp_mtu_probing=0 gets it set to 1.
	MTUProbing bool
}

// Kind is what an item changes.
type Kind string

const (
	KindSysctl Kind = "sysctl" // a kernel parameter
	KindRoute  Kind = "route"  // a route's metrics
	KindApp    Kind = "app"    // an application setting longhaul prints but does not apply
)

// Scope says where a sysctl lives.
const (
	ScopeNetns = "netns" // per network namespace
	ScopeHost  = "host"  // host-wide, or read-only in a child namespace
)

// Plan is the result: plain data, JSON schema longhaul.plan/v1.
type Plan struct {
	Schema string `json:"schema"`
	// Kernel is the release (uname -r) the plan was made for; apply
	// refuses to apply it on another.
	Kernel   string   `json:"kernel"`
	Host     string   `json:"host,omitempty"`
	Netns    string   `json:"netns,omitempty"`
	Source   string   `json:"source"`
	Path     Path     `json:"path"`
	Model    Model    `json:"model"`
	Memory   Memory   `json:"memory"`
	Items    []Item   `json:"items"`
	Warnings []string `json:"warnings,omitempty"`
	// Notes say what was looked at and left alone, and why.
	Notes []string `json:"notes,omitempty"`
}

// Path is the request as recorded in the plan.
type Path struct {
	RTTSeconds    float64 `json:"rtt_s"`
	RateBps       float64 `json:"rate_bps"`
	Flows         int     `json:"flows"`
	Role          Role    `json:"role"`
	Dst           string  `json:"dst,omitempty"`
	ResponseBytes int64   `json:"response_bytes,omitempty"`
	AppBuffers    bool    `json:"app_buffers"`
}

// RTT returns the path's round-trip time.
func (p Path) RTT() time.Duration { return time.Duration(math.Round(p.RTTSeconds * 1e9)) }

// Model is the path model's answer before and after the plan.
type Model struct {
	BDPBytes          int64   `json:"bdp_bytes"`
	FlowBDPBytes      int64   `json:"flow_bdp_bytes"`
	ReceiveRatio      float64 `json:"receive_ratio"`
	RatioBasis        string  `json:"receive_ratio_basis"`
	ReceiverNeedBytes int64   `json:"receiver_need_bytes,omitempty"`
	SenderNeedBytes   int64   `json:"sender_need_bytes,omitempty"`
	Headroom          float64 `json:"headroom"`
	NowBps            float64 `json:"expected_now_bps"`
	NowLimitedBy      string  `json:"limited_now_by"`
	PlannedBps        float64 `json:"expected_planned_bps"`
	PlannedLimitedBy  string  `json:"limited_planned_by"`
}

// Memory is what the flows take against the budget and tcp_mem.
type Memory struct {
	Flows int `json:"flows"`
	// NeededBytes is what the flows' buffers grow to on this path.
	NeededBytes int64 `json:"needed_bytes"`
	// WorstCaseBytes is what they take if every buffer reaches the
	// planned maximum.
	WorstCaseBytes int64  `json:"worst_case_bytes,omitempty"`
	BudgetBytes    int64  `json:"budget_bytes,omitempty"`
	BudgetBasis    string `json:"budget_basis,omitempty"`
	// TCPMem* are tcp_mem's pressure and max after the plan, in bytes.
	TCPMemPressureBytes int64 `json:"tcp_mem_pressure_bytes,omitempty"`
	TCPMemMaxBytes      int64 `json:"tcp_mem_max_bytes,omitempty"`
	RAMBytes            int64 `json:"ram_bytes,omitempty"`
}

// Item is one change.
type Item struct {
	Key     string `json:"key"`
	Kind    Kind   `json:"kind"`
	Scope   string `json:"scope,omitempty"`
	Current string `json:"current"`
	New     string `json:"new"`
	Why     string `json:"why"`
	// MemoryBytes is the most memory the planned flows may take because
	// of this value (N x a buffer maximum; tcp_mem's new maximum); 0 for
	// items that do not size memory.
	MemoryBytes int64  `json:"memory_bytes"`
	Route       *Route `json:"route,omitempty"`
}

// Route is a route item's target: the route to Dst, changed in place when
// it exists, else added as a copy of the route that covers Dst now.
type Route struct {
	Family string `json:"family"` // inet or inet6
	Dst    string `json:"dst"`    // a prefix, or "default"
	// Gateway, Dev and Table are those of the existing or covering route
	// when the snapshot had routes; apply looks them up again.
	Gateway string `json:"gateway,omitempty"`
	Dev     string `json:"dev,omitempty"`
	Table   int    `json:"table,omitempty"`
	Exists  bool   `json:"exists"`
	// DHCP: the gateway was learned by DHCP (persist with Gateway=_dhcp4).
	DHCP bool `json:"dhcp,omitempty"`
	// InitCwnd and InitRwnd are the planned metrics in segments; 0
	// leaves one unset.
	InitCwnd int `json:"initcwnd,omitempty"`
	InitRwnd int `json:"initrwnd,omitempty"`
}

func (r Request) validate() (Request, error) {
	if r.Flows == 0 {
		r.Flows = 1
	}
	if r.Role == "" {
		r.Role = Both
	}
	if _, err := ParseRole(string(r.Role)); err != nil {
		return r, err
	}
	switch {
	case r.Flows < 1:
		return r, inputErr("flows must be at least 1, got %d", r.Flows)
	case r.MemoryBudget < 0:
		return r, inputErr("memory budget must not be negative")
	case r.BudgetShare < 0 || r.BudgetShare > 1:
		return r, inputErr("memory budget share %g out of range 0..1", r.BudgetShare)
	case r.ResponseBytes < 0:
		return r, inputErr("response size must not be negative")
	case r.Dst.IsValid() && r.DstDefault:
		return r, inputErr("give a destination prefix or the default route, not both")
	}
	if r.Dst.IsValid() {
		r.Dst = r.Dst.Masked()
	}
	if r.ResponseBytes == 0 {
		r.ResponseBytes = DefaultResponseBytes
	}
	if r.BudgetShare == 0 {
		r.BudgetShare = DefaultBudgetShare
	}
	return r, nil
}

// builder carries the state of one Make call.
type builder struct {
	s   *snapshot.Snapshot
	req Request
	in  pathmodel.Input // this host's settings on the path, at its ends
	now pathmodel.Result
	p   Plan
	// planned buffer maxima (0: unchanged), used for the after-model.
	rmemMax, wmemMax int64
	budget           int64
}

// Make returns the plan for req on the host in s.
func Make(s *snapshot.Snapshot, req Request) (Plan, error) {
	if s == nil {
		return Plan{}, inputErr("no host snapshot")
	}
	req, err := req.validate()
	if err != nil {
		return Plan{}, err
	}
	b := &builder{s: s, req: req}
	b.in = s.ModelInput()
	b.in.RTT, b.in.RateBps, b.in.Flows = req.RTT, req.RateBps, req.Flows
	// The far end is another host: only model the ends this one plays.
	if !req.Role.receives() {
		b.in.Rmem, b.in.CoreRmemMax = pathmodel.Triple{}, 0
	}
	if !req.Role.sends() {
		b.in.Wmem, b.in.CoreWmemMax = pathmodel.Triple{}, 0
	}
	if b.now, err = pathmodel.Compute(b.in); err != nil {
		return Plan{}, err
	}
	b.p = Plan{
		Schema: Schema,
		Kernel: s.Kernel.Release,
		Host:   s.Hostname,
		Netns:  s.Netns,
		Source: s.Source,
		Path: Path{
			RTTSeconds: req.RTT.Seconds(), RateBps: req.RateBps, Flows: req.Flows, Role: req.Role,
			AppBuffers: req.AppBuffers,
		},
		Items: []Item{},
	}
	if req.Dst.IsValid() {
		b.p.Path.Dst = req.Dst.String()
	} else if req.DstDefault {
		b.p.Path.Dst = "default"
	}
	if req.Dst.IsValid() || req.DstDefault {
		b.p.Path.ResponseBytes = req.ResponseBytes
	}
	if s.Kernel.Release == "" {
		b.warn("the snapshot has no kernel release: apply will refuse this plan (it checks the kernel it was made for)")
	}
	b.model()
	if err := b.budgetCheck(); err != nil {
		return Plan{}, err
	}
	b.prerequisites()
	b.mtuProbing()
	if req.Role.receives() {
		b.buffer(true)
	}
	if req.Role.sends() {
		b.buffer(false)
	}
	b.coreMax()
	b.tcpMem()
	b.slowStartAfterIdle()
	b.noMetricsSave()
	b.route()
	b.app()
	b.after()
	b.daemons()
	return b.p, nil
}

func (b *builder) warn(format string, a ...any) {
	b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(format, a...))
}

func (b *builder) note(format string, a ...any) {
	b.p.Notes = append(b.p.Notes, fmt.Sprintf(format, a...))
}

func (b *builder) add(it Item) { b.p.Items = append(b.p.Items, it) }

// model fills the before-numbers.
func (b *builder) model() {
	r := b.now
	m := &b.p.Model
	m.BDPBytes, m.FlowBDPBytes = r.BDPBytes, r.FlowBDPBytes
	m.ReceiveRatio, m.RatioBasis = r.RecvRatio.Value, r.RecvRatio.Basis
	m.Headroom = Headroom
	if b.req.Role.receives() {
		m.ReceiverNeedBytes = r.Receiver.NeededBytes
	}
	if b.req.Role.sends() {
		m.SenderNeedBytes = r.Sender.NeededBytes
	}
	m.NowBps, m.NowLimitedBy = r.ExpectedBps, r.LimitedBy
	if float64(r.FlowBDPBytes) > pathmodel.MaxWindow {
		flows := int(math.Ceil(float64(r.BDPBytes) / pathmodel.MaxWindow))
		b.warn("one flow's share of the BDP (%s) exceeds the largest window TCP can advertise (%s, RFC 7323): no buffer lets %d flow(s) reach %s; use at least %d flows",
			units.FormatBytes(float64(r.FlowBDPBytes)), units.FormatBytes(pathmodel.MaxWindow), b.req.Flows, units.FormatRate(b.req.RateBps), flows)
	}
}

// perFlowNeed is what one flow's buffer grows to at this host's ends.
func (b *builder) perFlowNeed() int64 {
	var n int64
	if b.req.Role.receives() {
		n = max(n, b.now.Receiver.NeededBytes)
	}
	if b.req.Role.sends() {
		n = max(n, b.now.Sender.NeededBytes)
	}
	return n
}

// budgetCheck refuses flows whose buffers cannot fit the memory budget.
func (b *builder) budgetCheck() error {
	mem := &b.p.Memory
	mem.Flows, mem.RAMBytes = b.req.Flows, b.s.MemTotal
	need := pathmodel.FlowMemory(b.req.Flows, b.perFlowNeed(), 0, [3]int64{}, b.pageSize(), b.s.MemTotal)
	mem.NeededBytes = need.NeededBytes
	switch {
	case b.req.MemoryBudget > 0:
		b.budget, mem.BudgetBasis = b.req.MemoryBudget, "given"
		if b.s.MemTotal > 0 && b.budget > b.s.MemTotal {
			b.warn("the memory budget %s is more than the host's RAM %s", units.FormatIEC(float64(b.budget)), units.FormatIEC(float64(b.s.MemTotal)))
		}
	case b.s.MemTotal > 0:
		b.budget = int64(float64(b.s.MemTotal) * b.req.BudgetShare)
		mem.BudgetBasis = fmt.Sprintf("%g%% of RAM, %s", 100*b.req.BudgetShare, units.FormatIEC(float64(b.s.MemTotal)))
	default:
		mem.BudgetBasis = "none: RAM unknown"
		b.note("memory budget: RAM unknown and no budget given: not checked")
	}
	mem.BudgetBytes = b.budget
	if b.budget > 0 && need.NeededBytes > b.budget {
		return inputErr("%d flow(s) need %s of buffers on this path (%s each), more than the memory budget %s (%s): run fewer flows, lower the rate, or raise --memory-budget",
			b.req.Flows, units.FormatIEC(float64(need.NeededBytes)), units.FormatIEC(float64(b.perFlowNeed())), units.FormatIEC(float64(b.budget)), mem.BudgetBasis)
	}
	return nil
}

func (b *builder) pageSize() int64 {
	if b.s.PageSize > 0 {
		return b.s.PageSize
	}
	return 4096
}
