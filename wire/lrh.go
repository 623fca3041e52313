package wire

import "encoding/binary"

// LRH is the InfiniBand Local Route Header (IBA Vol 1 §7.7), the first
// header of every native IB data packet:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  VL   | LVer  |  SL   |Rsv|LNH|          DLID (16)            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Reserved (5) |   PktLen (11)       |          SLID (16)      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A data packet on an IB link is LRH [GRH] BTH [ETHs] payload pad ICRC VCRC.
// PktLen counts 4-byte words from the first byte of the LRH through the last
// byte of the ICRC; the 2-byte VCRC is not counted, so a packet of PktLen
// words occupies PktLen*4 + 2 bytes.
//
// Accessors do not bounds-check: call Validate (or check len(b) >= LRHSize)
// first.
type LRH []byte

const (
	// LRHSize is the size of the Local Route Header.
	LRHSize = 8
	// LRHMinPktLen is the smallest PktLen of an IBA (LNH 2 or 3) packet:
	// LRH 8 + BTH 12 + ICRC 4 = 24 bytes = 6 words (IBA §7.7.8).
	LRHMinPktLen = 6
	// LRHMaxPktLen is the largest value the 11-bit PktLen field can hold.
	LRHMaxPktLen = 0x7FF

	lrhVLLVer  = 0 // VL(4) | LVer(4)
	lrhSLLNH   = 1 // SL(4) | reserved(2) | LNH(2)
	lrhDLID    = 2
	lrhPktLen  = 4 // reserved(5) | PktLen(11)
	lrhSLID    = 6
	lrhPktMask = 0x07FF
)

// Link Next Header values (LRH.LNH, IBA §7.7.5): what follows the LRH.
const (
	LNHRaw    = 0 // raw packet, non-IBA transport (no ICRC)
	LNHIPv6   = 1 // raw IPv6 packet, non-IBA transport (no ICRC)
	LNHLocal  = 2 // IBA local: BTH follows
	LNHGlobal = 3 // IBA global: GRH follows, then BTH
)

// VL is the Virtual Lane the packet travels on (0-14 data, 15 management).
func (b LRH) VL() uint8 { return b[lrhVLLVer] >> 4 }

// LVer is the link version; 0 is the only defined value.
func (b LRH) LVer() uint8 { return b[lrhVLLVer] & 0x0F }

// SL is the Service Level, mapped to a VL at every hop.
func (b LRH) SL() uint8 { return b[lrhSLLNH] >> 4 }

// LNH is the Link Next Header (LNHRaw .. LNHGlobal).
func (b LRH) LNH() uint8 { return b[lrhSLLNH] & 0x03 }

// DLID is the destination local identifier.
func (b LRH) DLID() uint16 { return binary.BigEndian.Uint16(b[lrhDLID:]) }

// PktLen is the packet length in 4-byte words, LRH through ICRC.
func (b LRH) PktLen() uint16 { return binary.BigEndian.Uint16(b[lrhPktLen:]) & lrhPktMask }

// SLID is the source local identifier.
func (b LRH) SLID() uint16 { return binary.BigEndian.Uint16(b[lrhSLID:]) }

// SetVL rewrites the VL, as a switch does at every hop after its SL-to-VL
// lookup. The VCRC must be recomputed afterwards (PutVCRC); the ICRC masks VL.
func (b LRH) SetVL(vl uint8) { b[lrhVLLVer] = vl<<4 | b[lrhVLLVer]&0x0F }

// SetDLID and SetSLID rewrite the LIDs, as an SMA turning a request into
// its response does. Both CRCs must be recomputed afterwards.
func (b LRH) SetDLID(lid uint16) { binary.BigEndian.PutUint16(b[lrhDLID:], lid) }
func (b LRH) SetSLID(lid uint16) { binary.BigEndian.PutUint16(b[lrhSLID:], lid) }

// SetPktLen rewrites PktLen, keeping the reserved bits.
func (b LRH) SetPktLen(words uint16) {
	v := binary.BigEndian.Uint16(b[lrhPktLen:])&^lrhPktMask | words&lrhPktMask
	binary.BigEndian.PutUint16(b[lrhPktLen:], v)
}

// FrameLen is the number of bytes the packet occupies on the link, VCRC
// included: PktLen*4 + 2.
func (b LRH) FrameLen() int { return int(b.PktLen())*4 + VCRCSize }

// LRHFields holds the LRH fields for Encode. Values wider than their field
// are truncated to it.
type LRHFields struct {
	VL     uint8
	LVer   uint8
	SL     uint8
	LNH    uint8
	DLID   uint16
	PktLen uint16 // words from the LRH through the ICRC
	SLID   uint16
}

// Encode writes the 8-byte LRH, reserved bits zero. b must hold LRHSize bytes.
func (b LRH) Encode(f *LRHFields) {
	b[lrhVLLVer] = f.VL<<4 | f.LVer&0x0F
	b[lrhSLLNH] = f.SL<<4 | f.LNH&0x03
	binary.BigEndian.PutUint16(b[lrhDLID:], f.DLID)
	binary.BigEndian.PutUint16(b[lrhPktLen:], f.PktLen&lrhPktMask)
	binary.BigEndian.PutUint16(b[lrhSLID:], f.SLID)
}

// Fields decodes the LRH into f.
func (b LRH) Fields(f *LRHFields) {
	*f = LRHFields{VL: b.VL(), LVer: b.LVer(), SL: b.SL(), LNH: b.LNH(),
		DLID: b.DLID(), PktLen: b.PktLen(), SLID: b.SLID()}
}

// PktLenFor returns the PktLen of a packet whose LRH-through-ICRC part is n
// bytes (n must be a multiple of 4 for a valid packet).
func PktLenFor(n int) uint16 { return uint16(n / 4) }

// Validate checks the LRH against the whole packet: b runs from the first
// byte of the LRH through the VCRC, as the packet sits on the link or in an
// ERF type-21 record. offset is the packet's offset within the capture
// record or frame, used only in errors. It does not verify the VCRC (see
// CheckVCRC) nor anything after the LRH.
//
// Reserved bits are not checked: IBA has senders clear them and receivers
// ignore them.
func (b LRH) Validate(offset int) error {
	if len(b) < LRHSize {
		return Truncated("LRH", "SLID", offset, LRHSize, len(b))
	}
	if v := b.LVer(); v != 0 {
		return Errorf("LRH", "LVer", offset, ReasonInvalid, "LVer %d, only 0 is defined", v)
	}
	pl := int(b.PktLen())
	minLen := 2 // a raw packet is at least its LRH
	if b.LNH() >= LNHLocal {
		minLen = LRHMinPktLen
	}
	if pl < minLen {
		return Errorf("LRH", "PktLen", offset+lrhPktLen, ReasonInvalid,
			"PktLen %d words, the minimum for LNH %d is %d", pl, b.LNH(), minLen)
	}
	if want := pl*4 + VCRCSize; want != len(b) {
		if want > len(b) {
			return Errorf("LRH", "PktLen", offset+lrhPktLen, ReasonTruncated,
				"PktLen %d words means %d bytes with the VCRC, have %d", pl, want, len(b))
		}
		return Errorf("LRH", "PktLen", offset+lrhPktLen, ReasonInconsistent,
			"PktLen %d words means %d bytes with the VCRC, packet is %d", pl, want, len(b))
	}
	return nil
}
