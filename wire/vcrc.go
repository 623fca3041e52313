package wire

import "encoding/binary"

// InfiniBand CRC-16: the Variant CRC (VCRC) that ends every IB data packet
// and the Link Packet CRC (LPCRC) that ends every link (flow-control) packet.
//
// Parameters (IBA Vol 1 §7.8.2; the same parameters appear in Endace's
// dagcrc.c): polynomial 0x100B (x^16 + x^12 + x^3 + x + 1), register
// initialised to 0xFFFF, processed reflected (least significant bit first,
// table constant 0xD008 = bit-reverse of 0x100B), final XOR 0xFFFF. The check
// value for the ASCII bytes "123456789" is 0x0A3D.
//
// The VCRC covers every byte from the first byte of the LRH through the last
// byte of the ICRC. It is "variant" because switches change the LRH VL field
// hop by hop and must recompute it; the ICRC, which masks VL, survives.
const (
	// VCRCSize is the size of the VCRC trailer and of the LPCRC.
	VCRCSize = 2

	crc16Poly   = 0xD008 // 0x100B reflected
	crc16Init   = 0xFFFF
	crc16XorOut = 0xFFFF
	// CRC16Check is the CRC-16 of "123456789", the usual catalogue check value.
	CRC16Check = 0x0A3D
)

// crc16LSBFirst selects the byte order of the VCRC and LPCRC on the wire.
//
// No public source we could read states it (wire-formats.md §8 marks it
// [?]). We follow the ICRC convention, least significant byte first, which is
// also the default of the independent checker used to validate our output. If
// a capture from real IB hardware shows the opposite, flip this one constant:
// every VCRC and LPCRC reader and writer goes through putCRC16 / getCRC16.
const crc16LSBFirst = true

// putCRC16 stores a CRC-16 value in its wire byte order.
func putCRC16(b []byte, v uint16) {
	if crc16LSBFirst {
		binary.LittleEndian.PutUint16(b, v)
	} else {
		binary.BigEndian.PutUint16(b, v)
	}
}

// getCRC16 reads a CRC-16 value stored in its wire byte order.
func getCRC16(b []byte) uint16 {
	if crc16LSBFirst {
		return binary.LittleEndian.Uint16(b)
	}
	return binary.BigEndian.Uint16(b)
}

// crc16Tables holds the slicing-by-8 tables: crc16Tables[0] is the classic
// byte-at-a-time table and crc16Tables[k][i] is the register contribution of
// byte i followed by k zero bytes. Eight bytes are folded per step, about
// four times faster than one lookup per byte on a 4 KiB packet (1.9 µs instead of
// 7.9 µs on the reference 2-core machine).
var crc16Tables = func() (t [8][256]uint16) {
	for i := range t[0] {
		r := uint16(i)
		for range 8 {
			if r&1 != 0 {
				r = r>>1 ^ crc16Poly
			} else {
				r >>= 1
			}
		}
		t[0][i] = r
	}
	for k := 1; k < len(t); k++ {
		for i := range t[k] {
			v := t[k-1][i]
			t[k][i] = v>>8 ^ t[0][byte(v)]
		}
	}
	return t
}()

// CRC16Update continues a CRC-16 register over b. Start from CRC16Start and
// finish with CRC16Finish; VCRC does all three for a contiguous buffer.
// Splitting the computation lets a switch recompute the VCRC over a rewritten
// LRH and an untouched remainder without copying.
func CRC16Update(reg uint16, b []byte) uint16 {
	if len(b) >= crc16FoldMin && crc16HaveFold {
		reg, b = crc16UpdateFold(reg, b)
	}
	return crc16UpdateTable(reg, b)
}

// crc16UpdateTable is CRC16Update by table lookups alone.
func crc16UpdateTable(reg uint16, b []byte) uint16 {
	t := &crc16Tables
	for len(b) >= 8 {
		reg ^= uint16(b[0]) | uint16(b[1])<<8
		reg = t[7][byte(reg)] ^ t[6][reg>>8] ^
			t[5][b[2]] ^ t[4][b[3]] ^ t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	for _, c := range b {
		reg = t[0][byte(reg)^c] ^ reg>>8
	}
	return reg
}

// CRC16Start is the initial CRC-16 register.
const CRC16Start = crc16Init

// CRC16Finish turns a CRC-16 register into the value sent on the wire.
func CRC16Finish(reg uint16) uint16 { return reg ^ crc16XorOut }

// VCRC returns the InfiniBand CRC-16 of b. For a data packet b is the LRH
// through the ICRC (PktLen*4 bytes); for a link packet it is its first 4 bytes.
func VCRC(b []byte) uint16 { return CRC16Finish(CRC16Update(CRC16Start, b)) }

// PutVCRC computes the VCRC over pkt[:len(pkt)-2] and stores it in the last
// two bytes of pkt, which must be a whole IB data packet, LRH through VCRC.
// It reports false, writing nothing, if pkt is shorter than 2 bytes.
func PutVCRC(pkt []byte) bool {
	n := len(pkt) - VCRCSize
	if n < 0 {
		return false
	}
	putCRC16(pkt[n:], VCRC(pkt[:n]))
	return true
}

// StoredVCRC returns the VCRC held in the last two bytes of pkt (in wire
// byte order). pkt must be at least 2 bytes long.
func StoredVCRC(pkt []byte) uint16 { return getCRC16(pkt[len(pkt)-VCRCSize:]) }

// CheckVCRC verifies the VCRC at the end of pkt, a whole IB data packet from
// the LRH through the VCRC. offset is the packet's byte offset in the frame
// or capture record, used only in the error.
func CheckVCRC(pkt []byte, offset int) error {
	n := len(pkt) - VCRCSize
	if n < 0 {
		return Truncated("VCRC", "VCRC", offset, VCRCSize, len(pkt))
	}
	want := VCRC(pkt[:n])
	if got := getCRC16(pkt[n:]); got != want {
		return Errorf("VCRC", "VCRC", offset+n, ReasonChecksum, "have 0x%04x, computed 0x%04x", got, want)
	}
	return nil
}
