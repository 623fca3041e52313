package bth

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// AtomicETH is a view of the 28-byte Atomic Extended Transport Header
// (IBA 9.3.3.2) of CmpSwap and FetchAdd.
//
//	+-------------------------------+
//	|      VA (64 bit, 8-aligned)   |  bytes 0-7
//	+---------------+---------------+
//	|     R_Key     |                  bytes 8-11
//	+---------------+---------------+
//	|        Swap (or Add) Data     |  bytes 12-19
//	+-------------------------------+
//	|          Compare Data         |  bytes 20-27
//	+-------------------------------+
type AtomicETH []byte

// AtomicETHSize is the length of the AtomicETH.
const AtomicETHSize = 28

const (
	atomicVA      = 0
	atomicRKey    = 8
	atomicSwapAdd = 12
	atomicCompare = 20
)

func (b AtomicETH) VA() uint64          { return binary.BigEndian.Uint64(b[atomicVA:]) }
func (b AtomicETH) RKey() uint32        { return binary.BigEndian.Uint32(b[atomicRKey:]) }
func (b AtomicETH) SwapAdd() uint64     { return binary.BigEndian.Uint64(b[atomicSwapAdd:]) }
func (b AtomicETH) Compare() uint64     { return binary.BigEndian.Uint64(b[atomicCompare:]) }
func (b AtomicETH) SetVA(v uint64)      { binary.BigEndian.PutUint64(b[atomicVA:], v) }
func (b AtomicETH) SetRKey(v uint32)    { binary.BigEndian.PutUint32(b[atomicRKey:], v) }
func (b AtomicETH) SetSwapAdd(v uint64) { binary.BigEndian.PutUint64(b[atomicSwapAdd:], v) }
func (b AtomicETH) SetCompare(v uint64) { binary.BigEndian.PutUint64(b[atomicCompare:], v) }

// AtomicETHFields holds the AtomicETH fields for Encode. For FetchAdd,
// SwapAdd is the addend and Compare is ignored by the responder.
type AtomicETHFields struct {
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64
}

// Encode writes f into the first AtomicETHSize bytes of b.
func (b AtomicETH) Encode(f *AtomicETHFields) {
	_ = b[AtomicETHSize-1]
	b.SetVA(f.VA)
	b.SetRKey(f.RKey)
	b.SetSwapAdd(f.SwapAdd)
	b.SetCompare(f.Compare)
}

// Fields returns every field of the header.
func (b AtomicETH) Fields() AtomicETHFields {
	return AtomicETHFields{VA: b.VA(), RKey: b.RKey(), SwapAdd: b.SwapAdd(), Compare: b.Compare()}
}

// Validate checks the length. The 8-byte alignment of VA is a responder
// check (it answers with a NAK), not a wire-format error.
func (b AtomicETH) Validate(offset int) error {
	if len(b) < AtomicETHSize {
		return wire.Truncated("AtomicETH", "", offset, AtomicETHSize, len(b))
	}
	return nil
}

// AtomicAckETH is a view of the 8-byte Atomic Acknowledge Extended Transport
// Header (IBA 9.3.3.6): the original value at the target address.
type AtomicAckETH []byte

// AtomicAckETHSize is the length of the AtomicAckETH.
const AtomicAckETHSize = 8

func (b AtomicAckETH) OrigData() uint64     { return binary.BigEndian.Uint64(b) }
func (b AtomicAckETH) SetOrigData(v uint64) { binary.BigEndian.PutUint64(b, v) }

// Encode writes the original data into the first AtomicAckETHSize bytes of b.
func (b AtomicAckETH) Encode(orig uint64) { b.SetOrigData(orig) }

// Validate checks the length.
func (b AtomicAckETH) Validate(offset int) error {
	if len(b) < AtomicAckETHSize {
		return wire.Truncated("AtomicAckETH", "", offset, AtomicAckETHSize, len(b))
	}
	return nil
}
