package switchcore

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// Switch is one emulated switch. Create it with New.
type Switch struct {
	cfg   Config
	clk   clock.Clock
	pool  *frame.Pool
	ports []port
	trace func(TraceEvent)
	rng   *rand.Rand

	pools map[string]*poolState
	fdb   fdb
	lpm   lpm

	headBytes int
	pfcQuanta uint16

	wdTimer clock.Timer

	sma *smaState  // subnet management agent (IB, sma.go); nil: none
	ls  *linkState // link-state routing (linkstate.go); nil: off
}

// port is one port's whole state: ingress PGs, egress queues, the
// transmitter, PFC state in both directions, the watchdog and IB credits.
type port struct {
	idx   int
	cfg   *PortConfig
	tx    PortTx
	up    bool
	speed uint64
	mac   wire.MAC

	pg [NumPriorities]pgState // ingress priority groups
	eq [NumPriorities]egressQueue

	pfcq fifo // PFC frames: sent before anything else, a link-state advertisement included
	ctrl fifo // link-state advertisements, VL15 packets: sent before any data

	busyUntil clock.Time // the wire is free: the tail of the frame on it, plus the wire overhead
	txTimer   clock.Timer
	ctFrame   *frame.Frame // the frame that may start before its tail arrived (cut-through)
	inTx      bool         // tryTx is running (a release inside it may queue an XON on p)
	txHeld    bool         // HoldTx: the driver's transport cannot take more data frames

	// Received PFC, per egress queue.
	pausedUntil [NumPriorities]clock.Time
	pauseAcct   [NumPriorities]clock.Time // rx pause duration accounted up to here
	pauseStart  [NumPriorities]clock.Time // start of the current continuous pause
	// Received 802.3x PAUSE, for rx_global_pause_duration.
	gPausedUntil, gPauseAcct clock.Time

	// PFC we send, per priority.
	xoffPrios    uint8
	xoffQueued   uint8 // priorities an XOFF waiting in ctrl pauses (refreshXoff)
	xoffSince    [NumPriorities]clock.Time
	refreshTimer clock.Timer

	// DWRR state.
	rr      int
	granted [NumPriorities]bool

	wd [NumPriorities]wdState

	ib ibPort

	c PortCounters
}

// New builds a switch from cfg (copied; the caller may reuse it). Frames the
// switch creates (PFC, IB flow control) come from pool.
func New(cfg *Config, clk clock.Clock, pool *frame.Pool) (*Switch, error) {
	if cfg == nil || clk == nil || pool == nil {
		return nil, fmt.Errorf("switchcore: New needs a config, a clock and a pool")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Switch{cfg: *cfg, clk: clk, pool: pool}
	s.cfg.Ports = append([]PortConfig(nil), cfg.Ports...)
	s.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0xDA3E39CB94B95BDB))
	s.headBytes = 0
	if cfg.CutThrough {
		s.headBytes = cfg.HeadBytesCT
		if s.headBytes <= 0 {
			s.headBytes = DefaultHeadBytes
		}
	}
	s.pfcQuanta = cfg.PFCQuanta
	if s.pfcQuanta == 0 {
		s.pfcQuanta = DefaultPFCQuanta
	}
	s.pools = make(map[string]*poolState, len(cfg.BufferPools))
	for name, bp := range cfg.BufferPools {
		if bp != nil {
			s.pools[name] = &poolState{size: bp.Size, mode: bp.Mode, xoff: bp.Xoff}
		}
	}
	s.ports = make([]port, len(s.cfg.Ports))
	for i := range s.ports {
		if err := s.initPort(i); err != nil {
			return nil, err
		}
	}
	s.fdb.init(&s.cfg)
	if err := s.lpm.init(s.cfg.Routes); err != nil {
		return nil, fmt.Errorf("switch %q: %w", cfg.Name, err)
	}
	s.lpm.refreshLive(func(i int) bool { return s.ports[i].up })
	if cfg.PFCWD.Enabled && cfg.Fabric == FabricEthernet {
		s.wdTimer = clk.NewTimer(s.pollWatchdog)
		s.wdTimer.Reset(clk.Now() + cfg.PFCWD.PollInterval)
	}
	return s, nil
}

func (s *Switch) initPort(i int) error {
	pc := &s.cfg.Ports[i]
	p := &s.ports[i]
	p.idx, p.cfg, p.up, p.speed = i, pc, true, pc.Speed
	p.mac = pc.MAC
	if p.mac == (wire.MAC{}) {
		h := fnv.New32a()
		h.Write([]byte(s.cfg.Name))
		v := h.Sum32()
		p.mac = wire.MAC{0x02, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v), byte(i + 1)}
	}
	p.txTimer = s.clk.NewTimer(func() { s.tryTx(p) })
	p.refreshTimer = s.clk.NewTimer(func() { s.refreshXoff(p) })
	for pg := range NumPriorities {
		if err := s.initPG(p, pg); err != nil {
			return err
		}
	}
	for q := range NumPriorities {
		s.initQueue(p, q)
	}
	if s.cfg.Fabric == FabricIB {
		s.initIB(p)
	}
	return nil
}

