package wire

import "encoding/binary"

// IPv4 is a view of an IPv4 header (RFC 791 §3.1):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Version|  IHL  |   DSCP    |ECN|          Total Length         |
//	|         Identification        |Flags|      Fragment Offset    |
//	|  Time to Live |    Protocol   |         Header Checksum       |
//	|                       Source Address                          |
//	|                    Destination Address                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Accessors do not bounds-check: call Validate first.
type IPv4 []byte

const (
	IPv4MinSize = 20
	IPv6Size    = 40
	IPProtoTCP  = 6
	IPProtoUDP  = 17
	IPProtoSCTP = 132

	ipv4TOS      = 1
	ipv4TotalLen = 2
	ipv4ID       = 4
	ipv4Flags    = 6
	ipv4TTL      = 8
	ipv4Protocol = 9
	ipv4Checksum = 10
	ipv4Src      = 12
	ipv4Dst      = 16

	ipv4FlagDF = 0x4000
	ipv4FlagMF = 0x2000
)

// ECN codepoints (RFC 3168 §5): the two low bits of the TOS / Traffic Class.
const (
	ECNNotECT uint8 = 0
	ECNECT1   uint8 = 1
	ECNECT0   uint8 = 2
	ECNCE     uint8 = 3
)

// IPv4Fields describes an IPv4 header to encode (no options).
type IPv4Fields struct {
	DSCP, ECN   uint8
	TotalLength uint16
	ID          uint16
	DF          bool
	TTL         uint8
	Protocol    uint8
	Src, Dst    [4]byte
}

func (b IPv4) Version() uint8         { return b[0] >> 4 }
func (b IPv4) HeaderLen() int         { return int(b[0]&0xF) * 4 }
func (b IPv4) TOS() uint8             { return b[ipv4TOS] }
func (b IPv4) DSCP() uint8            { return b[ipv4TOS] >> 2 }
func (b IPv4) ECN() uint8             { return b[ipv4TOS] & 3 }
func (b IPv4) TotalLength() uint16    { return binary.BigEndian.Uint16(b[ipv4TotalLen:]) }
func (b IPv4) ID() uint16             { return binary.BigEndian.Uint16(b[ipv4ID:]) }
func (b IPv4) DF() bool               { return binary.BigEndian.Uint16(b[ipv4Flags:])&ipv4FlagDF != 0 }
func (b IPv4) MF() bool               { return binary.BigEndian.Uint16(b[ipv4Flags:])&ipv4FlagMF != 0 }
func (b IPv4) FragmentOffset() uint16 { return binary.BigEndian.Uint16(b[ipv4Flags:]) & 0x1FFF }
func (b IPv4) TTL() uint8             { return b[ipv4TTL] }
func (b IPv4) Protocol() uint8        { return b[ipv4Protocol] }
func (b IPv4) Checksum() uint16       { return binary.BigEndian.Uint16(b[ipv4Checksum:]) }
func (b IPv4) Src() (a [4]byte)       { copy(a[:], b[ipv4Src:]); return }
func (b IPv4) Dst() (a [4]byte)       { copy(a[:], b[ipv4Dst:]); return }

// Payload is the bytes after the header up to TotalLength.
func (b IPv4) Payload() []byte { return b[b.HeaderLen():b.TotalLength()] }

// Encode writes a 20-byte header, checksum included.
func (b IPv4) Encode(f *IPv4Fields) {
	b[0] = 0x45
	b[ipv4TOS] = f.DSCP<<2 | f.ECN&3
	binary.BigEndian.PutUint16(b[ipv4TotalLen:], f.TotalLength)
	binary.BigEndian.PutUint16(b[ipv4ID:], f.ID)
	var flags uint16
	if f.DF {
		flags = ipv4FlagDF
	}
	binary.BigEndian.PutUint16(b[ipv4Flags:], flags)
	b[ipv4TTL] = f.TTL
	b[ipv4Protocol] = f.Protocol
	copy(b[ipv4Src:], f.Src[:])
	copy(b[ipv4Dst:], f.Dst[:])
	binary.BigEndian.PutUint16(b[ipv4Checksum:], 0)
	binary.BigEndian.PutUint16(b[ipv4Checksum:], b.CalculateChecksum())
}

