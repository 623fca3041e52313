package sim

import (
	"fmt"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// InfiniBand congestion control in the simulated hosts (IBA Annex A10).
//
// Destination: a data packet that arrives with FECN set (a switch found
// its output VL congested, switchcore/ibcc.go) is answered with a
// Congestion Notification packet to its source: LRH (DLID = the packet's
// SLID, same SL), BTH opcode 0x80 with BECN set and DestQP = the source
// QP, PSN 0, then ICRC and VCRC, 26 bytes on the link (6 words of PktLen,
// one credit), as the Linux hfi1 driver's return_cnp builds it. The
// annex also allows the BECN to ride on an RC ACK; these hosts send no
// ACKs (their sinks only verify and count), and a CN packet works for
// every service (RC, UC, UD) alike, so the CN packet is what they send.
// CN packets are data packets on a data VL: they need credits like any
// other and go ahead of the host's own data.
//
// Source: a CN packet (or any packet) with BECN for one of its QPs feeds
// the QP's reaction point (cc.IBCCRP, one per QP, or one per SL when
// port_control is sl); after each packet the flow waits the CCT delay of
// the current CCTI before its next one. The CCTI timer is kept lazily:
// the reaction point is advanced whenever the flow sends or hears a BECN,
// which is exact because the delay only matters when a packet goes out.

// ibCNPLen is an IB CN packet's length: LRH, BTH, ICRC, VCRC.
const ibCNPLen = wire.LRHSize + bth.BTHSize + bth.ICRCSize + wire.VCRCSize

// ibMaxPktOverhead is what a largest packet adds to the path MTU: LRH,
// BTH, RETH (the first packet of an RDMA WRITE), ICRC and VCRC.
const ibMaxPktOverhead = wire.LRHSize + bth.BTHSize + 16 + bth.ICRCSize + wire.VCRCSize

// IBCCHostStats counts a host's IB congestion control (hfi1 / IBA
// CongestionLog vocabulary).
type IBCCHostStats struct {
	FECNRx     uint64 // data packets received with FECN (each answered)
	CNPTx      uint64 // CN packets sent
	CNPRx      uint64 // CN packets received (BECN)
	BECNRx     uint64 // BECNs delivered to a reaction point
	UnknownCNP uint64 // CN packets for no QP of this host
}

// FlowIBCC is a flow's IB congestion control at the end of a run.
type FlowIBCC struct {
	FECNRx  uint64     // its packets that arrived with FECN
	BECNRx  uint64     // CN packets its source received for it
	CCTI    uint16     // CCTI at the end
	MaxCCTI uint16     // highest CCTI reached
	Delay   clock.Time // inter-packet delay at the end
	RP      cc.IBCCStats
	// Reacting: the source has a reaction point (congestion control on at
	// its HCA); without one CCTI, MaxCCTI and Delay are zero and mean
	// nothing.
	Reacting bool
}

// hostCC is a host's congestion control state.
type hostCC struct {
	cfg    cc.IBCC
	maxPkt int
	sl     [16]*cc.IBCCRP // port_control sl
	cnq    []pendingCNP
	cnHead int
}

type pendingCNP struct {
	dlid uint16
	sl   uint8
	qp   uint32
}

// flowCC is a flow's share of it.
type flowCC struct {
	rp             *cc.IBCCRP
	fecnRx, becnRx uint64
}

// ibccInit validates and installs the host's CC configuration (AddHost).
func (h *Host) ibccInit() error {
	if h.cfg.IBCC == nil {
		return nil
	}
	if !h.ib() {
		return fmt.Errorf("sim: host %s: IB congestion control needs an IB host", h.cfg.Name)
	}
	if err := h.cfg.IBCC.Validate(); err != nil {
		return fmt.Errorf("sim: host %s: ib cc: %w", h.cfg.Name, err)
	}
	h.cc = &hostCC{cfg: *h.cfg.IBCC}
	return nil
}

// ccRP returns the reaction point that governs f, creating it on first
// use (the link, and so the rate and MTU, is known by then).
func (h *Host) ccRP(f *flow) *cc.IBCCRP {
	if f.cc.rp != nil {
		return f.cc.rp
	}
	c := h.cc
	if c.maxPkt == 0 {
		mtu := h.link.Cfg.MTU
		if mtu <= 0 || mtu > 4096 {
			mtu = 4096
		}
		c.maxPkt = mtu + ibMaxPktOverhead
	}
	if c.cfg.PortControl == cc.PortControlSL {
		sl := f.cfg.SL & 15
		if c.sl[sl] == nil {
			c.sl[sl] = cc.NewIBCCRP(c.cfg, h.link.Cfg.Rate, c.maxPkt)
		}
		f.cc.rp = c.sl[sl]
	} else {
		f.cc.rp = cc.NewIBCCRP(c.cfg, h.link.Cfg.Rate, c.maxPkt)
	}
	return f.cc.rp
}

// ccPace adds the inter-packet delay of f's CCTI after a packet sent at
// now (sendData).
func (h *Host) ccPace(f *flow, now clock.Time) {
	r := h.ccRP(f)
	r.Advance(now)
	f.nextAt += r.Delay()
}

// ccFECN answers a FECN-marked packet of flow f that arrived with LRH lrh.
func (h *Host) ccFECN(f *flow, lrh wire.LRH) {
	h.Stats.IBCC.FECNRx++
	f.cc.fecnRx++
	if h.cc == nil {
		return // congestion control off here: the FECN is only counted
	}
	h.cc.cnq = append(h.cc.cnq, pendingCNP{dlid: lrh.SLID(), sl: lrh.SL(), qp: srcQPBase + uint32(f.id)})
	h.kick()
}

// ccSendCN sends the oldest pending CN packet if its VL has credit; it
// reports whether one went out.
func (h *Host) ccSendCN() bool {
	c := h.cc
	if c == nil || c.cnHead == len(c.cnq) {
		return false
	}
	p := c.cnq[c.cnHead]
	vl := h.slToVL(p.sl)
	if !h.fcclKnown[vl] || !wire.CanSend(h.fccl[vl], h.fctbs[vl], wire.CreditBlocks(ibCNPLen)) {
		if !h.stalled[vl] {
			h.stalled[vl] = true
			h.Stats.CreditWaits++
		}
		return false // a flow-control packet will kick us
	}
	c.cnHead++
	if c.cnHead == len(c.cnq) {
		c.cnq, c.cnHead = c.cnq[:0], 0
	}
	fr := h.s.pool.Get(ibCNPLen)
	encodeIBCNP(fr.Data, vl, p.sl, p.dlid, h.cfg.LID, p.qp)
	fr.Priority = p.sl
	fr.Note = "ib cnp"
	h.fctbs[vl] = wire.AddBlocks(h.fctbs[vl], wire.CreditBlocks(ibCNPLen))
	h.Stats.IBCC.CNPTx++
	h.transmit(fr)
	return true
}

// encodeIBCNP writes a CN packet into b (ibCNPLen bytes).
func encodeIBCNP(b []byte, vl, sl uint8, dlid, slid uint16, qp uint32) {
	wire.LRH(b).Encode(&wire.LRHFields{VL: vl, SL: sl, LNH: wire.LNHLocal, DLID: dlid, SLID: slid,
		PktLen: wire.PktLenFor(ibCNPLen - wire.VCRCSize)})
	bth.BTH(b[wire.LRHSize:]).Encode(&bth.BTHFields{OpCode: bth.IBCNOpcode, PKey: bth.DefaultPKey, BECN: true, DestQP: qp & bth.QPNMask})
	icrcAt := wire.LRHSize + bth.BTHSize
	crc, _ := bth.ICRCIBLocal(b[:icrcAt])
	bth.PutICRC(b[icrcAt:], crc)
	wire.PutVCRC(b[:ibCNPLen])
}

// ccReceiveCN handles b if it is a CN packet and reports whether it was.
// Its credits were already accounted by the caller.
func (h *Host) ccReceiveCN(b []byte) bool {
	if len(b) != ibCNPLen || wire.LRH(b).LNH() != wire.LNHLocal || bth.Opcode(b[wire.LRHSize]) != bth.IBCNOpcode {
		return false
	}
	icrcAt := wire.LRHSize + bth.BTHSize
	if wire.CheckVCRC(b, 0) != nil {
		h.Stats.VCRCErrors++
		return true
	}
	if crc, _ := bth.ICRCIBLocal(b[:icrcAt]); crc != bth.WireICRC(b[icrcAt:]) {
		h.Stats.ICRCErrors++
		return true
	}
	if err := wire.LRH(b).Validate(0); err != nil {
		h.Stats.Malformed++
		return true
	}
	h.Stats.IBCC.CNPRx++
	t := bth.BTH(b[wire.LRHSize:])
	if t.BECN() {
		h.ccBECN(t.DestQP())
	}
	return true
}

var becnFeedback = cc.Feedback{Kind: cc.FeedbackBECN}

// ccBECN delivers a BECN for local QP qp to its reaction point.
func (h *Host) ccBECN(qp uint32) {
	id := int(qp) - srcQPBase
	if id < 0 || id >= len(h.s.flows) || h.s.flows[id].src != h || h.cc == nil {
		h.Stats.IBCC.UnknownCNP++
		return
	}
	f := h.s.flows[id]
	f.cc.becnRx++
	h.Stats.IBCC.BECNRx++
	h.ccRP(f).OnFeedback(h.s.now, &becnFeedback)
}

// ibccResult is f's congestion control summary, nil without CC.
func (f *flow) ibccResult(now clock.Time) *FlowIBCC {
	if f.cc.rp == nil && f.cc.fecnRx == 0 && f.cc.becnRx == 0 {
		return nil
	}
	r := &FlowIBCC{FECNRx: f.cc.fecnRx, BECNRx: f.cc.becnRx}
	if rp := f.cc.rp; rp != nil {
		rp.Advance(now)
		r.CCTI, r.MaxCCTI, r.Delay, r.RP, r.Reacting = rp.CCTI(), rp.Stats.MaxCCTI, rp.Delay(), rp.Stats, true
	}
	return r
}
