package sm

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/mad"
)

// Config tunes the SM. Zero values take the defaults noted.
type Config struct {
	// MaxOutstanding is how many SMPs may await a response at once
	// (OpenSM max_wire_smps; default 4).
	MaxOutstanding int
	// Timeout is how long an SMP may go unanswered before it is resent
	// (OpenSM transaction_timeout; default 100 µs, which is generous for
	// simulated fabrics whose round trips are a few µs).
	Timeout clock.Time
	// Retries is how often an unanswered SMP is resent before the SM gives
	// up on it (OpenSM transaction_retries; default 3).
	Retries int
	// LightSweep is the period of light sweeps after a sweep completes
	// (OpenSM sweep_interval); zero disables them.
	LightSweep clock.Time
	// SMKey is written as the M_Key of every SMP (0: no M_Key protection).
	SMKey uint64
	// SubnetTimeOut is written into every port's PortInfo (IBA 4.096 µs * 2^n).
	SubnetTimeOut uint8
}

// Stats are the SM's counters and the figures of its last sweep.
type Stats struct {
	HeavySweeps   int // completed heavy sweeps (discovery + configuration)
	LightSweeps   int // completed light sweeps
	SMPsSent      uint64
	SMPsReceived  uint64
	Timeouts      uint64     // SMPs that went unanswered after every retry
	Retries       uint64     // resent SMPs
	ErrorStatus   uint64     // responses with a non-zero MAD status
	Unexpected    uint64     // responses matching no outstanding request
	LastSweepSMPs uint64     // SMPs sent by the last heavy sweep
	LastSweepTime clock.Time // duration of the last heavy sweep
	LastSweepEnd  clock.Time
	Nodes         int // nodes found by the last heavy sweep
	Switches      int
}

type phase uint8

const (
	phaseIdle phase = iota
	phaseDiscover
	phaseProgram    // LIDs, SwitchInfo, LFT blocks
	phaseArm        // PortState Armed
	phaseActivate   // PortState Active on switch ports
	phaseActivateCA // PortState Active on CA ports
	phaseLight      // light sweep
)

// SM is the subnet manager state. It is not safe for concurrent use.
type SM struct {
	cfg   Config
	phase phase
	tid   uint64

	queue []*req
	out   []*req // outstanding, in send order (deterministic timeouts)

	topo *Topology // the sweep in progress
	last *Topology // the last complete sweep

	// Persistent across sweeps: LIDs by port GUID, and what each switch's
	// LFT holds (by node GUID) so re-sweeps send only changed blocks.
	lids       map[uint64]uint16
	lidOwner   map[uint16]uint64
	programmed map[uint64][]uint8
	pendingLFT map[uint64][]uint8 // computed this sweep

	sweepStart clock.Time
	sweepSent  uint64
	nextLight  clock.Time
	changed    bool // the light sweep saw a change
	stats      Stats
	errs       []string
}

// New returns an SM; Start begins the first sweep.
func New(cfg Config) *SM {
	if cfg.MaxOutstanding <= 0 {
		cfg.MaxOutstanding = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 100 * clock.Microsecond
	}
	if cfg.Retries <= 0 {
		cfg.Retries = 3
	}
	return &SM{
		cfg: cfg, nextLight: clock.Never,
		lids: map[uint64]uint16{}, lidOwner: map[uint16]uint64{}, programmed: map[uint64][]uint8{},
	}
}

// Start begins a heavy sweep now (it restarts one in progress).
func (m *SM) Start(now clock.Time) {
	m.queue, m.out = m.queue[:0], m.out[:0]
	m.startHeavy(now)
}

// Idle reports whether no sweep is in progress.
func (m *SM) Idle() bool { return m.phase == phaseIdle }

// Stats returns the counters.
func (m *SM) Stats() Stats { return m.stats }

// Errors returns the problems the SM met (error statuses, timeouts), in
// order, for logs.
func (m *SM) Errors() []string { return m.errs }

// Topology returns the fabric as of the last complete heavy sweep (nil
// before the first).
func (m *SM) Topology() *Topology { return m.last }

// Deadline is when Tick must next be called: the earliest SMP timeout, or
// the next light sweep when idle.
func (m *SM) Deadline() clock.Time {
	d := clock.Never
	for _, r := range m.out {
		d = min(d, r.deadline)
	}
	if m.phase == phaseIdle {
		d = min(d, m.nextLight)
	}
	return d
}

// Poll writes the next SMP to send into buf (mad.Size bytes) and returns
// the SM node's port to send it out of, 0 meaning the SM node's own SMA
// (a zero-hop directed route). ok is false when nothing may be sent now
// (queue empty or MaxOutstanding SMPs in flight).
func (m *SM) Poll(now clock.Time, buf mad.SMP) (port int, ok bool) {
	if len(m.queue) == 0 || len(m.out) >= m.cfg.MaxOutstanding {
		return 0, false
	}
	r := m.queue[0]
	m.queue[0] = nil
	m.queue = m.queue[1:]
	m.tid++
	r.tid = m.tid
	r.deadline = now + m.cfg.Timeout
	r.tries++
	m.out = append(m.out, r)
	m.encode(r, buf)
	m.stats.SMPsSent++
	m.sweepSent++
	if len(r.path) == 0 {
		return 0, true
	}
	return int(r.path[0]), true
}

func (m *SM) encode(r *req, buf mad.SMP) {
	f := mad.SMPFields{
		Method: r.method, TransactionID: r.tid, AttributeID: r.attr, AttrModifier: r.am,
		MKey: m.cfg.SMKey, Data: r.data,
	}
	mad.DRPath(&f, r.path)
	buf.Encode(&f)
}

