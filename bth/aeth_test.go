package bth

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

func TestSyndromeEncodings(t *testing.T) {
	for _, tc := range []struct {
		s                    Syndrome
		valid, ack, rnr, nak bool
		str                  string
	}{
		{ACKSyndrome(0), true, true, false, false, "ACK credits=0"},
		{ACKSyndrome(10), true, true, false, false, "ACK credits=32"},
		{ACKSyndrome(0x1E), true, true, false, false, "ACK credits=32768"},
		{ACKSyndrome(CreditCodeInvalid), true, true, false, false, "ACK credits=invalid"},
		{RNRSyndrome(0), true, false, true, false, "RNR_NAK timer=0 (655.36ms)"},
		{RNRSyndrome(14), true, false, true, false, "RNR_NAK timer=14 (1.28ms)"},
		{RNRSyndrome(1), true, false, true, false, "RNR_NAK timer=1 (10us)"},
		{NAKSyndrome(NAKPSNSequenceError), true, false, false, true, "NAK PSN_SEQUENCE_ERROR"},
		{NAKSyndrome(NAKInvalidRequest), true, false, false, true, "NAK INVALID_REQUEST"},
		{NAKSyndrome(NAKRemoteAccessError), true, false, false, true, "NAK REMOTE_ACCESS_ERROR"},
		{NAKSyndrome(NAKRemoteOperationalError), true, false, false, true, "NAK REMOTE_OPERATIONAL_ERROR"},
		{NAKSyndrome(NAKInvalidRDRequest), true, false, false, true, "NAK INVALID_RD_REQUEST"},
		{0x65, false, false, false, true, "reserved(0x65)"},
		{0x40, false, false, false, false, "reserved(0x40)"},
		{0x5F, false, false, false, false, "reserved(0x5f)"},
		{0x80, false, false, false, false, "reserved(0x80)"},
		{0xE0, false, false, false, false, "reserved(0xe0)"},
	} {
		if tc.s.Valid() != tc.valid || tc.s.IsACK() != tc.ack || tc.s.IsRNR() != tc.rnr || tc.s.IsNAK() != tc.nak {
			t.Errorf("0x%02x: valid/ack/rnr/nak %v %v %v %v", uint8(tc.s), tc.s.Valid(), tc.s.IsACK(), tc.s.IsRNR(), tc.s.IsNAK())
		}
		if got := tc.s.String(); got != tc.str {
			t.Errorf("0x%02x: %q, want %q", uint8(tc.s), got, tc.str)
		}
	}
	// The constructors give the byte values of rxe's enum aeth_syndrome.
	for _, tc := range []struct {
		s    Syndrome
		want uint8
	}{
		{ACKSyndrome(0x1F), 0x1F}, {RNRSyndrome(0x1F), 0x3F}, {RNRSyndrome(0), 0x20},
		{NAKSyndrome(NAKPSNSequenceError), 0x60}, {NAKSyndrome(NAKInvalidRDRequest), 0x64},
	} {
		if uint8(tc.s) != tc.want {
			t.Errorf("syndrome 0x%02x, want 0x%02x", uint8(tc.s), tc.want)
		}
	}
	if _, ok := NAKSyndrome(0).Credits(); ok {
		t.Error("a NAK has no credits")
	}
	if _, ok := ACKSyndrome(3).RNRDelay(); ok {
		t.Error("an ACK has no RNR delay")
	}
	if d, ok := RNRSyndrome(31).RNRDelay(); !ok || d != 491520*clock.Microsecond {
		t.Errorf("RNR 31: %v %v", d, ok)
	}
	if NAKSyndrome(NAKRemoteAccessError).NAKCode() != NAKRemoteAccessError || RNRSyndrome(9).RNRTimer() != 9 || ACKSyndrome(7).CreditCode() != 7 {
		t.Error("value accessors")
	}
}

// TestCreditTable: the rdmavt table, and CreditCodeFor never advertising more
// than it has.
func TestCreditTable(t *testing.T) {
	want := []int{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
		512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768}
	for code, n := range want {
		got, ok := CreditsForCode(uint8(code))
		if !ok || got != n {
			t.Errorf("code %d: %d %v, want %d", code, got, ok, n)
		}
		if c := CreditCodeFor(n); c != uint8(code) {
			t.Errorf("CreditCodeFor(%d) = %d, want %d", n, c, code)
		}
		if n > 1 {
			if c := CreditCodeFor(n - 1); c != uint8(code-1) {
				t.Errorf("CreditCodeFor(%d) = %d, want %d", n-1, c, code-1)
			}
		}
	}
	if _, ok := CreditsForCode(CreditCodeInvalid); ok {
		t.Error("0x1F has no credit count")
	}
	if c := CreditCodeFor(1 << 20); c != 30 {
		t.Errorf("CreditCodeFor(huge) = %d, want 30", c)
	}
	if c := CreditCodeFor(-5); c != 0 {
		t.Errorf("CreditCodeFor(-5) = %d, want 0", c)
	}
}

func TestRNRTable(t *testing.T) {
	// IBA table 45 in milliseconds, as wire-formats.md §5 lists it.
	ms := []float64{655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48, 0.64, 0.96,
		1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92, 122.88,
		163.84, 245.76, 327.68, 491.52}
	for code, m := range ms {
		want := clock.Time(m*100+0.5) * 10 * clock.Microsecond
		if got := RNRTimerDelay(uint8(code)); got != want {
			t.Errorf("code %d: %v, want %v", code, got, want)
		}
		if c := RNRTimerFor(want); c != uint8(code) {
			t.Errorf("RNRTimerFor(%v) = %d, want %d", want, c, code)
		}
	}
	for _, tc := range []struct {
		d    clock.Time
		want uint8
	}{
		{0, 1}, {clock.Picosecond, 1}, {11 * clock.Microsecond, 2}, {1300 * clock.Microsecond, 15},
		{491521 * clock.Microsecond, 0}, {clock.Second, 0},
	} {
		if got := RNRTimerFor(tc.d); got != tc.want {
			t.Errorf("RNRTimerFor(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}
