package switchcore

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// Native InfiniBand mode (cc-anchors §5, wire-formats §8).
//
// Forwarding: DLID -> output port through the linear forwarding table; the
// output VL is SL2VL[SL] (VL 15 = drop); the LRH VL is rewritten and the
// VCRC recomputed, since the VCRC covers the VL field.
//
// Credits: every port has BufferBlocks 64-byte blocks of receive buffer per
// data VL. The receive side keeps ABR (adjusted blocks received) and
// advertises FCCL = ABR + free blocks (mod 4096) in real flow-control link
// packets (wire.IBLink), sent whenever buffer is released and every
// CreditUpdateInterval. On receiving a flow-control packet the receive side
// resynchronises ABR to the peer's FCTBS (IBA §7.9.4: blocks lost to errors
// are recovered) and the transmit side takes the new FCCL. A packet of n
// blocks is sent only when wire.CanSend(FCCL, FCTBS, n): the switch never
// transmits without credit, so nothing is ever dropped for lack of buffer.
// Blocks per packet = wire.CreditBlocks(whole packet, LRH through VCRC).
//
// VL arbitration: VL15 (subnet management, not credit-controlled) first;
// then the high-priority table unless HighLimit*4 KiB bytes of high-priority
// data have gone out since the last low-priority packet and a low VL is
// ready; then the low table. Each table is walked round-robin; an entry
// sends while its weight (64-byte units) lasts; entries whose VL has no
// packet or no credit are skipped, so a starved VL never blocks another.

type ibPort struct {
	// receive side, per data VL
	rxFree    [8]int
	abr       [8]uint16
	fcPending uint8
	fcTimer   clock.Timer
	fcLast    [8]clock.Time // when the last flow-control packet of a VL went
	fcSent    [8]bool
	// transmit side, per data VL
	fccl     [8]uint16
	fctbs    [8]uint16
	haveFCCL [8]bool
	// arbitration
	highIdx, lowIdx int
	highRem, lowRem int
	highBytes       int
	// credit starvation accounting
	waiting   [8]bool
	waitSince [8]clock.Time
	// congestion control marking (ibcc.go)
	cc ibCCState
}

func (s *Switch) initIB(p *port) {
	for vl := range s.cfg.IB.DataVLs {
		p.ib.rxFree[vl] = s.cfg.IB.BufferBlocks
	}
	p.ib.fcTimer = s.clk.NewTimer(func() { s.ibPeriodic(p) })
	p.ib.cc.threshold = s.cfg.IB.CC.ThresholdBytes(s.cfg.IB.BufferBlocks)
}

func (s *Switch) allVLs() uint8 { return uint8(1<<s.cfg.IB.DataVLs - 1) }

// ibAdvertiseAll owes a flow-control packet on every data VL of p and
// starts the periodic updates.
func (s *Switch) ibAdvertiseAll(p *port) {
	p.ib.fcPending |= s.allVLs()
	if _, armed := p.ib.fcTimer.When(); !armed {
		p.ib.fcTimer.Reset(s.clk.Now() + s.cfg.IB.CreditUpdateInterval)
	}
	s.tryTx(p)
}

func (s *Switch) ibPeriodic(p *port) {
	if !p.up {
		return
	}
	p.ib.fcPending |= s.allVLs()
	p.ib.fcTimer.Reset(s.clk.Now() + s.cfg.IB.CreditUpdateInterval)
	s.tryTx(p)
}

// ResetIBFlowControl restarts port's link-level flow control as a link
// that comes up through LinkInitialize does (IBA 7.9.4): both 12-bit
// counters of every data VL start at 0 (FCTBS on the transmit side, ABR on
// the receive side), the peer's credit limit is forgotten, so nothing is
// sent on a data VL until the peer's first flow-control packet for it, and
// VL arbitration starts from the head of its tables. Packets still held
// in our receive buffer keep their blocks until they leave (the FCCL we
// advertise counts them as used). Call it while the port is down, before
// SetPortUp(true), when the peer behind the port is a new one (a real-time
// driver whose peer process restarted); a link that only flapped keeps its
// counters, which the FCTBS resynchronisation keeps consistent anyway.
func (s *Switch) ResetIBFlowControl(port int) {
	if s.cfg.Fabric != FabricIB {
		return
	}
	p := &s.ports[port]
	ib := &p.ib
	now := s.clk.Now()
	for vl := range ib.fccl {
		p.ibWaitEnded(vl, now)
		ib.abr[vl], ib.fccl[vl], ib.fctbs[vl], ib.haveFCCL[vl] = 0, 0, 0, false
		ib.fcSent[vl] = false
	}
	ib.fcPending = 0
	ib.highIdx, ib.lowIdx, ib.highRem, ib.lowRem, ib.highBytes = 0, 0, 0, 0, 0
}

