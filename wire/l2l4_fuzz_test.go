package wire_test

import (
	"testing"

	"github.com/emufabric/emufabric/wire"
)

func seedFrames() [][]byte {
	eth := make([]byte, 60)
	wire.EncodeEthernet(eth, &wire.EthernetFields{Tagged: true, PCP: 3, VID: 5, EtherType: wire.EtherTypeIPv4})
	pfc := make([]byte, 60)
	wire.EncodePFC(pfc, wire.MAC{2}, 8, &[8]uint16{3: 0xFFFF})
	pause := make([]byte, 60)
	wire.EncodePause(pause, wire.MAC{2}, 7)
	return [][]byte{eth, pfc, pause, testIPv4(26, 2), {}, {0x45}}
}

func FuzzDecodeEthernet(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var l2 wire.L2
		if err := wire.DecodeEthernet(b, &l2); err == nil {
			if l2.HdrLen > len(b) {
				t.Fatalf("header length %d past %d bytes", l2.HdrLen, len(b))
			}
			out := make([]byte, 18)
			n := wire.EncodeEthernet(out, &wire.EthernetFields{Dst: l2.Dst, Src: l2.Src, Tagged: l2.Tagged, PCP: l2.PCP, DEI: l2.DEI, VID: l2.VID, EtherType: l2.EtherType})
			if string(out[:n]) != string(b[:n]) {
				t.Fatalf("re-encode % x != % x", out[:n], b[:n])
			}
		}
		wire.SetPCP(b, 5)
	})
}

func FuzzDecodeMACControl(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var mc wire.MACControl
		if err := wire.DecodeMACControl(b, &mc); err == nil && mc.Opcode == wire.MACControlOpPFC {
			out := make([]byte, 60)
			wire.EncodePFC(out, wire.MAC{}, mc.Enable, &mc.Time)
			var back wire.MACControl
			if err := wire.DecodeMACControl(out, &back); err != nil || back.Enable != mc.Enable {
				t.Fatalf("re-encode: %v %+v %+v", err, back, mc)
			}
		}
	})
}

func FuzzValidateIP(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	v6 := make([]byte, 48)
	wire.IPv6(v6).Encode(&wire.IPv6Fields{PayloadLength: 8, NextHeader: 17})
	f.Add(v6)
	f.Fuzz(func(t *testing.T, b []byte) {
		switch wire.IPVersion(b) {
		case 4:
			if wire.IPv4(b).Validate(0) == nil {
				ip := wire.IPv4(b)
				_ = ip.Payload()
				ip.SetECN(wire.ECNCE)
				if !ip.IsChecksumValid() {
					t.Fatal("CE marking broke a valid checksum")
				}
			}
		case 6:
			if wire.IPv6(b).Validate(0) == nil {
				_ = wire.IPv6(b).Payload()
			}
		}
		wire.IPDSCP(b)
		wire.IPECN(b)
		if len(b) >= 8 {
			u := wire.UDP(b)
			_ = u.Validate(0, len(b))
		}
	})
}
