package wire_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/emufabric/emufabric/wire"
)

// crc16Bitwise is a bit-at-a-time CRC-16/0x100B, written from the
// polynomial only, as an independent engine for the table-driven one.
func crc16Bitwise(b []byte) uint16 {
	reg := uint16(0xFFFF)
	for _, c := range b {
		reg ^= uint16(c)
		for range 8 {
			if reg&1 != 0 {
				reg = reg>>1 ^ 0xD008 // bit-reverse of 0x100B
			} else {
				reg >>= 1
			}
		}
	}
	return reg ^ 0xFFFF
}

func TestVCRCCheckValue(t *testing.T) {
	if wire.CRC16Check != 0x0A3D {
		t.Fatalf("CRC16Check = 0x%04x", wire.CRC16Check)
	}
	if got := wire.VCRC([]byte("123456789")); got != 0x0A3D {
		t.Fatalf("VCRC(\"123456789\") = 0x%04x, want 0x0A3D", got)
	}
	if got := wire.VCRC(nil); got != 0x0000 {
		// init 0xFFFF xor out 0xFFFF over no data.
		t.Fatalf("VCRC(nil) = 0x%04x, want 0", got)
	}
}

func TestVCRCMatchesBitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Every length up to 300 (the tables' loop and tail, and the fold's
	// threshold of 128 bytes with every remainder mod 16 and 64), then
	// packet sizes up to a jumbo, each at every alignment of its start.
	lens := make([]int, 0, 320)
	for n := range 300 {
		lens = append(lens, n)
	}
	lens = append(lens, 511, 512, 513, 1000, 1500, 2048+7, 4096, 4096+30, 8191, 9216)
	buf := make([]byte, 9216+8)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, n := range lens {
		for off := range 8 {
			if n > 300 && off > 0 && off != 3 {
				continue
			}
			b := buf[off : off+n]
			if got, want := wire.VCRC(b), crc16Bitwise(b); got != want {
				t.Fatalf("len %d at offset %d: VCRC 0x%04x, bitwise 0x%04x", n, off, got, want)
			}
		}
		// Split computation equals the one-shot one, wherever the cut.
		b := buf[:n]
		for _, cut := range []int{n / 3, rng.IntN(n + 1)} {
			reg := wire.CRC16Update(wire.CRC16Start, b[:cut])
			if got := wire.CRC16Finish(wire.CRC16Update(reg, b[cut:])); got != wire.VCRC(b) {
				t.Fatalf("len %d cut at %d: split VCRC 0x%04x", n, cut, got)
			}
		}
	}
}

func TestPutCheckVCRC(t *testing.T) {
	pkt := make([]byte, 26)
	for i := range pkt {
		pkt[i] = byte(i * 7)
	}
	if !wire.PutVCRC(pkt) {
		t.Fatal("PutVCRC failed")
	}
	// Least significant byte first (wire-formats.md §8 default).
	v := wire.VCRC(pkt[:24])
	if pkt[24] != byte(v) || pkt[25] != byte(v>>8) {
		t.Fatalf("VCRC stored as % x, value 0x%04x (want LSB first)", pkt[24:], v)
	}
	if wire.StoredVCRC(pkt) != v {
		t.Fatalf("StoredVCRC = 0x%04x, want 0x%04x", wire.StoredVCRC(pkt), v)
	}
	if err := wire.CheckVCRC(pkt, 0); err != nil {
		t.Fatal(err)
	}
	for bit := range len(pkt) * 8 {
		pkt[bit/8] ^= 1 << (bit % 8)
		err := wire.CheckVCRC(pkt, 10)
		var we *wire.Error
		if !errors.As(err, &we) || we.Header != "VCRC" || we.Field != "VCRC" || we.Reason != wire.ReasonChecksum || we.Offset != 34 {
			t.Fatalf("bit %d flipped: err %v", bit, err)
		}
		pkt[bit/8] ^= 1 << (bit % 8)
	}
	if wire.PutVCRC(pkt[:1]) {
		t.Fatal("PutVCRC on 1 byte succeeded")
	}
	var we *wire.Error
	if err := wire.CheckVCRC(pkt[:1], 0); !errors.As(err, &we) || we.Reason != wire.ReasonTruncated {
		t.Fatalf("CheckVCRC on 1 byte: %v", err)
	}
}

func TestVCRCNoAlloc(t *testing.T) {
	pkt := make([]byte, 4096+2)
	n := testing.AllocsPerRun(100, func() {
		wire.PutVCRC(pkt)
		if wire.CheckVCRC(pkt, 0) != nil {
			t.Fatal("bad VCRC")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per VCRC", n)
	}
}

// BenchmarkVCRC4K measures the VCRC over a 4 KiB packet.
func BenchmarkVCRC4K(b *testing.B) {
	pkt := make([]byte, 4096)
	for i := range pkt {
		pkt[i] = byte(i)
	}
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	var sink uint16
	for b.Loop() {
		sink ^= wire.VCRC(pkt)
	}
	_ = sink
}

// FuzzVCRC checks the table engine against the bitwise one and that any
// packet, once PutVCRC has run, passes CheckVCRC and fails it after a flip.
func FuzzVCRC(f *testing.F) {
	f.Add([]byte("123456789"))
	f.Add([]byte{})
	f.Add([]byte{0x00, 0x00})
	f.Add(make([]byte, 64))
	f.Add(make([]byte, 200)) // long enough to be folded
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := wire.VCRC(b), crc16Bitwise(b); got != want {
			t.Fatalf("VCRC 0x%04x, bitwise 0x%04x", got, want)
		}
		_ = wire.CheckVCRC(b, 0) // must not panic on any input
		if len(b) < 3 {
			return
		}
		p := append([]byte(nil), b...)
		wire.PutVCRC(p)
		if err := wire.CheckVCRC(p, 0); err != nil {
			t.Fatal(err)
		}
		p[0] ^= 0x01
		if wire.CheckVCRC(p, 0) == nil {
			t.Fatal("single-bit error not detected")
		}
	})
}
