package wire_test

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/emufabric/emufabric/wire"
)

func TestLRHLayerGolden(t *testing.T) {
	recs, frames := loadGolden(t, "ib_native_erf")
	for i, rec := range recs {
		fr := frames[i]
		if rec.ERF.Type != 21 {
			continue
		}
		pkt := gopacket.NewPacket(rec.Data, wire.LayerTypeLRH, gopacket.Default)
		ll, ok := pkt.Layer(wire.LayerTypeLRH).(*wire.LRHLayer)
		if !ok {
			t.Fatalf("frame %d: no LRH layer: %v", fr.Frame, pkt.ErrorLayer())
		}
		checkField(t, fr, "infiniband.lrh.vl", int(ll.VL))
		checkField(t, fr, "infiniband.lrh.sl", int(ll.SL))
		checkField(t, fr, "infiniband.lrh.lnh", int(ll.LNH))
		checkField(t, fr, "infiniband.lrh.dlid", int(ll.DLID))
		checkField(t, fr, "infiniband.lrh.pktlen", int(ll.PktLen))
		checkField(t, fr, "infiniband.lrh.slid", int(ll.SLID))
		end := int(ll.PktLen) * 4
		if len(ll.Payload) != end-wire.LRHSize {
			t.Errorf("frame %d: LRH payload %d bytes, want %d (through the ICRC)", fr.Frame, len(ll.Payload), end-8)
		}
		if err, res := ll.VerifyChecksum(); err != nil || !res.Valid {
			t.Errorf("frame %d: VCRC: %v", fr.Frame, err)
		}
		var gl *wire.GRHLayer
		if ll.LNH == wire.LNHGlobal {
			gl, ok = pkt.Layer(wire.LayerTypeGRH).(*wire.GRHLayer)
			if !ok {
				t.Fatalf("frame %d: no GRH layer: %v", fr.Frame, pkt.ErrorLayer())
			}
			checkField(t, fr, "infiniband.grh.nxthdr", int(gl.NxtHdr))
			if gl.TClass != 0x60 || gl.FlowLabel != 0x54321 || int(gl.PayLen) != len(gl.Payload) {
				t.Errorf("frame %d: GRH %+v", fr.Frame, gl.GRHFields)
			}
		}
		// The next layer is the BTH, whose decoder the bth package registers;
		// it is not linked into this test, so gopacket records a failure there.
		if want := wire.LayerNumBTH; int(ll.NextLayerType()) != want && (gl == nil || int(gl.NextLayerType()) != want) {
			t.Errorf("frame %d: next layer after LRH/GRH is not the BTH", fr.Frame)
		}

		// Serialize the same packet from fields with FixLengths and
		// ComputeChecksums: byte-identical to the golden packet.
		body := rec.Data[wire.LRHSize : len(rec.Data)-2]
		lrh := &wire.LRHLayer{LRHFields: ll.LRHFields}
		lrh.PktLen = 0
		stack := []gopacket.SerializableLayer{lrh}
		if gl != nil {
			g := &wire.GRHLayer{GRHFields: gl.GRHFields}
			g.PayLen = 0
			stack = append(stack, g)
			body = body[wire.GRHSize:]
		}
		stack = append(stack, gopacket.Payload(body))
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, stack...); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), rec.Data) {
			t.Errorf("frame %d: serialized\n% x\ngolden\n% x", fr.Frame, buf.Bytes(), rec.Data)
		}
		// Without ComputeChecksums the stored VCRC is written.
		lrh2 := &wire.LRHLayer{LRHFields: ll.LRHFields, VCRC: 0x1234}
		buf.Clear()
		if err := lrh2.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := buf.Bytes(); got[8] != 0x34 || got[9] != 0x12 {
			t.Errorf("VCRC field not written LSB first: % x", got)
		}
	}
}

func TestIBLinkLayerGolden(t *testing.T) {
	recs, frames := loadGolden(t, "ib_native_erf")
	seen := 0
	for i, rec := range recs {
		fr := frames[i]
		if rec.ERF.Type != 25 {
			continue
		}
		seen++
		pkt := gopacket.NewPacket(rec.Data, wire.LayerTypeIBLink, gopacket.Default)
		kl, ok := pkt.Layer(wire.LayerTypeIBLink).(*wire.IBLinkLayer)
		if !ok || pkt.ErrorLayer() != nil || len(pkt.Layers()) != 1 {
			t.Fatalf("frame %d: layers %v, error %v", fr.Frame, pkt.Layers(), pkt.ErrorLayer())
		}
		checkField(t, fr, "infiniband_link.op", int(kl.Op))
		checkField(t, fr, "infiniband_link.fctbs", int(kl.FCTBS))
		checkField(t, fr, "infiniband_link.vl", int(kl.VL))
		checkField(t, fr, "infiniband_link.fccl", int(kl.FCCL))
		if err, res := kl.VerifyChecksum(); err != nil || !res.Valid {
			t.Errorf("frame %d: LPCRC %v", fr.Frame, err)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true},
			&wire.IBLinkLayer{IBLinkFields: kl.IBLinkFields}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), rec.Data) {
			t.Errorf("frame %d: serialized % x, golden % x", fr.Frame, buf.Bytes(), rec.Data)
		}
		bad := append([]byte(nil), rec.Data...)
		bad[5] ^= 0xFF
		kb := &wire.IBLinkLayer{}
		if err := kb.DecodeFromBytes(bad, gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
		if err, res := kb.VerifyChecksum(); err == nil || res.Valid {
			t.Errorf("frame %d: corrupted LPCRC verified", fr.Frame)
		}
	}
	if seen != 4 {
		t.Fatalf("%d link packets in the golden file, want 4", seen)
	}
}

