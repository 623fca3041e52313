package bth

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// ImmDt is a view of the 4-byte Immediate Data header (IBA 9.3.3.3), carried
// by the "with Immediate" SEND and RDMA WRITE opcodes. The value is opaque to
// the transport and delivered to the receiver's completion.
type ImmDt []byte

// ImmDtSize is the length of the ImmDt header.
const ImmDtSize = 4

func (b ImmDt) Value() uint32     { return binary.BigEndian.Uint32(b) }
func (b ImmDt) SetValue(v uint32) { binary.BigEndian.PutUint32(b, v) }

// Encode writes the immediate value into the first ImmDtSize bytes of b.
func (b ImmDt) Encode(v uint32) { b.SetValue(v) }

// Validate checks the length.
func (b ImmDt) Validate(offset int) error {
	if len(b) < ImmDtSize {
		return wire.Truncated("ImmDt", "", offset, ImmDtSize, len(b))
	}
	return nil
}

// IETH is a view of the 4-byte Invalidate Extended Transport Header
// (IBA 9.3.3.4): the R_Key that SEND with Invalidate asks the responder to
// invalidate.
type IETH []byte

// IETHSize is the length of the IETH.
const IETHSize = 4

func (b IETH) RKey() uint32     { return binary.BigEndian.Uint32(b) }
func (b IETH) SetRKey(v uint32) { binary.BigEndian.PutUint32(b, v) }

// Encode writes the R_Key into the first IETHSize bytes of b.
func (b IETH) Encode(rkey uint32) { b.SetRKey(rkey) }

// Validate checks the length.
func (b IETH) Validate(offset int) error {
	if len(b) < IETHSize {
		return wire.Truncated("IETH", "", offset, IETHSize, len(b))
	}
	return nil
}
