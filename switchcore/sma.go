package switchcore

import (
	"errors"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

// The switch's Subnet Management Agent (IB mode, IBA 14.2 / 18.2.4.1).
//
// With an SMA enabled, VL15 packets addressed to the switch are consumed
// instead of forwarded: directed-route SMPs (LRH DLID = permissive 0xFFFF),
// which every hop's SMA moves along the path, and LID-routed SMPs whose
// DLID is the switch's own LID (the LID of its management port 0). Other
// VL15 packets are forwarded by the LFT as before. The agent (mad.Agent)
// answers in place; the response or the forwarded SMP leaves through the
// port's VL15 control queue, ahead of data and without credits.
//
// IBA port numbers are switchcore port indexes + 1 (port 0 is the SMA).
// From EnableSMA on, the agent owns the linear forwarding table: it starts
// empty and holds what the subnet manager programs (Set
// LinearForwardingTable blocks up to SwitchInfo.LinearFDBTop).
//
// Port states: with an SMA, data (non-VL15) packets are forwarded only
// from a port that is Armed or Active to a port that is Active (IBA 7.2:
// a port in Init passes only SMPs; an Armed port receives but does not
// send data). Others are dropped and counted as link_down: the logical
// link is not up until the subnet manager activates it.
//
// The agent's processing time is SMAConfig.Delay per SMP, counted from the
// packet's tail (an SMA acts on whole packets even in a cut-through
// switch), SMPs being handled one at a time in arrival order.

// SMAConfig configures a switch's SMA.
type SMAConfig struct {
	// Agent describes the node (GUIDs, description, vendor); NodeType and
	// NumPorts are set from the switch.
	Agent mad.AgentConfig
	// Delay is the processing time per SMP (default 1 µs).
	Delay clock.Time
}

// SMAStats counts the switch's management traffic.
type SMAStats struct {
	Consumed  uint64 // VL15 packets taken by the SMA
	Malformed uint64 // ... that failed to decode as SMPs
	Sent      uint64 // responses and forwarded SMPs sent
	NoRoute   uint64 // LID-routed responses with no LFT entry back
	LinkDown  uint64 // ... whose output port was down
}

type smaItem struct {
	f    *frame.Frame
	port int
}

type smaState struct {
	agent *mad.Agent
	delay clock.Time
	q     []smaItem
	busy  clock.Time // the agent is busy until then
	timer clock.Timer
	pkt   mad.Packet
	stats SMAStats
}

// DefaultSMADelay is the default SMA processing time per SMP.
const DefaultSMADelay = clock.Microsecond

// EnableSMA gives an IB switch a subnet management agent and returns it.
// The forwarding table is emptied: the subnet manager programs it.
func (s *Switch) EnableSMA(cfg SMAConfig) (*mad.Agent, error) {
	if s.cfg.Fabric != FabricIB {
		return nil, errors.New("switchcore: an SMA needs an InfiniBand switch")
	}
	ac := cfg.Agent
	ac.NodeType = mad.NodeTypeSwitch
	ac.NumPorts = len(s.ports)
	st := &smaState{agent: mad.NewAgent(ac), delay: cfg.Delay}
	if st.delay <= 0 {
		st.delay = DefaultSMADelay
	}
	st.timer = s.clk.NewTimer(s.smaRun)
	s.sma = st
	s.cfg.IB.LFT = nil
	s.smaSyncLinks()
	return st.agent, nil
}

// SMA returns the switch's agent, nil if none was enabled.
func (s *Switch) SMA() *mad.Agent {
	if s.sma == nil {
		return nil
	}
	return s.sma.agent
}

// SMAStats returns the SMA counters (zero without an SMA).
func (s *Switch) SMAStats() SMAStats {
	if s.sma == nil {
		return SMAStats{}
	}
	return s.sma.stats
}

// LFTEntry returns the output port index for dlid (-1: none).
func (s *Switch) LFTEntry(dlid uint16) int {
	if int(dlid) < len(s.cfg.IB.LFT) {
		return s.cfg.IB.LFT[dlid]
	}
	return -1
}

// smaForwardOK reports whether a data packet may go from port in to port
// out under the IBA port states (always true without an SMA).
func (s *Switch) smaForwardOK(in, out int) bool {
	if s.sma == nil {
		return true
	}
	a := s.sma.agent
	st := a.PortState(in + 1)
	return (st == mad.PortStateArmed || st == mad.PortStateActive) && a.PortState(out+1) == mad.PortStateActive
}

// smaOutActive reports whether port out may send data packets: Active
// (always without an SMA). A packet refused for its output port's state
// is that port's PortXmitDiscard; one refused for its input port's is not.
func (s *Switch) smaOutActive(out int) bool {
	return s.sma == nil || s.sma.agent.PortState(out+1) == mad.PortStateActive
}

// smaReceive takes a VL15 packet (LRH and VCRC already checked) if it is
// addressed to this switch and reports whether it did.
func (s *Switch) smaReceive(p *port, f *frame.Frame) bool {
	st := s.sma
	if st == nil {
		return false
	}
	dlid := wire.LRH(f.Data).DLID()
	if dlid != mad.PermissiveLID && (dlid == 0 || dlid != st.agent.LID()) {
		return false
	}
	st.stats.Consumed++
	st.q = append(st.q, smaItem{f: f, port: p.idx})
	if len(st.q) == 1 {
		st.timer.Reset(max(st.busy, f.TailAt, s.clk.Now()) + st.delay)
	}
	return true
}

// smaRun handles the SMP at the head of the queue.
func (s *Switch) smaRun() {
	st := s.sma
	if len(st.q) == 0 {
		return
	}
	it := st.q[0]
	st.q[0] = smaItem{}
	st.q = st.q[1:]
	now := s.clk.Now()
	st.busy = now
	if len(st.q) > 0 {
		st.timer.Reset(max(now, st.q[0].f.TailAt) + st.delay)
	}
	s.smaHandle(it.port, it.f)
}

func (s *Switch) smaSyncLinks() {
	a := s.sma.agent
	for i := range s.ports {
		a.SetLinkUp(i+1, s.ports[i].up && s.ports[i].tx != nil)
	}
}

func (s *Switch) smaHandle(in int, f *frame.Frame) {
	st := s.sma
	a := st.agent
	if err := mad.DecodePacket(f.Data, &st.pkt, bth.VerifyICRC); err != nil {
		st.stats.Malformed++
		s.drop(&s.ports[in], -1, f, DropMalformed)
		return
	}
	s.smaSyncLinks()
	lrh := wire.LRH(f.Data)
	lidMatch := lrh.DLID() == a.LID() && a.LID() != 0
	act := a.Handle(in+1, st.pkt.SMP, lidMatch)
	if act.Changed&mad.ChangeLFT != 0 {
		s.smaSyncLFT()
	}
	out := -1
	switch act.Verdict {
	case mad.SendPort:
		out = act.Port - 1
		if smp := st.pkt.SMP; smp.Direction() && smp.HopPointer() == smp.HopCount() {
			// A response this agent generated (a forwarded one has
			// moved past HopCount): it comes from our LID.
			lrh.SetSLID(mad.LIDOrPermissive(a.LID()))
		}
	case mad.SendLID:
		dst := lrh.SLID()
		lrh.SetDLID(dst)
		lrh.SetSLID(mad.LIDOrPermissive(a.LID()))
		out = s.LFTEntry(dst)
		if out < 0 {
			st.stats.NoRoute++
			s.drop(&s.ports[in], -1, f, DropNoRoute)
			return
		}
	default:
		f.Put()
		return
	}
	if out < 0 || out >= len(s.ports) {
		s.drop(&s.ports[in], -1, f, DropNoRoute)
		return
	}
	if err := bth.FinishIBPacket(f.Data); err != nil {
		st.stats.Malformed++
		s.drop(&s.ports[in], -1, f, DropMalformed)
		return
	}
	op := &s.ports[out]
	if !op.up || op.tx == nil {
		st.stats.LinkDown++
		op.c.XmitDiscards++
		s.drop(op, -1, f, DropLinkDown)
		return
	}
	st.stats.Sent++
	f.InPort, f.HeadAt, f.TailAt = -1, s.clk.Now(), s.clk.Now()
	op.ctrl.push(f)
	s.tryTx(op)
}

// smaSyncLFT copies the agent's LFT (IBA port numbers) into the
// forwarding table the data path reads (port indexes, -1 = none).
func (s *Switch) smaSyncLFT() {
	a := s.sma.agent
	top := int(a.LinearFDBTop())
	lft := s.cfg.IB.LFT[:0]
	for lid := 0; lid <= top; lid++ {
		p := int(a.LFTPort(uint16(lid)))
		if p == 0 || p == mad.LFTNoPort || p > len(s.ports) {
			lft = append(lft, -1)
		} else {
			lft = append(lft, p-1)
		}
	}
	s.cfg.IB.LFT = lft
}