func TestLinkType247DecodesLRH(t *testing.T) {
	p := ibPacket(wire.LNHRaw, 16)
	pkt := gopacket.NewPacket(p, layers.LinkType(247), gopacket.Default)
	if pkt.Layer(wire.LayerTypeLRH) == nil {
		t.Fatalf("link type 247 did not decode an LRH: %v", pkt.Layers())
	}
	if pkt.Layer(gopacket.LayerTypePayload) == nil {
		t.Fatalf("raw LNH 0 payload missing: %v", pkt.Layers())
	}
}

func TestIBLayersErrors(t *testing.T) {
	p := ibPacket(wire.LNHLocal, 24)
	p[0] |= 0x01 // LVer 1
	pkt := gopacket.NewPacket(p, wire.LayerTypeLRH, gopacket.Default)
	el := pkt.ErrorLayer()
	if el == nil {
		t.Fatal("LVer 1 decoded")
	}
	if we, ok := el.Error().(*wire.Error); !ok || we.Field != "LVer" {
		t.Fatalf("error %v (%T), want *wire.Error on LVer", el.Error(), el.Error())
	}
	var l wire.LRHLayer
	if err := l.DecodeFromBytes(p[:20], gopacket.NilDecodeFeedback); err == nil {
		t.Fatal("truncated LRH decoded")
	}
	var g wire.GRHLayer
	if err := g.DecodeFromBytes(make([]byte, 40), gopacket.NilDecodeFeedback); err == nil {
		t.Fatal("GRH with IPVer 0 decoded")
	}
	var k wire.IBLinkLayer
	if err := k.DecodeFromBytes([]byte{0x20, 0, 0, 0, 0, 0}, gopacket.NilDecodeFeedback); err == nil {
		t.Fatal("reserved link Op decoded")
	}
	if err := k.DecodeFromBytes([]byte{0, 0, 0}, gopacket.NilDecodeFeedback); err == nil {
		t.Fatal("short link packet decoded")
	}
}

func TestIBDecodingLayerParserNoAlloc(t *testing.T) {
	recs, _ := loadGolden(t, "ib_native_erf")
	var data []byte
	for _, r := range recs {
		if r.ERF.Type == 21 && wire.LRH(r.Data).LNH() == wire.LNHGlobal {
			data = r.Data
		}
	}
	var (
		lrh     wire.LRHLayer
		grh     wire.GRHLayer
		decoded = make([]gopacket.LayerType, 0, 4)
	)
	parser := gopacket.NewDecodingLayerParser(wire.LayerTypeLRH, &lrh, &grh)
	parser.IgnoreUnsupported = true // the BTH decoder lives in package bth
	n := testing.AllocsPerRun(200, func() {
		if err := parser.DecodeLayers(data, &decoded); err != nil {
			t.Fatal(err)
		}
	})
	if len(decoded) != 2 || decoded[1] != wire.LayerTypeGRH {
		t.Fatalf("decoded %v", decoded)
	}
	if n != 0 {
		t.Fatalf("%v allocations per decode", n)
	}
}

// FuzzIBLayers: no layer decoder panics, and whatever decodes serializes
// back (with its payload) to a packet that decodes to the same fields.
func FuzzIBLayers(f *testing.F) {
	f.Add(uint8(0), ibPacket(wire.LNHLocal, 24))
	f.Add(uint8(0), ibPacket(wire.LNHGlobal, 64))
	f.Add(uint8(1), append(make([]byte, 0, 60), ibPacket(wire.LNHGlobal, 64)[8:]...))
	f.Add(uint8(2), []byte{0x00, 0x64, 0x02, 0x64, 0xa8, 0x94})
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		opts := gopacket.SerializeOptions{}
		buf := gopacket.NewSerializeBuffer()
		switch which % 3 {
		case 0:
			var l wire.LRHLayer
			if l.DecodeFromBytes(data, gopacket.NilDecodeFeedback) != nil {
				return
			}
			if err := gopacket.SerializeLayers(buf, opts, &l, gopacket.Payload(l.Payload)); err != nil {
				t.Fatal(err)
			}
			var l2 wire.LRHLayer
			if err := l2.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil || l2.LRHFields != l.LRHFields || l2.VCRC != l.VCRC {
				t.Fatalf("round trip: %v %+v %+v", err, l.LRHFields, l2.LRHFields)
			}
		case 1:
			var g wire.GRHLayer
			if g.DecodeFromBytes(data, gopacket.NilDecodeFeedback) != nil {
				return
			}
			if err := gopacket.SerializeLayers(buf, opts, &g, gopacket.Payload(g.Payload)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), data[:wire.GRHSize+int(g.PayLen)]) {
				t.Fatalf("GRH round trip differs")
			}
		case 2:
			var k wire.IBLinkLayer
			if k.DecodeFromBytes(data, gopacket.NilDecodeFeedback) != nil {
				return
			}
			if err := gopacket.SerializeLayers(buf, opts, &k); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), data[:wire.IBLinkSize]) {
				t.Fatalf("IBLink round trip % x, want % x", buf.Bytes(), data[:6])
			}
		}
	})
}
