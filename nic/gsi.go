package nic

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
)

// QP1 of an IB port: the General Services Interface (IBA 13.4.1). Its
// agent here is the performance management agent (PerfMgt, IBA 16.1): it
// answers Get(ClassPortInfo) and Get(PortCounters) with the port's
// counters, so a manager reads any HCA's counters over the fabric as
// perfquery does. Responses to this port's own requests (SendGMP) go to
// SetGMPDeliver. Other classes (SA, CM) have no agent here: they are
// counted (gsi_unsupported) and dropped.

// SetGMPDeliver sets where GMP responses for this port's requests go,
// with the responder's LID. The MAD aliases a frame: copy what must be
// kept.
func (n *NIC) SetGMPDeliver(f func(m mad.MAD, slid uint16)) { n.gmpDeliver = f }

// SendGMP sends a GMP (mad.Size bytes) from QP1 to QP1 of the port with
// LID dlid, on SL sl.
func (n *NIC) SendGMP(dlid uint16, sl uint8, m mad.MAD) {
	n.sendGMP(dlid, sl, mad.GSIQP, m)
}

func (n *NIC) sendGMP(dlid uint16, sl uint8, destQP uint32, m []byte) {
	vl := n.slToVL(sl)
	if n.q[vl].frames.n >= n.cfg.HostQueueFrames {
		n.cnt[TxQueueDropped]++
		return
	}
	n.gsiPSN = bth.PSNAdd(n.gsiPSN, 1)
	n.rf.BTH = bth.BTHFields{OpCode: bth.UDSendOnly, PKey: n.cfg.PKeys[0], DestQP: destQP, PSN: n.gsiPSN}
	n.rf.Ext = bth.ExtFields{DETH: bth.DETHFields{QKey: mad.GSIQKey, SrcQP: mad.GSIQP}}
	f := n.emitIB(dlid, sl, m)
	f.Note = "gmp"
	n.cnt[GSITx]++
	n.q[vl].frames.push(f)
	n.wake()
}

// receiveGMP handles a UD packet for QP1. It never keeps f.
func (n *NIC) receiveGMP(f *frame.Frame, pkt *bth.IBPacket) {
	h := &pkt.Headers
	switch {
	case h.Info.Transport != bth.TransportUD || h.BTH.OpCode() != bth.UDSendOnly:
		n.cnt[GSIUnsupported]++
		return
	case h.DETH.QKey() != mad.GSIQKey:
		n.cnt[RxQKeyViolation]++
		return
	case len(h.Payload) < mad.Size:
		n.cnt[RxMalformed]++
		return
	}
	n.cnt[GSIRx]++
	m := mad.MAD(h.Payload[:mad.Size])
	slid := pkt.LRH.SLID()
	if m.IsResponse() {
		if n.gmpDeliver != nil {
			n.gmpDeliver(m, slid)
		}
		return
	}
	if m.MgmtClass() != mad.ClassPerfMgt {
		n.cnt[GSIUnsupported]++ // no SA or CM agent on this port
		return
	}
	r := n.gsiBuf[:]
	clear(r)
	copy(r, m[:mad.HeaderSize])
	resp := mad.MAD(r)
	resp.SetMethod(mad.MethodGetResp)
	var status uint16
	switch {
	case m.Method() != mad.MethodGet:
		status = mad.StatusMethodUnsupp
	case m.AttributeID() == mad.AttrPortCounters:
		pc := mad.PortCounters(r[mad.PerfDataOffset:])
		pc.Encode(n.portCounters(m[mad.PerfDataOffset+1]))
	case m.AttributeID() == mad.AttrClassPortInfo:
		r[mad.PerfDataOffset], r[mad.PerfDataOffset+1] = 1, mad.PerfMgtClassVersion  // BaseVersion, ClassVersion
		binary.BigEndian.PutUint16(r[mad.PerfDataOffset+2:], mad.PerfMgtCapXmitWait) // CapabilityMask
	default:
		status = mad.StatusMethodAttrUnsupp
	}
	resp.SetStatus(status)
	n.sendGMP(slid, pkt.LRH.SL(), h.DETH.SrcQP(), r)
}

// portCounters is the port's PortCounters: packets and data exclude link
// packets (IBA 16.1.3.5 counts packets, not flow control), and the data
// counts the octets from the LRH through the ICRC, not the 2-byte VCRC.
func (n *NIC) portCounters(portSelect uint8) *mad.PortCountersFields {
	p := &n.port
	fc := n.cnt[IBFCTx]
	fcRx := n.cnt[IBFCRx] + n.cnt[IBLinkErr]
	const link = 6 // bytes of a link packet
	return &mad.PortCountersFields{
		PortSelect:  portSelect,
		LinkDowned:  n.cnt[LinkDowned],
		RcvErrors:   n.cnt[RxICRCErr] + n.cnt[IBVCRCErr] + n.cnt[RxMalformed] + n.cnt[IBVLErr],
		VL15Dropped: n.cnt[IBVL15Dropped],
		// Data beyond the credit this HCA granted (ib_credit_overrun).
		ExcessiveBufferOverrun: n.cnt[IBCreditOverrun],
		XmitData:               (p.TxBytesPhy - fc*link - 2*(p.TxPacketsPhy-fc)) / 4,
		RcvData:                (p.RxBytesPhy - fcRx*link - 2*(p.RxPacketsPhy-fcRx)) / 4,
		XmitPkts:               p.TxPacketsPhy - fc,
		RcvPkts:                p.RxPacketsPhy - fcRx,
		XmitWait:               mad.XmitWaitTicks(n.ibl.xmitWait(n.clk.Now())), // ticks, not ib_credit_waits' events
	}
}
