package bth

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// DETH is a view of the 8-byte Datagram Extended Transport Header
// (IBA 9.3.2), carried by every UD packet.
//
//	+-------------------------------+
//	|             Q_Key             |  bytes 0-3
//	+-------+-----------------------+
//	| resv8 |         SrcQP         |  byte 4, bytes 5-7
//	+-------+-----------------------+
type DETH []byte

// DETHSize is the length of the DETH.
const DETHSize = 8

// GSIQKey is the well-known Q_Key of QP1, the General Services Interface
// (IBA 13.4.6.1; rxe_hdr.h GSI_QKEY).
const GSIQKey = 0x80010000

const (
	dethQKey  = 0
	dethResv8 = 4
	dethSrcQP = 5
)

func (b DETH) QKey() uint32      { return binary.BigEndian.Uint32(b[dethQKey:]) }
func (b DETH) Resv8() uint8      { return b[dethResv8] }
func (b DETH) SrcQP() uint32     { return uint24(b[dethSrcQP:]) }
func (b DETH) SetQKey(v uint32)  { binary.BigEndian.PutUint32(b[dethQKey:], v) }
func (b DETH) SetSrcQP(v uint32) { putUint24(b[dethSrcQP:], v) }

// DETHFields holds the DETH fields for Encode; the reserved byte is written 0.
type DETHFields struct {
	QKey  uint32
	SrcQP uint32 // 24 bits
}

// Encode writes f into the first DETHSize bytes of b.
func (b DETH) Encode(f *DETHFields) {
	_ = b[DETHSize-1]
	b.SetQKey(f.QKey)
	b[dethResv8] = 0
	b.SetSrcQP(f.SrcQP)
}

// Fields returns every field of the header.
func (b DETH) Fields() DETHFields { return DETHFields{QKey: b.QKey(), SrcQP: b.SrcQP()} }

// Validate checks the length and that the reserved byte is zero.
func (b DETH) Validate(offset int) error {
	if len(b) < DETHSize {
		return wire.Truncated("DETH", "", offset, DETHSize, len(b))
	}
	if r := b.Resv8(); r != 0 {
		return wire.Errorf("DETH", "Resv8", offset+dethResv8, wire.ReasonInvalid, "reserved byte 0x%02x, must be 0", r)
	}
	return nil
}
