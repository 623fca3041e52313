package bth

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// RETH is a view of the 16-byte RDMA Extended Transport Header (IBA 9.3.3.1),
// carried by RDMA WRITE FIRST/ONLY and RDMA READ REQUEST.
//
//	+-------------------------------+
//	|  VA (virtual address, 64 bit) |  bytes 0-7
//	+---------------+---------------+
//	|     R_Key     |    DMALen     |  bytes 8-11, 12-15
//	+---------------+---------------+
type RETH []byte

// RETHSize is the length of the RETH.
const RETHSize = 16

const (
	rethVA     = 0
	rethRKey   = 8
	rethDMALen = 12
)

func (b RETH) VA() uint64         { return binary.BigEndian.Uint64(b[rethVA:]) }
func (b RETH) RKey() uint32       { return binary.BigEndian.Uint32(b[rethRKey:]) }
func (b RETH) DMALen() uint32     { return binary.BigEndian.Uint32(b[rethDMALen:]) }
func (b RETH) SetVA(v uint64)     { binary.BigEndian.PutUint64(b[rethVA:], v) }
func (b RETH) SetRKey(v uint32)   { binary.BigEndian.PutUint32(b[rethRKey:], v) }
func (b RETH) SetDMALen(v uint32) { binary.BigEndian.PutUint32(b[rethDMALen:], v) }

// RETHFields holds the RETH fields for Encode.
type RETHFields struct {
	VA     uint64
	RKey   uint32
	DMALen uint32
}

// Encode writes f into the first RETHSize bytes of b.
func (b RETH) Encode(f *RETHFields) {
	_ = b[RETHSize-1]
	b.SetVA(f.VA)
	b.SetRKey(f.RKey)
	b.SetDMALen(f.DMALen)
}

// Fields returns every field of the header.
func (b RETH) Fields() RETHFields { return RETHFields{VA: b.VA(), RKey: b.RKey(), DMALen: b.DMALen()} }

// Validate checks the length; every RETH bit pattern is otherwise legal.
func (b RETH) Validate(offset int) error {
	if len(b) < RETHSize {
		return wire.Truncated("RETH", "", offset, RETHSize, len(b))
	}
	return nil
}
