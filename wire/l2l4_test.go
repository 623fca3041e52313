package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

func TestEthernetRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    wire.EthernetFields
		want []byte
	}{
		{"untagged", wire.EthernetFields{Dst: wire.MAC{2, 0, 0, 0, 0, 2}, Src: wire.MAC{2, 0, 0, 0, 0, 1}, EtherType: wire.EtherTypeIPv4},
			[]byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00}},
		{"pcp3 vid100", wire.EthernetFields{Dst: wire.MAC{2, 0, 0, 0, 0, 2}, Src: wire.MAC{2, 0, 0, 0, 0, 1}, Tagged: true, PCP: 3, VID: 100, EtherType: wire.EtherTypeIPv6},
			[]byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0x60, 0x64, 0x86, 0xDD}},
		{"pcp7 dei vid4095", wire.EthernetFields{Tagged: true, PCP: 7, DEI: true, VID: 4095, EtherType: 0x0800},
			[]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0x00, 0xFF, 0xFF, 0x08, 0x00}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Repeat([]byte{0xFF}, 32)
			n := wire.EncodeEthernet(b, &tc.f)
			if n != wire.EthernetHeaderLen(tc.f.Tagged) || !bytes.Equal(b[:n], tc.want) {
				t.Fatalf("encode = % x (n=%d), want % x", b[:n], n, tc.want)
			}
			var l2 wire.L2
			if err := wire.DecodeEthernet(b[:n], &l2); err != nil {
				t.Fatal(err)
			}
			got := wire.EthernetFields{Dst: l2.Dst, Src: l2.Src, Tagged: l2.Tagged, PCP: l2.PCP, DEI: l2.DEI, VID: l2.VID, EtherType: l2.EtherType}
			if got != tc.f || l2.HdrLen != n {
				t.Fatalf("decode = %+v hdr %d, want %+v", got, l2.HdrLen, tc.f)
			}
		})
	}
}

func TestEthernetErrors(t *testing.T) {
	var l2 wire.L2
	for _, tc := range []struct {
		name  string
		b     []byte
		field string
		r     wire.Reason
	}{
		{"short", make([]byte, 13), "EtherType", wire.ReasonTruncated},
		{"short tag", append(make([]byte, 12), 0x81, 0x00, 0x60), "TCI", wire.ReasonTruncated},
		{"qinq", append(make([]byte, 12), 0x81, 0x00, 0x60, 0x64, 0x81, 0x00), "EtherType", wire.ReasonUnsupported},
	} {
		err := wire.DecodeEthernet(tc.b, &l2)
		var we *wire.Error
		if !errors.As(err, &we) || we.Field != tc.field || we.Reason != tc.r {
			t.Errorf("%s: err = %v, want field %s reason %v", tc.name, err, tc.field, tc.r)
		}
	}
}

func TestSetPCP(t *testing.T) {
	b := make([]byte, 60)
	wire.EncodeEthernet(b, &wire.EthernetFields{Tagged: true, PCP: 3, DEI: true, VID: 42, EtherType: 0x0800})
	if !wire.SetPCP(b, 6) {
		t.Fatal("SetPCP on a tagged frame failed")
	}
	var l2 wire.L2
	if err := wire.DecodeEthernet(b, &l2); err != nil || l2.PCP != 6 || !l2.DEI || l2.VID != 42 {
		t.Fatalf("after SetPCP: %+v %v", l2, err)
	}
	u := make([]byte, 60)
	wire.EncodeEthernet(u, &wire.EthernetFields{EtherType: 0x0800})
	if wire.SetPCP(u, 3) {
		t.Fatal("SetPCP on an untagged frame reported success")
	}
}

func TestMACString(t *testing.T) {
	if s := (wire.MAC{0x01, 0x80, 0xC2, 0, 0, 0x01}).String(); s != "01:80:c2:00:00:01" {
		t.Fatal(s)
	}
}

