package nic

import (
	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

// QP0 of an IB port (IBA 14.2): the subnet management agent answers the
// SM's directed-route SMPs (NodeInfo type CA with one port, PortInfo,
// NodeDescription), takes the LID and port state the SM sets, and
// forwards responses for an SM on this node to it (SetSMPDeliver). SMPs
// travel on VL15: they need no credits and go out before data. While the
// port is managed and not Active only SMPs and flow-control packets leave
// (IBA 7.2: a port in Init or Armed sends no data).

// SMAConfig configures an IB port's subnet management agent.
type SMAConfig struct {
	NodeGUID    uint64 // the port GUID is NodeGUID + 1
	Description string // NodeDescription
	// IsSM sets CapIsSM in the port's capability mask: an SM runs on this
	// node (SetSMPDeliver).
	IsSM bool
}

// sma is the port's agent state.
type sma struct {
	a       *mad.Agent
	q       fifo // VL15 packets to send
	pkt     mad.Packet
	psn     uint32
	deliver func(mad.SMP)
	active  []func()
}

func (n *NIC) newSMA(c *SMAConfig) {
	capMask := uint32(mad.CapIsTrapSupported | mad.CapIsSystemImageGUID)
	if c.IsSM {
		capMask |= mad.CapIsSM
	}
	a := mad.NewAgent(mad.AgentConfig{
		NodeType: mad.NodeTypeCA, NumPorts: 1, NodeGUID: c.NodeGUID, Description: c.Description,
		DeviceID: 0xE3E3, CapabilityMask: capMask,
		PortLink: func(int) (width, speed, speedExt uint8) { return mad.LinkFor(n.cfg.Rate) },
	})
	// The port reports the configured LID until an SM sets one: an SM
	// keeps a reported LID that is valid and free (sm/lid.go).
	a.SetLID(n.cfg.LID)
	n.sma = &sma{a: a}
}

// SMA returns the port's subnet management agent, nil without one.
func (n *NIC) SMA() *mad.Agent {
	if n.sma == nil {
		return nil
	}
	return n.sma.a
}

// SetSMPDeliver sets where SMP responses for an SM on this node go (the
// SM's Receive). The SMP aliases a frame: copy what must be kept.
func (n *NIC) SetSMPDeliver(f func(mad.SMP)) {
	if n.sma != nil {
		n.sma.deliver = f
	}
}

// OnPortActive calls f once when the port becomes Active (at once if it
// is): a driver connects its QPs then, with the LIDs the SM gave.
func (n *NIC) OnPortActive(f func()) {
	if n.portActive() {
		f()
		return
	}
	n.sma.active = append(n.sma.active, f)
}

// portReceives reports whether data packets are taken: always without an
// SMA, from Armed on with one (IBA 7.2: Armed receives, only Active
// transmits).
func (n *NIC) portReceives() bool {
	return n.sma == nil || n.sma.a.PortState(1) >= mad.PortStateArmed
}

// portActive reports whether data may flow: always without an SMA,
// otherwise once the SM made the port Active.
func (n *NIC) portActive() bool {
	return n.sma == nil || n.sma.a.PortState(1) == mad.PortStateActive
}

// smaLink tells the agent the physical link changed (a link lost to
// silence counts as down).
func (n *NIC) smaLink(up bool) {
	if n.sma != nil {
		n.sma.a.SetLinkUp(1, up && !n.ibl.lost)
	}
}

// receiveSMP hands a VL15 packet to the agent and acts on its verdict.
// It reports whether it kept f.
func (n *NIC) receiveSMP(f *frame.Frame) bool {
	s := n.sma
	if err := mad.DecodePacket(f.Data, &s.pkt, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
		n.cnt[SMPMalformed]++
		return false
	}
	n.cnt[SMPRx]++
	lrh := wire.LRH(f.Data)
	lidMatch := s.a.LID() != 0 && lrh.DLID() == s.a.LID()
	act := s.a.Handle(1, s.pkt.SMP, lidMatch)
	n.applySMA(act)
	if act.Verdict == mad.DeliverSM {
		if s.deliver == nil {
			n.cnt[SMPDropped]++ // a response, and no SM here to take it
			return false
		}
		s.deliver(s.pkt.SMP)
		return false
	}
	if !act.AddressFromHCA(lrh, n.cfg.LID) {
		n.cnt[SMPDropped]++ // the agent discarded it (its Stats say why)
		return false
	}
	if bth.FinishIBPacket(f.Data) != nil {
		n.cnt[SMPMalformed]++
		return false
	}
	n.queueSMP(f)
	return true
}

// applySMA follows what a Set changed: the LID the port's packets carry,
// and on activation the data path.
func (n *NIC) applySMA(act mad.Action) {
	s := n.sma
	if act.Changed&mad.ChangeLID != 0 {
		n.cfg.LID = s.a.LID()
	}
	if act.Changed&mad.ChangePortState != 0 && n.portActive() {
		waiting := s.active
		s.active = nil
		for _, f := range waiting {
			f()
		}
		n.wake()
	}
}

// SendSMP sends smp (mad.Size bytes) from QP0 out of the port as a
// directed-route packet (LRH DLID permissive): the SM's requests.
func (n *NIC) SendSMP(smp mad.SMP) {
	if n.sma == nil {
		return
	}
	f := n.pool.Get(mad.PacketSize)
	n.sma.psn++
	if _, err := mad.EncodePacket(f.Data, &mad.PacketFields{DLID: mad.PermissiveLID, SLID: mad.LIDOrPermissive(n.cfg.LID), PSN: n.sma.psn}, smp); err != nil {
		panic("nic: building an SMP packet: " + err.Error())
	}
	n.queueSMP(f)
}

// LocalSMP hands an SMP the SM addresses to its own node (a zero-hop
// directed route) to the agent; it reports whether the response, now in
// smp, is for the SM.
func (n *NIC) LocalSMP(smp mad.SMP) bool {
	if n.sma == nil {
		return false
	}
	act := n.sma.a.Handle(1, smp, false)
	n.applySMA(act)
	return act.Verdict == mad.DeliverSM
}

func (n *NIC) queueSMP(f *frame.Frame) {
	if n.linkDown || n.tx == nil {
		f.Put()
		return
	}
	f.Note = "smp"
	f.Priority = 0
	n.cnt[SMPTx]++
	n.sma.q.push(f)
	n.wake()
}