// fccl is the credit limit we advertise for receive VL vl.
func (p *port) fcclFor(vl int) uint16 {
	free := max(p.ib.rxFree[vl], 0)
	return wire.AddBlocks(p.ib.abr[vl], free)
}

// Credits returns the blocks port may still send on vl before running out
// (negative would mean a violation and never happens), and whether the peer
// has advertised credits at all.
func (s *Switch) Credits(port, vl int) (int, bool) {
	if vl < 0 || vl >= len(s.ports[port].ib.fccl) {
		return 0, false // VL15 and beyond: not credit-controlled
	}
	ib := &s.ports[port].ib
	d := (int(ib.fccl[vl]) - int(ib.fctbs[vl])) & 4095
	if d > 2048 {
		d -= 4096
	}
	return d, ib.haveFCCL[vl]
}

// RxFreeBlocks returns the free receive blocks of (port, vl).
func (s *Switch) RxFreeBlocks(port, vl int) int {
	if vl < 0 || vl >= len(s.ports[port].ib.rxFree) {
		return 0
	}
	return s.ports[port].ib.rxFree[vl]
}

func (s *Switch) receiveIB(p *port, f *frame.Frame) {
	if f.Len() == wire.IBLinkSize {
		s.receiveFC(p, f)
		return
	}
	lrh := wire.LRH(f.Data)
	if lrh.Validate(0) != nil || wire.CheckVCRC(f.Data, 0) != nil {
		s.drop(p, -1, f, DropMalformed)
		return
	}
	inVL := int(lrh.VL())
	outPort := -1
	if d := int(lrh.DLID()); d < len(s.cfg.IB.LFT) {
		outPort = s.cfg.IB.LFT[d]
	}
	if inVL == 15 && s.smaReceive(p, f) {
		return // an SMP for this switch's SMA (sma.go)
	}
	if inVL == 15 {
		// Subnet management: no credits, no buffer accounting.
		if outPort < 0 || outPort == p.idx {
			p.c.RcvSwitchRelayErrors++
			s.drop(p, -1, f, DropNoRoute)
			return
		}
		op := &s.ports[outPort]
		if !op.up {
			op.c.XmitDiscards++
			s.drop(op, -1, f, DropLinkDown)
			return
		}
		op.ctrl.push(f)
		s.tryTx(op)
		return
	}
	if inVL >= s.cfg.IB.DataVLs {
		s.drop(p, -1, f, DropMalformed)
		return
	}
	blocks := wire.CreditBlocks(f.Len())
	ib := &p.ib
	ib.rxFree[inVL] -= blocks
	ib.abr[inVL] = wire.AddBlocks(ib.abr[inVL], blocks)
	c := &p.c.Prio[inVL]
	c.RxPackets++
	c.RxBytes += uint64(f.Len())
	f.InPort, f.PG, f.Priority = p.idx, uint8(inVL), uint8(inVL)
	if ib.rxFree[inVL] < 0 {
		// The peer sent beyond the credit we advertised: a protocol
		// violation by the peer (excessive_buffer_overrun_errors). The
		// packet is kept: IB does not drop.
		c.HeadroomOverflow++
		p.c.Drops[DropHeadroomOverflow]++
		c.Drops[DropHeadroomOverflow]++
		s.emit(TraceEvent{Kind: TraceHeadroomOverflow, Port: p.idx, Prio: inVL, Bytes: -ib.rxFree[inVL], Frame: f})
	}
	if outPort < 0 || outPort == p.idx {
		p.c.RcvSwitchRelayErrors++
		s.dropAfterAdmit(p, f, DropNoRoute)
		return
	}
	op := &s.ports[outPort]
	if !s.smaForwardOK(p.idx, outPort) {
		if !s.smaOutActive(outPort) {
			op.c.XmitDiscards++ // IBA: the output port is not Active
		}
		s.dropAfterAdmit(p, f, DropLinkDown) // IB port not Active (sma.go)
		return
	}
	outVL := s.cfg.IB.SL2VL[lrh.SL()]
	if outVL == 15 {
		p.c.RcvSwitchRelayErrors++
		s.dropAfterAdmit(p, f, DropVL15)
		return
	}
	if f.Len() > op.cfg.MTU {
		op.c.XmitDiscards++ // IBA: longer than the output port's NeighborMTU
		s.dropAfterAdmit(p, f, DropMTUExceeded)
		return
	}
	if !op.up {
		op.c.XmitDiscards++
		s.dropAfterAdmit(op, f, DropLinkDown)
		return
	}
	if outVL != uint8(inVL) {
		lrh.SetVL(outVL)
		wire.PutVCRC(f.Data)
	}
	f.Class, f.Priority = outVL, outVL
	ct := s.headBytes > 0 && op.speed >= p.speed
	s.enqueue(op, int(outVL), f)
	if ct {
		op.ctFrame = f
		s.tryTx(op)
		op.ctFrame = nil
		return
	}
	s.tryTx(op)
}

