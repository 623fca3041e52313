package nic

import (
	"errors"
	"fmt"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

// Native InfiniBand (Config.Fabric FabricIB): the same engine, with the
// packet framed LRH / BTH ... / ICRC / VCRC (IBA 7.7) instead of Ethernet /
// IP / UDP, addressed by LID, its VL chosen from the QP's SL, sent only
// within the receiver's per-VL credits (iblink.go). Congestion control is
// the IB annex's: a FECN-marked packet is answered with a CN packet, and a
// BECN slows the sending QP through its CCT (cc.IBCCRP). Packets carry no
// GRH: every HCA of a lab is in one subnet.

func (c *Config) validateIB() error {
	switch {
	case c.LID == 0 && c.SMA == nil || c.LID >= 0xC000:
		return fmt.Errorf("nic %q: lid %d: want a unicast LID, 1..0xBFFF", c.Name, c.LID)
	case c.IBDataVLs < 1 || c.IBDataVLs > 8:
		return fmt.Errorf("nic %q: ib data VLs %d: want 1..8", c.Name, c.IBDataVLs)
	case c.IBBlocksPerVL < 1 || c.IBBlocksPerVL > 2048:
		return fmt.Errorf("nic %q: ib buffer of %d blocks per VL: want 1..2048 (the 12-bit credit window)", c.Name, c.IBBlocksPerVL)
	case c.IBBlocksPerVL < wire.CreditBlocks(maxIBPacket(c.PortMTU)):
		return fmt.Errorf("nic %q: ib buffer of %d blocks per VL cannot hold the largest packet at MTU %d (%d blocks)",
			c.Name, c.IBBlocksPerVL, c.PortMTU, wire.CreditBlocks(maxIBPacket(c.PortMTU)))
	case c.IBLinkTimeout < 0:
		return fmt.Errorf("nic %q: negative ib link timeout", c.Name)
	case c.IBFCRefresh < fcUpdate:
		return fmt.Errorf("nic %q: ib flow-control refresh %v is shorter than %v", c.Name, c.IBFCRefresh, fcUpdate)
	}
	if c.SL2VL != nil {
		for sl, vl := range c.SL2VL {
			if int(vl) >= c.IBDataVLs {
				return fmt.Errorf("nic %q: sl2vl %d -> %d: the port has %d data VLs", c.Name, sl, vl, c.IBDataVLs)
			}
		}
	}
	if err := c.IBCC.Validate(); err != nil {
		return fmt.Errorf("nic %q: %w", c.Name, err)
	}
	if c.IPoIB != nil {
		if err := c.IPoIB.validate(c); err != nil {
			return err
		}
	}
	return nil
}

// maxIBPacket is the largest packet an IB port sends at MTU mtu: LRH,
// BTH, a RETH, the payload, ICRC and VCRC.
func maxIBPacket(mtu int) int {
	return wire.LRHSize + bth.BTHSize + bth.RETHSize + mtu + bth.ICRCSize + wire.VCRCSize
}

func (n *NIC) ib() bool { return n.cfg.Fabric == FabricIB }

// LID returns the port's LID (0 on a RoCE NIC).
func (n *NIC) LID() uint16 { return n.cfg.LID }

// slToVL maps an SL to the data VL (and priority queue) it travels on.
func (n *NIC) slToVL(sl uint8) uint8 {
	if n.cfg.SL2VL != nil {
		return n.cfg.SL2VL[sl&15]
	}
	return (sl & 15) % uint8(n.cfg.IBDataVLs)
}

// emitTo builds q's next packet (n.rf.BTH and n.rf.Ext set by the
// caller) towards the QP's peer or, for a UD send, ah's.
func (n *NIC) emitTo(q *QP, ah *AH, payload []byte) *frame.Frame {
	if n.ib() {
		dlid, sl := q.attr.AHAttr.DLID, q.attr.AHAttr.SL
		if ah != nil {
			dlid, sl = ah.attr.DLID, ah.attr.SL
		}
		f := n.emitIB(dlid, sl, payload)
		n.cnt[RdmaTxPackets]++
		n.cnt[RdmaTxBytes] += uint64(len(f.Data))
		return f
	}
	dmac, dip := q.dmac, q.dip
	if ah != nil {
		dmac, dip = ah.attr.DMAC, ah.dip
	}
	return n.emit(dmac, dip, q.dscp, n.ecnData(), q.prio, q.sport, q.flowLabel, q.qpn, payload)
}

// emitIB builds a local (GRH-less) IB packet from n.rf.BTH and n.rf.Ext.
// Its priority is its VL. The caller counts it (the engine's packets as
// rdma_tx, IPoIB's as ipoib_tx).
func (n *NIC) emitIB(dlid uint16, sl uint8, payload []byte) *frame.Frame {
	vl := n.slToVL(sl)
	ib := &n.ibf
	*ib = bth.IBFields{
		LRH:     wire.LRHFields{VL: vl, SL: sl & 15, DLID: dlid, SLID: n.cfg.LID},
		BTH:     n.rf.BTH,
		Ext:     n.rf.Ext,
		Payload: payload,
	}
	l := ib.PacketLen()
	if l < 0 {
		panic("nic: engine built an undecodable opcode " + ib.BTH.OpCode.String())
	}
	f := n.pool.Get(l)
	if _, err := bth.EncodeIB(f.Data, ib); err != nil {
		panic("nic: " + err.Error())
	}
	f.Priority = vl
	return f
}

// receiveIB takes one packet from an IB link: a flow-control packet, a
// subnet management packet (VL15, for the SMA; without one it is counted
// and dropped) or a data packet for the engine or IPoIB.
func (n *NIC) receiveIB(f *frame.Frame) {
	b := f.Data
	now := n.clk.Now() // one clock reading per packet
	n.ibHeard(now)
	if len(b) == wire.IBLinkSize {
		n.receiveLinkPacket(b)
		f.Put()
		return
	}
	if len(b) < wire.LRHSize+bth.BTHSize+bth.ICRCSize+wire.VCRCSize {
		n.cnt[RxMalformed]++
		f.Put()
		return
	}
	lrh := wire.LRH(b)
	vl := lrh.VL()
	if vl == 15 {
		// Subnet management: no credits (IBA 7.9.4).
		if n.sma == nil {
			n.cnt[IBVL15Dropped]++
			f.Put()
		} else if !n.receiveSMP(f) {
			f.Put()
		}
		return
	}
	// The link layer checks the VCRC first (IBA 7.8.2): a corrupted
	// packet is discarded before anything of it, its VL included, is
	// believed; the blocks it took come back through the sender's FCTBS.
	if wire.CheckVCRC(b, 0) != nil {
		n.cnt[IBVCRCErr]++
		f.Put()
		return
	}
	// The packet took receive buffer whatever it holds: account its
	// credits before judging it.
	if !n.ibArrived(vl, len(b), now) {
		f.Put()
		return
	}
	// A port an SM has not armed yet takes SMPs only (IBA 7.2, the
	// Initialize state): data would be answered (an ACK, a CN) into a
	// transmitter held until Active.
	if !n.portReceives() {
		n.cnt[IBPortStateDrop]++
		f.Put()
		return
	}
	pc := &n.prio[vl]
	pc.RxPackets++
	pc.RxBytes += uint64(len(b))
	pkt := &n.ibpkt
	if err := pkt.Decode(b, bth.VerifyICRC); err != nil {
		var we *wire.Error
		switch {
		case errors.As(err, &we) && we.Reason == wire.ReasonChecksum && we.Header == "ICRC":
			n.cnt[RxICRCErr]++
		case errors.As(err, &we) && we.Reason == wire.ReasonChecksum:
			n.cnt[IBVCRCErr]++
		default:
			n.cnt[RxMalformed]++
		}
		f.Put()
		return
	}
	if pkt.LRH.DLID() != n.cfg.LID {
		n.cnt[IBWrongLID]++
		f.Put()
		return
	}
	if !n.dispatchIB(f, pkt) {
		f.Put()
	}
}

// dispatchIB hands a decoded packet for our LID to the QP it names; it
// reports whether it kept f.
func (n *NIC) dispatchIB(f *frame.Frame, pkt *bth.IBPacket) bool {
	h := &pkt.Headers
	dqp := h.BTH.DestQP()
	if h.Info.Transport == bth.TransportCNP {
		if h.BTH.BECN() {
			n.receiveBECN(n.QP(dqp), true)
		}
		return false
	}
	if dqp == IPoIBQPN {
		return n.receiveIPoIB(f, pkt)
	}
	if dqp == mad.GSIQP {
		n.receiveGMP(f, pkt)
		return false
	}
	q := n.QP(dqp)
	if q == nil {
		n.cnt[RxUnknownQP]++
		return false
	}
	if !n.accept(q, h, len(f.Data)) {
		return false
	}
	if h.BTH.FECN() {
		n.answerFECN(q, pkt)
	}
	if h.BTH.BECN() {
		n.receiveBECN(q, false)
	}
	if h.Info.Flags&bth.Request != 0 {
		var g *[grhSize]byte
		if pkt.Global() {
			g = (*[grhSize]byte)(pkt.GRH)
		}
		q.respond(h, g, pkt.LRH.SLID(), pkt.LRH.SL())
	} else {
		q.onResponse(h)
	}
	return false
}

// answerFECN is the IB CC destination (Annex A10.2.2): every packet that
// arrives with FECN is answered with a CN packet (opcode 0x80, BECN set)
// to its source LID, on its SL, naming the sending QP. With congestion
// control off the FECN is only counted.
func (n *NIC) answerFECN(q *QP, pkt *bth.IBPacket) {
	n.cnt[NPFECNMarkedPackets]++
	if n.cfg.NPDisabled {
		return
	}
	dest := q.attr.DestQPNum
	if q.typ == IBV_QPT_UD {
		dest = pkt.DETH.SrcQP()
	}
	if n.q[n.slToVL(pkt.LRH.SL())].frames.n >= n.cfg.HostQueueFrames {
		// The VL has had no credit for a long while: one more CN would
		// only wait too (the source already has BECNs on the way).
		n.cnt[TxQueueDropped]++
		return
	}
	n.rf.BTH = bth.BTHFields{OpCode: bth.IBCNOpcode, PKey: q.pkey, BECN: true, DestQP: dest}
	n.rf.Ext = bth.ExtFields{}
	f := n.emitIB(pkt.LRH.SLID(), pkt.LRH.SL(), nil)
	f.Note = "ib cn"
	n.cnt[RdmaTxPackets]++
	n.cnt[RdmaTxBytes] += uint64(len(f.Data))
	n.cnt[NPCNPSent]++
	q.Stats.CNPsSent++
	q.Stats.TxPackets++
	q.Stats.TxBytes += uint64(len(f.Data))
	n.q[f.Priority].frames.push(f)
	n.wake()
}

var becn = cc.Feedback{Kind: cc.FeedbackBECN}

// receiveBECN is the IB CC source: a CN packet (cn), or any packet with
// BECN, for local QP q raises its CCT index (through the reaction point,
// as a RoCE CNP feeds DCQCN's).
func (n *NIC) receiveBECN(q *QP, cn bool) {
	n.feedback(q, &becn, cn)
}

// newIBCCRP returns the reaction point of a new IB connection.
func (n *NIC) newIBCCRP(mtu int) cc.Algorithm {
	return cc.NewIBCCRP(*n.cfg.IBCC, n.cfg.Rate, maxIBPacket(mtu))
}
