package bth

import (
	"errors"
	"testing"

	"github.com/emufabric/emufabric/wire"
)

func wantErr(t *testing.T, err error, header, field string, reason wire.Reason) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T), want *wire.Error %s.%s %s", err, err, header, field, reason)
	}
	if we.Header != header || we.Field != field || we.Reason != reason {
		t.Fatalf("error %v, want %s.%s %s", err, header, field, reason)
	}
}

func TestBTHFields(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     BTHFields
		bytes string
	}{
		{"zero", BTHFields{}, "000000000000000000000000"},
		{"send only", BTHFields{OpCode: RCSendOnly, SE: true, PKey: 0xFFFF, DestQP: 0x12, AckReq: true, PSN: 0x100},
			"0480ffff0000001280000100"},
		{"all flags", BTHFields{OpCode: RCSendLast, SE: true, MigReq: true, PadCount: 3, PKey: 0x8001,
			FECN: true, BECN: true, DestQP: 0xFFFFFF, AckReq: true, PSN: 0xFFFFFF}, "02f08001c0ffffff80ffffff"},
		{"cnp", CNPFields(0xD2, 0xFFFF), "8100ffff400000d200000000"},
		{"fecn only", BTHFields{OpCode: UDSendOnly, PKey: 0x7FFF, FECN: true, DestQP: 1, PSN: 0xABCDEF}, "64007fff8000000100abcdef"},
		{"padcnt 1 migreq", BTHFields{OpCode: UCSendLast, MigReq: true, PadCount: 1, DestQP: 0x123456}, "225000000012345600000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := make(BTH, BTHSize)
			for i := range b {
				b[i] = 0xFF
			}
			b.Encode(&tc.f)
			if got := hexs(b); got != tc.bytes {
				t.Fatalf("encoded %s, want %s", got, tc.bytes)
			}
			if got := b.Fields(); got != tc.f {
				t.Fatalf("round trip %+v, want %+v", got, tc.f)
			}
			if b.Info() != tc.f.OpCode.Info() {
				t.Fatal("Info does not come from the table")
			}
		})
	}
}

func TestBTHSetters(t *testing.T) {
	b := make(BTH, BTHSize)
	b.SetOpCode(RCWriteOnly)
	b.SetSE(true)
	b.SetMigReq(true)
	b.SetPadCount(2)
	b.SetTVer(0)
	b.SetPKey(0x1234)
	b.SetFECN(true)
	b.SetBECN(true)
	b.SetDestQP(0x1ABCDEF) // the top byte is dropped
	b.SetAckReq(true)
	b.SetPSN(0x2FEDCBA)
	want := BTHFields{OpCode: RCWriteOnly, SE: true, MigReq: true, PadCount: 2, PKey: 0x1234,
		FECN: true, BECN: true, DestQP: 0xABCDEF, AckReq: true, PSN: 0xFEDCBA}
	if got := b.Fields(); got != want {
		t.Fatalf("%+v, want %+v", got, want)
	}
	b.SetSE(false)
	b.SetMigReq(false)
	b.SetPadCount(0)
	b.SetFECN(false)
	b.SetBECN(false)
	b.SetAckReq(false)
	want.SE, want.MigReq, want.PadCount, want.FECN, want.BECN, want.AckReq = false, false, 0, false, false, false
	if got := b.Fields(); got != want {
		t.Fatalf("after clearing %+v, want %+v", got, want)
	}
	if b.Resv6a() != 0 || b.Resv7() != 0 {
		t.Fatal("setters touched reserved bits")
	}
}

func TestBTHValidate(t *testing.T) {
	good := func() BTH {
		b := make(BTH, BTHSize)
		b.Encode(&BTHFields{OpCode: RCSendOnly, PKey: 0xFFFF, DestQP: 5, PSN: 7})
		return b
	}
	if err := good().Validate(0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mut    func(BTH) BTH
		field  string
		reason wire.Reason
	}{
		{"short", func(b BTH) BTH { return b[:11] }, "", wire.ReasonTruncated},
		{"empty", func(b BTH) BTH { return nil }, "", wire.ReasonTruncated},
		{"reserved opcode", func(b BTH) BTH { b[0] = 0x15; return b }, "OpCode", wire.ReasonInvalid},
		{"RD opcode", func(b BTH) BTH { b[0] = 0x44; return b }, "OpCode", wire.ReasonUnsupported},
		{"XRC opcode", func(b BTH) BTH { b[0] = 0xA4; return b }, "OpCode", wire.ReasonUnsupported},
		{"tver", func(b BTH) BTH { b.SetTVer(1); return b }, "TVer", wire.ReasonInvalid},
		{"resv6a", func(b BTH) BTH { b[4] |= 0x01; return b }, "Resv6a", wire.ReasonInvalid},
		{"resv7", func(b BTH) BTH { b[8] |= 0x40; return b }, "Resv7", wire.ReasonInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.mut(good()).Validate(0), "BTH", tc.field, tc.reason)
		})
	}
}

