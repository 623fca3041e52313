package bth

import "github.com/emufabric/emufabric/wire"

// Native InfiniBand data packets (IBA 7.7–7.8): LRH [GRH] BTH extension
// headers payload pad ICRC VCRC. LRH.PktLen counts 4-byte words from the
// LRH through the ICRC; the 2-byte VCRC follows and is recomputed at every
// hop (switches change the VL). The ICRC masks the VL (local) or the whole
// LRH (global) and so survives.

// IBFields describes a native IB packet to build.
type IBFields struct {
	// LRH gives VL, SL, DLID, SLID (LVer is written as given, 0 for IBA).
	// LNH and PktLen are set by the builder.
	LRH wire.LRHFields
	// Global adds a GRH (LNH 3). Its PayLen and NxtHdr are set by the
	// builder.
	Global bool
	GRH    wire.GRHFields

	BTH     BTHFields // PadCount is computed from len(Payload)
	Ext     ExtFields
	Payload []byte
}

// PacketLen returns the length of the packet EncodeIB writes, LRH through
// VCRC, or -1 if the opcode is not decodable.
func (f *IBFields) PacketLen() int {
	t := TransportLen(f.BTH.OpCode, len(f.Payload))
	if t < 0 {
		return -1
	}
	n := wire.LRHSize + t + ICRCSize + wire.VCRCSize
	if f.Global {
		n += wire.GRHSize
	}
	return n
}

// EncodeIB builds the packet described by f at the start of b and returns
// its length: it sets LNH, PktLen, the GRH PayLen and NxtHdr, PadCnt, and
// computes the ICRC and then the VCRC. Nothing is allocated.
func EncodeIB(b []byte, f *IBFields) (int, error) {
	total := f.PacketLen()
	if total < 0 {
		return 0, wire.Errorf("BTH", "OpCode", -1, wire.ReasonInvalid, "cannot encode %s", f.BTH.OpCode)
	}
	if words := (total - wire.VCRCSize) / 4; words > wire.LRHMaxPktLen {
		return 0, wire.Errorf("LRH", "PktLen", -1, wire.ReasonInvalid, "%d words exceed the 11-bit PktLen", words)
	}
	if len(b) < total {
		return 0, wire.Truncated("LRH", "", -1, total, len(b))
	}
	hdr := wire.LRHSize
	if f.Global {
		hdr += wire.GRHSize
	}
	tn, err := EncodeTransport(b[hdr:], &f.BTH, &f.Ext, f.Payload)
	if err != nil {
		return 0, err
	}
	icrcAt := hdr + tn
	end := icrcAt + ICRCSize
	lrh := f.LRH
	lrh.LNH = wire.LNHLocal
	lrh.PktLen = wire.PktLenFor(end)
	if f.Global {
		lrh.LNH = wire.LNHGlobal
		g := f.GRH
		g.PayLen = uint16(end - hdr)
		g.NxtHdr = wire.GRHNxtHdrIBA
		wire.GRH(b[wire.LRHSize:]).Encode(&g)
	}
	wire.LRH(b).Encode(&lrh)
	var crc uint32
	if f.Global {
		crc, _ = ICRCIBGlobal(b[:icrcAt])
	} else {
		crc, _ = ICRCIBLocal(b[:icrcAt])
	}
	PutICRC(b[icrcAt:], crc)
	wire.PutVCRC(b[:total])
	return total, nil
}

// IBPacket is a decoded native IB data packet. Slices alias the packet;
// decoding allocates nothing.
type IBPacket struct {
	LRH     wire.LRH // the 8-byte LRH
	GRH     wire.GRH // the 40-byte GRH, nil for a local packet
	Headers          // BTH, extension headers, payload, pad
	ICRC    uint32   // as read from the wire
	ICRCOK  bool     // set when VerifyICRC was asked and matched
	VCRC    uint16   // as read from the wire
	VCRCOK  bool     // set when VerifyVCRC was asked and matched
}

// Global reports whether the packet has a GRH.
func (p *IBPacket) Global() bool { return p.GRH != nil }

