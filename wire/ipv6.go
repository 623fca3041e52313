package wire

import "encoding/binary"

// IPv6 is a view of the fixed IPv6 header (RFC 8200 §3):
//
//	| Version(4) | Traffic Class(8) | Flow Label(20) |
//	| Payload Length(16) | Next Header(8) | Hop Limit(8) |
//	| Source Address (128) |
//	| Destination Address (128) |
//
// Traffic Class = DSCP(6) | ECN(2), straddling bytes 0 and 1.
// Accessors do not bounds-check: call Validate first.
type IPv6 []byte

const (
	ipv6PayloadLen = 4
	ipv6NextHeader = 6
	ipv6HopLimit   = 7
	ipv6Src        = 8
	ipv6Dst        = 24
)

// IPv6Fields describes an IPv6 header to encode.
type IPv6Fields struct {
	DSCP, ECN     uint8
	FlowLabel     uint32
	PayloadLength uint16
	NextHeader    uint8
	HopLimit      uint8
	Src, Dst      [16]byte
}

func (b IPv6) Version() uint8        { return b[0] >> 4 }
func (b IPv6) TrafficClass() uint8   { return b[0]<<4 | b[1]>>4 }
func (b IPv6) DSCP() uint8           { return b.TrafficClass() >> 2 }
func (b IPv6) ECN() uint8            { return b.TrafficClass() & 3 }
func (b IPv6) FlowLabel() uint32     { return binary.BigEndian.Uint32(b[0:]) & 0xFFFFF }
func (b IPv6) PayloadLength() uint16 { return binary.BigEndian.Uint16(b[ipv6PayloadLen:]) }
func (b IPv6) NextHeader() uint8     { return b[ipv6NextHeader] }
func (b IPv6) HopLimit() uint8       { return b[ipv6HopLimit] }
func (b IPv6) Src() (a [16]byte)     { copy(a[:], b[ipv6Src:]); return }
func (b IPv6) Dst() (a [16]byte)     { copy(a[:], b[ipv6Dst:]); return }

// Payload is the bytes after the header up to PayloadLength.
func (b IPv6) Payload() []byte { return b[IPv6Size : IPv6Size+int(b.PayloadLength())] }

// Encode writes the 40-byte header.
func (b IPv6) Encode(f *IPv6Fields) {
	tc := uint32(f.DSCP<<2 | f.ECN&3)
	binary.BigEndian.PutUint32(b[0:], 6<<28|tc<<20|f.FlowLabel&0xFFFFF)
	binary.BigEndian.PutUint16(b[ipv6PayloadLen:], f.PayloadLength)
	b[ipv6NextHeader] = f.NextHeader
	b[ipv6HopLimit] = f.HopLimit
	copy(b[ipv6Src:], f.Src[:])
	copy(b[ipv6Dst:], f.Dst[:])
}

// SetTrafficClass rewrites the Traffic Class. IPv6 has no header checksum,
// and the ICRC masks the Traffic Class, so nothing else changes.
func (b IPv6) SetTrafficClass(tc uint8) {
	b[0] = b[0]&0xF0 | tc>>4
	b[1] = b[1]&0x0F | tc<<4
}

// SetECN rewrites the ECN field.
func (b IPv6) SetECN(ecn uint8) { b.SetTrafficClass(b.TrafficClass()&^3 | ecn&3) }

// Validate checks the header against len(b), the bytes from the IPv6 header
// to the end of the frame. Extension headers are not supported: RoCEv2 puts
// UDP directly after the fixed header.
func (b IPv6) Validate(offset int) error {
	if len(b) < IPv6Size {
		return Truncated("IPv6", "Version", offset, IPv6Size, len(b))
	}
	if v := b.Version(); v != 6 {
		return Errorf("IPv6", "Version", offset, ReasonInvalid, "version %d", v)
	}
	if pl := int(b.PayloadLength()); IPv6Size+pl > len(b) {
		return Errorf("IPv6", "PayloadLength", offset, ReasonTruncated, "payload length %d, %d bytes present", pl, len(b)-IPv6Size)
	}
	return nil
}

// IPVersion returns the version nibble of an IP header, 0 if b is empty.
func IPVersion(l3 []byte) uint8 {
	if len(l3) == 0 {
		return 0
	}
	return l3[0] >> 4
}

// IPDSCP returns the DSCP of an IPv4 or IPv6 header.
func IPDSCP(l3 []byte) uint8 {
	switch IPVersion(l3) {
	case 4:
		if len(l3) >= IPv4MinSize {
			return IPv4(l3).DSCP()
		}
	case 6:
		if len(l3) >= 2 {
			return IPv6(l3).DSCP()
		}
	}
	return 0
}

// IPECN returns the ECN field of an IPv4 or IPv6 header.
func IPECN(l3 []byte) uint8 {
	switch IPVersion(l3) {
	case 4:
		if len(l3) >= IPv4MinSize {
			return IPv4(l3).ECN()
		}
	case 6:
		if len(l3) >= 2 {
			return IPv6(l3).ECN()
		}
	}
	return ECNNotECT
}

// SetIPECN rewrites the ECN field of an IPv4 (checksum kept right) or IPv6
// header; it reports false if b is neither.
func SetIPECN(l3 []byte, ecn uint8) bool {
	switch IPVersion(l3) {
	case 4:
		if len(l3) >= IPv4MinSize {
			IPv4(l3).SetECN(ecn)
			return true
		}
	case 6:
		if len(l3) >= 2 {
			IPv6(l3).SetECN(ecn)
			return true
		}
	}
	return false
}
