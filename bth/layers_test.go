package bth

import (
	"testing"

	"github.com/emufabric/emufabric/wire"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// expectedLayers lists the layer types a frame decodes to, from the opcode
// table.
func expectedLayers(p *Packet) []gopacket.LayerType {
	want := []gopacket.LayerType{layers.LayerTypeEthernet}
	if p.L2.Tagged {
		want = append(want, layers.LayerTypeDot1Q)
	}
	if p.IPVersion == 4 {
		want = append(want, layers.LayerTypeIPv4)
	} else {
		want = append(want, layers.LayerTypeIPv6)
	}
	want = append(want, layers.LayerTypeUDP, LayerTypeBTH)
	for e := Ext(0); e < NumExt; e++ {
		if p.Info.Has(e) {
			want = append(want, extLayerType[e])
		}
	}
	return append(want, LayerTypeIBPayload)
}

func allRoCEFrames(t testing.TB) [][]byte {
	var all [][]byte
	for _, f := range []string{"testdata/rocev2_ipv4.pcap", "testdata/rocev2_ipv6.pcap",
		"testdata/opcodes_ipv4.pcap", "testdata/opcodes_ipv6.pcap"} {
		_, frames := readPcap(t, f)
		all = append(all, frames...)
	}
	return all
}

// TestGopacketNewPacket: UDP 4791 leads to the BTH and through the
// extension headers to the payload; fields agree with Packet.Decode; and
// serializing the decoded layers (then FinishRoCEFrame) gives the frame back.
func TestGopacketNewPacket(t *testing.T) {
	for i, fr := range allRoCEFrames(t) {
		var p Packet
		if err := p.Decode(fr, VerifyICRC); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		pkt := gopacket.NewPacket(fr, layers.LayerTypeEthernet, gopacket.Default)
		if el := pkt.ErrorLayer(); el != nil {
			t.Fatalf("frame %d (%s): %v", i, p.Info.Name, el.Error())
		}
		var got []gopacket.LayerType
		for _, l := range pkt.Layers() {
			got = append(got, l.LayerType())
		}
		want := expectedLayers(&p)
		if len(got) != len(want) {
			t.Fatalf("frame %d (%s): layers %v, want %v", i, p.Info.Name, got, want)
		}
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("frame %d (%s): layers %v, want %v", i, p.Info.Name, got, want)
			}
		}
		bl := pkt.Layer(LayerTypeBTH).(*BTHLayer)
		if bl.BTHFields != p.BTH.Fields() || bl.Info() != p.Info || bl.Headers().BTH.PSN() != p.BTH.PSN() {
			t.Errorf("frame %d: BTH layer %+v", i, bl.BTHFields)
		}
		pl := pkt.Layer(LayerTypeIBPayload).(*IBPayloadLayer)
		if string(pl.Data) != string(p.Payload) || len(pl.Pad) != len(p.Pad) || pl.ICRC != p.ICRC {
			t.Errorf("frame %d: payload layer", i)
		}
		if l, ok := pkt.Layer(LayerTypeRETH).(*RETHLayer); ok && l.RETHFields != p.RETH.Fields() {
			t.Errorf("frame %d: RETH %+v", i, l.RETHFields)
		}
		if l, ok := pkt.Layer(LayerTypeAETH).(*AETHLayer); ok && l.AETHFields != p.AETH.Fields() {
			t.Errorf("frame %d: AETH %+v", i, l.AETHFields)
		}
		if l, ok := pkt.Layer(LayerTypeAtomicETH).(*AtomicETHLayer); ok && l.AtomicETHFields != p.AtomicETH.Fields() {
			t.Errorf("frame %d: AtomicETH %+v", i, l.AtomicETHFields)
		}
		if l, ok := pkt.Layer(LayerTypeAtomicAckETH).(*AtomicAckETHLayer); ok && l.OrigData != p.AtomicAckETH.OrigData() {
			t.Errorf("frame %d: AtomicAckETH %#x", i, l.OrigData)
		}
		if l, ok := pkt.Layer(LayerTypeDETH).(*DETHLayer); ok && l.DETHFields != p.DETH.Fields() {
			t.Errorf("frame %d: DETH %+v", i, l.DETHFields)
		}
		if l, ok := pkt.Layer(LayerTypeImmDt).(*ImmDtLayer); ok && l.Value != p.ImmDt.Value() {
			t.Errorf("frame %d: ImmDt %#x", i, l.Value)
		}
		if l, ok := pkt.Layer(LayerTypeIETH).(*IETHLayer); ok && l.RKey != p.IETH.RKey() {
			t.Errorf("frame %d: IETH %#x", i, l.RKey)
		}

		// Serialize the decoded layers back.
		var sl []gopacket.SerializableLayer
		for _, l := range pkt.Layers() {
			s, ok := l.(gopacket.SerializableLayer)
			if !ok {
				t.Fatalf("frame %d: %v is not serializable", i, l.LayerType())
			}
			if u, ok := l.(*layers.UDP); ok {
				u.SetNetworkLayerForChecksum(pkt.NetworkLayer())
			}
			sl = append(sl, s)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, sl...); err != nil {
			t.Fatalf("frame %d: serialize: %v", i, err)
		}
		if err := FinishRoCEFrame(buf.Bytes()); err != nil {
			t.Fatalf("frame %d: finish: %v", i, err)
		}
		if string(buf.Bytes()) != string(fr) {
			t.Errorf("frame %d (%s): serialized\n got %x\nwant %x", i, p.Info.Name, buf.Bytes(), fr)
		}
	}
}

