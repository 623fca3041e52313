package bth

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// refCRC32 is the second engine: CRC-32 one bit at a time (reflected poly
// 0xEDB88320, init and final XOR 0xFFFFFFFF), no tables, no hash/crc32.
func refCRC32(data []byte) uint32 {
	crc := uint32(0xFFFFFFFF)
	for _, c := range data {
		crc ^= uint32(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xEDB88320
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

// refICRC computes the ICRC the way the spec words it, as scapy does: copy
// the whole packet, put 8 bytes of 0xFF in front when the LRH is replaced
// (RoCEv2) or masked (IB global), overwrite the variant fields with ones,
// and CRC the lot. kind is "v4", "v6", "iblocal" or "ibglobal"; pkt runs
// from the IP header or LRH through the pad.
func refICRC(kind string, pkt []byte) uint32 {
	c := append([]byte(nil), pkt...)
	ones := func(off, n int) {
		for i := off; i < off+n; i++ {
			c[i] = 0xFF
		}
	}
	var prefix []byte
	switch kind {
	case "v4":
		ihl := int(c[0]&15) * 4
		ones(1, 1)       // TOS
		ones(8, 1)       // TTL
		ones(10, 2)      // header checksum
		ones(ihl+6, 2)   // UDP checksum
		ones(ihl+8+4, 1) // BTH byte 4
		prefix = []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	case "v6":
		c[0] |= 0x0F    // traffic class, top nibble
		ones(1, 3)      // traffic class, flow label
		ones(7, 1)      // hop limit
		ones(40+6, 2)   // UDP checksum
		ones(40+8+4, 1) // BTH byte 4
		prefix = []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	case "iblocal":
		c[0] |= 0xF0 // VL
		ones(8+4, 1)
	case "ibglobal":
		ones(0, 8) // the LRH
		c[8] |= 0x0F
		ones(9, 3)
		ones(8+7, 1)
		ones(8+40+4, 1)
	}
	return refCRC32(append(prefix, c...))
}

func icrcOf(kind string, pkt []byte) (uint32, bool) {
	switch kind {
	case "v4":
		return ICRCRoCEv4(pkt)
	case "v6":
		return ICRCRoCEv6(pkt)
	case "iblocal":
		return ICRCIBLocal(pkt)
	}
	return ICRCIBGlobal(pkt)
}

func TestICRCSeed(t *testing.T) {
	// 0xDEBB20E3 is the register after init and eight 0xFF bytes.
	ff := []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	if got := ^crc32.ChecksumIEEE(ff); got != icrcPrefixSeed {
		t.Fatalf("register after 8x0xFF = %#x, want %#x", got, uint32(icrcPrefixSeed))
	}
	if got := ^refCRC32(ff); got != icrcPrefixSeed {
		t.Fatalf("reference engine: %#x", got)
	}
	if refCRC32([]byte("123456789")) != 0xCBF43926 {
		t.Fatal("reference engine fails the CRC-32 check value")
	}
}

// TestICRCGolden: both engines reproduce every ICRC of the golden captures.
func TestICRCGolden(t *testing.T) {
	for _, file := range []string{"testdata/rocev2_ipv4.pcap", "testdata/rocev2_ipv6.pcap"} {
		_, frames := readPcap(t, file)
		for i, fr := range frames {
			var p Packet
			if err := p.Decode(fr, 0); err != nil {
				t.Fatalf("%s #%d: %v", file, i+1, err)
			}
			l3 := p.L3()
			body := l3[:len(l3)-ICRCSize]
			kind := "v4"
			if p.IPVersion == 6 {
				kind = "v6"
			}
			got, ok := ICRCRoCE(body)
			if !ok || got != p.ICRC {
				t.Errorf("%s #%d: ICRC %#x, wire %#x", file, i+1, got, p.ICRC)
			}
			if ref := refICRC(kind, body); ref != p.ICRC {
				t.Errorf("%s #%d: reference engine %#x, wire %#x", file, i+1, ref, p.ICRC)
			}
			if !VerifyICRCRoCE(l3) {
				t.Errorf("%s #%d: VerifyICRCRoCE false", file, i+1)
			}
		}
	}
}

// randomPacket returns a plausible packet of the given kind: right version
// nibbles and IHL, random everything else.
func randomPacket(r *rand.Rand, kind string, payload int) []byte {
	var hdr int
	switch kind {
	case "v4":
		hdr = 20 + 4*r.IntN(3) + 8 // with up to 8 bytes of IPv4 options
	case "v6":
		hdr = 48
	case "iblocal":
		hdr = 8
	case "ibglobal":
		hdr = 48
	}
	p := make([]byte, hdr+BTHSize+payload)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	switch kind {
	case "v4":
		p[0] = 0x40 | byte((hdr-8)/4)
	case "v6":
		p[0] = 0x60 | p[0]&0x0F
	}
	return p
}

func TestICRCReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, kind := range []string{"v4", "v6", "iblocal", "ibglobal"} {
		for _, n := range []int{0, 1, 3, 4, 7, 63, 64, 65, 255, 256, 1024, 4096, 4100} {
			p := randomPacket(r, kind, n)
			got, ok := icrcOf(kind, p)
			if want := refICRC(kind, p); !ok || got != want {
				t.Errorf("%s payload %d: %#x, reference %#x", kind, n, got, want)
			}
		}
	}
}

// TestICRCMasks flips every bit of every header byte in turn: the ICRC must
// stay the same exactly for the masked fields and change for all others.
func TestICRCMasks(t *testing.T) {
	type span struct{ off, n int }
	for _, tc := range []struct {
		kind    string
		hdr     int // bytes before the BTH
		masked  []span
		nibbles map[int]byte // bytes where only these bits are masked
	}{
		{"v4", 28, []span{{1, 1}, {8, 1}, {10, 2}, {26, 2}, {28 + 4, 1}}, nil},
		{"v6", 48, []span{{1, 3}, {7, 1}, {46, 2}, {48 + 4, 1}}, map[int]byte{0: 0x0F}},
		{"iblocal", 8, []span{{8 + 4, 1}}, map[int]byte{0: 0xF0}},
		{"ibglobal", 48, []span{{0, 8}, {9, 3}, {15, 1}, {48 + 4, 1}}, map[int]byte{8: 0x0F}},
	} {
		r := rand.New(rand.NewPCG(3, 4))
		p := randomPacket(r, tc.kind, 36)
		if tc.kind == "v4" {
			p[0] = 0x45
		}
		base, _ := icrcOf(tc.kind, p)
		for i := 0; i < tc.hdr+BTHSize+4; i++ {
			for bit := 0; bit < 8; bit++ {
				m := byte(1) << bit
				if i == 0 && (tc.kind == "v4" || tc.kind == "v6" && m&0xF0 != 0) {
					continue // the version nibble and IHL select the layout
				}
				masked := tc.nibbles[i]&m != 0
				for _, s := range tc.masked {
					if i >= s.off && i < s.off+s.n {
						masked = true
					}
				}
				p[i] ^= m
				got, _ := icrcOf(tc.kind, p)
				p[i] ^= m
				if (got == base) != masked {
					t.Errorf("%s: flipping byte %d bit %d: ICRC unchanged=%v, masked=%v", tc.kind, i, bit, got == base, masked)
				}
			}
		}
	}
}

func TestICRCShortInput(t *testing.T) {
	for _, kind := range []string{"v4", "v6", "iblocal", "ibglobal"} {
		p := randomPacket(rand.New(rand.NewPCG(5, 6)), kind, 0)
		if kind == "v4" {
			p[0] = 0x45
		}
		for n := 0; n < len(p); n++ {
			if _, ok := icrcOf(kind, p[:n]); ok {
				t.Errorf("%s: %d bytes accepted, need %d", kind, n, len(p))
			}
		}
	}
	if _, ok := ICRCRoCEv4([]byte{0x44, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); ok {
		t.Error("IHL 4 accepted")
	}
	if _, ok := ICRCRoCE(nil); ok {
		t.Error("empty input accepted")
	}
	if _, ok := ICRCRoCE(make([]byte, 64)); ok {
		t.Error("version 0 accepted")
	}
	if VerifyICRCRoCE([]byte{1, 2}) || VerifyICRCIB([]byte{1}, false) {
		t.Error("verify of a stub succeeded")
	}
}

func TestVerifyICRCIB(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, global := range []bool{false, true} {
		kind := "iblocal"
		if global {
			kind = "ibglobal"
		}
		p := randomPacket(r, kind, 20)
		crc, _ := icrcOf(kind, p)
		p = append(p, 0, 0, 0, 0)
		PutICRC(p[len(p)-4:], crc)
		if !VerifyICRCIB(p, global) {
			t.Errorf("%s: verify failed", kind)
		}
		if VerifyICRCIB(p, !global) {
			t.Errorf("%s: verified with the other masks", kind)
		}
		p[len(p)-5] ^= 1
		if VerifyICRCIB(p, global) {
			t.Errorf("%s: verified after a payload flip", kind)
		}
	}
}