func (s *Switch) receiveFC(p *port, f *frame.Frame) {
	l := wire.IBLink(f.Data)
	if l.Validate(0) != nil {
		s.drop(p, -1, f, DropMalformed)
		return
	}
	vl := int(l.VL())
	fctbs, fccl := l.FCTBS(), l.FCCL()
	f.Put()
	if vl >= s.cfg.IB.DataVLs {
		return // a VL we do not run: IBA receivers ignore it
	}
	p.c.Prio[vl].FCRx++
	p.ib.fccl[vl] = fccl
	p.ib.haveFCCL[vl] = true
	p.ib.abr[vl] = fctbs
	s.tryTx(p)
}

// ibRelease frees f's receive blocks on its ingress port and owes the peer
// a credit update.
func (s *Switch) ibRelease(p *port, f *frame.Frame) {
	vl := int(f.PG)
	if vl >= s.cfg.IB.DataVLs {
		return
	}
	p.ib.rxFree[vl] += wire.CreditBlocks(f.Len())
	p.ib.fcPending |= 1 << vl
	s.tryTx(p)
}

// ibTx sends one packet on p if any may go (flow control first); it reports
// whether it sent one. When none may, it arms p's timer for the earliest
// time one could, if time alone can unblock it.
func (s *Switch) ibTx(p *port, now clock.Time) bool {
	ib := &p.ib
	wake := clock.Never
	for vl := 0; ib.fcPending>>vl != 0; vl++ { // only while a flow-control packet is owed
		if ib.fcPending&(1<<vl) == 0 {
			continue
		}
		if gap := s.cfg.IB.CreditUpdateMin; ib.fcSent[vl] && now-ib.fcLast[vl] < gap {
			wake = min(wake, ib.fcLast[vl]+gap)
			continue // granted by the packet due then, with whatever is freed meanwhile
		}
		ib.fcPending &^= 1 << vl
		ib.fcLast[vl], ib.fcSent[vl] = now, true
		f := s.pool.Get(wire.IBLinkSize)
		wire.IBLink(f.Data).Encode(&wire.IBLinkFields{
			Op: wire.IBLinkOpNormal, FCTBS: ib.fctbs[vl], VL: uint8(vl), FCCL: p.fcclFor(vl),
		})
		p.c.Prio[vl].FCTx++
		s.transmit(p, f, now, false)
		return true
	}
	if p.txHeld {
		if wake != clock.Never {
			p.txTimer.Reset(wake)
		}
		return false // HoldTx(false) calls tryTx again
	}
	ready := uint8(0)
	for vl := range s.cfg.IB.DataVLs {
		f := p.eq[vl].peek()
		if f == nil {
			continue
		}
		if !ib.haveFCCL[vl] || !wire.CanSend(ib.fccl[vl], ib.fctbs[vl], wire.CreditBlocks(f.Len())) {
			if !ib.waiting[vl] {
				ib.waiting[vl], ib.waitSince[vl] = true, now
				p.c.Prio[vl].CreditStalls++
				s.emit(TraceEvent{Kind: TraceCreditStall, Port: p.idx, Prio: vl})
			}
			continue
		}
		if f.TailAt > now && f != p.ctFrame {
			wake = min(wake, f.TailAt)
			continue
		}
		ready |= 1 << vl
	}
	if ready == 0 {
		if wake != clock.Never {
			p.txTimer.Reset(wake)
		}
		return false
	}
	cfg := &s.cfg.IB
	lowFirst := cfg.HighLimit != 255 && ib.highBytes > 0 && ib.highBytes >= cfg.HighLimit*4096
	vl, high := -1, false
	if !lowFirst {
		vl = arbitrate(cfg.VLArbHigh, &ib.highIdx, &ib.highRem, ready)
		high = vl >= 0
	}
	if vl < 0 {
		vl = arbitrate(cfg.VLArbLow, &ib.lowIdx, &ib.lowRem, ready)
	}
	if vl < 0 && lowFirst {
		vl = arbitrate(cfg.VLArbHigh, &ib.highIdx, &ib.highRem, ready)
		high = vl >= 0
	}
	if vl < 0 {
		// Ready VLs that no table lists never get an opportunity (IBA:
		// a VL absent from both tables is not served).
		return false
	}
	e := &p.eq[vl]
	f := e.pop()
	ct := f == p.ctFrame
	s.dequeued(p, vl, f)
	if ib.cc.threshold >= 0 {
		s.ibMarkFECN(p, vl, f, e.bytes, s.ibVictim(p, vl, now))
	}
	n := wire.CreditBlocks(f.Len())
	ib.fctbs[vl] = wire.AddBlocks(ib.fctbs[vl], n)
	if high {
		ib.highBytes += f.Len()
		ib.highRem -= n
		if ib.highRem <= 0 {
			ib.highIdx, ib.highRem = (ib.highIdx+1)%len(cfg.VLArbHigh), 0
		}
	} else {
		ib.highBytes = 0
		ib.lowRem -= n
		if ib.lowRem <= 0 {
			ib.lowIdx, ib.lowRem = (ib.lowIdx+1)%len(cfg.VLArbLow), 0
		}
	}
	p.ibWaitEnded(vl, now)
	s.release(f)
	s.transmit(p, f, now, ct)
	return true
}

