package mad_test

import (
	"bytes"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

func smpPacket(t testing.TB, smp mad.SMP, dlid, slid uint16) []byte {
	pkt := make([]byte, mad.PacketSize)
	n, err := mad.EncodePacket(pkt, &mad.PacketFields{DLID: dlid, SLID: slid, PSN: 1}, smp)
	if err != nil || n != mad.PacketSize {
		t.Fatalf("EncodePacket: %d, %v", n, err)
	}
	return pkt
}

// The headers in front of the MAD, by hand from IBA 7.7 / 9.2 / 9.3.2:
// LRH VL 15, LNH 2, DLID permissive, PktLen 72 words; BTH UD SEND ONLY
// (0x64), P_Key 0xFFFF, DestQP 0, PSN 1; DETH Q_Key 0, SrcQP 0.
func TestPacketGolden(t *testing.T) {
	smp := getSMP(mad.AttrNodeInfo, 0, 1)
	pkt := smpPacket(t, smp, mad.PermissiveLID, mad.PermissiveLID)
	want := unhex(t, `f0 02 ff ff 00 48 ff ff  64 00 ff ff 00 00 00 00 00 00 00 01  00 00 00 00 00 00 00 00`, 28)
	if !bytes.Equal(pkt[:28], want) {
		t.Fatalf("headers %x, want %x", pkt[:28], want)
	}
	if !bytes.Equal(pkt[28:28+mad.Size], smp) {
		t.Fatal("MAD not carried verbatim")
	}
	var p mad.Packet
	if err := mad.DecodePacket(pkt, &p, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
		t.Fatal(err)
	}
	if !p.IB.ICRCOK || !p.IB.VCRCOK || !bytes.Equal(p.SMP, smp) || p.IB.LRH.PktLen() != 72 {
		t.Fatalf("decoded %+v", p.IB)
	}
	if _, err := mad.EncodePacket(pkt, &mad.PacketFields{}, smp[:100]); err == nil {
		t.Fatal("a 100-byte SMP was encoded")
	}
}

func TestPacketDecodeErrors(t *testing.T) {
	smp := getSMP(mad.AttrNodeInfo, 0, 1)
	tests := []struct {
		name   string
		mod    func(p []byte)
		header string
		field  string
	}{
		{"data VL", func(p []byte) { wire.LRH(p).SetVL(0) }, "LRH", "VL"},
		{"to QP1", func(p []byte) { bth.BTH(p[8:]).SetDestQP(1) }, "BTH", "DestQP"},
		{"from QP1", func(p []byte) { bth.DETH(p[20:]).SetSrcQP(1) }, "DETH", "SrcQP"},
		{"RC opcode", func(p []byte) { bth.BTH(p[8:]).SetOpCode(bth.RCSendOnly) }, "BTH", "OpCode"},
		{"class 0x04", func(p []byte) { p[29] = 0x04 }, "SMP", "MgmtClass"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pkt := smpPacket(t, smp, mad.PermissiveLID, 1)
			tc.mod(pkt)
			if err := bth.FinishIBPacket(pkt); err != nil {
				t.Fatal(err)
			}
			var p mad.Packet
			err := mad.DecodePacket(pkt, &p, bth.VerifyICRC|bth.VerifyVCRC)
			we, ok := err.(*wire.Error)
			if !ok || we.Header != tc.header || we.Field != tc.field || p.SMP != nil {
				t.Fatalf("got %v, want %s.%s", err, tc.header, tc.field)
			}
		})
	}
	pkt := smpPacket(t, smp, mad.PermissiveLID, 1)
	pkt[100] ^= 1
	var p mad.Packet
	if err := mad.DecodePacket(pkt, &p, bth.VerifyICRC); err == nil || err.(*wire.Error).Reason != wire.ReasonChecksum {
		t.Fatalf("flipped MAD byte: %v", err)
	}
}
