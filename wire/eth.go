package wire

import "encoding/binary"

// Ethernet II header, optionally with one IEEE 802.1Q tag:
//
//	 0                   1
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3
//	+-----------+-----------+---------------------+-----------+
//	|  DA (6)   |  SA (6)   | [TPID 0x8100 | TCI] | EtherType |
//	+-----------+-----------+---------------------+-----------+
//	TCI = PCP(3) | DEI(1) | VID(12)
//
// The FCS is never part of a frame here: pcap captures carry none
// (wire-formats.md §1), and no engine needs it.
const (
	EthernetSize = 14
	VLANTagSize  = 4
	// MinFrameSize is the 802.3 minimum frame length without the FCS.
	MinFrameSize = 60

	EtherTypeIPv4       = 0x0800
	EtherTypeIPv6       = 0x86DD
	EtherTypeVLAN       = 0x8100
	EtherTypeMACControl = 0x8808
	EtherTypeRoCEv1     = 0x8915
)

// MAC is an EUI-48 address.
type MAC [6]byte

// String formats the address as aa:bb:cc:dd:ee:ff.
func (m MAC) String() string {
	const hex = "0123456789abcdef"
	var b [17]byte
	for i, v := range m {
		if i > 0 {
			b[i*3-1] = ':'
		}
		b[i*3] = hex[v>>4]
		b[i*3+1] = hex[v&0xF]
	}
	return string(b[:])
}

// IsMulticast reports the I/G bit.
func (m MAC) IsMulticast() bool { return m[0]&1 != 0 }

// EthernetFields describes an Ethernet header to encode.
type EthernetFields struct {
	Dst, Src  MAC
	Tagged    bool   // insert an 802.1Q tag
	PCP       uint8  // 802.1p priority, 0..7
	DEI       bool   // drop eligible
	VID       uint16 // VLAN id, 0..4095
	EtherType uint16
}

// EthernetHeaderLen is 14 untagged, 18 with one 802.1Q tag.
func EthernetHeaderLen(tagged bool) int {
	if tagged {
		return EthernetSize + VLANTagSize
	}
	return EthernetSize
}

// EncodeEthernet writes the header at the start of b and returns its length.
// b must hold EthernetHeaderLen(f.Tagged) bytes.
func EncodeEthernet(b []byte, f *EthernetFields) int {
	copy(b[0:6], f.Dst[:])
	copy(b[6:12], f.Src[:])
	if !f.Tagged {
		binary.BigEndian.PutUint16(b[12:], f.EtherType)
		return EthernetSize
	}
	binary.BigEndian.PutUint16(b[12:], EtherTypeVLAN)
	binary.BigEndian.PutUint16(b[14:], tci(f.PCP, f.DEI, f.VID))
	binary.BigEndian.PutUint16(b[16:], f.EtherType)
	return EthernetSize + VLANTagSize
}

func tci(pcp uint8, dei bool, vid uint16) uint16 {
	v := uint16(pcp&7)<<13 | vid&0x0FFF
	if dei {
		v |= 1 << 12
	}
	return v
}

// L2 is a decoded Ethernet header. It is a plain value the caller owns, so
// decoding allocates nothing.
type L2 struct {
	HdrLen    int // 14 or 18: the payload (IP, MAC control, ...) starts here
	Dst, Src  MAC
	Tagged    bool
	PCP       uint8
	DEI       bool
	VID       uint16
	EtherType uint16 // the inner EtherType when tagged
}

// DecodeEthernet decodes the Ethernet header (and at most one 802.1Q tag)
// at the start of b. A second tag (QinQ) is reported as unsupported: RoCE
// fabrics run untagged or single-tagged.
func DecodeEthernet(b []byte, l2 *L2) error {
	if len(b) < EthernetSize {
		return Truncated("Ethernet", "EtherType", 0, EthernetSize, len(b))
	}
	copy(l2.Dst[:], b[0:6])
	copy(l2.Src[:], b[6:12])
	et := binary.BigEndian.Uint16(b[12:])
	l2.Tagged, l2.PCP, l2.DEI, l2.VID = false, 0, false, 0
	if et != EtherTypeVLAN {
		l2.HdrLen, l2.EtherType = EthernetSize, et
		return nil
	}
	if len(b) < EthernetSize+VLANTagSize {
		return Truncated("802.1Q", "TCI", 12, EthernetSize+VLANTagSize, len(b))
	}
	t := binary.BigEndian.Uint16(b[14:])
	l2.Tagged = true
	l2.PCP = uint8(t >> 13)
	l2.DEI = t&(1<<12) != 0
	l2.VID = t & 0x0FFF
	l2.EtherType = binary.BigEndian.Uint16(b[16:])
	l2.HdrLen = EthernetSize + VLANTagSize
	if l2.EtherType == EtherTypeVLAN || l2.EtherType == 0x88A8 {
		return Errorf("802.1Q", "EtherType", 16, ReasonUnsupported, "stacked VLAN tags (QinQ)")
	}
	return nil
}

// SetPCP rewrites the 802.1p priority of a tagged frame in place, as a switch
// or NIC does on egress. It reports false if the frame is not tagged. The ICRC
// does not cover the Ethernet header (wire-formats.md §7), so nothing else
// changes.
func SetPCP(frame []byte, pcp uint8) bool {
	if len(frame) < EthernetSize+VLANTagSize || binary.BigEndian.Uint16(frame[12:]) != EtherTypeVLAN {
		return false
	}
	frame[14] = frame[14]&0x1F | (pcp&7)<<5
	return true
}
