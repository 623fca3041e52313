package bth

import (
	"encoding/binary"
	"hash/crc32"
)

// ICRCSize is the length of the ICRC, the Invariant CRC of RoCEv2 and
// native IB packets (IBA 7.8.1, RoCEv2 Annex A17.3.3; wire-formats.md §7).
// All ICRC code is in this file: ICRCRoCEv4, ICRCRoCEv6, ICRCIBLocal and
// ICRCIBGlobal compute it; VerifyICRCRoCE and VerifyICRCIB check it.
//
// It is the Ethernet CRC-32 (poly 0x04C11DB7 reflected, init and final XOR
// 0xFFFFFFFF) over everything from the start of the (pseudo-)LRH through the
// last pad byte, with the fields a switch or router may rewrite replaced by
// ones first. The four CRC bytes follow the pad, least-significant byte
// first.
//
// Masked to all-ones (and only these):
//
//	RoCEv2/IPv4  64-bit prefix of ones standing in for the LRH;
//	             IPv4 TOS (DSCP+ECN), TTL, header checksum;
//	             UDP checksum; BTH byte 4 (FECN, BECN, resv6a)
//	RoCEv2/IPv6  64-bit prefix of ones; IPv6 Traffic Class, Flow Label,
//	             Hop Limit; UDP checksum; BTH byte 4
//	IB local     LRH VL (the 4 high bits of byte 0); BTH byte 4
//	IB global    the whole LRH (8 bytes); GRH TClass, FlowLabel, HopLmt;
//	             BTH byte 4
//
// Ethernet, VLAN tags and the FCS are outside the ICRC, as is the VCRC on IB.
//
// Implementation: the 64-bit prefix of ones is not fed through the CRC; the
// register starts at 0xDEBB20E3, its state after 0xFFFFFFFF and eight 0xFF
// bytes (Linux rxe_icrc.c does the same). The masked headers are copied into
// a small stack array, masked there and run through a slicing-by-8 loop
// over tables derived from crc32.IEEETable. The payload, which is nearly all of the cost, goes
// through crc32.Update in place (carry-less multiply on amd64, the CRC32
// instructions on arm64, slicing-by-8 elsewhere). The header loop is not
// crc32.Update because crc32.Update reaches its implementation through a
// function variable, which makes the compiler move any slice passed to it to
// the heap: one allocation per call.
const ICRCSize = 4

// icrcPrefixSeed is the CRC register (not inverted) after the initial
// 0xFFFFFFFF and eight bytes of 0xFF.
const icrcPrefixSeed = 0xDEBB20E3

// Fixed offsets used by the masks.
const (
	ipv4MinSize = 20
	ipv6Size    = 40
	udpSize     = 8
	lrhSize     = 8
	grhSize     = 40

	maxMaskedHdr = 60 + udpSize + BTHSize // IPv4 with options + UDP + BTH
)

