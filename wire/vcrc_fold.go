package wire

import (
	"encoding/binary"
	"math/bits"
)

// Folding the VCRC with carry-less multiplication.
//
// The tables cost one load per byte, about 2 µs for a 4 KiB packet, and an
// IB packet is checked or computed at least three times on its way (the
// sender's HCA, every switch's ingress, the receiver's HCA): in a lab in
// namespaces that was a third of all the CPU the daemons spent moving IB
// data. Folding does 16 bytes per two multiplications, as Intel's "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (2009)
// describes for any polynomial; the tables finish the last bytes.
//
// The arithmetic, for this reflected CRC (bit 0 of a byte comes first):
// sixteen message bytes loaded little-endian into a 128-bit value X stand
// for the polynomial whose x^(127-k) coefficient is bit k of X, so X =
// lo(x)*x^64 + hi(x) with lo the low and hi the high 64 bits, each read as
// "bit k is x^(63-k)". The carry-less product of two such 64-bit values,
// read the same way over 128 bits, is their polynomial product times x. A
// block followed by D more bits of message is congruent, modulo the
// polynomial P, to lo*(x^(D+64) mod P) + hi*(x^D mod P), which has fewer
// than 128 bits: folding multiplies lo by x^(D+63) mod P and hi by x^(D-1)
// mod P (the -1 pays for the product's extra x) and adds (XOR) the result
// to the block D bits further on. Four blocks are folded side by side
// 64 bytes apart, then into one; that one, fed to the tables with a zero
// register, is the remainder the table method would have reached.
//
// The CRC's register enters as the table method takes it: XORed into the
// first two message bytes.

// crc16FoldMin is the shortest buffer worth folding: four blocks to start
// from, and enough after them to pay for combining them.
const crc16FoldMin = 128

// crc16FoldKeys holds, per fold distance of 512, 384, 256 and 128 bits,
// the pair (x^(D+63) mod P, x^(D-1) mod P), each as a 64-bit value whose bit
// k is the coefficient of x^(63-k).
var crc16FoldKeys = func() (k [4][2]uint64) {
	for i, d := range [4]int{512, 384, 256, 128} {
		k[i] = [2]uint64{crc16Key(d + 63), crc16Key(d - 1)}
	}
	return k
}()

// crc16Key is x^e mod P in the fold's 64-bit representation.
func crc16Key(e int) uint64 {
	// P = x^16 + x^12 + x^3 + x + 1; r holds the remainder's coefficients,
	// bit d for x^d.
	const p = 0x1100B
	r := uint32(1)
	for range e {
		r <<= 1
		if r&0x10000 != 0 {
			r ^= p
		}
	}
	return bits.Reverse64(uint64(r))
}

// crc16UpdateFold folds the longest prefix of b that is a whole number of
// 16-byte blocks into a remainder, feeds it to the tables and returns the
// register and the bytes still to go. len(b) >= crc16FoldMin.
func crc16UpdateFold(reg uint16, b []byte) (uint16, []byte) {
	n := len(b) &^ 15
	lo, hi := crc16Fold(uint64(reg), &b[0], n, &crc16FoldKeys)
	var x [16]byte
	binary.LittleEndian.PutUint64(x[:8], lo)
	binary.LittleEndian.PutUint64(x[8:], hi)
	return crc16UpdateTable(0, x[:]), b[n:]
}