// TestGopacketSerializeNew builds a frame from fresh layers (PadCnt, lengths
// and ICRC filled in) and compares it with EncodeRoCE.
func TestGopacketSerializeNew(t *testing.T) {
	f := sampleFrame(RCWriteOnlyWithImmediate, false, true)
	f.Payload = samplePayload(13, 9)
	want := make([]byte, f.FrameLen())
	if _, err := EncodeRoCE(want, &f); err != nil {
		t.Fatal(err)
	}
	var p Packet
	if err := p.Decode(want, 0); err != nil {
		t.Fatal(err)
	}
	d := NewDecodingLayers()
	d.BTH.BTHFields = f.BTH // PadCount left 0: the payload layer fixes it
	d.RETH.RETHFields = f.Ext.RETH
	d.ImmDt.Value = f.Ext.ImmDt
	d.Payload.Data = f.Payload
	eth := &layers.Ethernet{SrcMAC: f.Ethernet.Src[:], DstMAC: f.Ethernet.Dst[:], EthernetType: layers.EthernetTypeDot1Q}
	dot1q := &layers.Dot1Q{Priority: 3, VLANIdentifier: 100, Type: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TOS: p.IPv4.TOS(), Id: p.IPv4.ID(), Flags: layers.IPv4DontFragment,
		TTL: p.IPv4.TTL(), Protocol: layers.IPProtocolUDP, SrcIP: f.Src.AsSlice(), DstIP: f.Dst.AsSlice()}
	udp := &layers.UDP{SrcPort: layers.UDPPort(p.UDP.SrcPort()), DstPort: wire.RoCEv2Port}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, dot1q, ip, udp,
		&d.BTH, &d.RETH, &d.ImmDt, &d.Payload); err != nil {
		t.Fatal(err)
	}
	if err := FinishRoCEFrame(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	// ComputeChecksums made gopacket write a UDP checksum over a zero ICRC;
	// FinishRoCEFrame set it back to 0, as RoCEv2 sends it.
	if got := buf.Bytes(); string(got) != string(want) {
		t.Fatalf("gopacket-built frame\n got %x\nwant %x", got, want)
	}
	if d.BTH.PadCount != 3 {
		t.Fatalf("PadCount %d after FixLengths", d.BTH.PadCount)
	}
}

// TestDecodingLayerParser decodes every RoCEv2 frame with preallocated
// layers and checks the decoded list, then that a frame costs no
// allocation.
func TestDecodingLayerParser(t *testing.T) {
	var (
		eth   layers.Ethernet
		dot1q layers.Dot1Q
		ip4   layers.IPv4
		ip6   layers.IPv6
		udp   layers.UDP
	)
	d := NewDecodingLayers()
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &dot1q, &ip4, &ip6, &udp)
	for _, l := range d.Layers() {
		parser.AddDecodingLayer(l)
	}
	decoded := make([]gopacket.LayerType, 0, 16)
	frames := allRoCEFrames(t)
	for i, fr := range frames {
		if err := parser.DecodeLayers(fr, &decoded); err != nil {
			t.Fatalf("frame %d: %v (decoded %v)", i, err, decoded)
		}
		var p Packet
		if err := p.Decode(fr, 0); err != nil {
			t.Fatal(err)
		}
		want := expectedLayers(&p)
		if len(decoded) != len(want) {
			t.Fatalf("frame %d: %v, want %v", i, decoded, want)
		}
		for j := range want {
			if decoded[j] != want[j] {
				t.Fatalf("frame %d: %v, want %v", i, decoded, want)
			}
		}
		if d.BTH.BTHFields != p.BTH.Fields() || string(d.Payload.Data) != string(p.Payload) || d.Payload.ICRC != p.ICRC {
			t.Errorf("frame %d: fields differ", i)
		}
	}
	w := write4K(t)
	allocs := testing.AllocsPerRun(100, func() {
		if err := parser.DecodeLayers(w, &decoded); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per frame", allocs)
	}
	if d.RETH.DMALen != 4096 || len(d.Payload.Data) != 4096 {
		t.Errorf("4K write: RETH %+v, payload %d", d.RETH.RETHFields, len(d.Payload.Data))
	}
}