func testIPv4(dscp, ecn uint8) wire.IPv4 {
	b := make(wire.IPv4, 20+8)
	b.Encode(&wire.IPv4Fields{DSCP: dscp, ECN: ecn, TotalLength: 28, ID: 0x1234, DF: true, TTL: 64, Protocol: wire.IPProtoUDP,
		Src: [4]byte{192, 168, 1, 1}, Dst: [4]byte{192, 168, 1, 2}})
	return b
}

func TestIPv4Encode(t *testing.T) {
	b := testIPv4(26, wire.ECNECT0)
	// TOS 0x6A = DSCP 26 + ECT(0), the usual cma_roce_tos (wire-formats.md §2).
	want := []byte{0x45, 0x6A, 0x00, 0x1C, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11}
	if !bytes.Equal(b[:10], want) {
		t.Fatalf("header = % x, want % x", b[:10], want)
	}
	if !b.IsChecksumValid() {
		t.Fatal("checksum does not verify")
	}
	if err := b.Validate(14); err != nil {
		t.Fatal(err)
	}
	if b.DSCP() != 26 || b.ECN() != wire.ECNECT0 || !b.DF() || b.MF() || b.TTL() != 64 || b.Src() != [4]byte{192, 168, 1, 1} || len(b.Payload()) != 8 {
		t.Fatal("accessors disagree with the fields")
	}
}

// TestIPv4ECNIncremental checks the RFC 1624 update against a full
// recomputation for every TOS, including the 0xFFFF/0x0000 corner cases.
func TestIPv4ECNIncremental(t *testing.T) {
	for tos := 0; tos < 256; tos++ {
		for _, id := range []uint16{0, 0x1234, 0xFFFF, 0xBAAD} {
			b := testIPv4(uint8(tos>>2), uint8(tos&3))
			binary.BigEndian.PutUint16(b[4:], id)
			binary.BigEndian.PutUint16(b[10:], 0)
			binary.BigEndian.PutUint16(b[10:], b.CalculateChecksum())
			b.SetECN(wire.ECNCE)
			if b.ECN() != wire.ECNCE || b.DSCP() != uint8(tos>>2) {
				t.Fatalf("tos %#x: ECN %d DSCP %d", tos, b.ECN(), b.DSCP())
			}
			if !b.IsChecksumValid() {
				t.Fatalf("tos %#x id %#x: checksum 0x%04x, want 0x%04x", tos, id, b.Checksum(), b.CalculateChecksum())
			}
			b.SetTTLWithChecksumUpdate(b.TTL() - 1)
			if !b.IsChecksumValid() {
				t.Fatalf("tos %#x: TTL update broke the checksum", tos)
			}
		}
	}
}

func TestIPv4Validate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mut   func(b wire.IPv4) wire.IPv4
		field string
		r     wire.Reason
	}{
		{"short", func(b wire.IPv4) wire.IPv4 { return b[:19] }, "Version", wire.ReasonTruncated},
		{"version", func(b wire.IPv4) wire.IPv4 { b[0] = 0x65; return b }, "Version", wire.ReasonInvalid},
		{"ihl", func(b wire.IPv4) wire.IPv4 { b[0] = 0x44; return b }, "IHL", wire.ReasonInvalid},
		{"ihl past end", func(b wire.IPv4) wire.IPv4 { b[0] = 0x4F; return b }, "IHL", wire.ReasonTruncated},
		{"total short", func(b wire.IPv4) wire.IPv4 { binary.BigEndian.PutUint16(b[2:], 10); return b }, "TotalLength", wire.ReasonInconsistent},
		{"total long", func(b wire.IPv4) wire.IPv4 { binary.BigEndian.PutUint16(b[2:], 100); return b }, "TotalLength", wire.ReasonTruncated},
		{"checksum", func(b wire.IPv4) wire.IPv4 { b[10] ^= 1; return b }, "HeaderChecksum", wire.ReasonChecksum},
		{"fragment", func(b wire.IPv4) wire.IPv4 {
			b[6] |= 0x20
			binary.BigEndian.PutUint16(b[10:], 0)
			binary.BigEndian.PutUint16(b[10:], b.CalculateChecksum())
			return b
		}, "FragmentOffset", wire.ReasonUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.mut(testIPv4(0, 0)).Validate(14)
			var we *wire.Error
			if !errors.As(err, &we) || we.Header != "IPv4" || we.Field != tc.field || we.Reason != tc.r || we.Offset != 14 {
				t.Fatalf("err = %v, want IPv4.%s %v", err, tc.field, tc.r)
			}
		})
	}
}

