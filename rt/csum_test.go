package rt

import (
	"math/rand/v2"
	"testing"
)

// csumRef is RFC 1071 verbatim: 16-bit big-endian words, an odd byte
// padded with zero, summed in 64 bits.
func csumRef(acc uint64, b []byte) uint64 {
	for i := 0; i+1 < len(b); i += 2 {
		acc += uint64(b[i])<<8 | uint64(b[i+1])
	}
	if len(b)%2 == 1 {
		acc += uint64(b[len(b)-1]) << 8
	}
	return acc
}

// TestCsumAdd: csumAdd's 32-byte unrolled loop and its tails fold to the
// same checksum as the reference for every length around their
// thresholds, all 0xff bytes (the carry-heavy case), and random data at
// odd offsets.
func TestCsumAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 9100)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	ones := make([]byte, 9100)
	for i := range ones {
		ones[i] = 0xff
	}
	lengths := []int{0, 1, 2, 3, 31, 32, 33, 63, 64, 65, 95, 96, 97, 1500, 1514, 9000, 9001}
	for range 200 {
		lengths = append(lengths, rng.IntN(len(buf)-8))
	}
	for _, n := range lengths {
		for _, off := range []int{0, 1, 3} {
			for _, src := range [][]byte{buf, ones} {
				b := src[off : off+n]
				acc := uint64(rng.Uint32())
				got, want := csumFold(csumAdd(acc, b)), csumFold(csumRef(acc, b))
				if got != want {
					t.Fatalf("len %d off %d: %#04x, want %#04x", n, off, got, want)
				}
			}
		}
	}
}

// FuzzCsumAdd compares csumAdd with the reference on any input.
func FuzzCsumAdd(f *testing.F) {
	f.Add([]byte{}, uint32(0))
	f.Add([]byte{0xff}, uint32(0xffff))
	f.Add(make([]byte, 64), uint32(1))
	f.Add([]byte("a frame of about sixty-four bytes, past the 32-byte unrolled loop!"), uint32(7))
	f.Fuzz(func(t *testing.T, b []byte, acc uint32) {
		if got, want := csumFold(csumAdd(uint64(acc), b)), csumFold(csumRef(uint64(acc), b)); got != want {
			t.Fatalf("len %d: %#04x, want %#04x", len(b), got, want)
		}
	})
}

func BenchmarkCsumAdd1500(b *testing.B) {
	buf := make([]byte, 1500)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	var s uint16
	for b.Loop() {
		s += csumFold(csumAdd(0, buf))
	}
	_ = s
}
