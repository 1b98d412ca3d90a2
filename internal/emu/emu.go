package emu

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/tun"
)

// DefaultMaxPendingBytes bounds the frames one direction holds (in the
// delay line and the bottleneck queue). It is far above what a 10 Gbit/s
// x 400 ms path keeps in flight; beyond it frames are overload drops, so
// the emulator never becomes a hidden unbounded buffer (lesson 2 of the
// emulator notes).
const DefaultMaxPendingBytes = 1 << 30

// wakeLead is how early the writer aims: a timerfd wakes 60-190 µs late
// on the lab VM (package doc), so aiming 100 µs early centres deliveries
// on their due times instead of adding the wake-up latency to every
// frame. A frame may leave up to this much early; the lateness statistics
// count that as on time.
const wakeLead = 100 * time.Microsecond

// Config describes both directions.
type Config struct {
	Up   linkemu.Config // client -> server
	Down linkemu.Config // server -> client
	// MaxPendingBytes bounds each direction's held frames; 0 means
	// DefaultMaxPendingBytes.
	MaxPendingBytes int64
}

// DirStats are one direction's counters: the link model's and the data
// plane's.
type DirStats struct {
	linkemu.Stats
	PlaneStats
	// ran is how long the emulator ran (Stats.Elapsed), for the
	// validity rule; 0 if unknown.
	ran time.Duration
}

// PlaneStats are the data plane's own counters of one direction.
type PlaneStats struct {
	// RateBps is the link's configured rate (0: unlimited).
	RateBps float64 `json:"rate_bps"`
	// Frames and bytes read from the ingress device.
	FramesIn int64 `json:"frames_in"`
	BytesIn  int64 `json:"bytes_in"`
	// OverloadFrames were dropped because MaxPendingBytes was reached.
	OverloadFrames int64 `json:"overload_frames"`
	// Unparsed frames were not IPv4/IPv6 the way Inspect reads them; they
	// are delayed as one segment of their own size.
	Unparsed int64 `json:"unparsed_frames"`
	// SYNsRewritten counts SYNs whose options the middlebox changed.
	SYNsRewritten int64 `json:"syns_rewritten"`
	// MTUDrops are frames over the link's MTU; ICMPSent the errors sent
	// back for them (none on a black hole).
	MTUDrops    int64 `json:"mtu_drops"`
	ICMPSent    int64 `json:"icmp_sent"`
	ReadErrors  int64 `json:"read_errors"`
	WriteErrors int64 `json:"write_errors"`
}

// overloaded applies the validity rule: any frame the emulator itself
// dropped, or more than 0.1% of frames delivered later than the link's
// MaxLateness over more than maxBehind of the run. A VM's stalls of
// 5-35 ms (seen on the lab VMs: a few a run on one, ten on another)
// make every frame due in them late, hundreds at 1 Gbit/s, but hold the
// path's delay wrong for a few tens of milliseconds in all; an emulator
// that cannot keep the rate falls behind for good. Late means OverMax:
// on an unlimited link the wait behind the writer's own back-to-back
// writes is the data plane's rate, not lateness (linkemu.Link.Delivered).
func (d DirStats) overloaded() bool {
	late := d.OverMax > max(d.Delivered/1000, lateFloor)
	if late && d.ran > 0 {
		late = d.Behind > max(time.Duration(maxBehind*float64(d.ran)), minBehind)
	}
	return d.DropsOverload > 0 || d.OverloadFrames > 0 || late
}

// maxBehind is the share of a run its late frames may span (Stats.Behind):
// 0.5%, 100 ms of a 20 s run, and never under minBehind: one stall is no
// overload, however early in the run (emulate's watcher judges the run
// so far every second).
const (
	maxBehind = 0.005
	minBehind = 50 * time.Millisecond
)

// lateFloor is how many late frames one VM stall can make: with GSO a
// 100 Mbit/s direction carries only a few thousand frames, so 0.1% alone
// would let a single stall invalidate a run.
const lateFloor = 50

// MarshalJSON writes the link's counters and the emulator's own side by
// side; without it the embedded linkemu.Stats' MarshalJSON would be
// promoted and drop the emulator's fields. "overloaded" follows the
// emulator's validity rule.
func (d DirStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		linkemu.StatsJSON
		PlaneStats
		Overloaded bool `json:"overloaded"`
	}{d.Stats.JSON(), d.PlaneStats, d.overloaded()})
}

// Stats are the emulator's counters.
type Stats struct {
	Up         DirStats `json:"up"`
	Down       DirStats `json:"down"`
	Elapsed    float64  `json:"elapsed_s"`
	CPUSeconds float64  `json:"cpu_s"`
	// Overloaded marks a run whose results are invalid: the emulator
	// dropped frames it should have carried or delivered them late.
	Overloaded bool `json:"overloaded"`
}

