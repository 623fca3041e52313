package bth

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// BTH is a view of the 12-byte Base Transport Header (IBA 9.2,
// wire-formats.md §4). Accessors do not bounds-check: call Validate (or
// decode through Headers / Packet) first.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    OpCode     |S|M|Pad| TVer  |            P_Key              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|F|B|  resv6a   |                    DestQP                     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|   resv7     |                      PSN                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Byte 4 (FECN, BECN, resv6a; "Resv8a" in IBA 1.2.1) is the byte the ICRC
// masks, so switches may set FECN and NICs BECN without recomputing it.
type BTH []byte

// BTHSize is the length of the BTH.
const BTHSize = 12

const (
	bthOpCode = 0
	bthFlags  = 1 // SE | M | PadCnt | TVer
	bthPKey   = 2
	bthResv8a = 4 // FECN | BECN | resv6a
	bthDestQP = 5
	bthAckReq = 8 // A | resv7
	bthPSN    = 9

	bthSE      = 0x80
	bthMigReq  = 0x40
	bthPadMask = 0x30
	bthPadShft = 4
	bthTVer    = 0x0F
	bthFECN    = 0x80
	bthBECN    = 0x40
	bthResv6a  = 0x3F
	bthA       = 0x80
	bthResv7   = 0x7F
)

// DefaultPKey is the default partition key (full membership, default partition).
const DefaultPKey = 0xFFFF

// QPNMask masks a 24-bit queue pair number.
const QPNMask = 1<<24 - 1

func (b BTH) OpCode() Opcode     { return Opcode(b[bthOpCode]) }
func (b BTH) SE() bool           { return b[bthFlags]&bthSE != 0 }
func (b BTH) MigReq() bool       { return b[bthFlags]&bthMigReq != 0 }
func (b BTH) PadCount() int      { return int(b[bthFlags]&bthPadMask) >> bthPadShft }
func (b BTH) TVer() uint8        { return b[bthFlags] & bthTVer }
func (b BTH) PKey() uint16       { return binary.BigEndian.Uint16(b[bthPKey:]) }
func (b BTH) FECN() bool         { return b[bthResv8a]&bthFECN != 0 }
func (b BTH) BECN() bool         { return b[bthResv8a]&bthBECN != 0 }
func (b BTH) Resv6a() uint8      { return b[bthResv8a] & bthResv6a }
func (b BTH) DestQP() uint32     { return uint24(b[bthDestQP:]) }
func (b BTH) AckReq() bool       { return b[bthAckReq]&bthA != 0 }
func (b BTH) Resv7() uint8       { return b[bthAckReq] & bthResv7 }
func (b BTH) PSN() uint32        { return uint24(b[bthPSN:]) }
func (b BTH) Info() *OpInfo      { return &opTable[b[bthOpCode]] }
func (b BTH) SetOpCode(o Opcode) { b[bthOpCode] = uint8(o) }
func (b BTH) SetSE(v bool)       { setBit(&b[bthFlags], bthSE, v) }
func (b BTH) SetMigReq(v bool)   { setBit(&b[bthFlags], bthMigReq, v) }
func (b BTH) SetPKey(p uint16)   { binary.BigEndian.PutUint16(b[bthPKey:], p) }
func (b BTH) SetFECN(v bool)     { setBit(&b[bthResv8a], bthFECN, v) }
func (b BTH) SetBECN(v bool)     { setBit(&b[bthResv8a], bthBECN, v) }
func (b BTH) SetDestQP(q uint32) { putUint24(b[bthDestQP:], q) }
func (b BTH) SetAckReq(v bool)   { setBit(&b[bthAckReq], bthA, v) }
func (b BTH) SetPSN(psn uint32)  { putUint24(b[bthPSN:], psn) }

// SetPadCount sets PadCnt (0..3; higher bits are dropped).
func (b BTH) SetPadCount(n int) {
	b[bthFlags] = b[bthFlags]&^bthPadMask | uint8(n&3)<<bthPadShft
}

// SetTVer sets the transport version. Only 0 is valid; the setter exists so
// tests can build the invalid case.
func (b BTH) SetTVer(v uint8) { b[bthFlags] = b[bthFlags]&^bthTVer | v&bthTVer }

// BTHFields holds every BTH field for Encode. Reserved bits are written as 0.
type BTHFields struct {
	OpCode   Opcode
	SE       bool
	MigReq   bool
	PadCount int // 0..3
	TVer     uint8
	PKey     uint16
	FECN     bool
	BECN     bool
	DestQP   uint32 // 24 bits
	AckReq   bool
	PSN      uint32 // 24 bits
}

// Encode writes f into the first BTHSize bytes of b.
func (b BTH) Encode(f *BTHFields) {
	_ = b[BTHSize-1]
	b[bthOpCode] = uint8(f.OpCode)
	b[bthFlags] = boolBit(f.SE, bthSE) | boolBit(f.MigReq, bthMigReq) |
		uint8(f.PadCount&3)<<bthPadShft | f.TVer&bthTVer
	binary.BigEndian.PutUint16(b[bthPKey:], f.PKey)
	b[bthResv8a] = boolBit(f.FECN, bthFECN) | boolBit(f.BECN, bthBECN)
	putUint24(b[bthDestQP:], f.DestQP)
	b[bthAckReq] = boolBit(f.AckReq, bthA)
	putUint24(b[bthPSN:], f.PSN)
}

// Fields returns every field of the header.
func (b BTH) Fields() BTHFields {
	return BTHFields{
		OpCode: b.OpCode(), SE: b.SE(), MigReq: b.MigReq(), PadCount: b.PadCount(),
		TVer: b.TVer(), PKey: b.PKey(), FECN: b.FECN(), BECN: b.BECN(),
		DestQP: b.DestQP(), AckReq: b.AckReq(), PSN: b.PSN(),
	}
}

// Validate checks the header on its own: length, a decodable opcode,
// TVer == 0 and zero reserved bits. offset is the header's position in the
// frame, reported in the error. Checks that need the packet length (PadCnt,
// payload) are in Headers.Decode.
func (b BTH) Validate(offset int) error {
	if len(b) < BTHSize {
		return wire.Truncated("BTH", "", offset, BTHSize, len(b))
	}
	if op := b.OpCode(); !op.Valid() {
		r := wire.ReasonInvalid
		if op.unsupported() {
			r = wire.ReasonUnsupported
		}
		return wire.Errorf("BTH", "OpCode", offset, r, "%s (%s transport)", op, op.Transport())
	}
	if v := b.TVer(); v != 0 {
		return wire.Errorf("BTH", "TVer", offset, wire.ReasonInvalid, "transport version %d, must be 0", v)
	}
	if r := b.Resv6a(); r != 0 {
		return wire.Errorf("BTH", "Resv6a", offset, wire.ReasonInvalid, "reserved bits 0x%02x, must be 0", r)
	}
	if r := b.Resv7(); r != 0 {
		return wire.Errorf("BTH", "Resv7", offset, wire.ReasonInvalid, "reserved bits 0x%02x, must be 0", r)
	}
	return nil
}

func uint24(b []byte) uint32 {
	_ = b[2]
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
}

func putUint24(b []byte, v uint32) {
	_ = b[2]
	b[0] = byte(v >> 16)
	b[1] = byte(v >> 8)
	b[2] = byte(v)
}

func setBit(p *byte, mask byte, v bool) {
	if v {
		*p |= mask
	} else {
		*p &^= mask
	}
}

func boolBit(v bool, mask byte) byte {
	if v {
		return mask
	}
	return 0
}
