package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/emufabric/emufabric/wire"
)

func TestIBLinkEncodeGolden(t *testing.T) {
	// Bytes from the oracle's golden capture (frame 6): op 0, FCTBS 100,
	// VL 0, FCCL 612, LPCRC a8 94.
	b := make([]byte, wire.IBLinkSize)
	wire.IBLink(b).Encode(&wire.IBLinkFields{Op: wire.IBLinkOpNormal, FCTBS: 100, VL: 0, FCCL: 612})
	want := []byte{0x00, 0x64, 0x02, 0x64, 0xa8, 0x94}
	if !bytes.Equal(b, want) {
		t.Fatalf("Encode = % x, want % x", b, want)
	}
	k := wire.IBLink(b)
	if k.Op() != 0 || k.FCTBS() != 100 || k.VL() != 0 || k.FCCL() != 612 || k.LPCRC() != 0x94a8 {
		t.Fatalf("accessors: %d %d %d %d 0x%04x", k.Op(), k.FCTBS(), k.VL(), k.FCCL(), k.LPCRC())
	}
	// Out-of-range values are cut to their fields.
	wire.IBLink(b).Encode(&wire.IBLinkFields{Op: 0x11, FCTBS: 0xFFFF, VL: 0x1F, FCCL: 0x1003})
	if k.Op() != 1 || k.FCTBS() != 0xFFF || k.VL() != 15 || k.FCCL() != 3 || k.Validate(0) != nil {
		t.Fatalf("masking: % x", b)
	}
}

func TestIBLinkValidate(t *testing.T) {
	good := func() []byte {
		b := make([]byte, wire.IBLinkSize)
		wire.IBLink(b).Encode(&wire.IBLinkFields{Op: wire.IBLinkOpInit, FCTBS: 7, VL: 15})
		return b
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		field  string
		reason wire.Reason
	}{
		{"ok", good(), "", 0},
		{"short", good()[:5], "LPCRC", wire.ReasonTruncated},
		{"long", append(good(), 0), "", wire.ReasonInconsistent},
		{"op", func() []byte {
			b := good()
			b[0] |= 0x20
			wire.IBLink(b)[4], wire.IBLink(b)[5] = 0, 0
			v := wire.VCRC(b[:4])
			b[4], b[5] = byte(v), byte(v>>8)
			return b
		}(), "Op", wire.ReasonInvalid},
		{"lpcrc", func() []byte { b := good(); b[3] ^= 1; return b }(), "LPCRC", wire.ReasonChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := wire.IBLink(tc.b).Validate(0)
			if tc.reason == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var we *wire.Error
			if !errors.As(err, &we) || we.Header != "IBLink" || we.Field != tc.field || we.Reason != tc.reason {
				t.Fatalf("err = %v, want IBLink.%s %v", err, tc.field, tc.reason)
			}
		})
	}
}

func TestCreditBlocks(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 0}, {-1, 0}, {1, 1}, {63, 1}, {64, 1}, {65, 2}, {26, 1}, {4096 + 8 + 12 + 4 + 2, 65},
	} {
		if got := wire.CreditBlocks(tc.n); got != tc.want {
			t.Errorf("CreditBlocks(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestCanSend(t *testing.T) {
	for _, tc := range []struct {
		fccl, fctbs uint16
		n           int
		want        bool
	}{
		{10, 0, 10, true},    // exactly at the limit
		{10, 0, 11, false},   // one block over: (10-11) mod 4096 = 4095
		{10, 10, 0, true},    // zero-length probe at the limit
		{5, 4090, 11, true},  // FCCL wrapped: 5 - 4101 = -4096 = 0 mod 4096
		{5, 4090, 12, false}, // one over across the wrap
		{2048, 0, 0, true},   // distance 2048 still counts as ahead
		{2049, 0, 0, false},  // distance 2049: limit is behind (IBA's half-window)
		{0, 0, 1, false},     // no credits at all
	} {
		if got := wire.CanSend(tc.fccl, tc.fctbs, tc.n); got != tc.want {
			t.Errorf("CanSend(FCCL %d, FCTBS %d, N %d) = %v, want %v", tc.fccl, tc.fctbs, tc.n, got, tc.want)
		}
	}
	if wire.AddBlocks(4090, 10) != 4 || wire.AddBlocks(3, -4) != 4095 {
		t.Errorf("AddBlocks wrap: %d %d", wire.AddBlocks(4090, 10), wire.AddBlocks(3, -4))
	}
}

// FuzzIBLink: Validate never panics; valid packets re-encode identically.
func FuzzIBLink(f *testing.F) {
	for _, s := range [][]byte{
		{0x10, 0x00, 0x00, 0x00, 0x58, 0x05}, {0x00, 0x64, 0x02, 0x64, 0xa8, 0x94},
		{0x0f, 0xff, 0x10, 0x03, 0x5d, 0x20}, {0x00, 0x07, 0xf0, 0x00, 0xb5, 0xe5}, {0x00},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if wire.IBLink(b).Validate(0) != nil {
			return
		}
		var lf wire.IBLinkFields
		wire.IBLink(b).Fields(&lf)
		enc := make([]byte, wire.IBLinkSize)
		wire.IBLink(enc).Encode(&lf)
		if !bytes.Equal(enc, b) {
			t.Fatalf("re-encode % x, want % x", enc, b)
		}
	})
}

// TestIBLinkNote: the capture comment both daemons write for a link
// packet, and for one that does not validate.
func TestIBLinkNote(t *testing.T) {
	b := make([]byte, wire.IBLinkSize)
	wire.IBLink(b).Encode(&wire.IBLinkFields{Op: wire.IBLinkOpNormal, FCTBS: 6, VL: 1, FCCL: 1030})
	if got, want := wire.IBLinkNote(b, "sent"), "flow control sent: VL 1 FCTBS 6 FCCL 1030"; got != want {
		t.Errorf("IBLinkNote = %q, want %q", got, want)
	}
	b[5] ^= 1 // LPCRC
	if got := wire.IBLinkNote(b, "received"); got != "malformed link packet received" {
		t.Errorf("bad LPCRC: %q", got)
	}
	if got := wire.IBLinkNote(b[:3], "received"); got != "malformed link packet received" {
		t.Errorf("short: %q", got)
	}
}