func TestIPv6(t *testing.T) {
	b := make(wire.IPv6, 40+8)
	f := wire.IPv6Fields{DSCP: 26, ECN: wire.ECNECT0, FlowLabel: 0xABCDE, PayloadLength: 8, NextHeader: wire.IPProtoUDP, HopLimit: 64,
		Src: [16]byte{0xfe, 0x80, 15: 1}, Dst: [16]byte{0xfe, 0x80, 15: 2}}
	b.Encode(&f)
	if b[0] != 0x66 || b[1] != 0xAA || b.TrafficClass() != 0x6A || b.FlowLabel() != 0xABCDE || b.PayloadLength() != 8 ||
		b.NextHeader() != 17 || b.HopLimit() != 64 || b.Src() != f.Src || b.Dst() != f.Dst || len(b.Payload()) != 8 {
		t.Fatalf("encode/accessors disagree: % x", b[:8])
	}
	b.SetECN(wire.ECNCE)
	if b.ECN() != wire.ECNCE || b.DSCP() != 26 || b.FlowLabel() != 0xABCDE || b.Version() != 6 {
		t.Fatal("SetECN disturbed other fields")
	}
	if err := b.Validate(14); err != nil {
		t.Fatal(err)
	}
	var we *wire.Error
	if err := b[:47].Validate(14); !errors.As(err, &we) || we.Field != "PayloadLength" {
		t.Fatalf("truncated payload: %v", err)
	}
	b[0] = 0x46
	if err := b.Validate(14); !errors.As(err, &we) || we.Field != "Version" {
		t.Fatalf("bad version: %v", err)
	}
}

func TestGenericIP(t *testing.T) {
	v4 := testIPv4(26, wire.ECNECT0)
	v6 := make(wire.IPv6, 48)
	v6.Encode(&wire.IPv6Fields{DSCP: 48, ECN: wire.ECNECT1})
	if wire.IPDSCP(v4) != 26 || wire.IPDSCP(v6) != 48 || wire.IPECN(v4) != wire.ECNECT0 || wire.IPECN(v6) != wire.ECNECT1 {
		t.Fatal("generic accessors")
	}
	if !wire.SetIPECN(v4, wire.ECNCE) || !wire.SetIPECN(v6, wire.ECNCE) || wire.SetIPECN([]byte{0x10}, 3) || wire.SetIPECN(nil, 3) {
		t.Fatal("SetIPECN results")
	}
	if !v4.IsChecksumValid() || wire.IPECN(v4) != wire.ECNCE || wire.IPECN(v6) != wire.ECNCE {
		t.Fatal("SetIPECN effects")
	}
	if wire.IPDSCP(nil) != 0 || wire.IPECN([]byte{0x45}) != 0 {
		t.Fatal("short inputs")
	}
}

func TestUDP(t *testing.T) {
	b := make(wire.UDP, 8)
	b.Encode(&wire.UDPFields{SrcPort: 0xC123, DstPort: wire.RoCEv2Port, Length: 8})
	if !bytes.Equal(b, []byte{0xC1, 0x23, 0x12, 0xB7, 0, 8, 0, 0}) {
		t.Fatalf("% x", []byte(b))
	}
	if err := b.Validate(34, 8); err != nil {
		t.Fatal(err)
	}
	var we *wire.Error
	if err := b.Validate(34, 12); !errors.As(err, &we) || we.Field != "Length" || we.Reason != wire.ReasonInconsistent {
		t.Fatal(err)
	}
	if err := b[:7].Validate(34, 8); !errors.As(err, &we) || we.Reason != wire.ReasonTruncated {
		t.Fatal(err)
	}
}