// CalculateChecksum returns the header checksum computed with the checksum
// field taken as zero (RFC 1071).
func (b IPv4) CalculateChecksum() uint16 {
	n := b.HeaderLen()
	var sum uint32
	for i := 0; i+1 < n; i += 2 {
		if i == ipv4Checksum {
			continue
		}
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	return ^fold(sum)
}

// IsChecksumValid reports whether the stored checksum verifies.
func (b IPv4) IsChecksumValid() bool { return b.CalculateChecksum() == b.Checksum() }

func fold(sum uint32) uint16 {
	for sum > 0xFFFF {
		sum = sum>>16 + sum&0xFFFF
	}
	return uint16(sum)
}

// SetTOSWithChecksumUpdate rewrites the TOS byte and updates the header
// checksum incrementally (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')), as a
// switch's fast path does when it CE-marks a packet. Incremental update
// keeps any other (possibly wrong) checksum state as it was, which is what
// real hardware does and what a checker downstream expects.
func (b IPv4) SetTOSWithChecksumUpdate(tos uint8) {
	old := uint16(b[0])<<8 | uint16(b[ipv4TOS])
	b[ipv4TOS] = tos
	nw := uint16(b[0])<<8 | uint16(b[ipv4TOS])
	b.updateChecksum(old, nw)
}

// SetECN rewrites the ECN field, keeping the checksum right.
func (b IPv4) SetECN(ecn uint8) {
	b.SetTOSWithChecksumUpdate(b[ipv4TOS]&^3 | ecn&3)
}

// SetTTLWithChecksumUpdate rewrites the TTL (a router's decrement).
func (b IPv4) SetTTLWithChecksumUpdate(ttl uint8) {
	old := uint16(b[ipv4TTL])<<8 | uint16(b[ipv4Protocol])
	b[ipv4TTL] = ttl
	nw := uint16(b[ipv4TTL])<<8 | uint16(b[ipv4Protocol])
	b.updateChecksum(old, nw)
}

func (b IPv4) updateChecksum(old, nw uint16) {
	hc := binary.BigEndian.Uint16(b[ipv4Checksum:])
	sum := uint32(^hc) + uint32(^old) + uint32(nw)
	binary.BigEndian.PutUint16(b[ipv4Checksum:], ^fold(sum))
}

// Validate checks the header against len(b), which must be the bytes from
// the IPv4 header to the end of the frame (Ethernet padding allowed).
// offset is the header's position in the frame, for error messages.
// RoCEv2 datagrams are never fragmented, so fragments are unsupported.
func (b IPv4) Validate(offset int) error {
	if err := b.ValidateHeader(offset); err != nil {
		return err
	}
	if b.MF() || b.FragmentOffset() != 0 {
		return Errorf("IPv4", "FragmentOffset", offset, ReasonUnsupported, "fragmented datagram")
	}
	return nil
}

// ValidateHeader is Validate for a router, which forwards fragments: the
// header's version, lengths and checksum, whatever the fragment fields.
func (b IPv4) ValidateHeader(offset int) error {
	if len(b) < IPv4MinSize {
		return Truncated("IPv4", "Version", offset, IPv4MinSize, len(b))
	}
	if v := b.Version(); v != 4 {
		return Errorf("IPv4", "Version", offset, ReasonInvalid, "version %d", v)
	}
	hl := b.HeaderLen()
	if hl < IPv4MinSize {
		return Errorf("IPv4", "IHL", offset, ReasonInvalid, "header length %d < 20", hl)
	}
	if hl > len(b) {
		return Truncated("IPv4", "IHL", offset, hl, len(b))
	}
	tl := int(b.TotalLength())
	if tl < hl {
		return Errorf("IPv4", "TotalLength", offset, ReasonInconsistent, "total length %d < header length %d", tl, hl)
	}
	if tl > len(b) {
		return Errorf("IPv4", "TotalLength", offset, ReasonTruncated, "total length %d, %d bytes present", tl, len(b))
	}
	if !b.IsChecksumValid() {
		return Errorf("IPv4", "HeaderChecksum", offset, ReasonChecksum, "stored 0x%04x, computed 0x%04x", b.Checksum(), b.CalculateChecksum())
	}
	return nil
}
