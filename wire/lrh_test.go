package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/emufabric/emufabric/wire"
)

func TestLRHEncodeGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    wire.LRHFields
		want []byte
	}{
		// Golden frame 2 of the oracle capture: VL1 SL1 LNH2 DLID2 PktLen26 SLID1.
		{"local", wire.LRHFields{VL: 1, SL: 1, LNH: wire.LNHLocal, DLID: 2, PktLen: 26, SLID: 1},
			[]byte{0x10, 0x12, 0x00, 0x02, 0x00, 0x1a, 0x00, 0x01}},
		{"global max", wire.LRHFields{VL: 15, SL: 15, LNH: wire.LNHGlobal, DLID: 0xFFFF, PktLen: 0x7FF, SLID: 0xBEEF},
			[]byte{0xf0, 0xf3, 0xff, 0xff, 0x07, 0xff, 0xbe, 0xef}},
		// Out-of-range values are cut to their fields, reserved bits stay 0.
		{"truncated", wire.LRHFields{VL: 0x1F, LVer: 0x12, SL: 0x1F, LNH: 7, PktLen: 0xFFFF},
			[]byte{0xf2, 0xf3, 0x00, 0x00, 0x07, 0xff, 0x00, 0x00}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Repeat([]byte{0xAA}, wire.LRHSize) // catch unwritten bytes
			wire.LRH(b).Encode(&tc.f)
			if !bytes.Equal(b, tc.want) {
				t.Fatalf("Encode = % x, want % x", b, tc.want)
			}
		})
	}
}

func TestLRHAccessorsAndSetters(t *testing.T) {
	b := make([]byte, wire.LRHSize)
	l := wire.LRH(b)
	f := wire.LRHFields{VL: 3, SL: 5, LNH: wire.LNHGlobal, DLID: 0x1234, PktLen: 100, SLID: 0x5678}
	l.Encode(&f)
	var got wire.LRHFields
	l.Fields(&got)
	if got != f {
		t.Fatalf("Fields = %+v, want %+v", got, f)
	}
	b[4] |= 0xF8 // reserved bits set by someone else survive SetPktLen
	l.SetVL(7)
	l.SetPktLen(0x7FE)
	if l.VL() != 7 || l.LVer() != 0 || l.PktLen() != 0x7FE || b[4]&0xF8 != 0xF8 || l.FrameLen() != 0x7FE*4+2 {
		t.Fatalf("after setters: % x", b)
	}
	if wire.PktLenFor(48) != 12 {
		t.Fatalf("PktLenFor(48) = %d", wire.PktLenFor(48))
	}
}

// ibPacket builds an IB packet: LRH with the given LNH and PktLen matching
// n bytes LRH..ICRC, zero body, VCRC.
func ibPacket(lnh uint8, n int) []byte {
	p := make([]byte, n+wire.VCRCSize)
	wire.LRH(p).Encode(&wire.LRHFields{LNH: lnh, DLID: 1, SLID: 2, PktLen: uint16(n / 4)})
	wire.PutVCRC(p)
	return p
}

func TestLRHValidate(t *testing.T) {
	type mut func([]byte) []byte
	for _, tc := range []struct {
		name   string
		pkt    []byte
		mut    mut
		field  string
		reason wire.Reason
	}{
		{"ok local", ibPacket(wire.LNHLocal, 24), nil, "", 0},
		{"ok raw small", ibPacket(wire.LNHRaw, 8), nil, "", 0},
		{"short", ibPacket(wire.LNHLocal, 24), func(b []byte) []byte { return b[:7] }, "SLID", wire.ReasonTruncated},
		{"lver", ibPacket(wire.LNHLocal, 24), func(b []byte) []byte { b[0] |= 1; return b }, "LVer", wire.ReasonInvalid},
		{"below minimum", ibPacket(wire.LNHLocal, 20), nil, "PktLen", wire.ReasonInvalid},
		{"raw below LRH", ibPacket(wire.LNHRaw, 8), func(b []byte) []byte { wire.LRH(b).SetPktLen(1); return b }, "PktLen", wire.ReasonInvalid},
		{"pktlen long", ibPacket(wire.LNHLocal, 24), func(b []byte) []byte { return b[:len(b)-1] }, "PktLen", wire.ReasonTruncated},
		{"pktlen short", ibPacket(wire.LNHLocal, 24), func(b []byte) []byte { return append(b, 0, 0, 0, 0) }, "PktLen", wire.ReasonInconsistent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pkt
			if tc.mut != nil {
				p = tc.mut(p)
			}
			err := wire.LRH(p).Validate(5)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var we *wire.Error
			if !errors.As(err, &we) || we.Header != "LRH" || we.Field != tc.field || we.Reason != tc.reason {
				t.Fatalf("err = %v, want LRH.%s %v", err, tc.field, tc.reason)
			}
			if we.Offset < 5 {
				t.Fatalf("offset %d ignores the base offset 5", we.Offset)
			}
		})
	}
}