// TestRoCESourcePort checks the Linux derivation (ib_verbs.h
// rdma_calc_flow_label / rdma_flow_label_to_udp_sport) against values
// computed by hand from the C code.
func TestRoCESourcePort(t *testing.T) {
	for _, tc := range []struct{ l, r, fl uint32 }{
		{0x11, 0x12, 0x132},     // 17*18 = 306, no high bits
		{0xD2, 0xD3, 0xAD16},    // 210*211 = 44310
		{0x123456, 0xABCDEF, 0}, // computed below
		{0xFFFFFF, 0xFFFFFF, 0}, // computed below
	} {
		v := uint64(tc.l) * uint64(tc.r)
		v ^= v >> 20
		v ^= v >> 40
		want := uint32(v & 0xFFFFF)
		if tc.fl != 0 && tc.fl != want {
			t.Fatalf("table value %x != %x", tc.fl, want)
		}
		if got := wire.RoCEFlowLabel(tc.l, tc.r); got != want {
			t.Errorf("flow label(%x,%x) = %x, want %x", tc.l, tc.r, got, want)
		}
	}
	for _, tc := range []struct {
		fl   uint32
		port uint16
	}{
		{0, 0xC000}, {0x132, 0xC132}, {0x4000, 0xC001}, {0xFFFFF, 0xFFC0}, {0xAD16, 0xED14},
	} {
		p := wire.RoCESourcePort(tc.fl)
		if p != tc.port || p < wire.RoCESourcePortMin {
			t.Errorf("sport(%#x) = %#x, want %#x", tc.fl, p, tc.port)
		}
	}
	if wire.RoCESourcePortForQPs(0x132, 1, 1) != 0xC132 || wire.RoCESourcePortForQPs(0, 0x11, 0x12) != 0xC132 {
		t.Error("RoCESourcePortForQPs")
	}
}

func TestPFCRoundTrip(t *testing.T) {
	src := wire.MAC{2, 0, 0, 0, 0, 9}
	b := bytes.Repeat([]byte{0xEE}, 64)
	times := [8]uint16{1, 2, 3, 0xFFFF, 5, 6, 7, 8}
	if n := wire.EncodePFC(b, src, 0b0000_1001, &times); n != 60 {
		t.Fatal(n)
	}
	want := []byte{0x01, 0x80, 0xC2, 0, 0, 0x01, 2, 0, 0, 0, 0, 9, 0x88, 0x08, 0x01, 0x01, 0x00, 0x09,
		0, 1, 0, 0, 0, 0, 0xFF, 0xFF}
	if !bytes.Equal(b[:len(want)], want) {
		t.Fatalf("pfc = % x", b[:26])
	}
	for _, v := range b[26:60] {
		if v != 0 {
			t.Fatal("padding or disabled times not zero")
		}
	}
	var mc wire.MACControl
	if err := wire.DecodeMACControl(b[:60], &mc); err != nil {
		t.Fatal(err)
	}
	if mc.Opcode != wire.MACControlOpPFC || mc.Enable != 9 || mc.Time[0] != 1 || mc.Time[3] != 0xFFFF || mc.Time[1] != 0 {
		t.Fatalf("%+v", mc)
	}
	if !mc.Paused(3) || mc.Paused(1) || mc.Resumed(3) {
		t.Fatal("Paused/Resumed")
	}
	xon := [8]uint16{}
	wire.EncodePFC(b, src, 1<<3, &xon)
	if err := wire.DecodeMACControl(b[:60], &mc); err != nil || !mc.Resumed(3) || mc.Paused(3) {
		t.Fatal("XON")
	}
}

