package wire

import "testing"

// TestBitErrorIndex: the bit error lands on the IP packet's last byte,
// past a VLAN tag, never in a short frame's padding; on IB before the
// VCRC; in a frame too short to tell, on its last byte.
func TestBitErrorIndex(t *testing.T) {
	v4 := make([]byte, 60) // a 28-byte IPv4 packet padded to the minimum frame
	EncodeEthernet(v4, &EthernetFields{EtherType: EtherTypeIPv4})
	IPv4(v4[EthernetSize:]).Encode(&IPv4Fields{TotalLength: 28, TTL: 64, Protocol: IPProtoUDP})
	tagged := make([]byte, 100)
	n := EncodeEthernet(tagged, &EthernetFields{Tagged: true, VID: 5, EtherType: EtherTypeIPv4})
	IPv4(tagged[n:]).Encode(&IPv4Fields{TotalLength: 82, TTL: 64, Protocol: IPProtoUDP})
	v6 := make([]byte, EthernetSize+40+8)
	EncodeEthernet(v6, &EthernetFields{EtherType: EtherTypeIPv6})
	v6[EthernetSize] = 0x60
	v6[EthernetSize+5] = 8 // payload length 8
	pfc := make([]byte, 60)
	EncodeEthernet(pfc, &EthernetFields{EtherType: EtherTypeMACControl})
	for _, c := range []struct {
		name string
		b    []byte
		ib   bool
		want int
	}{
		{"IPv4 padded", v4, false, EthernetSize + 28 - 1},
		{"IPv4 tagged", tagged, false, n + 82 - 1},
		{"IPv6", v6, false, len(v6) - 1},
		{"PFC", pfc, false, EthernetSize + 1},
		{"IB", make([]byte, 100), true, 97},
		{"IB link packet", make([]byte, IBLinkSize), true, 3},
		{"short", []byte{1, 2, 3}, false, 2},
		{"empty", nil, false, -1},
	} {
		if got := BitErrorIndex(c.b, c.ib); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// FuzzBitErrorIndex: any bytes, a length field that lies included, give
// an index inside the frame (or -1 for none).
func FuzzBitErrorIndex(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, 0x45, 0, 0xff, 0xff}, false)
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x81, 0x00, 0, 5, 0x86, 0xdd, 0x60}, false)
	f.Add([]byte{0xf0, 0x12, 0, 1, 0, 2, 0, 3}, true)
	f.Fuzz(func(t *testing.T, b []byte, ib bool) {
		i := BitErrorIndex(b, ib)
		if len(b) == 0 && i != -1 || len(b) > 0 && (i < 0 || i >= len(b)) {
			t.Fatalf("index %d for %d bytes", i, len(b))
		}
	})
}
