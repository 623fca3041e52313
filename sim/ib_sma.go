package sim

import (
	"errors"
	"fmt"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/sm"
	"github.com/emufabric/emufabric/switchcore"
	"github.com/emufabric/emufabric/wire"
)

// Subnet management in the simulator (IBA 14): every IB host's HCA has a
// subnet management agent on QP0 that answers SMPs (NodeInfo type CA, one
// port, GUIDs derived from the host name) and, with ManageIB, the switches
// get agents too, one host runs the subnet manager (package sm), and the
// fabric starts unconfigured: no LIDs, empty forwarding tables, ports in
// Init. Hosts send no data until the SM has made their port Active, and
// they address each other by the LIDs the SM assigned.

// IBManagement configures ManageIB.
type IBManagement struct {
	SMHost string    // the host the SM runs on
	SM     sm.Config // SM tuning (timeouts, light sweep period, ...)
	Start  clock.Time
	// SMADelay is every agent's processing time per SMP (switches and
	// HCAs); zero: switchcore.DefaultSMADelay.
	SMADelay clock.Time
}

// SubnetManager is the SM running on one simulated host: a synthetic
// host's SMI, or a NIC host's port (through sm.Runner).
type SubnetManager struct {
	s      *Sim
	host   *Host // nil when the SM runs on a NIC host
	m      *sm.SM
	timer  *timer
	buf    [mad.Size]byte
	runner *sm.Runner // on a NIC host
}

// SM returns the subnet manager state machine (stats, topology, text output).
func (d *SubnetManager) SM() *sm.SM { return d.m }

// Host returns the synthetic host the SM runs on (nil on a NIC host).
func (d *SubnetManager) Host() *Host { return d.host }

// IBGUID returns the node GUID the simulator gives the node called name,
// lab.IBGUID's, as the real-time daemons do.
func IBGUID(name string) uint64 { return lab.IBGUID(name) }

