package bth

import (
	"testing"

	"github.com/emufabric/emufabric/wire"
	"github.com/gopacket/gopacket"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{TransportRC.String(), "RC"}, {TransportUC.String(), "UC"}, {TransportRD.String(), "RD"},
		{TransportUD.String(), "UD"}, {TransportCNP.String(), "CNP"}, {TransportXRC.String(), "XRC"},
		{TransportVendor.String(), "vendor"}, {Transport(6).String(), "transport(6)"},
		{ExtDETH.String(), "DETH"}, {ExtIETH.String(), "IETH"}, {Ext(NumExt).String(), "ext(8)"},
		{NAKCode(7).String(), "nak(7)"}, {NAKInvalidRDRequest.String(), "INVALID_RD_REQUEST"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
	if ExtAtomicETH.Size() != 28 || ExtCNP.Size() != 16 || Ext(NumExt).Size() != 0 {
		t.Error("Ext.Size")
	}
	if TransportLen(0x15, 4) != -1 || TransportLen(RCSendOnly, 5) != 12+8 {
		t.Error("TransportLen")
	}
}

// TestHeadersExt: Ext returns each header view and nil for absent ones.
func TestHeadersExt(t *testing.T) {
	b := buildFrame(t, UDSendOnlyWithImmediate, false)
	var p Packet
	if err := p.Decode(b, 0); err != nil {
		t.Fatal(err)
	}
	for e := Ext(0); e <= NumExt; e++ {
		v := p.Ext(e)
		if (v != nil) != (e < NumExt && p.Info.Has(e)) {
			t.Errorf("%s: view %x", e, v)
		}
		if v != nil && len(v) != e.Size() {
			t.Errorf("%s: %d bytes", e, len(v))
		}
	}
}

func TestFinishRoCEFrameErrors(t *testing.T) {
	b := buildFrame(t, RCSendOnly, false)
	wantErr(t, FinishRoCEFrame(b[:10]), "Ethernet", "EtherType", wire.ReasonTruncated)
	c := append([]byte(nil), b...)
	c[12], c[13] = 0x88, 0x08
	wantErr(t, FinishRoCEFrame(c), "Ethernet", "EtherType", wire.ReasonUnsupported)
	c = append([]byte(nil), b...)
	c[14+10] ^= 1
	wantErr(t, FinishRoCEFrame(c), "IPv4", "HeaderChecksum", wire.ReasonChecksum)
	v6 := buildFrame(t, RCSendOnly, true)
	wantErr(t, FinishRoCEFrame(v6[:40]), "IPv6", "Version", wire.ReasonTruncated)
	// An IPv6 datagram too short for UDP, BTH and ICRC.
	c = append([]byte(nil), v6[:14+40+20]...)
	c[14+4], c[14+5] = 0, 20
	wantErr(t, FinishRoCEFrame(c), "UDP", "Length", wire.ReasonTruncated)
	// A good IPv6 frame with a zeroed ICRC and a UDP checksum is finished.
	c = append([]byte(nil), v6...)
	clear(c[len(c)-4:])
	c[14+40+6] = 0x12
	if err := FinishRoCEFrame(c); err != nil || string(c) != string(v6) {
		t.Fatalf("IPv6 finish: %v", err)
	}
}

// TestPayloadLayerSerializeAsIs: without FixLengths the pad and ICRC are
// written as held.
func TestPayloadLayerSerializeAsIs(t *testing.T) {
	l := IBPayloadLayer{Data: []byte{1, 2, 3}, Pad: []byte{9}, ICRC: 0x04030201}
	buf := gopacket.NewSerializeBuffer()
	if err := l.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
		t.Fatal(err)
	}
	if hexs(buf.Bytes()) != "0102030901020304" {
		t.Fatalf("%x", buf.Bytes())
	}
	bl := BTHLayer{BTHFields: BTHFields{OpCode: RCSendOnly, PadCount: 1}}
	l.BTH = &bl
	var d IBPayloadLayer
	d.BTH = &bl
	if err := d.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil ||
		string(d.Data) != "\x01\x02\x03" || d.ICRC != 0x04030201 || d.LayerPayload() != nil {
		t.Fatalf("%v %+v", err, d)
	}
	bl.PadCount = 3
	wantErr(t, d.DecodeFromBytes(buf.Bytes()[:6], gopacket.NilDecodeFeedback), "ICRC", "", wire.ReasonTruncated)
}

func TestHeadersString(t *testing.T) {
	var h Headers
	if h.String() != "<no BTH>" {
		t.Error(h.String())
	}
	for _, tc := range []struct {
		op   Opcode
		want string
	}{
		{RCWriteOnlyWithImmediate, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE qp=0x000012 psn=16777211 pkey=0xffff ack RETH{va=0x7f000000100b rkey=0x1234abcd len=20} ImmDt{0xdeadbeef} payload=20"},
		{RCAtomicAcknowledge, "RC_ATOMIC_ACKNOWLEDGE qp=0x000012 psn=2 pkey=0xffff AETH{ACK credits=invalid msn=18} AtomicAckETH{orig=0x4142434445464748}"},
		{RCCompareSwap, "RC_COMPARE_SWAP qp=0x000012 psn=3 pkey=0xffff ack AtomicETH{va=0x7f0000002000 rkey=0x77778888 swapadd=0x1111222233334444 compare=0x5555666677778888}"},
		{UDSendOnly, "UD_SEND_ONLY qp=0x000012 psn=84 pkey=0xffff ack DETH{qkey=0x80010000 srcqp=0x000011} payload=17 pad=3"},
		{RCSendLastWithInvalidate, "RC_SEND_LAST_WITH_INVALIDATE qp=0x000012 psn=6 pkey=0xffff ack IETH{rkey=0x00c0ffee} payload=19 pad=1"},
		{CNPOpcode, "CNP qp=0x000012 psn=0 pkey=0xffff becn"},
	} {
		var p Packet
		if err := p.Decode(buildFrame(t, tc.op, false), 0); err != nil {
			t.Fatal(err)
		}
		if got := p.Headers.String(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.op, got, tc.want)
		}
	}
}