// Decode decodes pkt, one IB data packet from the LRH through the VCRC (an
// ERF type-21 record body or a LINKTYPE_INFINIBAND frame). PktLen must
// match len(pkt) exactly; for LNH 3 the GRH PayLen must match PktLen.
// Raw packets (LNH 0 and 1) carry no BTH and are reported unsupported.
func (p *IBPacket) Decode(pkt []byte, flags DecodeFlags) error {
	*p = IBPacket{}
	lrh := wire.LRH(pkt)
	if err := lrh.Validate(0); err != nil {
		return err
	}
	end := int(lrh.PktLen()) * 4 // end of the ICRC
	hdr := wire.LRHSize
	switch lrh.LNH() {
	case wire.LNHLocal:
	case wire.LNHGlobal:
		g := wire.GRH(pkt[wire.LRHSize:end])
		if err := g.Validate(wire.LRHSize); err != nil {
			return err
		}
		if want := end - wire.LRHSize - wire.GRHSize; int(g.PayLen()) != want {
			return wire.Errorf("GRH", "PayLen", wire.LRHSize+4, wire.ReasonInconsistent,
				"PayLen %d, LRH PktLen %d words leaves %d bytes", g.PayLen(), lrh.PktLen(), want)
		}
		p.GRH = g[:wire.GRHSize]
		hdr += wire.GRHSize
	default:
		return wire.Errorf("LRH", "LNH", 1, wire.ReasonUnsupported, "LNH %d is a raw (non-IBA) packet", lrh.LNH())
	}
	p.LRH = lrh[:wire.LRHSize]
	if end-ICRCSize < hdr+BTHSize {
		return wire.Truncated("BTH", "", hdr, BTHSize+ICRCSize, max(end-hdr, 0))
	}
	icrcAt := end - ICRCSize
	p.ICRC = WireICRC(pkt[icrcAt:])
	p.VCRC = wire.StoredVCRC(pkt)
	if err := p.Headers.Decode(pkt[hdr:icrcAt], hdr); err != nil {
		return err
	}
	if flags&VerifyICRC != 0 {
		var want uint32
		if p.Global() {
			want, _ = ICRCIBGlobal(pkt[:icrcAt])
		} else {
			want, _ = ICRCIBLocal(pkt[:icrcAt])
		}
		if want != p.ICRC {
			return wire.Errorf("ICRC", "ICRC", icrcAt, wire.ReasonChecksum, "wire 0x%08x, computed 0x%08x", p.ICRC, want)
		}
		p.ICRCOK = true
	}
	if flags&VerifyVCRC != 0 {
		if err := wire.CheckVCRC(pkt, 0); err != nil {
			return err
		}
		p.VCRCOK = true
	}
	return nil
}

// IBFieldsOf fills f from a decoded packet so that EncodeIB(f) gives the
// same packet back (payload aliased).
func (p *IBPacket) IBFieldsOf(f *IBFields) {
	*f = IBFields{BTH: p.BTH.Fields(), Ext: p.Headers.ExtFields(), Payload: p.Payload}
	p.LRH.Fields(&f.LRH)
	if p.Global() {
		f.Global = true
		p.GRH.Fields(&f.GRH)
	}
}

// FinishIBPacket writes the ICRC and then the VCRC of pkt (LRH through
// VCRC), e.g. after gopacket.SerializeLayers, whose LRH layer computes the
// VCRC before the ICRC is known.
func FinishIBPacket(pkt []byte) error {
	lrh := wire.LRH(pkt)
	if err := lrh.Validate(0); err != nil {
		return err
	}
	icrcAt := int(lrh.PktLen())*4 - ICRCSize
	var crc uint32
	var ok bool
	switch lrh.LNH() {
	case wire.LNHLocal:
		crc, ok = ICRCIBLocal(pkt[:icrcAt])
	case wire.LNHGlobal:
		crc, ok = ICRCIBGlobal(pkt[:icrcAt])
	default:
		return wire.Errorf("LRH", "LNH", 1, wire.ReasonUnsupported, "LNH %d carries no ICRC", lrh.LNH())
	}
	if !ok {
		return wire.Errorf("LRH", "PktLen", 4, wire.ReasonTruncated, "PktLen %d words leaves no room for the BTH", lrh.PktLen())
	}
	PutICRC(pkt[icrcAt:], crc)
	wire.PutVCRC(pkt)
	return nil
}