func TestPause(t *testing.T) {
	b := make([]byte, 60)
	wire.EncodePause(b, wire.MAC{2}, 0x1234)
	if b[14] != 0 || b[15] != 1 || b[16] != 0x12 || b[17] != 0x34 {
		t.Fatalf("% x", b[:18])
	}
	var mc wire.MACControl
	if err := wire.DecodeMACControl(b, &mc); err != nil || mc.Opcode != wire.MACControlOpPause || mc.Enable != 0xFF {
		t.Fatal(err, mc)
	}
	for p := 0; p < 8; p++ {
		if !mc.Paused(p) || mc.Time[p] != 0x1234 {
			t.Fatal("PAUSE must stop every priority")
		}
	}
}

func TestMACControlErrors(t *testing.T) {
	good := make([]byte, 60)
	wire.EncodePFC(good, wire.MAC{2}, 8, &[8]uint16{3: 10})
	for _, tc := range []struct {
		name  string
		mut   func([]byte) []byte
		field string
	}{
		{"short eth", func(b []byte) []byte { return b[:10] }, "EtherType"},
		{"tagged", func(b []byte) []byte { b[12], b[13] = 0x81, 0; return b }, "EtherType"},
		{"not mac control", func(b []byte) []byte { b[12], b[13] = 0x08, 0; return b }, "EtherType"},
		{"no opcode", func(b []byte) []byte { return b[:15] }, "Opcode"},
		{"bad opcode", func(b []byte) []byte { b[15] = 2; return b }, "Opcode"},
		{"short pfc", func(b []byte) []byte { return b[:30] }, "Time"},
		{"cev high", func(b []byte) []byte { b[16] = 1; return b }, "ClassEnableVector"},
		{"short pause", func(b []byte) []byte { b[14], b[15] = 0, 1; return b[:17] }, "pause_time"},
	} {
		b := append([]byte(nil), good...)
		var mc wire.MACControl
		var we *wire.Error
		if err := wire.DecodeMACControl(tc.mut(b), &mc); !errors.As(err, &we) || we.Field != tc.field {
			t.Errorf("%s: err = %v, want field %s", tc.name, err, tc.field)
		}
	}
}

func TestQuanta(t *testing.T) {
	for _, tc := range []struct {
		q    uint16
		bps  uint64
		want clock.Time
	}{
		{1, 100e9, 5120 * clock.Picosecond},
		{1, 25e9, 20480 * clock.Picosecond},
		{1, 400e9, 1280 * clock.Picosecond},
		{0xFFFF, 100e9, 335539200 * clock.Picosecond}, // ≈ 335.5 µs (wire-formats.md §9)
		{0xFFFF, 1e9, 33553920 * clock.Nanosecond},
		{0, 100e9, 0},
	} {
		if got := wire.QuantaToTime(tc.q, tc.bps); got != tc.want {
			t.Errorf("QuantaToTime(%d, %d) = %v, want %v", tc.q, tc.bps, got, tc.want)
		}
		if got := wire.TimeToQuanta(tc.want, tc.bps); got != tc.q {
			t.Errorf("TimeToQuanta(%v, %d) = %d, want %d", tc.want, tc.bps, got, tc.q)
		}
	}
	if got := wire.XoffRefresh(0xFFFF, 100e9); got != 335539200*clock.Picosecond/2 {
		t.Errorf("XoffRefresh(0xFFFF, 100G) = %v, want half the quanta", got)
	}
	if got := wire.XoffRefresh(1, 400e9); got != clock.Nanosecond {
		t.Errorf("XoffRefresh(1, 400G) = %v, want the 1 ns floor", got)
	}
	if q := wire.TimeToQuanta(5121, 100e9); q != 2 {
		t.Errorf("rounding up: %d", q)
	}
	if q := wire.TimeToQuanta(clock.Second, 400e9); q != 0xFFFF {
		t.Errorf("saturation: %d", q)
	}
}

func TestErrorString(t *testing.T) {
	e := wire.Truncated("BTH", "PSN", 42, 12, 7)
	if s := e.Error(); s != "BTH.PSN: truncated: need 12 bytes, have 7 (at byte 42)" {
		t.Fatal(s)
	}
}