// ManageIB hands the IB fabric to a subnet manager on cfg.SMHost: it
// clears the switches' forwarding tables and the hosts' LIDs, starts the
// simulation (Start), gives every IB switch an SMA and arms the SM's first
// sweep at cfg.Start. Call it after building the topology and flows,
// instead of (or before) Start.
func (s *Sim) ManageIB(cfg IBManagement) (*SubnetManager, error) {
	if s.started {
		return nil, errors.New("sim: ManageIB after Start")
	}
	smh := s.Host(cfg.SMHost)
	smn := s.nicHost(cfg.SMHost)
	if (smh == nil || !smh.ib()) && (smn == nil || !smn.ib()) {
		return nil, fmt.Errorf("sim: ManageIB: %q is not an IB host", cfg.SMHost)
	}
	for _, w := range s.switches {
		if w.ib() {
			w.autoRoutes = false
			w.cfg.IB.LFT = nil
		}
	}
	for _, h := range s.hosts {
		if h.ib() {
			h.cfg.LID = 0
			h.smiState().managed = true
		}
	}
	for _, h := range s.nics {
		if h.ib() {
			// The NIC gets an SMA (startNICs) and, like a synthetic
			// host, no LID until the SM assigns one.
			h.cfg.LID = 0
			h.managed, h.isSM = true, h == smn
		}
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	for _, w := range s.switches {
		if !w.ib() {
			continue
		}
		_, err := w.sw.EnableSMA(switchcore.SMAConfig{Delay: cfg.SMADelay, Agent: mad.AgentConfig{
			NodeGUID: IBGUID(w.name), Description: w.name, DeviceID: 0x5A5A, PortLink: w.portLink,
		}})
		if err != nil {
			return nil, fmt.Errorf("sim: switch %s: %w", w.name, err)
		}
	}
	for _, h := range s.hosts {
		if h.ib() {
			h.smiState().delay = cfg.SMADelay
		}
	}
	d := &SubnetManager{s: s, m: sm.New(cfg.SM)}
	s.sm = d
	if smn != nil {
		d.runner = sm.NewRunner(d.m, s, smn.n)
		smn.n.SetSMPDeliver(d.runner.Receive)
		s.newTimer(d.runner.Start).Reset(cfg.Start)
		return d, nil
	}
	d.host = smh
	smh.smiState().sm = d
	smh.smiState().agentCap |= mad.CapIsSM
	d.timer = s.newTimer(d.tick)
	s.newTimer(func() { d.m.Start(s.now); d.pump() }).Reset(cfg.Start)
	return d, nil
}

func (d *SubnetManager) tick() {
	d.m.Tick(d.s.now)
	d.pump()
}

// pump sends what the SM has to send and re-arms its timer.
func (d *SubnetManager) pump() {
	now := d.s.now
	h := d.host
	for {
		port, ok := d.m.Poll(now, d.buf[:])
		if !ok {
			break
		}
		if port == 0 {
			// A zero-hop directed route: the SM's own node.
			act := h.agent().Handle(1, d.buf[:], false)
			h.applySMA(act)
			if act.Verdict == mad.DeliverSM {
				d.m.Receive(now, d.buf[:])
			}
			continue
		}
		h.sendSMP(d.buf[:])
	}
	if at := d.m.Deadline(); at != clock.Never {
		d.timer.Reset(max(at, now))
	} else {
		d.timer.Stop()
	}
}

// hostSMI is a host's QP0: its agent, its VL15 transmit queue and the
// SM it may run.
type hostSMI struct {
	a        *mad.Agent
	agentCap uint32
	managed  bool // data waits for an Active port
	delay    clock.Time
	rxq      []*frame.Frame
	busy     clock.Time
	rxTimer  *timer
	txq      []*frame.Frame
	sm       *SubnetManager
	pkt      mad.Packet
	psn      uint32
	Stats    SMIStats
}

// SMIStats counts a host's management packets.
type SMIStats struct {
	Rx, Tx    uint64
	Malformed uint64
}

func (h *Host) smiState() *hostSMI {
	if h.smi == nil {
		h.smi = &hostSMI{delay: switchcore.DefaultSMADelay}
		h.smi.rxTimer = h.s.newTimer(h.smiRun)
	}
	return h.smi
}

// agent returns the HCA's SMA, creating it on first use.
func (h *Host) agent() *mad.Agent {
	st := h.smiState()
	if st.a == nil {
		st.a = mad.NewAgent(mad.AgentConfig{
			NodeType: mad.NodeTypeCA, NumPorts: 1, NodeGUID: IBGUID(h.cfg.Name),
			Description: h.cfg.Name + " HCA-1", DeviceID: 0xE3E3, PortLink: h.portLink,
			CapabilityMask: st.agentCap | mad.CapIsTrapSupported | mad.CapIsSystemImageGUID,
		})
		st.a.SetLinkUp(1, h.up && h.tx != nil)
	}
	return st.a
}

// SMA returns the host's subnet management agent (IB hosts).
func (h *Host) SMA() *mad.Agent {
	if !h.ib() {
		return nil
	}
	return h.agent()
}

// SMIStats returns the host's management packet counters.
func (h *Host) SMIStats() SMIStats {
	if h.smi == nil {
		return SMIStats{}
	}
	return h.smi.Stats
}

// portActive reports whether the host may send data: always for an
// unmanaged fabric, otherwise once the SM has made the port Active.
func (h *Host) portActive() bool {
	return h.smi == nil || !h.smi.managed || (h.smi.a != nil && h.smi.a.PortState(1) == mad.PortStateActive)
}

func (h *Host) smaLinkState(up bool) {
	if h.smi != nil && h.smi.a != nil {
		h.smi.a.SetLinkUp(1, up)
	}
}

// receiveSMP takes a VL15 packet (a copy: the caller frees fr) into the
// agent's queue.
func (h *Host) receiveSMP(fr *frame.Frame) {
	st := h.smiState()
	st.Stats.Rx++
	c := h.s.pool.Get(len(fr.Data))
	copy(c.Data, fr.Data)
	st.rxq = append(st.rxq, c)
	if len(st.rxq) == 1 {
		st.rxTimer.Reset(max(st.busy, h.s.now) + st.delay)
	}
}

func (h *Host) smiRun() {
	st := h.smi
	if len(st.rxq) == 0 {
		return
	}
	f := st.rxq[0]
	st.rxq[0] = nil
	st.rxq = st.rxq[1:]
	now := h.s.now
	st.busy = now
	if len(st.rxq) > 0 {
		st.rxTimer.Reset(now + st.delay)
	}
	h.handleSMP(f)
}

func (h *Host) handleSMP(f *frame.Frame) {
	st := h.smi
	a := h.agent()
	if err := mad.DecodePacket(f.Data, &st.pkt, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
		st.Stats.Malformed++
		f.Put()
		return
	}
	lrh := wire.LRH(f.Data)
	lidMatch := a.LID() != 0 && lrh.DLID() == a.LID()
	act := a.Handle(1, st.pkt.SMP, lidMatch)
	h.applySMA(act)
	if act.Verdict == mad.DeliverSM {
		if st.sm != nil {
			st.sm.m.Receive(h.s.now, st.pkt.SMP)
			st.sm.pump()
		}
		f.Put()
		return
	}
	if !act.AddressFromHCA(lrh, h.cfg.LID) {
		f.Put()
		return
	}
	if bth.FinishIBPacket(f.Data) != nil {
		st.Stats.Malformed++
		f.Put()
		return
	}
	h.queueSMP(f)
}

// applySMA makes the host follow what a Set changed: its LID (which
// flows address) and, on activation, its data path.
func (h *Host) applySMA(act mad.Action) {
	a := h.agent()
	if act.Changed&mad.ChangeLID != 0 {
		h.cfg.LID = a.LID()
	}
	if act.Changed&mad.ChangePortState != 0 {
		h.kick()
	}
}

// sendSMP sends a 256-byte SMP from this host's QP0 out of its port as a
// directed-route packet.
func (h *Host) sendSMP(smp mad.SMP) {
	st := h.smiState()
	f := h.s.pool.Get(mad.PacketSize)
	st.psn++
	if _, err := mad.EncodePacket(f.Data, &mad.PacketFields{DLID: mad.PermissiveLID, SLID: mad.LIDOrPermissive(h.cfg.LID), PSN: st.psn}, smp); err != nil {
		panic(fmt.Sprintf("sim: host %s: building an SMP packet: %v", h.cfg.Name, err))
	}
	h.queueSMP(f)
}

func (h *Host) queueSMP(f *frame.Frame) {
	st := h.smi
	if !h.up {
		f.Put()
		return
	}
	f.Note = "smp"
	st.txq = append(st.txq, f)
	h.kick()
}

// sendQueuedSMP puts the first queued VL15 packet on the wire (no credits:
// VL15 is not flow-controlled).
func (h *Host) sendQueuedSMP() {
	st := h.smi
	f := st.txq[0]
	st.txq[0] = nil
	st.txq = st.txq[1:]
	st.Stats.Tx++
	h.transmit(f)
}

func (h *Host) smpPending() bool { return h.smi != nil && len(h.smi.txq) > 0 }

// portLink reports a switch port's link as IB width and speed codes.
func (w *simSwitch) portLink(p int) (width, speed, speedExt uint8) {
	if p < 1 || p > len(w.ports) || w.ports[p-1].link == nil {
		return 0, 0, 0
	}
	return mad.LinkFor(w.ports[p-1].link.Cfg.Rate)
}

// portLink reports the host's link as IB width and speed codes.
func (h *Host) portLink(int) (width, speed, speedExt uint8) {
	if h.link == nil {
		return 0, 0, 0
	}
	return mad.LinkFor(h.link.Cfg.Rate)
}