// arbitrate walks a VL arbitration table from *idx and returns the first
// entry's VL with weight > 0 that is ready, or -1. *rem is the weight left
// in the current entry (0 = not started).
func arbitrate(t []VLArbEntry, idx, rem *int, ready uint8) int {
	n := len(t)
	if n == 0 {
		return -1
	}
	for range n {
		e := t[*idx%n]
		if e.Weight > 0 && ready&(1<<e.VL) != 0 {
			if *rem <= 0 {
				*rem = int(e.Weight)
			}
			return int(e.VL)
		}
		*idx, *rem = (*idx+1)%n, 0
	}
	return -1
}

// ibWaitEnded ends VL vl's wait for credit, if it was waiting: the time
// goes to the VL's and the port's PortXmitWait (a packet left, or the
// link was reset).
func (p *port) ibWaitEnded(vl int, now clock.Time) {
	ib := &p.ib
	if !ib.waiting[vl] {
		return
	}
	w := int64(now - ib.waitSince[vl])
	p.c.Prio[vl].XmitWaitPs += w
	p.c.PortXmitWaitPs += w
	ib.waiting[vl] = false
	p.ibStallEnded(vl, now)
}

// accrueIBWaits adds the time the VLs still waiting for credit have waited
// so far to PortXmitWait, and counts on from now: a counter read while a
// VL is stalled for good shows the stall, not 0.
func (p *port) accrueIBWaits(now clock.Time) {
	ib := &p.ib
	for vl := range ib.waiting {
		if ib.waiting[vl] {
			w := int64(now - ib.waitSince[vl])
			p.c.Prio[vl].XmitWaitPs += w
			p.c.PortXmitWaitPs += w
			ib.waitSince[vl] = now
		}
	}
}

// countIBPacket counts a packet of n bytes on the wire in IBA's
// PortCounters (pkts, data): link packets are not counted (IBA 16.1.3.5:
// PortXmitPkts and PortRcvPkts count packets "excluding link packets",
// and so do the data counters), and data is the octets from the LRH
// through the ICRC, the VCRC left out, as emunic's PMA counts them.
func countIBPacket(pkts, data *uint64, n int) {
	if n == wire.IBLinkSize {
		return
	}
	*pkts++
	*data += uint64(max(n-wire.VCRCSize, 0))
}
