package rt

import "encoding/binary"

// Internet checksum (RFC 1071) helpers for the TAP path, which completes
// the checksums the kernel left to the "hardware" (checksum offload) and
// computes them for every segment it cuts from a TSO/GSO frame.

// csumAdd adds b to the running one's-complement sum acc (not folded).
// acc accumulates 32-bit big-endian words in 64 bits, so it cannot
// overflow for any frame we handle.
func csumAdd(acc uint64, b []byte) uint64 {
	for len(b) >= 32 {
		acc += uint64(binary.BigEndian.Uint32(b[0:])) + uint64(binary.BigEndian.Uint32(b[4:])) +
			uint64(binary.BigEndian.Uint32(b[8:])) + uint64(binary.BigEndian.Uint32(b[12:])) +
			uint64(binary.BigEndian.Uint32(b[16:])) + uint64(binary.BigEndian.Uint32(b[20:])) +
			uint64(binary.BigEndian.Uint32(b[24:])) + uint64(binary.BigEndian.Uint32(b[28:]))
		b = b[32:]
	}
	for len(b) >= 4 {
		acc += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// csumFold folds acc to 16 bits (not complemented).
func csumFold(acc uint64) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}

// pseudoHeaderSum is the sum of the TCP/UDP pseudo-header (RFC 793 §3.1,
// RFC 768; RFC 8200 §8.1 for IPv6) for addresses src and dst (4 or 16
// bytes each), protocol proto and L4 length n.
func pseudoHeaderSum(src, dst []byte, proto uint8, n int) uint64 {
	acc := csumAdd(0, src)
	acc = csumAdd(acc, dst)
	return acc + uint64(proto) + uint64(n)&0xffff + uint64(n)>>16
}

// ipv4HeaderChecksum computes the IPv4 header checksum of h (checksum field
// treated as zero) per RFC 791.
func ipv4HeaderChecksum(h []byte) uint16 {
	acc := csumAdd(0, h[:10])
	acc = csumAdd(acc, h[12:])
	return ^csumFold(acc)
}
