package wire

import "encoding/binary"

// GRH is the InfiniBand Global Route Header (IBA Vol 1 §8.3), present when
// LRH.LNH is LNHGlobal, and the first header after Ethernet in RoCEv1. It is
// laid out like an IPv6 header with 16-byte GIDs for addresses:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| IPVer |    TClass     |              FlowLabel                |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          PayLen               |    NxtHdr     |    HopLmt     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        SGID (16 bytes)                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        DGID (16 bytes)                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// PayLen counts the bytes after the GRH through the ICRC (the VCRC is not
// counted). Accessors do not bounds-check: call Validate first.
type GRH []byte

const (
	// GRHSize is the size of the Global Route Header.
	GRHSize = 40
	// GRHIPVer is the only IPVer a GRH carries.
	GRHIPVer = 6
	// GRHNxtHdrIBA is NxtHdr for an IBA transport header (BTH) following the GRH.
	GRHNxtHdrIBA = 0x1B

	grhVerClassFlow = 0
	grhPayLen       = 4
	grhNxtHdr       = 6
	grhHopLmt       = 7
	grhSGID         = 8
	grhDGID         = 24
)

// IPVer is the header version, 6.
func (b GRH) IPVer() uint8 { return b[0] >> 4 }

// TClass is the traffic class.
func (b GRH) TClass() uint8 {
	return uint8(binary.BigEndian.Uint32(b[grhVerClassFlow:]) >> 20)
}

// FlowLabel is the 20-bit flow label.
func (b GRH) FlowLabel() uint32 {
	return binary.BigEndian.Uint32(b[grhVerClassFlow:]) & 0xFFFFF
}

// PayLen is the number of bytes after the GRH through the ICRC.
func (b GRH) PayLen() uint16 { return binary.BigEndian.Uint16(b[grhPayLen:]) }

// NxtHdr identifies the header after the GRH; GRHNxtHdrIBA for a BTH.
func (b GRH) NxtHdr() uint8 { return b[grhNxtHdr] }

// HopLmt is the hop limit, decremented by IB routers.
func (b GRH) HopLmt() uint8 { return b[grhHopLmt] }

// SGID is the source global identifier.
func (b GRH) SGID() (g [16]byte) { copy(g[:], b[grhSGID:grhSGID+16]); return }

// DGID is the destination global identifier.
func (b GRH) DGID() (g [16]byte) { copy(g[:], b[grhDGID:grhDGID+16]); return }

// SetPayLen rewrites PayLen.
func (b GRH) SetPayLen(n uint16) { binary.BigEndian.PutUint16(b[grhPayLen:], n) }

// GRHFields holds the GRH fields for Encode. IPVer is always written as 6.
type GRHFields struct {
	TClass    uint8
	FlowLabel uint32 // 20 bits
	PayLen    uint16
	NxtHdr    uint8
	HopLmt    uint8
	SGID      [16]byte
	DGID      [16]byte
}

// Encode writes the 40-byte GRH. b must hold GRHSize bytes.
func (b GRH) Encode(f *GRHFields) {
	binary.BigEndian.PutUint32(b[grhVerClassFlow:], GRHIPVer<<28|uint32(f.TClass)<<20|f.FlowLabel&0xFFFFF)
	binary.BigEndian.PutUint16(b[grhPayLen:], f.PayLen)
	b[grhNxtHdr] = f.NxtHdr
	b[grhHopLmt] = f.HopLmt
	copy(b[grhSGID:grhSGID+16], f.SGID[:])
	copy(b[grhDGID:grhDGID+16], f.DGID[:])
}

// Fields decodes the GRH into f.
func (b GRH) Fields(f *GRHFields) {
	*f = GRHFields{TClass: b.TClass(), FlowLabel: b.FlowLabel(), PayLen: b.PayLen(),
		NxtHdr: b.NxtHdr(), HopLmt: b.HopLmt(), SGID: b.SGID(), DGID: b.DGID()}
}

// Validate checks the GRH. b runs from the first byte of the GRH to the end
// of the data available after it; trailing bytes past PayLen (the VCRC on an
// IB link, Ethernet padding in RoCEv1) are allowed, a PayLen longer than the
// data is not. The exact PayLen of a native IB packet is checked against the
// LRH by ValidateIBPacket. offset is the GRH's offset in the frame.
func (b GRH) Validate(offset int) error {
	if len(b) < GRHSize {
		return Truncated("GRH", "DGID", offset, GRHSize, len(b))
	}
	if v := b.IPVer(); v != GRHIPVer {
		return Errorf("GRH", "IPVer", offset, ReasonInvalid, "IPVer %d, must be 6", v)
	}
	if h := b.NxtHdr(); h != GRHNxtHdrIBA {
		return Errorf("GRH", "NxtHdr", offset+grhNxtHdr, ReasonUnsupported,
			"NxtHdr 0x%02x, only 0x1B (IBA transport) is decoded", h)
	}
	pl := int(b.PayLen())
	if pl%4 != 0 {
		return Errorf("GRH", "PayLen", offset+grhPayLen, ReasonInvalid,
			"PayLen %d is not a multiple of 4", pl)
	}
	if pl > len(b)-GRHSize {
		return Errorf("GRH", "PayLen", offset+grhPayLen, ReasonTruncated,
			"PayLen %d, only %d bytes follow the GRH", pl, len(b)-GRHSize)
	}
	return nil
}

// ValidateIBPacket checks the link-level framing of a whole native IB data
// packet, pkt running from the LRH through the VCRC: the LRH (LVer, PktLen
// against the packet length), for LNH 3 the GRH with PayLen matching PktLen
// exactly, and the VCRC. Transport headers and the ICRC are the bth
// package's business. offset is the packet's offset in its record.
func ValidateIBPacket(pkt []byte, offset int) error {
	l := LRH(pkt)
	if err := l.Validate(offset); err != nil {
		return err
	}
	if l.LNH() == LNHGlobal {
		end := int(l.PktLen()) * 4 // end of the ICRC
		g := GRH(pkt[LRHSize:end])
		if err := g.Validate(offset + LRHSize); err != nil {
			return err
		}
		if want := end - LRHSize - GRHSize; int(g.PayLen()) != want {
			return Errorf("GRH", "PayLen", offset+LRHSize+grhPayLen, ReasonInconsistent,
				"PayLen %d, LRH PktLen %d words leaves %d bytes", g.PayLen(), l.PktLen(), want)
		}
	}
	return CheckVCRC(pkt, offset)
}
