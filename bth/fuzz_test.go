package bth

import (
	"testing"

	"github.com/emufabric/emufabric/wire"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Fuzz targets for every decoder. Seeds: every golden frame (and its
// transport part), plus the native IB packets. The properties: nothing
// panics, and whatever decodes re-encodes to something that decodes to the
// same fields.

func seedRoCE(f *testing.F) [][]byte {
	frames := allRoCEFrames(f)
	for _, fr := range frames {
		f.Add(fr)
	}
	return frames
}

func seedTransport(f *testing.F) {
	for _, fr := range allRoCEFrames(f) {
		var p Packet
		if err := p.Decode(fr, 0); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(p.UDP[udpSize : len(p.UDP)-ICRCSize]))
	}
}

func seedIB(f *testing.F) {
	_, pkts := readPcap(f, "testdata/ib_native_247.pcap")
	for _, p := range pkts {
		f.Add(p)
	}
	for _, global := range []bool{false, true} {
		for _, op := range []Opcode{RCWriteFirst, RCAtomicAcknowledge, UDSendOnlyWithImmediate, RCCompareSwap} {
			s := sampleIB(op, global)
			b := make([]byte, s.PacketLen())
			if _, err := EncodeIB(b, &s); err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

func FuzzBTH(f *testing.F) {
	seedTransport(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		b := BTH(data)
		if b.Validate(0) != nil {
			return
		}
		fields := b.Fields()
		out := make(BTH, BTHSize)
		out.Encode(&fields)
		if string(out) != string(data[:BTHSize]) {
			t.Fatalf("valid BTH %x re-encodes to %x", data[:BTHSize], []byte(out))
		}
		_ = b.Info().Name
		_ = b.OpCode().String()
	})
}

// FuzzExtHeaders decodes the input as each extension header in turn.
func FuzzExtHeaders(f *testing.F) {
	seedTransport(f)
	f.Add(make([]byte, 28))
	f.Fuzz(func(t *testing.T, data []byte) {
		if RETH(data).Validate(0) == nil {
			v := RETH(data).Fields()
			out := make(RETH, RETHSize)
			out.Encode(&v)
			if string(out) != string(data[:RETHSize]) {
				t.Fatal("RETH round trip")
			}
		}
		if AETH(data).Validate(0) == nil {
			v := AETH(data).Fields()
			out := make(AETH, AETHSize)
			out.Encode(&v)
			if string(out) != string(data[:AETHSize]) || !v.Syndrome.Valid() {
				t.Fatal("AETH round trip")
			}
			_ = v.Syndrome.String()
			_, _ = v.Syndrome.Credits()
			_, _ = v.Syndrome.RNRDelay()
		}
		if AtomicETH(data).Validate(0) == nil {
			v := AtomicETH(data).Fields()
			out := make(AtomicETH, AtomicETHSize)
			out.Encode(&v)
			if string(out) != string(data[:AtomicETHSize]) {
				t.Fatal("AtomicETH round trip")
			}
		}
		if AtomicAckETH(data).Validate(0) == nil {
			out := make(AtomicAckETH, AtomicAckETHSize)
			out.Encode(AtomicAckETH(data).OrigData())
			if string(out) != string(data[:AtomicAckETHSize]) {
				t.Fatal("AtomicAckETH round trip")
			}
		}
		if DETH(data).Validate(0) == nil {
			v := DETH(data).Fields()
			out := make(DETH, DETHSize)
			out.Encode(&v)
			if string(out) != string(data[:DETHSize]) {
				t.Fatal("DETH round trip")
			}
		}
		if ImmDt(data).Validate(0) == nil {
			out := make(ImmDt, ImmDtSize)
			out.Encode(ImmDt(data).Value())
			if string(out) != string(data[:ImmDtSize]) {
				t.Fatal("ImmDt round trip")
			}
		}
		if IETH(data).Validate(0) == nil {
			out := make(IETH, IETHSize)
			out.Encode(IETH(data).RKey())
			if string(out) != string(data[:IETHSize]) {
				t.Fatal("IETH round trip")
			}
		}
		if CNP(data).Validate(0) == nil {
			for _, c := range data[:CNPSize] {
				if c != 0 {
					t.Fatal("CNP with a non-zero byte validated")
				}
			}
		}
	})
}

// FuzzHeaders decodes the input as BTH through pad.
func FuzzHeaders(f *testing.F) {
	seedTransport(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var h Headers
		if h.Decode(data, 0) != nil {
			return
		}
		if h.Info.HdrLen+len(h.Payload)+len(h.Pad) != len(data) || len(h.Pad) != h.BTH.PadCount() {
			t.Fatalf("lengths: hdr %d payload %d pad %d of %d", h.Info.HdrLen, len(h.Payload), len(h.Pad), len(data))
		}
		bf, ext := h.BTH.Fields(), h.ExtFields()
		out := make([]byte, len(data))
		n, err := EncodeTransport(out, &bf, &ext, h.Payload)
		if err != nil {
			t.Fatalf("decoded transport does not re-encode: %v", err)
		}
		// Pad bytes are written as zero; everything else must match.
		end := n - len(h.Pad)
		if n != len(data) || string(out[:end]) != string(data[:end]) {
			t.Fatalf("re-encoded\n got %x\nwant %x", out[:n], data)
		}
	})
}

// FuzzDecodeRoCE checks each input twice: as it is, and with its ICRC
// rewritten. A mutated frame almost never carries a valid ICRC, so without
// the rewritten copy the fuzzer would stop at the CRC check and never
// reach the re-encode property below it; a hostile sender can compute the
// ICRC, so what lies past the check is untrusted input too.
func FuzzDecodeRoCE(f *testing.F) {
	seedRoCE(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRoCE(t, data)
		fixed := append([]byte(nil), data...)
		if FinishRoCEFrame(fixed) == nil {
			checkRoCE(t, fixed)
		}
	})
}

func checkRoCE(t *testing.T, data []byte) {
	var p Packet
	_ = p.Decode(data, 0)
	if p.Decode(data, VerifyICRC) != nil {
		return
	}
	if !p.ICRCOK || !VerifyICRCRoCE(p.L3()) {
		t.Fatal("ICRC verified by Decode but not by VerifyICRCRoCE")
	}
	var rf RoCEFields
	p.RoCEFieldsOf(&rf)
	out := make([]byte, rf.FrameLen())
	n, err := EncodeRoCE(out, &rf)
	if err != nil {
		t.Fatalf("decoded frame does not re-encode: %v", err)
	}
	var q Packet
	if err := q.Decode(out[:n], VerifyICRC); err != nil {
		t.Fatalf("re-encoded frame does not decode: %v", err)
	}
	if q.BTH.Fields() != p.BTH.Fields() || q.ExtFields() != p.ExtFields() || string(q.Payload) != string(p.Payload) {
		t.Fatal("re-encoded frame decodes differently")
	}
}

// FuzzDecodeIB checks each input as it is and with its ICRC and VCRC
// rewritten (FinishIBPacket), for the reason FuzzDecodeRoCE gives.
func FuzzDecodeIB(f *testing.F) {
	seedIB(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkIB(t, data)
		fixed := append([]byte(nil), data...)
		if FinishIBPacket(fixed) == nil {
			checkIB(t, fixed)
		}
	})
}