func TestExtHeaderRoundTrips(t *testing.T) {
	t.Run("RETH", func(t *testing.T) {
		f := RETHFields{VA: 0x0102030405060708, RKey: 0x090A0B0C, DMALen: 0x0D0E0F10}
		b := make(RETH, RETHSize)
		b.Encode(&f)
		if hexs(b) != "0102030405060708090a0b0c0d0e0f10" || b.Fields() != f {
			t.Fatalf("%x %+v", []byte(b), b.Fields())
		}
		wantErr(t, b[:15].Validate(0), "RETH", "", wire.ReasonTruncated)
	})
	t.Run("AtomicETH", func(t *testing.T) {
		f := AtomicETHFields{VA: 0x1122334455667788, RKey: 0x99AABBCC, SwapAdd: 0xDDEEFF0011223344, Compare: 0x5566778899AABBCC}
		b := make(AtomicETH, AtomicETHSize)
		b.Encode(&f)
		if hexs(b) != "112233445566778899aabbccddeeff00112233445566778899aabbcc" || b.Fields() != f {
			t.Fatalf("%x %+v", []byte(b), b.Fields())
		}
		wantErr(t, b[:27].Validate(0), "AtomicETH", "", wire.ReasonTruncated)
	})
	t.Run("AtomicAckETH", func(t *testing.T) {
		b := make(AtomicAckETH, AtomicAckETHSize)
		b.Encode(0xFEDCBA9876543210)
		if hexs(b) != "fedcba9876543210" || b.OrigData() != 0xFEDCBA9876543210 {
			t.Fatalf("%x", []byte(b))
		}
		wantErr(t, b[:7].Validate(0), "AtomicAckETH", "", wire.ReasonTruncated)
	})
	t.Run("AETH", func(t *testing.T) {
		f := AETHFields{Syndrome: RNRSyndrome(14), MSN: 0xABCDEF}
		b := make(AETH, AETHSize)
		b.Encode(&f)
		if hexs(b) != "2eabcdef" || b.Fields() != f {
			t.Fatalf("%x %+v", []byte(b), b.Fields())
		}
		b.SetSyndrome(NAKSyndrome(NAKRemoteAccessError))
		b.SetMSN(0x1000001)
		if b.Syndrome() != 0x62 || b.MSN() != 1 {
			t.Fatalf("setters: %x", []byte(b))
		}
		wantErr(t, b[:3].Validate(0), "AETH", "", wire.ReasonTruncated)
		b[0] = 0x40 // type 10 is reserved
		wantErr(t, b.Validate(0), "AETH", "Syndrome", wire.ReasonInvalid)
	})
	t.Run("DETH", func(t *testing.T) {
		f := DETHFields{QKey: GSIQKey, SrcQP: 1}
		b := make(DETH, DETHSize)
		for i := range b {
			b[i] = 0xFF
		}
		b.Encode(&f)
		if hexs(b) != "8001000000000001" || b.Fields() != f || b.Validate(0) != nil {
			t.Fatalf("%x %+v", []byte(b), b.Fields())
		}
		b[4] = 1
		wantErr(t, b.Validate(0), "DETH", "Resv8", wire.ReasonInvalid)
		wantErr(t, b[:7].Validate(0), "DETH", "", wire.ReasonTruncated)
	})
	t.Run("ImmDt", func(t *testing.T) {
		b := make(ImmDt, ImmDtSize)
		b.Encode(0xDEADBEEF)
		if hexs(b) != "deadbeef" || b.Value() != 0xDEADBEEF {
			t.Fatalf("%x", []byte(b))
		}
		wantErr(t, b[:3].Validate(0), "ImmDt", "", wire.ReasonTruncated)
	})
	t.Run("IETH", func(t *testing.T) {
		b := make(IETH, IETHSize)
		b.Encode(0x00C0FFEE)
		if hexs(b) != "00c0ffee" || b.RKey() != 0xC0FFEE {
			t.Fatalf("%x", []byte(b))
		}
		wantErr(t, b[:3].Validate(0), "IETH", "", wire.ReasonTruncated)
	})
	t.Run("CNP", func(t *testing.T) {
		b := make(CNP, CNPSize)
		for i := range b {
			b[i] = 0xFF
		}
		b.Encode()
		if hexs(b) != "00000000000000000000000000000000" || b.Validate(0) != nil {
			t.Fatalf("%x", []byte(b))
		}
		b[15] = 1
		wantErr(t, b.Validate(0), "CNP", "Reserved", wire.ReasonInvalid)
		wantErr(t, b[:15].Validate(0), "CNP", "", wire.ReasonTruncated)
	})
}

func hexs(b []byte) string {
	const h = "0123456789abcdef"
	s := make([]byte, 0, 2*len(b))
	for _, c := range b {
		s = append(s, h[c>>4], h[c&15])
	}
	return string(s)
}
