package mad

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// MAD is a view of a Management Datagram (IBA 13.4.2): a 24-byte common
// header followed by class-specific data, 256 bytes in all for the
// subnet management class (IBA 13.4.1: every MAD on QP0/QP1 is exactly
// 256 bytes).
//
//	 0               1               2               3
//	+---------------+---------------+---------------+-+-------------+
//	|  BaseVersion  |  MgmtClass    | ClassVersion  |R|   Method    |  0
//	+---------------+---------------+---------------+-+-------------+
//	|            Status             |         ClassSpecific         |  4
//	+-------------------------------+-------------------------------+
//	|                        TransactionID (64)                     |  8
//	+-------------------------------+-------------------------------+
//	|          AttributeID          |           Reserved            | 16
//	+-------------------------------+-------------------------------+
//	|                      AttributeModifier                        | 20
//	+---------------------------------------------------------------+
//
// The R bit is the response bit; Method values below include it (GetResp
// is 0x81), as Wireshark and the Linux ib_mad.h constants do.
type MAD []byte

const (
	// Size is the size of every SMP and GMP (IBA 13.4.1).
	Size = 256
	// HeaderSize is the size of the common MAD header.
	HeaderSize = 24
	// BaseVersion is the only defined MAD base version.
	BaseVersion = 1

	madBaseVersion  = 0
	madMgmtClass    = 1
	madClassVersion = 2
	madMethod       = 3
	madStatus       = 4
	madClassSpec    = 6
	madTID          = 8
	madAttrID       = 16
	madResv         = 18
	madAttrMod      = 20
)

// Management classes (IBA Table 102).
const (
	ClassSubnLID = 0x01 // subnet management, LID routed
	ClassSubnDR  = 0x81 // subnet management, directed route
)

// SMPClassVersion is the class version of the subnet management class.
const SMPClassVersion = 1

// Methods (IBA Table 103, 14.2.2); the response bit is included.
const (
	MethodGet         = 0x01
	MethodSet         = 0x02
	MethodSend        = 0x03
	MethodTrap        = 0x05
	MethodTrapRepress = 0x07
	MethodGetResp     = 0x81
	MethodResponse    = 0x80 // the R bit
)

// MAD status bits (IBA Table 104), in the 15 low bits of the status field.
const (
	StatusBusy             = 0x0001
	StatusRedirect         = 0x0002
	StatusBadVersion       = 0x0004 // bad base or class version
	StatusMethodUnsupp     = 0x0008 // method not supported
	StatusMethodAttrUnsupp = 0x000C // method/attribute combination not supported
	StatusInvalidField     = 0x001C // an attribute or modifier field is invalid
)

// BaseVersion .. AttributeModifier read the common header.
func (b MAD) BaseVersion() uint8        { return b[madBaseVersion] }
func (b MAD) MgmtClass() uint8          { return b[madMgmtClass] }
func (b MAD) ClassVersion() uint8       { return b[madClassVersion] }
func (b MAD) Method() uint8             { return b[madMethod] }
func (b MAD) IsResponse() bool          { return b[madMethod]&MethodResponse != 0 }
func (b MAD) Status() uint16            { return binary.BigEndian.Uint16(b[madStatus:]) }
func (b MAD) ClassSpecific() uint16     { return binary.BigEndian.Uint16(b[madClassSpec:]) }
func (b MAD) TransactionID() uint64     { return binary.BigEndian.Uint64(b[madTID:]) }
func (b MAD) AttributeID() uint16       { return binary.BigEndian.Uint16(b[madAttrID:]) }
func (b MAD) AttributeModifier() uint32 { return binary.BigEndian.Uint32(b[madAttrMod:]) }

// SetMethod .. SetAttributeModifier write single fields.
func (b MAD) SetMethod(m uint8)             { b[madMethod] = m }
func (b MAD) SetStatus(s uint16)            { binary.BigEndian.PutUint16(b[madStatus:], s) }
func (b MAD) SetTransactionID(t uint64)     { binary.BigEndian.PutUint64(b[madTID:], t) }
func (b MAD) SetAttributeModifier(m uint32) { binary.BigEndian.PutUint32(b[madAttrMod:], m) }

// Fields is the common header in struct form.
type Fields struct {
	BaseVersion   uint8
	MgmtClass     uint8
	ClassVersion  uint8
	Method        uint8 // with the R bit
	Status        uint16
	ClassSpecific uint16
	TransactionID uint64
	AttributeID   uint16
	AttrModifier  uint32
}

// Encode writes the 24-byte common header; the reserved field is zeroed.
func (b MAD) Encode(f *Fields) {
	_ = b[HeaderSize-1]
	b[madBaseVersion] = f.BaseVersion
	b[madMgmtClass] = f.MgmtClass
	b[madClassVersion] = f.ClassVersion
	b[madMethod] = f.Method
	binary.BigEndian.PutUint16(b[madStatus:], f.Status)
	binary.BigEndian.PutUint16(b[madClassSpec:], f.ClassSpecific)
	binary.BigEndian.PutUint64(b[madTID:], f.TransactionID)
	binary.BigEndian.PutUint16(b[madAttrID:], f.AttributeID)
	binary.BigEndian.PutUint16(b[madResv:], 0)
	binary.BigEndian.PutUint32(b[madAttrMod:], f.AttrModifier)
}

// Fields returns the common header.
func (b MAD) Fields() Fields {
	return Fields{
		BaseVersion: b.BaseVersion(), MgmtClass: b.MgmtClass(), ClassVersion: b.ClassVersion(),
		Method: b.Method(), Status: b.Status(), ClassSpecific: b.ClassSpecific(),
		TransactionID: b.TransactionID(), AttributeID: b.AttributeID(), AttrModifier: b.AttributeModifier(),
	}
}

// Validate checks the header on its own: length (a whole 256-byte MAD)
// and BaseVersion 1. Reserved bits are ignored, as IBA asks of receivers.
// offset is the MAD's position in the packet, for errors.
func (b MAD) Validate(offset int) error {
	if len(b) < Size {
		return wire.Truncated("MAD", "", offset, Size, len(b))
	}
	if len(b) > Size {
		return wire.Errorf("MAD", "", offset, wire.ReasonInconsistent, "%d bytes, a MAD on QP0/QP1 is %d", len(b), Size)
	}
	if v := b.BaseVersion(); v != BaseVersion {
		return wire.Errorf("MAD", "BaseVersion", offset+madBaseVersion, wire.ReasonUnsupported, "base version %d, only %d is defined", v, BaseVersion)
	}
	return nil
}

// MethodName is the IBA name of a method, for logs and dumps.
func MethodName(m uint8) string {
	switch m {
	case MethodGet:
		return "Get"
	case MethodSet:
		return "Set"
	case MethodSend:
		return "Send"
	case MethodTrap:
		return "Trap"
	case MethodTrapRepress:
		return "TrapRepress"
	case MethodGetResp:
		return "GetResp"
	}
	return "Method(" + hex8(m) + ")"
}

func hex8(v uint8) string {
	const d = "0123456789abcdef"
	return "0x" + string([]byte{d[v>>4], d[v&15]})
}
