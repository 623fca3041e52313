package bth

import (
	"net/netip"
	"testing"

	"github.com/emufabric/emufabric/wire"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// write4KFields is an RDMA WRITE ONLY of 4096 bytes over IPv4: Ethernet,
// IPv4, UDP, BTH, RETH, payload, ICRC (4,154 bytes).
func write4KFields() RoCEFields {
	return RoCEFields{
		Ethernet: wire.EthernetFields{Dst: wire.MAC{2, 0, 0, 0, 0, 2}, Src: wire.MAC{2, 0, 0, 0, 0, 1}},
		Src:      netip.MustParseAddr("10.0.0.1"),
		Dst:      netip.MustParseAddr("10.0.0.2"),
		DSCP:     26, ECN: wire.ECNECT0,
		SrcQP:   0x11,
		BTH:     BTHFields{OpCode: RCWriteOnly, PKey: DefaultPKey, DestQP: 0x12, AckReq: true, PSN: 100},
		Ext:     ExtFields{RETH: RETHFields{VA: 0x7f0000000000, RKey: 0x1234, DMALen: 4096}},
		Payload: samplePayload(4096, 1),
	}
}

func write4K(t testing.TB) []byte {
	f := write4KFields()
	b := make([]byte, f.FrameLen())
	if _, err := EncodeRoCE(b, &f); err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkDecodeRoCEv4Write4K: headers only, ICRC located and read but
// not computed.
func BenchmarkDecodeRoCEv4Write4K(b *testing.B) {
	fr := write4K(b)
	var p Packet
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Decode(fr, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRoCEv4Write4KVerifyICRC adds the ICRC over the 4 KiB.
func BenchmarkDecodeRoCEv4Write4KVerifyICRC(b *testing.B) {
	fr := write4K(b)
	var p Packet
	b.SetBytes(int64(len(fr)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Decode(fr, VerifyICRC); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeRoCEv4Write4K builds the whole frame, ICRC included.
func BenchmarkEncodeRoCEv4Write4K(b *testing.B) {
	f := write4KFields()
	buf := make([]byte, f.FrameLen())
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeRoCE(buf, &f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkICRC4K: the ICRC of a 4 KiB RoCEv2/IPv4 packet.
func BenchmarkICRC4K(b *testing.B) {
	fr := write4K(b)
	l3 := fr[wire.EthernetSize : len(fr)-ICRCSize]
	b.SetBytes(int64(len(l3)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ICRCRoCEv4(l3); !ok {
			b.Fatal("short")
		}
	}
}

// BenchmarkICRCReference4K is the bit-at-a-time engine of the tests, for
// scale.
func BenchmarkICRCReference4K(b *testing.B) {
	fr := write4K(b)
	l3 := fr[wire.EthernetSize : len(fr)-ICRCSize]
	b.SetBytes(int64(len(l3)))
	for b.Loop() {
		refICRC("v4", l3)
	}
}

// BenchmarkDecodingLayerParserWrite4K uses gopacket's default container
// (a map); ...Sparse below swaps in DecodingLayerSparse, an array indexed
// by layer type, which suits our layer numbers (1100-1119).
func BenchmarkDecodingLayerParserWrite4K(b *testing.B) { benchParser(b, false) }

func BenchmarkDecodingLayerParserSparseWrite4K(b *testing.B) { benchParser(b, true) }

func benchParser(b *testing.B, sparse bool) {
	var (
		eth layers.Ethernet
		ip4 layers.IPv4
		ip6 layers.IPv6
		udp layers.UDP
	)
	d := NewDecodingLayers()
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &udp,
		&d.BTH, &d.DETH, &d.RETH, &d.AtomicETH, &d.AETH, &d.AtomicAckETH, &d.ImmDt, &d.IETH, &d.CNP, &d.Payload)
	if sparse {
		dlc := gopacket.DecodingLayerContainer(gopacket.DecodingLayerSparse(nil))
		for _, l := range []gopacket.DecodingLayer{&eth, &ip4, &ip6, &udp} {
			dlc = dlc.Put(l)
		}
		for _, l := range d.Layers() {
			dlc = dlc.Put(l)
		}
		parser.SetDecodingLayerContainer(dlc)
	}
	decoded := make([]gopacket.LayerType, 0, 16)
	fr := write4K(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := parser.DecodeLayers(fr, &decoded); err != nil {
			b.Fatal(err)
		}
	}
	if len(decoded) != 6 { // Ethernet IPv4 UDP BTH RETH IBPayload
		b.Fatalf("decoded %v", decoded)
	}
}

func BenchmarkDecodeIBWrite4K(b *testing.B) {
	f := IBFields{LRH: wire.LRHFields{VL: 0, SL: 0, DLID: 2, SLID: 1},
		BTH: BTHFields{OpCode: RCWriteOnly, PKey: DefaultPKey, DestQP: 0x12, PSN: 1},
		Ext: ExtFields{RETH: RETHFields{DMALen: 4096}}, Payload: samplePayload(4096, 3)}
	pkt := make([]byte, f.PacketLen())
	if _, err := EncodeIB(pkt, &f); err != nil {
		b.Fatal(err)
	}
	var p IBPacket
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Decode(pkt, 0); err != nil {
			b.Fatal(err)
		}
	}
}