// Receive hands the SM a response that arrived for it (a directed-route
// GetResp whose D bit is set).
func (m *SM) Receive(now clock.Time, smp mad.SMP) {
	if smp.Validate(0) != nil || !smp.MAD().IsResponse() {
		m.stats.Unexpected++
		return
	}
	tid := smp.MAD().TransactionID()
	i := 0
	for i < len(m.out) && m.out[i].tid != tid {
		i++
	}
	if i == len(m.out) {
		m.stats.Unexpected++ // late answer to a retried or abandoned SMP
		return
	}
	r := m.out[i]
	m.out = append(m.out[:i], m.out[i+1:]...)
	m.stats.SMPsReceived++
	if st := smp.Status(); st != 0 {
		m.stats.ErrorStatus++
		m.errorf("%s %s at path %v: status 0x%04x", mad.MethodName(r.method), mad.AttrName(r.attr), r.path, st)
		m.failed(now, r)
	} else {
		m.done(now, r, smp)
	}
	m.advance(now)
}

// Tick handles timeouts (resend, or give up after Retries; a light-sweep
// poll is not resent) and starts the light sweep when it is due.
func (m *SM) Tick(now clock.Time) {
	keep := m.out[:0]
	var expired []*req
	for _, r := range m.out {
		if r.deadline <= now {
			expired = append(expired, r)
		} else {
			keep = append(keep, r)
		}
	}
	m.out = keep
	for _, r := range expired {
		// A light-sweep poll that goes unanswered is itself the change
		// it looks for (a link cut on its path): retrying it would hold
		// the heavy sweep back by the whole retry budget, and no other
		// light sweep can start while it is out.
		if r.tries <= m.cfg.Retries && r.kind != kLightSwitchInfo && r.kind != kLightPortInfo {
			m.stats.Retries++
			m.queue = append([]*req{r}, m.queue...)
			continue
		}
		m.stats.Timeouts++
		m.errorf("%s %s at path %v: no response after %d tries", mad.MethodName(r.method), mad.AttrName(r.attr), r.path, r.tries)
		m.failed(now, r)
	}
	if m.phase == phaseIdle && now >= m.nextLight {
		m.startLight(now)
	}
	m.advance(now)
}

func (m *SM) errorf(format string, args ...any) {
	if len(m.errs) < 1000 {
		m.errs = append(m.errs, sprintf(format, args...))
	}
}

// advance moves to the next phase once every SMP of the current one has
// been answered or abandoned.
func (m *SM) advance(now clock.Time) {
	if m.phase == phaseLight && m.changed {
		// One changed switch is enough: do not wait for SMPs that may
		// be crossing the very link that went down. Their late answers
		// count as unexpected.
		m.queue, m.out = m.queue[:0], m.out[:0]
	}
	for len(m.queue) == 0 && len(m.out) == 0 {
		switch m.phase {
		case phaseDiscover:
			m.phase = phaseProgram
			m.assignLIDs()
			m.computeRoutes()
			m.queueProgram()
		case phaseProgram:
			m.phase = phaseArm
			m.queuePortState(mad.PortStateInit, mad.PortStateArmed, true)
			m.queuePortState(mad.PortStateInit, mad.PortStateArmed, false)
		case phaseArm:
			// Switches first, and all of them before any CA: a CA sends
			// data as soon as its port is Active, and a switch port that
			// is not Active yet would discard it.
			m.phase = phaseActivate
			m.queuePortState(mad.PortStateArmed, mad.PortStateActive, true)
		case phaseActivate:
			m.phase = phaseActivateCA
			m.queuePortState(mad.PortStateArmed, mad.PortStateActive, false)
		case phaseActivateCA:
			m.finishHeavy(now)
			return
		case phaseLight:
			m.stats.LightSweeps++
			if m.changed {
				m.startHeavy(now)
				continue
			}
			m.phase = phaseIdle
			m.scheduleLight(now)
			return
		default:
			return
		}
	}
}

func (m *SM) scheduleLight(now clock.Time) {
	m.nextLight = clock.Never
	if m.cfg.LightSweep > 0 {
		m.nextLight = now + m.cfg.LightSweep
	}
}

func (m *SM) finishHeavy(now clock.Time) {
	m.phase = phaseIdle
	m.last = m.topo
	m.stats.HeavySweeps++
	m.stats.LastSweepTime = now - m.sweepStart
	m.stats.LastSweepEnd = now
	m.stats.LastSweepSMPs = m.sweepSent
	m.stats.Nodes = len(m.topo.Nodes)
	m.stats.Switches = 0
	for _, n := range m.topo.Nodes {
		if n.Type == mad.NodeTypeSwitch {
			m.stats.Switches++
		}
	}
	m.scheduleLight(now)
}

func (m *SM) startLight(now clock.Time) {
	m.phase = phaseLight
	m.changed = false
	if m.last == nil {
		m.changed = true
		return
	}
	switches := 0
	for _, n := range m.last.Nodes {
		if n.Type == mad.NodeTypeSwitch {
			switches++
			m.push(&req{kind: kLightSwitchInfo, method: mad.MethodGet, attr: mad.AttrSwitchInfo, path: n.Path, node: n})
		}
	}
	if switches > 0 {
		return
	}
	// No switch reports a port's change (PortStateChange): two HCAs
	// cabled to each other. Each CA port is read instead; one that is not
	// Active (it went down and came back as Init) or does not answer
	// needs a heavy sweep, or the link stays unusable for good.
	for _, n := range m.last.Nodes {
		for p := 1; p <= n.NumPorts; p++ {
			m.push(&req{kind: kLightPortInfo, method: mad.MethodGet, attr: mad.AttrPortInfo, am: uint32(p), path: n.Path, node: n, port: p})
		}
	}
}