// Emulator moves frames between a client and a server TUN device through
// one link model per direction. It owns the devices.
type Emulator struct {
	start    time.Time
	cpuStart time.Duration
	pipes    [2]*pipe
	done     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// Start begins forwarding client <-> server.
func Start(cfg Config, client, server tun.Dev) (*Emulator, error) {
	maxBytes := cfg.MaxPendingBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxPendingBytes
	}
	e := &Emulator{start: time.Now(), cpuStart: cpuTime(), done: make(chan struct{})}
	for i, d := range []struct {
		name    string
		cfg     linkemu.Config
		in, out tun.Dev
	}{{"up", cfg.Up, client, server}, {"down", cfg.Down, server, client}} {
		l, err := linkemu.New(d.cfg)
		if err != nil {
			return nil, fmt.Errorf("emu: %s link: %w", d.name, err)
		}
		handles := d.cfg.MaxPending
		if handles == 0 {
			handles = linkemu.DefaultMaxPending
		}
		p := &pipe{
			e: e, in: d.in, out: d.out, link: l,
			maxBytes: maxBytes,
			slots:    make([][]byte, handles),
			free:     make([]uint64, handles),
			kick:     make(chan struct{}, 1),
		}
		if p.sleep, err = newSleeper(); err != nil {
			e.closeSleepers()
			return nil, err
		}
		e.pipes[i] = p
		for h := range p.free {
			p.free[h] = uint64(len(p.free) - 1 - h)
		}
	}
	for _, p := range e.pipes {
		e.wg.Add(2)
		go p.read()
		go p.write()
	}
	return e, nil
}

func (e *Emulator) closeSleepers() {
	for _, p := range e.pipes {
		if p != nil && p.sleep != nil {
			p.sleep.close()
		}
	}
}

// now is the emulator's clock: monotonic time since Start.
func (e *Emulator) now() time.Duration { return time.Since(e.start) }

// Stop closes both devices, waits for the forwarding goroutines and
// returns the final statistics. It is idempotent.
func (e *Emulator) Stop() Stats {
	e.stopOnce.Do(func() {
		close(e.done)
		for _, p := range e.pipes {
			p.in.Close()
		}
		e.closeSleepers()
		e.wg.Wait()
	})
	return e.Stats()
}

// Stats returns the counters so far.
func (e *Emulator) Stats() Stats {
	ran := e.now()
	s := Stats{
		Up:         e.pipes[0].stats(),
		Down:       e.pipes[1].stats(),
		Elapsed:    ran.Seconds(),
		CPUSeconds: (cpuTime() - e.cpuStart).Seconds(),
	}
	s.Up.ran, s.Down.ran = ran, ran
	s.Overloaded = s.Up.overloaded() || s.Down.overloaded()
	return s
}

// cpuTime is the process's user+system CPU time: the emulator is the only
// busy part of the process, so this is its cost (including the receive
// path the kernel runs when it writes to a TUN, lesson 7).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pipe is one direction: a reader that admits frames into the link model
// and a writer that releases them when due.
type pipe struct {
	e       *Emulator
	in, out tun.Dev

	mu       sync.Mutex // guards everything below
	link     *linkemu.Link
	slots    [][]byte // frame held under each handle
	free     []uint64 // unused handles
	held     int64    // bytes in slots
	maxBytes int64
	st       DirStats
	kick     chan struct{} // the link went from empty to non-empty
	sleep    *sleeper      // the writer's timer
}

func (p *pipe) stats() DirStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.Stats = p.link.Stats()
	s.RateBps = p.link.Config().RateBps
	return s
}

func (p *pipe) read() {
	defer p.e.wg.Done()
	var pkt linkemu.Packet
	cfg := p.link.Config()
	var reply []byte // an ICMP error for the sender
	for {
		// Read straight into a pooled frame buffer: a super-packet is then
		// held without a copy; small frames are moved to a small buffer.
		buf := getBuf(tun.MaxFrameLen)
		n, err := p.in.Read(buf)
		if err != nil {
			putBuf(buf)
			p.readError(err)
			return
		}
		frame := buf[:n]
		info, err := tun.Inspect(frame)
		unparsed := err != nil
		if unparsed {
			pkt.HeaderLen = max(n-tun.VirtioNetHdrLen, 1)
			pkt.SegPayload = pkt.SegPayload[:0]
		} else {
			info.FillPacket(&pkt)
		}
		rewritten := !unparsed && tun.RewriteSYN(frame, info, cfg.Middlebox)
		if !unparsed && info.TooBig(cfg.MTU) {
			p.refuse(frame, info, cfg, &reply)
			putBuf(buf)
			continue
		}
		// Hold a super-packet in the buffer it was read into; move a
		// small frame to a small buffer so it does not pin 64 KB.
		slot := frame
		if n <= classes[len(classes)-2] {
			slot = getBuf(n)
			copy(slot, frame)
			putBuf(buf)
		}
		now := p.e.now()

		p.mu.Lock()
		p.st.FramesIn++
		p.st.BytesIn += int64(n)
		if unparsed {
			p.st.Unparsed++
		}
		if rewritten {
			p.st.SYNsRewritten++
		}
		if len(p.free) == 0 || p.held+int64(n) > p.maxBytes {
			p.st.OverloadFrames++
			p.mu.Unlock()
			putBuf(slot)
			continue
		}
		h := p.free[len(p.free)-1]
		wasEmpty := p.link.Pending() == 0
		v := p.link.Enqueue(now, pkt, h)
		if !v.Dropped() {
			// Set before unlocking: the writer may pop h at once.
			p.free = p.free[:len(p.free)-1]
			p.slots[h] = slot
			p.held += int64(n)
		}
		p.mu.Unlock()
		if v.Dropped() {
			putBuf(slot)
		}
		if wasEmpty && !v.Dropped() {
			select {
			case p.kick <- struct{}{}:
			default:
			}
		}
	}
}

