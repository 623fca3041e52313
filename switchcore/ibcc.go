package switchcore

import (
	"fmt"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// InfiniBand congestion control, switch side (IBA Annex A10,
// SwitchCongestionSetting; OpenSM's cc_sw_cong_setting_* knobs).
//
// Detection: an output port VL is congested when the bytes queued behind
// the packet being sent exceed the threshold. It is the root of the
// congestion when it has credits, and a victim when it is waiting for
// credits from downstream: its queue grows because the next hop is full,
// not because its own link is oversubscribed. Victims mark only on ports in
// VictimMask (the annex's per-port Victim_Mask, set for ports whose peer
// cannot itself mark, typically CAs). A port VL counts as a victim while it
// waits for credit and for one CreditUpdateInterval after a wait ended:
// credits trickle back one flow-control update at a time, so a starved VL
// sends a packet or two between waits without having become a root.
//
// Marking: at dequeue, an eligible packet gets FECN set in its BTH. Packets
// of fewer than PacketSize 64-byte credits are not eligible (Packet_Size),
// nor are CN packets (BTH opcode 0x80: nobody answers a CNP) or packets
// without a BTH (raw LNH 0/1). Of consecutive eligible packets of one port
// VL, the first is marked and then MarkingRate are skipped (Marking_Rate,
// "the mean number of packets between marks", applied as an exact count
// so that runs are repeatable).
//
// Threshold (0..15) follows the annex's scale: 0 marks nothing, 15 is the
// most aggressive. The annex leaves the mapping to bytes to the switch;
// here it is (16 - Threshold)/16 of the per-VL receive buffer of one port
// (BufferBlocks × 64 bytes): 15 marks above 1/16 of a buffer, 1 above
// 15/16 of it.
//
// Checksums: BTH byte 4 (FECN, BECN) is one of the fields the ICRC masks
// to ones for native IB (IBA 7.8.1; wire-formats §7), so setting FECN
// leaves the ICRC valid; the VCRC covers every byte and is recomputed.

// IBCCConfig is the switch's IB congestion control setting.
type IBCCConfig struct {
	// Enabled turns FECN marking on (the lab's ib cc section).
	Enabled bool
	// Threshold is 0..15 (0: never mark, 15: most aggressive).
	Threshold uint8
	// MarkingRate is the number of eligible packets skipped after each
	// marked one (0: mark every eligible packet).
	MarkingRate uint16
	// PacketSize: packets of fewer 64-byte credits are never marked.
	PacketSize uint8
	// VictimMask lists the ports that mark even while credit-starved
	// (index = port); nil or false: roots only.
	VictimMask []bool
}

// ThresholdBytes is the queue depth above which a port VL is congested for
// the given buffer of bufferBlocks credits; -1 means never.
func (c *IBCCConfig) ThresholdBytes(bufferBlocks int) int {
	if !c.Enabled || c.Threshold == 0 {
		return -1
	}
	return bufferBlocks * wire.CreditBlockSize * (16 - int(c.Threshold)) / 16
}

func (c *IBCCConfig) validate(name string, ports int) error {
	if !c.Enabled {
		return nil
	}
	if c.Threshold > 15 {
		return fmt.Errorf("switch %q: IB CC: threshold %d, need 0..15", name, c.Threshold)
	}
	if len(c.VictimMask) > ports {
		return fmt.Errorf("switch %q: IB CC: victim mask has %d ports, the switch %d", name, len(c.VictimMask), ports)
	}
	return nil
}

// ibCCState is one port's marking state.
type ibCCState struct {
	threshold int           // ThresholdBytes for this switch, -1: never
	skip      [8]uint16     // eligible packets still to skip before the next mark
	stallEnd  [8]clock.Time // when the VL last stopped waiting for credit
	everStall [8]bool
}

// ibVictim reports whether p's VL vl is credit-starved now or was within
// one credit update interval.
func (s *Switch) ibVictim(p *port, vl int, now clock.Time) bool {
	ib := &p.ib
	if ib.waiting[vl] {
		return true
	}
	return ib.cc.everStall[vl] && now-ib.cc.stallEnd[vl] <= s.cfg.IB.CreditUpdateInterval
}

// ibMarkFECN applies congestion marking to f, just dequeued from p's VL vl
// with depth bytes left behind it. victim is the VL's credit state at the
// time of the send.
func (s *Switch) ibMarkFECN(p *port, vl int, f *frame.Frame, depth int, victim bool) {
	if t := p.ib.cc.threshold; t < 0 || depth <= t {
		return
	}
	cc := &s.cfg.IB.CC
	if victim && (p.idx >= len(cc.VictimMask) || !cc.VictimMask[p.idx]) {
		return
	}
	if wire.CreditBlocks(f.Len()) < int(cc.PacketSize) {
		return
	}
	b := f.Data
	off := wire.LRHSize
	switch wire.LRH(b).LNH() {
	case wire.LNHLocal:
	case wire.LNHGlobal:
		off += wire.GRHSize
	default:
		return // raw packet: no BTH to mark
	}
	if len(b) < off+bth.BTHSize+bth.ICRCSize+wire.VCRCSize {
		return
	}
	h := bth.BTH(b[off:])
	if h.OpCode() == bth.IBCNOpcode || h.FECN() {
		return
	}
	st := &p.ib.cc
	if st.skip[vl] > 0 {
		st.skip[vl]--
		return
	}
	st.skip[vl] = cc.MarkingRate
	h.SetFECN(true)
	wire.PutVCRC(b)
	p.c.Prio[vl].FECNMarked++
	s.emit(TraceEvent{Kind: TraceFECNMark, Port: p.idx, Prio: vl, Bytes: depth, Frame: f})
}

// ibStallEnded records that VL vl of p got credit after waiting.
func (p *port) ibStallEnded(vl int, now clock.Time) {
	p.ib.cc.stallEnd[vl], p.ib.cc.everStall[vl] = now, true
}