func checkIB(t *testing.T, data []byte) {
	var p IBPacket
	_ = p.Decode(data, 0)
	if p.Decode(data, VerifyICRC|VerifyVCRC) != nil {
		return
	}
	var ibf IBFields
	p.IBFieldsOf(&ibf)
	out := make([]byte, ibf.PacketLen())
	n, err := EncodeIB(out, &ibf)
	if err != nil {
		t.Fatalf("decoded packet does not re-encode: %v", err)
	}
	var q IBPacket
	if err := q.Decode(out[:n], VerifyICRC|VerifyVCRC); err != nil {
		t.Fatalf("re-encoded packet does not decode: %v", err)
	}
	if q.BTH.Fields() != p.BTH.Fields() || q.ExtFields() != p.ExtFields() || string(q.Payload) != string(p.Payload) {
		t.Fatal("re-encoded packet decodes differently")
	}
	c := append([]byte(nil), data...)
	if err := FinishIBPacket(c); err != nil || string(c) != string(data) {
		t.Fatalf("FinishIBPacket changed a valid packet: %v", err)
	}
}

// FuzzGopacket runs the gopacket paths: NewPacket from Ethernet and from
// the LRH, and a DecodingLayerParser; the transport layers must agree with
// Headers.Decode whenever the BTH layer decodes.
func FuzzGopacket(f *testing.F) {
	seedRoCE(f)
	seedIB(f)
	var (
		eth layers.Ethernet
		ip4 layers.IPv4
		ip6 layers.IPv6
		udp layers.UDP
	)
	d := NewDecodingLayers()
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &udp)
	for _, l := range d.Layers() {
		parser.AddDecodingLayer(l)
	}
	parser.IgnoreUnsupported = true
	decoded := make([]gopacket.LayerType, 0, 16)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, first := range []gopacket.LayerType{layers.LayerTypeEthernet, wire.LayerTypeLRH, LayerTypeBTH} {
			pkt := gopacket.NewPacket(data, first, gopacket.Default)
			if bl, ok := pkt.Layer(LayerTypeBTH).(*BTHLayer); ok {
				var h Headers
				if err := h.Decode(bl.Contents[:len(bl.Contents)+len(bl.Payload)-ICRCSize], 0); err != nil {
					t.Fatalf("BTH layer decoded what Headers rejects: %v", err)
				}
				if h.BTH.Fields() != bl.BTHFields {
					t.Fatal("BTH layer fields differ")
				}
			}
		}
		if err := parser.DecodeLayers(data, &decoded); err == nil {
			for _, lt := range decoded {
				if lt == LayerTypeIBPayload && len(d.Payload.Data)+len(d.Payload.Pad)+ICRCSize != len(d.Payload.Contents) {
					t.Fatal("payload layer lengths")
				}
			}
		}
		c := append([]byte(nil), data...)
		_ = FinishRoCEFrame(c)
	})
}