// readError counts a device error that ends this direction (not the
// device closed by Stop); Stop reports what was carried.
func (p *pipe) readError(err error) {
	if errors.Is(err, os.ErrClosed) {
		return
	}
	select {
	case <-p.e.done:
	default:
		p.mu.Lock()
		p.st.ReadErrors++
		p.mu.Unlock()
	}
}

// refuse drops a frame over the link's MTU and, unless the link is a
// black hole, tells its sender the MTU with an ICMP error written back
// into the device it came from.
func (p *pipe) refuse(frame []byte, info tun.Info, cfg linkemu.Config, reply *[]byte) {
	sent := false
	if !cfg.MTUBlackhole {
		*reply = info.AppendTooBig((*reply)[:0], frame, cfg.MTU)
		_, err := p.in.Write(*reply)
		sent = err == nil
	}
	p.mu.Lock()
	p.st.FramesIn++
	p.st.BytesIn += int64(len(frame))
	p.st.MTUDrops++
	if sent {
		p.st.ICMPSent++
	}
	p.mu.Unlock()
}

func (p *pipe) write() {
	defer p.e.wg.Done()
	split := make([]byte, 0, tun.MaxFrameLen)
	// prevEnd is when the previous write ended: a frame due before then
	// waited behind it (linkemu.Link.Delivered).
	var prevEnd time.Duration
	for {
		p.mu.Lock()
		due, ok := p.link.NextDue()
		p.mu.Unlock()
		if !ok {
			select {
			case <-p.kick:
				continue
			case <-p.e.done:
				return
			}
		}
		// Due times are monotonic (constant delay, jitter clamped), so
		// nothing enqueued meanwhile can be due earlier.
		if err := p.sleep.sleep(due - p.e.now() - wakeLead); err != nil {
			return
		}
		for {
			p.mu.Lock()
			h, v, ok := p.link.PopDue(p.e.now() + wakeLead)
			var frame []byte
			if ok {
				frame = p.slots[h]
			}
			p.mu.Unlock()
			if !ok {
				break
			}
			out := frame
			if !v.Whole {
				var err error
				r := v.Keep[0]
				if out, err = tun.AppendRun(split[:0], frame, r.First, r.Count); err != nil {
					out = nil
				}
			}
			// Departure is when the write starts: the write itself runs
			// the receiving namespace's stack in this thread (lesson 7).
			actual := p.e.now()
			var werr error
			if out != nil {
				_, werr = p.out.Write(out)
			}
			end := p.e.now()
			if errors.Is(werr, os.ErrClosed) {
				return // Stop closed the device: not a write error
			}

			p.mu.Lock()
			p.link.Delivered(v.Due, actual, prevEnd)
			prevEnd = end
			if out == nil || werr != nil {
				p.st.WriteErrors++
			}
			if v.Final {
				p.held -= int64(len(frame))
				p.slots[h] = nil
				p.free = append(p.free, h)
				putBuf(frame)
			}
			p.mu.Unlock()
		}
	}
}

// Frame buffers come in a few size classes so that a pending ACK does not
// pin 64 KB and a burst of super-packets returns its memory afterwards.
var classes = [...]int{256, 2048, 16384, tun.MaxFrameLen}
var pools [len(classes)]sync.Pool

func getBuf(n int) []byte {
	for i, c := range classes {
		if n <= c {
			if b, ok := pools[i].Get().(*[]byte); ok {
				return (*b)[:n]
			}
			return make([]byte, n, c)
		}
	}
	return make([]byte, n)
}

func putBuf(b []byte) {
	for i, c := range classes {
		if cap(b) == c {
			b = b[:0]
			pools[i].Put(&b)
			return
		}
	}
}