// Attach connects a port's transmit side. Frames forwarded to a port with
// no PortTx stay queued (counted in QueueDepth) until one is attached.
func (s *Switch) Attach(port int, tx PortTx) {
	p := &s.ports[port]
	p.tx = tx
	if s.cfg.Fabric == FabricIB {
		// Advertise our receive buffers as soon as the link exists (the
		// flow-control init of LinkInitialize).
		s.ibAdvertiseAll(p)
	}
	s.tryTx(p)
}

// Name is the switch name.
func (s *Switch) Name() string { return s.cfg.Name }

// Ports is the number of ports.
func (s *Switch) Ports() int { return len(s.ports) }

// HeadBytes is how many bytes of a frame must have arrived before the switch
// acts on it: the cut-through header size, or 0 meaning the whole frame
// (store-and-forward).
func (s *Switch) HeadBytes() int { return s.headBytes }

// PortIndex returns the index of the port named name, or -1.
func (s *Switch) PortIndex(name string) int {
	for i := range s.cfg.Ports {
		if s.cfg.Ports[i].Name == name {
			return i
		}
	}
	return -1
}

// PortSpeed returns the port's speed in bits/s.
func (s *Switch) PortSpeed(port int) uint64 { return s.ports[port].speed }

// SetPortSpeed changes a port's speed while the switch runs (a link that
// came up at another rate; a lab's `link set rate`). The egress serializes
// at it from the next frame, and PFC pause quanta count its bit times, so
// the priority's queue, its XOFF and its ECN marks see the link as it now
// is; a frame already started sends the rest of its bits at the new
// speed. A configured PFC refresh
// must stay shorter than the pause time at the new speed (as Validate
// asks of the configuration).
func (s *Switch) SetPortSpeed(port int, bps uint64) error {
	if port < 0 || port >= len(s.ports) {
		return fmt.Errorf("switchcore: no port %d", port)
	}
	p := &s.ports[port]
	if bps == 0 {
		return fmt.Errorf("switchcore: port %s: speed 0", p.cfg.Name)
	}
	if q := s.cfg.PFCQuanta; s.cfg.PFCRefresh > 0 && q > 0 && s.cfg.PFCRefresh >= wire.QuantaToTime(q, bps) {
		return fmt.Errorf("switchcore: port %s: at %d b/s the pause time of %d quanta is %v, not longer than the PFC refresh %v: the peer would resume between refreshes",
			p.cfg.Name, bps, q, wire.QuantaToTime(q, bps), s.cfg.PFCRefresh)
	}
	// The frame on the wire has the rest of its bits to send at the new
	// speed: its end moves, so the port's next start does too (at 1 kb/s
	// a 4 KB frame would otherwise hold the port 33 s after a change back
	// to 100 Gb/s).
	if now := s.clk.Now(); p.busyUntil > now {
		left := float64(p.busyUntil-now) * float64(p.speed) / float64(bps)
		p.busyUntil = now + clock.Time(left)
		p.txTimer.Reset(p.busyUntil)
	}
	s.rescaleArriving(port, float64(p.speed)/float64(bps))
	p.speed = bps
	return nil
}

// rescaleArriving moves the tails of the frames still arriving on port
// (f.TailAt in the future: the daemon computed it at the port's old
// speed) by scale, the old speed over the new, as the rest of their bits
// now come at the new speed. A store-and-forward egress queue waits for
// its head frame's tail (eligible): kept, a frame that began to arrive at
// 1 b/s held its queue for hours after the link was set back to 100 Gb/s,
// and nothing behind it left. Every port whose queue held such a frame is
// tried again at once.
func (s *Switch) rescaleArriving(port int, scale float64) {
	if scale == 1 {
		return
	}
	now := s.clk.Now()
	for i := range s.ports {
		e := &s.ports[i]
		moved := false
		for q := range e.eq {
			fq := &e.eq[q].fifo
			for k := range fq.size {
				f := fq.buf[(fq.head+k)%len(fq.buf)]
				if f.InPort == port && f.TailAt > now {
					f.TailAt = now + clock.Time(float64(f.TailAt-now)*scale)
					moved = true
				}
			}
		}
		if moved {
			s.tryTx(e)
		}
	}
}

// SetTrace installs a hook called for every TraceEvent (nil removes it).
func (s *Switch) SetTrace(fn func(ev TraceEvent)) { s.trace = fn }

// SetPortUp takes a port down or up. Going down drops everything queued on
// it (link_down) and forgets received pauses; frames forwarded to a down
// port and frames arriving on it are dropped (link_down).
func (s *Switch) SetPortUp(port int, up bool) {
	p := &s.ports[port]
	if p.up == up {
		return
	}
	if !up {
		p.c.LinkDownEvents++
	}
	s.setPortUp(p, port, up)
}

// StartPortDown takes a port down that has never carried a link (nothing
// is connected to it yet), as SetPortUp(port, false) does but without
// counting a link-down event: a real port's link_down_events_phy counts
// links lost, and a port that never had one has lost none.
func (s *Switch) StartPortDown(port int) {
	if p := &s.ports[port]; p.up {
		s.setPortUp(p, port, false)
	}
}

