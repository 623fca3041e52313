package mad

import (
	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/wire"
)

// SMPs travel as UD SEND ONLY packets to QP0 on VL15 (IBA 13.5.1, 14.2):
//
//	LRH (VL 15, LNH 2 "IBA local") | BTH (0x64, DestQP 0) | DETH (Q_Key 0, SrcQP 0) | MAD (256) | ICRC | VCRC
//
// 8 + 12 + 8 + 256 + 4 + 2 = 290 bytes on the link, PktLen 72 words.
// VL15 is not subject to credit flow control; a switch sends it ahead of
// data. A directed-route SMP's LRH carries the permissive DLID 0xFFFF
// (every port accepts it and no LFT forwards it: each hop's SMA does).

// PacketSize is the link size of an SMP packet, LRH through VCRC.
const PacketSize = wire.LRHSize + bth.BTHSize + bth.DETHSize + Size + bth.ICRCSize + wire.VCRCSize

const (
	// SMIQP is the subnet management interface's queue pair.
	SMIQP = 0
	// SMIQKey is QP0's Q_Key (IBA 13.5.1: QP0 uses Q_Key 0).
	SMIQKey = 0
	// VL is the management virtual lane.
	VL = 15
)

// PacketFields is what varies between SMP packets: the LRH addresses and
// the BTH PSN. SL is carried but VL15 does not use it.
type PacketFields struct {
	SL   uint8
	DLID uint16
	SLID uint16
	PSN  uint32
}

// EncodePacket writes the whole SMP packet for smp (256 bytes) into b and
// returns its length (PacketSize). Nothing is allocated.
func EncodePacket(b []byte, f *PacketFields, smp SMP) (int, error) {
	if len(smp) != Size {
		return 0, wire.Errorf("SMP", "", -1, wire.ReasonInvalid, "%d bytes, an SMP is %d", len(smp), Size)
	}
	ib := bth.IBFields{
		LRH:     wire.LRHFields{VL: VL, SL: f.SL, DLID: f.DLID, SLID: f.SLID},
		BTH:     bth.BTHFields{OpCode: bth.UDSendOnly, PKey: bth.DefaultPKey, DestQP: SMIQP, PSN: f.PSN & bth.QPNMask},
		Ext:     bth.ExtFields{DETH: bth.DETHFields{QKey: SMIQKey, SrcQP: SMIQP}},
		Payload: smp,
	}
	return bth.EncodeIB(b, &ib)
}

// Packet is a decoded SMP packet; slices alias the packet bytes.
type Packet struct {
	IB  bth.IBPacket
	SMP SMP
}

// smpOffset is where the MAD starts in a local (LNH 2) SMP packet.
const smpOffset = wire.LRHSize + bth.BTHSize + bth.DETHSize

// DecodePacket decodes one SMP packet (LRH through VCRC) and validates it
// as IBA requires of QP0 traffic: VL 15, no GRH, UD SEND ONLY to QP0 from
// QP0, a 256-byte MAD that is a valid SMP. flags select ICRC/VCRC checks.
// It allocates nothing.
func DecodePacket(pkt []byte, p *Packet, flags bth.DecodeFlags) error {
	p.SMP = nil
	if err := p.IB.Decode(pkt, flags); err != nil {
		return err
	}
	ib := &p.IB
	if vl := ib.LRH.VL(); vl != VL {
		return wire.Errorf("LRH", "VL", 0, wire.ReasonInconsistent, "SMP on VL %d, subnet management uses VL 15", vl)
	}
	if ib.Global() {
		return wire.Errorf("LRH", "LNH", 1, wire.ReasonUnsupported, "SMP with a GRH: QP0 traffic stays in the subnet")
	}
	if op := ib.BTH.OpCode(); op != bth.UDSendOnly {
		return wire.Errorf("BTH", "OpCode", wire.LRHSize, wire.ReasonInconsistent, "%s on VL 15, SMPs are UD SEND ONLY", op)
	}
	if q := ib.BTH.DestQP(); q != SMIQP {
		return wire.Errorf("BTH", "DestQP", wire.LRHSize+5, wire.ReasonInconsistent, "VL 15 packet to QP %d, only QP0 may use VL 15", q)
	}
	if q := ib.DETH.SrcQP(); q != SMIQP {
		return wire.Errorf("DETH", "SrcQP", wire.LRHSize+bth.BTHSize+5, wire.ReasonInconsistent, "SMP from QP %d, SMPs come from QP0", q)
	}
	s := SMP(ib.Payload)
	if err := s.Validate(smpOffset); err != nil {
		return err
	}
	p.SMP = s
	return nil
}
