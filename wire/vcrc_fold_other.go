//go:build !amd64

package wire

// crc16HaveFold: no carry-less multiply here; the tables do it all.
const crc16HaveFold = false

func crc16Fold(reg uint64, p *byte, n int, k *[4][2]uint64) (lo, hi uint64) {
	panic("wire: crc16Fold without carry-less multiply")
}