// TestGopacketIB decodes native IB packets from wire's LRH layer on.
func TestGopacketIB(t *testing.T) {
	for _, global := range []bool{false, true} {
		for _, op := range validOpcodes() {
			f := sampleIB(op, global)
			b := make([]byte, f.PacketLen())
			if _, err := EncodeIB(b, &f); err != nil {
				t.Fatal(err)
			}
			pkt := gopacket.NewPacket(b, wire.LayerTypeLRH, gopacket.Default)
			if el := pkt.ErrorLayer(); el != nil {
				t.Fatalf("%s: %v", op, el.Error())
			}
			ls := pkt.Layers()
			next := 1 // the BTH's index
			if global {
				if ls[1].LayerType() != wire.LayerTypeGRH {
					t.Fatalf("%s: second layer %v", op, ls[1].LayerType())
				}
				next = 2
			}
			if ls[0].LayerType() != wire.LayerTypeLRH || ls[next].LayerType() != LayerTypeBTH ||
				len(ls) != next+1+bitsSet(op.Info().Flags&(1<<NumExt-1))+1 {
				t.Fatalf("%s: layers %v", op, ls)
			}
			bl, ok := pkt.Layer(LayerTypeBTH).(*BTHLayer)
			if !ok || bl.OpCode != op {
				t.Fatalf("%s: no BTH layer (%v)", op, ls)
			}
			pl, ok := pkt.Layer(LayerTypeIBPayload).(*IBPayloadLayer)
			if !ok || string(pl.Data) != string(f.Payload) || ls[len(ls)-1] != pl {
				t.Fatalf("%s: payload layer", op)
			}
			var p IBPacket
			if err := p.Decode(b, 0); err != nil || pl.ICRC != p.ICRC {
				t.Fatalf("%s: ICRC %#x vs %#x (%v)", op, pl.ICRC, p.ICRC, err)
			}
		}
	}
}

// TestLayerErrors: damaged transports give *wire.Error through gopacket,
// and layers used without their BTH say so instead of guessing.
func TestLayerErrors(t *testing.T) {
	b := buildFrame(t, RCSendFirst, false)
	b[42+1] |= 0x10 // PadCnt on FIRST
	fixICRC(t, b)
	pkt := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
	el := pkt.ErrorLayer()
	if el == nil {
		t.Fatal("no error layer")
	}
	wantErr(t, el.Error(), "BTH", "PadCnt", wire.ReasonInconsistent)

	var pl IBPayloadLayer
	wantErr(t, pl.DecodeFromBytes(make([]byte, 8), gopacket.NilDecodeFeedback), "IBPayload", "", wire.ReasonInconsistent)
	var r RETHLayer
	if err := r.DecodeFromBytes(make([]byte, 20), gopacket.NilDecodeFeedback); err != nil || r.NextLayerType() != gopacket.LayerTypeZero {
		t.Fatalf("unlinked RETH: %v %v", err, r.NextLayerType())
	}
	wantErr(t, r.DecodeFromBytes(make([]byte, 15), gopacket.NilDecodeFeedback), "RETH", "", wire.ReasonTruncated)
	var bl BTHLayer
	wantErr(t, bl.DecodeFromBytes(make([]byte, 15), gopacket.NilDecodeFeedback), "BTH", "", wire.ReasonTruncated)

	// Decoding from an extension layer type: the header, then raw payload.
	pkt = gopacket.NewPacket(make([]byte, 20), LayerTypeRETH, gopacket.Default)
	if pkt.ErrorLayer() != nil || len(pkt.Layers()) != 2 || pkt.Layers()[1].LayerType() != gopacket.LayerTypePayload {
		t.Fatalf("standalone RETH: %v", pkt.Layers())
	}
	pkt = gopacket.NewPacket(make([]byte, 20), LayerTypeIBPayload, gopacket.Default)
	if pkt.ErrorLayer() == nil {
		t.Fatal("standalone IBPayload decoded")
	}
}

func bitsSet(f OpFlags) int {
	n := 0
	for ; f != 0; f &= f - 1 {
		n++
	}
	return n
}

// TestDecodingLayerParserIB: native IB packets through wire's LRH and GRH
// layers into ours, without allocating.
func TestDecodingLayerParserIB(t *testing.T) {
	var (
		lrh wire.LRHLayer
		grh wire.GRHLayer
	)
	d := NewDecodingLayers()
	parser := gopacket.NewDecodingLayerParser(wire.LayerTypeLRH, &lrh, &grh)
	for _, l := range d.Layers() {
		parser.AddDecodingLayer(l)
	}
	decoded := make([]gopacket.LayerType, 0, 16)
	var last []byte
	for _, global := range []bool{false, true} {
		for _, op := range validOpcodes() {
			f := sampleIB(op, global)
			b := make([]byte, f.PacketLen())
			if _, err := EncodeIB(b, &f); err != nil {
				t.Fatal(err)
			}
			if err := parser.DecodeLayers(b, &decoded); err != nil {
				t.Fatalf("%s: %v (%v)", op, err, decoded)
			}
			n := 1 + 1 + bitsSet(op.Info().Flags&(1<<NumExt-1)) + 1 // LRH BTH ext... payload
			if global {
				n++
			}
			if len(decoded) != n || decoded[len(decoded)-1] != LayerTypeIBPayload || d.BTH.OpCode != op ||
				string(d.Payload.Data) != string(f.Payload) {
				t.Fatalf("%s: decoded %v", op, decoded)
			}
			last = b
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := parser.DecodeLayers(last, &decoded); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet", allocs)
	}
}