// icrcSlicing8 holds the slicing-by-8 tables of the reflected IEEE CRC-32
// (table 0 is crc32.IEEETable). The masked headers are 48 to 68 bytes; eight
// bytes per step instead of one takes their cost from about a quarter of a
// 4 KiB ICRC to a few percent.
var icrcSlicing8 = func() (t [8][256]uint32) {
	t[0] = *crc32.IEEETable
	for i := 0; i < 256; i++ {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xFF] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

// icrcRegister feeds p through the raw (non-inverted) CRC-32 register.
// Only for the short masked headers; see the package comment above.
func icrcRegister(reg uint32, p []byte) uint32 {
	t := &icrcSlicing8
	for len(p) >= 8 {
		reg ^= binary.LittleEndian.Uint32(p)
		reg = t[0][p[7]] ^ t[1][p[6]] ^ t[2][p[5]] ^ t[3][p[4]] ^
			t[4][reg>>24] ^ t[5][reg>>16&0xFF] ^ t[6][reg>>8&0xFF] ^ t[7][reg&0xFF]
		p = p[8:]
	}
	for _, c := range p {
		reg = t[0][byte(reg)^c] ^ reg>>8
	}
	return reg
}

// icrcFinish runs the unmasked rest through crc32.Update and returns the
// final CRC. crc32.Update inverts on entry and exit, hence the ^.
func icrcFinish(reg uint32, rest []byte) uint32 {
	return crc32.Update(^reg, crc32.IEEETable, rest)
}

// ICRCRoCEv4 returns the ICRC of a RoCEv2/IPv4 packet. pkt runs from the
// first byte of the IPv4 header through the last pad byte (the ICRC
// excluded). It must hold a full IPv4 header (IHL honoured), the UDP header
// and the BTH; shorter input returns 0 and false.
func ICRCRoCEv4(pkt []byte) (uint32, bool) {
	if len(pkt) < ipv4MinSize {
		return 0, false
	}
	ihl := int(pkt[0]&0x0F) * 4
	n := ihl + udpSize + BTHSize
	if ihl < ipv4MinSize || len(pkt) < n {
		return 0, false
	}
	var h [maxMaskedHdr]byte
	copy(h[:], pkt[:n])
	h[1] = 0xFF                     // TOS: DSCP + ECN
	h[8] = 0xFF                     // TTL
	h[10], h[11] = 0xFF, 0xFF       // header checksum
	h[ihl+6], h[ihl+7] = 0xFF, 0xFF // UDP checksum
	h[ihl+udpSize+bthResv8a] = 0xFF // BTH FECN, BECN, resv6a
	return icrcFinish(icrcRegister(icrcPrefixSeed, h[:n]), pkt[n:]), true
}

// ICRCRoCEv6 returns the ICRC of a RoCEv2/IPv6 packet. pkt runs from the
// first byte of the IPv6 header through the last pad byte.
func ICRCRoCEv6(pkt []byte) (uint32, bool) {
	const n = ipv6Size + udpSize + BTHSize
	if len(pkt) < n {
		return 0, false
	}
	var h [n]byte
	copy(h[:], pkt[:n])
	h[0] |= 0x0F                              // Traffic Class, high nibble
	h[1], h[2], h[3] = 0xFF, 0xFF, 0xFF       // Traffic Class low nibble, Flow Label
	h[7] = 0xFF                               // Hop Limit
	h[ipv6Size+6], h[ipv6Size+7] = 0xFF, 0xFF // UDP checksum
	h[ipv6Size+udpSize+bthResv8a] = 0xFF      // BTH byte 4
	return icrcFinish(icrcRegister(icrcPrefixSeed, h[:]), pkt[n:]), true
}

// ICRCRoCE dispatches on the IP version nibble of pkt[0].
func ICRCRoCE(pkt []byte) (uint32, bool) {
	if len(pkt) == 0 {
		return 0, false
	}
	switch pkt[0] >> 4 {
	case 4:
		return ICRCRoCEv4(pkt)
	case 6:
		return ICRCRoCEv6(pkt)
	}
	return 0, false
}

// ICRCIBLocal returns the ICRC of a native IB packet without a GRH
// (LRH.LNH = 2). pkt runs from the first LRH byte through the last pad byte.
func ICRCIBLocal(pkt []byte) (uint32, bool) {
	const n = lrhSize + BTHSize
	if len(pkt) < n {
		return 0, false
	}
	var h [n]byte
	copy(h[:], pkt[:n])
	h[0] |= 0xF0                // LRH VL
	h[lrhSize+bthResv8a] = 0xFF // BTH byte 4
	return icrcFinish(icrcRegister(0xFFFFFFFF, h[:]), pkt[n:]), true
}

// ICRCIBGlobal returns the ICRC of a native IB packet with a GRH
// (LRH.LNH = 3). The whole LRH is masked, so the register starts from the
// same seed as RoCEv2's 64-bit prefix.
func ICRCIBGlobal(pkt []byte) (uint32, bool) {
	const n = lrhSize + grhSize + BTHSize
	if len(pkt) < n {
		return 0, false
	}
	var h [grhSize + BTHSize]byte
	copy(h[:], pkt[lrhSize:n])
	h[0] |= 0x0F                        // GRH TClass, high nibble
	h[1], h[2], h[3] = 0xFF, 0xFF, 0xFF // TClass low nibble, FlowLabel
	h[7] = 0xFF                         // HopLmt
	h[grhSize+bthResv8a] = 0xFF         // BTH byte 4
	return icrcFinish(icrcRegister(icrcPrefixSeed, h[:]), pkt[n:]), true
}

// PutICRC stores crc at b[0:4] in wire order (least-significant byte first).
func PutICRC(b []byte, crc uint32) { binary.LittleEndian.PutUint32(b, crc) }

// WireICRC reads an ICRC stored at b[0:4].
func WireICRC(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// VerifyICRCRoCE reports whether the last 4 bytes of pkt (IP header through
// ICRC, no Ethernet padding) hold the right ICRC.
func VerifyICRCRoCE(pkt []byte) bool {
	if len(pkt) < ICRCSize {
		return false
	}
	end := len(pkt) - ICRCSize
	crc, ok := ICRCRoCE(pkt[:end])
	return ok && crc == WireICRC(pkt[end:])
}

// VerifyICRCIB reports whether the ICRC in the last 4 bytes of pkt (LRH
// through ICRC, VCRC excluded) is right; global selects the LNH=3 masks.
func VerifyICRCIB(pkt []byte, global bool) bool {
	if len(pkt) < ICRCSize {
		return false
	}
	end := len(pkt) - ICRCSize
	var crc uint32
	var ok bool
	if global {
		crc, ok = ICRCIBGlobal(pkt[:end])
	} else {
		crc, ok = ICRCIBLocal(pkt[:end])
	}
	return ok && crc == WireICRC(pkt[end:])
}
