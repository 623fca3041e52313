package wire_test

import (
	"bytes"
	"fmt"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/emufabric/emufabric/wire"
)

// TestMACControlLayerGolden decodes the oracle's PFC/PAUSE frames through
// gopacket's own Ethernet layer (EtherType 0x8808 dispatch) and checks every
// field in the golden JSON; then re-serializes each frame byte-exactly.
func TestMACControlLayerGolden(t *testing.T) {
	recs, frames := loadGolden(t, "pfc_pause")
	for i, rec := range recs {
		fr := frames[i]
		pkt := gopacket.NewPacket(rec.Data, layers.LayerTypeEthernet, gopacket.Default)
		eth, _ := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		mc, ok := pkt.Layer(wire.LayerTypeMACControl).(*wire.MACControlLayer)
		if !ok || eth == nil || pkt.ErrorLayer() != nil {
			t.Fatalf("frame %d: layers %v error %v", fr.Frame, pkt.Layers(), pkt.ErrorLayer())
		}
		if len(pkt.Layers()) != 2 {
			t.Errorf("frame %d: layers %v, want Ethernet, MACControl", fr.Frame, pkt.Layers())
		}
		if got := eth.DstMAC.String(); got != fr.Expect["eth.dst"] {
			t.Errorf("frame %d: eth.dst %s", fr.Frame, got)
		}
		checkField(t, fr, "macc.opcode", int(mc.Opcode))
		switch mc.Opcode {
		case wire.MACControlOpPFC:
			checkField(t, fr, "macc.cbfc.enbv", int(mc.Enable))
			for p := range 8 {
				checkField(t, fr, fmt.Sprintf("macc.cbfc.pause_time.c%d", p), int(mc.Time[p]))
			}
		case wire.MACControlOpPause:
			checkField(t, fr, "macc.pause_time", int(mc.Time[0]))
			if mc.Enable != 0xFF {
				t.Errorf("frame %d: PAUSE Enable 0x%02x", fr.Frame, mc.Enable)
			}
		}
		buf := gopacket.NewSerializeBuffer()
		out := &wire.MACControlLayer{MACControl: mc.MACControl}
		err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true},
			&layers.Ethernet{SrcMAC: net.HardwareAddr(eth.SrcMAC), DstMAC: net.HardwareAddr(wire.MACControlDst[:]),
				EthernetType: layers.EthernetType(wire.EtherTypeMACControl)}, out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), rec.Data) {
			t.Errorf("frame %d: serialized\n% x\ngolden\n% x", fr.Frame, buf.Bytes(), rec.Data)
		}
	}
}

func TestMACControlLayerErrors(t *testing.T) {
	f := make([]byte, wire.MACControlFrameSize)
	wire.EncodePFC(f, wire.MAC{2}, 0x08, &[8]uint16{3: 100})
	f[16] = 0x01 // reserved high octet of the class-enable vector
	var m wire.MACControlLayer
	err := m.DecodeFromBytes(f[wire.EthernetSize:], gopacket.NilDecodeFeedback)
	if we, ok := err.(*wire.Error); !ok || we.Field != "ClassEnableVector" || we.Offset != 16 {
		t.Fatalf("reserved CEV octet: %v", err)
	}
	if err := m.DecodeFromBytes(f[wire.EthernetSize:20], gopacket.NilDecodeFeedback); err == nil {
		t.Fatal("truncated PFC decoded")
	}
	bad := &wire.MACControlLayer{MACControl: wire.MACControl{Opcode: 0x0102}}
	if err := bad.SerializeTo(gopacket.NewSerializeBuffer(), gopacket.SerializeOptions{}); err == nil {
		t.Fatal("unknown opcode serialized")
	}
}

func TestMACControlParserNoAlloc(t *testing.T) {
	f := make([]byte, wire.MACControlFrameSize)
	wire.EncodePFC(f, wire.MAC{2}, 0x48, &[8]uint16{3: 1024, 6: 256})
	var (
		eth     layers.Ethernet
		mc      wire.MACControlLayer
		decoded = make([]gopacket.LayerType, 0, 4)
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &mc)
	n := testing.AllocsPerRun(200, func() {
		if err := parser.DecodeLayers(f, &decoded); err != nil {
			t.Fatal(err)
		}
	})
	if len(decoded) != 2 || mc.Enable != 0x48 || mc.Time[3] != 1024 || mc.Time[6] != 256 {
		t.Fatalf("decoded %v %+v", decoded, mc.MACControl)
	}
	if n != 0 {
		t.Fatalf("%v allocations per decode", n)
	}
}

// FuzzMACControlLayer: the layer never panics and what decodes
// re-serializes to a body that decodes to the same fields.
func FuzzMACControlLayer(f *testing.F) {
	fr := make([]byte, wire.MACControlFrameSize)
	wire.EncodePFC(fr, wire.MAC{2}, 0x08, &[8]uint16{3: 0xFFFF})
	f.Add(fr[wire.EthernetSize:])
	wire.EncodePause(fr, wire.MAC{2}, 256)
	f.Add(fr[wire.EthernetSize:])
	f.Add([]byte{0x01, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		var m wire.MACControlLayer
		if m.DecodeFromBytes(data, gopacket.NilDecodeFeedback) != nil {
			return
		}
		buf := gopacket.NewSerializeBuffer()
		if err := m.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
			t.Fatal(err)
		}
		var m2 wire.MACControlLayer
		if err := m2.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
		// PFC times of disabled priorities are written as 0 (802.1Qbb).
		want := m.MACControl
		if want.Opcode == wire.MACControlOpPFC {
			for p := range 8 {
				if want.Enable&(1<<p) == 0 {
					want.Time[p] = 0
				}
			}
		}
		if m2.MACControl != want {
			t.Fatalf("round trip %+v -> %+v", want, m2.MACControl)
		}
	})
}
