package wire

import (
	"encoding/binary"
	"strconv"
)

// IBLink is an InfiniBand link packet (IBA Vol 1 §7.9.4), the flow-control
// packet a port sends per data VL to grant credits. It has no LRH and is
// exactly 6 bytes:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Op   |        FCTBS (12)     |  VL   |        FCCL (12)      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          LPCRC (16)           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// FCTBS (Flow Control Total Blocks Sent) is the number of 64-byte blocks the
// sender has sent on VL since link initialisation, mod 4096. FCCL (Flow
// Control Credit Limit) is the receiver's limit, mod 4096. LPCRC is the
// IB CRC-16 (see VCRC) over the first 4 bytes, in the same byte order as the
// VCRC. Field layout: Wireshark's infiniband_link dissector and Shanley's
// Table 25-3; LPCRC coverage is inferred from the spec excerpts (wire-formats.md §8).
type IBLink []byte

const (
	// IBLinkSize is the size of a link packet, LPCRC included.
	IBLinkSize = 6

	// IBLinkOpNormal is a normal flow-control packet.
	IBLinkOpNormal = 0
	// IBLinkOpInit is the flow-control init packet sent while the link is
	// in LinkInitialize.
	IBLinkOpInit = 1

	iblinkOpFCTBS = 0
	iblinkVLFCCL  = 2
	iblinkLPCRC   = 4
)

// Op is the packet operand (IBLinkOpNormal or IBLinkOpInit; others reserved).
func (b IBLink) Op() uint8 { return b[iblinkOpFCTBS] >> 4 }

// FCTBS is the flow control total blocks sent, mod 4096.
func (b IBLink) FCTBS() uint16 { return binary.BigEndian.Uint16(b[iblinkOpFCTBS:]) & 0x0FFF }

// VL is the virtual lane the credits are for.
func (b IBLink) VL() uint8 { return b[iblinkVLFCCL] >> 4 }

// FCCL is the flow control credit limit, mod 4096.
func (b IBLink) FCCL() uint16 { return binary.BigEndian.Uint16(b[iblinkVLFCCL:]) & 0x0FFF }

// LPCRC is the stored link packet CRC.
func (b IBLink) LPCRC() uint16 { return getCRC16(b[iblinkLPCRC:]) }

// CalculateLPCRC computes the LPCRC over the first 4 bytes.
func (b IBLink) CalculateLPCRC() uint16 { return VCRC(b[:iblinkLPCRC]) }

// IBLinkFields holds the link packet fields for Encode.
type IBLinkFields struct {
	Op    uint8  // 4 bits
	FCTBS uint16 // 12 bits
	VL    uint8  // 4 bits
	FCCL  uint16 // 12 bits
}

// Encode writes the 6-byte link packet, LPCRC included. b must hold
// IBLinkSize bytes. Values wider than their fields are truncated.
func (b IBLink) Encode(f *IBLinkFields) {
	binary.BigEndian.PutUint16(b[iblinkOpFCTBS:], uint16(f.Op&0x0F)<<12|f.FCTBS&0x0FFF)
	binary.BigEndian.PutUint16(b[iblinkVLFCCL:], uint16(f.VL&0x0F)<<12|f.FCCL&0x0FFF)
	putCRC16(b[iblinkLPCRC:], b.CalculateLPCRC())
}

// Fields decodes the link packet into f (the LPCRC is not part of it).
func (b IBLink) Fields(f *IBLinkFields) {
	*f = IBLinkFields{Op: b.Op(), FCTBS: b.FCTBS(), VL: b.VL(), FCCL: b.FCCL()}
}

// Validate checks a link packet: exactly 6 bytes, a defined Op, a correct
// LPCRC. offset is the packet's offset in its record.
func (b IBLink) Validate(offset int) error {
	if len(b) < IBLinkSize {
		return Truncated("IBLink", "LPCRC", offset, IBLinkSize, len(b))
	}
	if len(b) > IBLinkSize {
		return Errorf("IBLink", "", offset, ReasonInconsistent,
			"a link packet is exactly %d bytes, have %d", IBLinkSize, len(b))
	}
	if op := b.Op(); op > IBLinkOpInit {
		return Errorf("IBLink", "Op", offset, ReasonInvalid, "Op %d is reserved (0 normal, 1 init)", op)
	}
	if got, want := b.LPCRC(), b.CalculateLPCRC(); got != want {
		return Errorf("IBLink", "LPCRC", offset+iblinkLPCRC, ReasonChecksum,
			"have 0x%04x, computed 0x%04x", got, want)
	}
	return nil
}

// Credit accounting (IBA Vol 1 §7.9.4). Credits are 64-byte blocks counted
// per data VL; FCTBS and FCCL are 12-bit counters that wrap at 4096.
const (
	// CreditBlockSize is the size of one flow-control credit.
	CreditBlockSize = 64
	// creditMod is the modulus of FCTBS and FCCL.
	creditMod = 4096
	// creditWindow is the largest distance from FCTBS+N to FCCL that still
	// counts as "within the limit"; beyond it the difference is taken as
	// negative (the limit is behind).
	creditWindow = 2048
)

// CreditBlocks returns the number of 64-byte credits a packet of pktBytes
// bytes consumes, ceil(pktBytes/64).
//
// Which bytes count is not settled by a source we could read (wire-formats.md
// §8 [?]); callers in this project pass the whole packet as it sits on the
// link, LRH through VCRC, so a 4096-byte payload never fits in fewer credits
// than it needs.
func CreditBlocks(pktBytes int) int {
	if pktBytes <= 0 {
		return 0
	}
	return (pktBytes + CreditBlockSize - 1) / CreditBlockSize
}

// CanSend reports whether a packet of nBlocks credits may be sent on a VL
// whose last received limit is fccl when fctbs blocks have already been sent
// (both mod 4096): (FCCL - (FCTBS + N)) mod 4096 <= 2048.
func CanSend(fccl, fctbs uint16, nBlocks int) bool {
	d := (int(fccl) - int(fctbs) - nBlocks) % creditMod
	if d < 0 {
		d += creditMod
	}
	return d <= creditWindow
}

// AddBlocks advances a 12-bit block counter (FCTBS, or a receiver's
// ABR) by n blocks, mod 4096.
func AddBlocks(counter uint16, n int) uint16 {
	// Masking works for negative n too: 4096 divides 2^16.
	return uint16(int(counter)+n) & (creditMod - 1)
}

// IBLinkNote describes link packet b for a capture comment, after the
// daemons' "rx: " or "tx: ": "flow control sent: VL 0 FCTBS 6 FCCL 1030"
// (verb "sent" or "received"), or "malformed link packet received" when
// b does not validate. emuswitch and emunic both write it, so the same
// packet reads the same at both ends of a link.
func IBLinkNote(b []byte, verb string) string {
	l := IBLink(b)
	if len(b) < IBLinkSize || l.Validate(0) != nil {
		return "malformed link packet " + verb
	}
	return "flow control " + verb + ": VL " + strconv.Itoa(int(l.VL())) +
		" FCTBS " + strconv.Itoa(int(l.FCTBS())) + " FCCL " + strconv.Itoa(int(l.FCCL()))
}
