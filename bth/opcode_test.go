package bth

import (
	"errors"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/wire"
)

// TestOpTable walks all 256 entries: every decodable opcode's HdrLen is the
// BTH plus the sum of its extension headers, laid out in the IBA order
// [DETH][RETH|AtomicETH][AETH][AtomicAckETH][ImmDt|IETH] (plus the CNP body).
func TestOpTable(t *testing.T) {
	valid := 0
	for i := 0; i < 256; i++ {
		op := Opcode(i)
		info := op.Info()
		if !info.Valid() {
			if info.Flags != 0 || info.HdrLen != 0 {
				t.Errorf("%s: invalid entry with flags or length", op)
			}
			continue
		}
		valid++
		off := BTHSize
		for e := Ext(0); e < NumExt; e++ {
			if !info.Has(e) {
				if info.Offset[e] != 0 {
					t.Errorf("%s: offset for absent %s", info.Name, e)
				}
				continue
			}
			if int(info.Offset[e]) != off {
				t.Errorf("%s: %s at %d, want %d", info.Name, e, info.Offset[e], off)
			}
			off += e.Size()
		}
		if info.HdrLen != off {
			t.Errorf("%s: HdrLen %d, sum of headers %d", info.Name, info.HdrLen, off)
		}
		if info.Has(ExtRETH) && info.Has(ExtAtomicETH) {
			t.Errorf("%s: RETH and AtomicETH are exclusive", info.Name)
		}
		if info.Has(ExtImmDt) && info.Has(ExtIETH) {
			t.Errorf("%s: ImmDt and IETH are exclusive", info.Name)
		}
		if info.Transport != op.Transport() {
			t.Errorf("%s: transport %s, opcode bits say %s", info.Name, info.Transport, op.Transport())
		}
		if want := info.Transport.String(); !strings.HasPrefix(info.Name, want) {
			t.Errorf("%s: name does not start with %s", info.Name, want)
		}
		kinds := 0
		for _, k := range []OpFlags{Request, Response, Ack, Notify} {
			if info.Flags.Has(k) {
				kinds++
			}
		}
		if kinds != 1 {
			t.Errorf("%s: %d of request/response/ack/notify", info.Name, kinds)
		}
		pos := info.Flags & (First | Middle | Last)
		if pos != First && pos != Middle && pos != Last && pos != Only {
			t.Errorf("%s: position flags %#x", info.Name, pos)
		}
		if strings.Contains(info.Name, "_ONLY") != (pos == Only) && info.Transport != TransportCNP &&
			op != RCAcknowledge && op != RCAtomicAcknowledge && op != RCReadRequest && !info.Flags.Has(Atomic) {
			t.Errorf("%s: name and ONLY flags disagree", info.Name)
		}
		if strings.Contains(info.Name, "IMMEDIATE") != info.Has(ExtImmDt) {
			t.Errorf("%s: name and ImmDt disagree", info.Name)
		}
		if strings.Contains(info.Name, "INVALIDATE") != info.Has(ExtIETH) {
			t.Errorf("%s: name and IETH disagree", info.Name)
		}
		if (info.Transport == TransportUD) != info.Has(ExtDETH) {
			t.Errorf("%s: UD iff DETH", info.Name)
		}
		noPayload := info.Flags.Has(Ack) || op == RCReadRequest || info.Flags.Has(Request|Atomic) || info.Transport == TransportCNP
		if noPayload == info.Flags.Has(Payload) {
			t.Errorf("%s: payload flag %v", info.Name, info.Flags.Has(Payload))
		}
	}
	if valid != 39 {
		t.Errorf("%d decodable opcodes, want 23 RC + 12 UC + 2 UD + CNP + IB CN = 39", valid)
	}
}