func TestValidateIBPacket(t *testing.T) {
	global := func(payLen int) []byte {
		n := wire.LRHSize + wire.GRHSize + 12 + 4
		p := make([]byte, n+2)
		wire.LRH(p).Encode(&wire.LRHFields{LNH: wire.LNHGlobal, PktLen: uint16(n / 4)})
		wire.GRH(p[8:]).Encode(&wire.GRHFields{PayLen: uint16(payLen), NxtHdr: wire.GRHNxtHdrIBA, HopLmt: 64})
		wire.PutVCRC(p)
		return p
	}
	if err := wire.ValidateIBPacket(global(16), 0); err != nil {
		t.Fatal(err)
	}
	var we *wire.Error
	if err := wire.ValidateIBPacket(global(12), 0); !errors.As(err, &we) || we.Header != "GRH" || we.Field != "PayLen" || we.Reason != wire.ReasonInconsistent {
		t.Fatalf("PayLen 12: %v", err)
	}
	// LNH 3 with only 24 bytes: the GRH cannot fit.
	if err := wire.ValidateIBPacket(ibPacket(wire.LNHGlobal, 24), 0); !errors.As(err, &we) || we.Header != "GRH" || we.Reason != wire.ReasonTruncated {
		t.Fatalf("short global: %v", err)
	}
	p := ibPacket(wire.LNHLocal, 24)
	p[10] ^= 0x40
	if err := wire.ValidateIBPacket(p, 0); !errors.As(err, &we) || we.Header != "VCRC" || we.Reason != wire.ReasonChecksum {
		t.Fatalf("flipped body: %v", err)
	}
	// A switch rewriting VL must recompute the VCRC.
	p = ibPacket(wire.LNHLocal, 24)
	wire.LRH(p).SetVL(2)
	if wire.ValidateIBPacket(p, 0) == nil {
		t.Fatal("VL change without VCRC update accepted")
	}
	wire.PutVCRC(p)
	if err := wire.ValidateIBPacket(p, 0); err != nil {
		t.Fatal(err)
	}
}

func TestLRHDecodeNoAlloc(t *testing.T) {
	p := ibPacket(wire.LNHLocal, 64)
	var f wire.LRHFields
	n := testing.AllocsPerRun(100, func() {
		if wire.ValidateIBPacket(p, 0) != nil {
			t.Fatal("invalid")
		}
		wire.LRH(p).Fields(&f)
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// FuzzLRH: Validate and ValidateIBPacket never panic; whatever validates
// decodes to fields that re-encode to the same header (reserved bits aside).
func FuzzLRH(f *testing.F) {
	f.Add(ibPacket(wire.LNHLocal, 24))
	f.Add(ibPacket(wire.LNHGlobal, 64))
	f.Add(ibPacket(wire.LNHRaw, 8))
	f.Add([]byte{0x10, 0x12, 0x00, 0x02, 0x00, 0x1a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = wire.ValidateIBPacket(b, 0)
		if wire.LRH(b).Validate(0) != nil {
			return
		}
		l := wire.LRH(b)
		var fl wire.LRHFields
		l.Fields(&fl)
		enc := make([]byte, wire.LRHSize)
		wire.LRH(enc).Encode(&fl)
		want := append([]byte(nil), b[:wire.LRHSize]...)
		want[1] &^= 0x0C // reserved bits are not part of the fields
		want[4] &^= 0xF8
		if !bytes.Equal(enc, want) {
			t.Fatalf("re-encode % x, want % x", enc, want)
		}
		if l.FrameLen() != len(b) {
			t.Fatalf("FrameLen %d, len %d", l.FrameLen(), len(b))
		}
	})
}