func (s *Switch) setPortUp(p *port, port int, up bool) {
	if !up {
		s.accrueXoff(p, p.xoffPrios, s.clk.Now())
	}
	p.up = up
	s.lpm.refreshLive(func(i int) bool { return s.ports[i].up })
	if !up {
		s.fdb.forgetPort(port)
	}
	if s.ls != nil {
		s.originate()
		if up {
			s.linkStateUp(port)
		}
	}
	if up {
		for prio := range NumPriorities {
			p.xoffSince[prio] = s.clk.Now()
		}
	}
	if s.sma != nil {
		// The SMA sees the physical link change now, not at its next
		// SMP: down takes the port Down, up to Init, and either raises
		// PortStateChange (IBA 14.2.5.6), so the SM's light sweep finds
		// even a port that went down and up between two SMPs.
		s.sma.agent.SetLinkUp(port+1, up && p.tx != nil)
	}
	if up {
		if s.cfg.Fabric == FabricIB {
			s.ibAdvertiseAll(p)
		}
		s.tryTx(p)
		return
	}
	now := s.clk.Now()
	for q := range NumPriorities {
		for {
			f := p.eq[q].fifo.pop()
			if f == nil {
				break
			}
			s.dequeued(p, q, f)
			s.dropAfterAdmit(p, f, DropLinkDown)
		}
		s.endPause(p, q, now)
	}
	s.endGlobalPause(p, now)
	for _, q := range []*fifo{&p.pfcq, &p.ctrl} {
		for f := q.pop(); f != nil; f = q.pop() {
			f.Put()
		}
	}
	p.xoffQueued = 0
	p.txTimer.Stop()
}

// HoldTx stops (hold) or resumes port's transmitter for data frames;
// control frames (PFC, IB flow control, VL15) still go. A real-time
// driver holds a port whose transport (a socket between processes) has
// fallen behind the emulated link rate: the frames wait in the port's
// egress queues, where buffer accounting, PFC and ECN see them, exactly as
// behind a slower link, instead of being dropped in the driver. The
// simulator never holds a port.
func (s *Switch) HoldTx(port int, hold bool) {
	p := &s.ports[port]
	if p.txHeld == hold {
		return
	}
	p.txHeld = hold
	if !hold {
		s.tryTx(p)
	}
}

// Counters returns the port's counters, with pause durations (received
// and asserted) brought up to now. The pointer stays valid; the switch keeps updating it.
func (s *Switch) Counters(port int) *PortCounters {
	p := &s.ports[port]
	now := s.clk.Now()
	for q := range NumPriorities {
		s.accruePause(p, q, now)
	}
	s.accrueGlobalPause(p, now)
	s.accrueXoff(p, p.xoffPrios, now)
	p.accrueIBWaits(now)
	return &p.c
}

// QueueDepth is the bytes queued at egress queue prio of port.
func (s *Switch) QueueDepth(port, prio int) int { return s.ports[port].eq[prio].bytes }

// PGOccupancy returns the shared (reserved + shared pool) and headroom bytes
// held by ingress priority group pg of port.
func (s *Switch) PGOccupancy(port, pg int) (shared, headroom int) {
	g := &s.ports[port].pg[pg]
	return g.used, g.hdrm
}

// Paused reports whether egress priority prio of port is paused by a PFC
// (or PAUSE) frame received from the peer.
func (s *Switch) Paused(port, prio int) bool {
	p := &s.ports[port]
	return p.pausedUntil[s.cfg.PFCPriorityToQueue[prio]] > s.clk.Now()
}

// XoffSent reports whether we currently assert XOFF for prio towards the
// peer on port.
func (s *Switch) XoffSent(port, prio int) bool { return s.ports[port].xoffPrios&(1<<prio) != 0 }

// Stormed reports whether the PFC watchdog has declared a storm on queue
// prio of port.
func (s *Switch) Stormed(port, prio int) bool { return s.ports[port].wd[prio].stormed }

func (s *Switch) emit(ev TraceEvent) {
	if s.trace != nil {
		ev.At = s.clk.Now()
		ev.Switch = s.cfg.Name
		s.trace(ev)
	}
}

// drop counts a frame that was never admitted to a buffer and frees it.
func (s *Switch) drop(p *port, prio int, f *frame.Frame, r DropReason) {
	p.c.Drops[r]++
	if prio >= 0 {
		p.c.Prio[prio].Drops[r]++
	}
	if s.trace != nil {
		s.emit(TraceEvent{Kind: TraceDrop, Port: p.idx, Prio: prio, Reason: r, Bytes: f.Len(), Frame: f})
	}
	f.Put()
}

// dropAfterAdmit drops a frame that holds ingress buffer: the buffer is
// released (possibly resuming its PG) and the drop is counted at the port
// where it happens (p).
func (s *Switch) dropAfterAdmit(p *port, f *frame.Frame, r DropReason) {
	s.release(f)
	s.drop(p, int(f.Priority), f, r)
}
