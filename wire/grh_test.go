package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/emufabric/emufabric/wire"
)

func TestGRHEncodeGolden(t *testing.T) {
	f := wire.GRHFields{TClass: 0x60, FlowLabel: 0x54321, PayLen: 36, NxtHdr: 0x1B, HopLmt: 64}
	for i := range 16 {
		f.SGID[i] = byte(i)
		f.DGID[i] = byte(0xF0 + i)
	}
	b := bytes.Repeat([]byte{0xAA}, wire.GRHSize)
	wire.GRH(b).Encode(&f)
	want := []byte{
		0x66, 0x05, 0x43, 0x21, // IPVer 6, TClass 0x60, FlowLabel 0x54321
		0x00, 0x24, 0x1b, 0x40, // PayLen 36, NxtHdr 0x1B, HopLmt 64
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
		0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff,
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("Encode =\n% x\nwant\n% x", b, want)
	}
	g := wire.GRH(b)
	var got wire.GRHFields
	g.Fields(&got)
	if got != f || g.IPVer() != 6 {
		t.Fatalf("Fields = %+v", got)
	}
	g.SetPayLen(100)
	if g.PayLen() != 100 {
		t.Fatal("SetPayLen")
	}
}

func TestGRHValidate(t *testing.T) {
	mk := func(payLen int, extra int) []byte {
		b := make([]byte, wire.GRHSize+extra)
		wire.GRH(b).Encode(&wire.GRHFields{PayLen: uint16(payLen), NxtHdr: wire.GRHNxtHdrIBA})
		return b
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		field  string
		reason wire.Reason
	}{
		{"ok", mk(16, 16), "", 0},
		{"ok trailer", mk(16, 18), "", 0},
		{"short", mk(0, 0)[:39], "DGID", wire.ReasonTruncated},
		{"ipver", func() []byte { b := mk(16, 16); b[0] = 0x46; return b }(), "IPVer", wire.ReasonInvalid},
		{"nxthdr", func() []byte { b := mk(16, 16); b[6] = 17; return b }(), "NxtHdr", wire.ReasonUnsupported},
		{"paylen odd", mk(15, 16), "PayLen", wire.ReasonInvalid},
		{"paylen long", mk(20, 16), "PayLen", wire.ReasonTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := wire.GRH(tc.b).Validate(8)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var we *wire.Error
			if !errors.As(err, &we) || we.Header != "GRH" || we.Field != tc.field || we.Reason != tc.reason || we.Offset < 8 {
				t.Fatalf("err = %v, want GRH.%s %v", err, tc.field, tc.reason)
			}
		})
	}
}

// FuzzGRH: Validate never panics; valid headers round-trip through Fields.
func FuzzGRH(f *testing.F) {
	b := make([]byte, wire.GRHSize+16)
	wire.GRH(b).Encode(&wire.GRHFields{TClass: 0x60, FlowLabel: 0x54321, PayLen: 16, NxtHdr: 0x1B, HopLmt: 1})
	f.Add(b)
	f.Add(b[:39])
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		if wire.GRH(b).Validate(0) != nil {
			return
		}
		var gf wire.GRHFields
		wire.GRH(b).Fields(&gf)
		enc := make([]byte, wire.GRHSize)
		wire.GRH(enc).Encode(&gf)
		if !bytes.Equal(enc, b[:wire.GRHSize]) {
			t.Fatalf("re-encode % x, want % x", enc, b[:wire.GRHSize])
		}
	})
}