// TestOpcodeNames pins every name and value to Linux ib_pack.h.
func TestOpcodeNames(t *testing.T) {
	for _, tc := range []struct {
		op   Opcode
		name string
	}{
		{0x00, "RC_SEND_FIRST"}, {0x01, "RC_SEND_MIDDLE"}, {0x02, "RC_SEND_LAST"},
		{0x03, "RC_SEND_LAST_WITH_IMMEDIATE"}, {0x04, "RC_SEND_ONLY"}, {0x05, "RC_SEND_ONLY_WITH_IMMEDIATE"},
		{0x06, "RC_RDMA_WRITE_FIRST"}, {0x07, "RC_RDMA_WRITE_MIDDLE"}, {0x08, "RC_RDMA_WRITE_LAST"},
		{0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE"}, {0x0A, "RC_RDMA_WRITE_ONLY"},
		{0x0B, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"}, {0x0C, "RC_RDMA_READ_REQUEST"},
		{0x0D, "RC_RDMA_READ_RESPONSE_FIRST"}, {0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE"},
		{0x0F, "RC_RDMA_READ_RESPONSE_LAST"}, {0x10, "RC_RDMA_READ_RESPONSE_ONLY"},
		{0x11, "RC_ACKNOWLEDGE"}, {0x12, "RC_ATOMIC_ACKNOWLEDGE"}, {0x13, "RC_COMPARE_SWAP"},
		{0x14, "RC_FETCH_ADD"}, {0x15, "opcode(0x15)"}, {0x16, "RC_SEND_LAST_WITH_INVALIDATE"},
		{0x17, "RC_SEND_ONLY_WITH_INVALIDATE"},
		{0x20, "UC_SEND_FIRST"}, {0x21, "UC_SEND_MIDDLE"}, {0x22, "UC_SEND_LAST"},
		{0x23, "UC_SEND_LAST_WITH_IMMEDIATE"}, {0x24, "UC_SEND_ONLY"}, {0x25, "UC_SEND_ONLY_WITH_IMMEDIATE"},
		{0x26, "UC_RDMA_WRITE_FIRST"}, {0x27, "UC_RDMA_WRITE_MIDDLE"}, {0x28, "UC_RDMA_WRITE_LAST"},
		{0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE"}, {0x2A, "UC_RDMA_WRITE_ONLY"},
		{0x2B, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"}, {0x2C, "opcode(0x2c)"},
		{0x64, "UD_SEND_ONLY"}, {0x65, "UD_SEND_ONLY_WITH_IMMEDIATE"}, {0x66, "opcode(0x66)"},
		{0x80, "CNP_IB"}, {0x81, "CNP"},
	} {
		if got := tc.op.String(); got != tc.name {
			t.Errorf("0x%02x: %q, want %q", uint8(tc.op), got, tc.name)
		}
	}
}

// TestOpcodeReasons: reserved opcodes are invalid, RD/XRC/vendor/newer RC
// opcodes unsupported.
func TestOpcodeReasons(t *testing.T) {
	for _, tc := range []struct {
		op   Opcode
		want wire.Reason
	}{
		{0x15, wire.ReasonInvalid}, {0x18, wire.ReasonInvalid}, {0x1C, wire.ReasonUnsupported},
		{0x1D, wire.ReasonUnsupported}, {0x1F, wire.ReasonInvalid}, {0x2C, wire.ReasonInvalid},
		{0x40, wire.ReasonUnsupported}, {0x55, wire.ReasonUnsupported}, {0x60, wire.ReasonInvalid},
		{0x66, wire.ReasonInvalid}, {0x82, wire.ReasonInvalid},
		{0xA0, wire.ReasonUnsupported}, {0xB7, wire.ReasonUnsupported}, {0xC0, wire.ReasonInvalid},
		{0xE0, wire.ReasonUnsupported}, {0xFF, wire.ReasonUnsupported},
	} {
		b := make(BTH, BTHSize)
		b.Encode(&BTHFields{OpCode: tc.op, PKey: DefaultPKey})
		err := b.Validate(34)
		var we *wire.Error
		if !errors.As(err, &we) || we.Header != "BTH" || we.Field != "OpCode" || we.Reason != tc.want || we.Offset != 34 {
			t.Errorf("0x%02x: %v, want BTH.OpCode %s at 34", uint8(tc.op), err, tc.want)
		}
	}
}
