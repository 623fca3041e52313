package main

import (
	"bytes"
	"fmt"
)

// fillPattern writes a pattern unique to (seed, offset) into b: a
// xorshift stream, so a message landing at a wrong offset, a stale
// buffer or a zero page all show as a mismatch.
func fillPattern(b []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 | 1
	for i := 0; i < len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for k := 0; k < 8 && i+k < len(b); k++ {
			b[i+k] = byte(x >> (8 * k))
		}
	}
}

// compareDest checks that dst holds the first size bytes of src and
// that nothing beyond them was written (dst was zeroed before the run).
func compareDest(src, dst []byte, size int) error {
	if !bytes.Equal(dst[:size], src[:size]) {
		for k := range size {
			if dst[k] != src[k] {
				return fmt.Errorf("destination byte %d is %#02x, the source's is %#02x", k, dst[k], src[k])
			}
		}
	}
	for k := size; k < len(dst); k++ {
		if dst[k] != 0 {
			return fmt.Errorf("destination byte %d, beyond the %d-byte message, was written (%#02x)", k, size, dst[k])
		}
	}
	return nil
}
