package mad

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// SMP is a view of a 256-byte Subnet Management Packet (IBA 14.2.1).
//
// LID-routed (MgmtClass 0x01, IBA 14.2.1.1):
//
//	  0  MAD common header (24)
//	 24  M_Key (8)
//	 32  Reserved (32)
//	 64  SMP Data (64)
//	128  Reserved (128)
//
// Directed route (MgmtClass 0x81, IBA 14.2.1.2): the common header's Status
// is D(1) | Status(15) and its ClassSpecific field is HopPointer(8) |
// HopCount(8).
//
//	  0  MAD common header (24): ... | D | Status | HopPointer | HopCount | ...
//	 24  M_Key (8)
//	 32  DrSLID (2)
//	 34  DrDLID (2)
//	 36  Reserved (28)
//	 64  SMP Data (64)
//	128  InitialPath (64)
//	192  ReturnPath (64)
//
// InitialPath[i] and ReturnPath[i] are the port numbers of hop i (index 0
// is unused): the outgoing SMP leaves hop i's node through InitialPath[i],
// and each node records in ReturnPath[i] the port it arrived on, which is
// the way back (IBA 14.2.2).
type SMP []byte

const (
	// DataSize is the size of the SMP data (one attribute or block).
	DataSize = 64
	// MaxHops is the size of InitialPath / ReturnPath; HopCount must be
	// less than it (IBA C14-6: 0..63).
	MaxHops = 64
	// PermissiveLID is the LID that matches every port (IBA 4.1.3), used
	// in the LRH and as DrSLID/DrDLID of directed-route SMPs.
	PermissiveLID = 0xFFFF

	smpMKey        = 24
	smpDrSLID      = 32
	smpDrDLID      = 34
	smpData        = 64
	smpInitialPath = 128
	smpReturnPath  = 192
	smpDirection   = 0x8000 // D bit of the status field
	smpHopPointer  = 6
	smpHopCount    = 7
)

// MAD is the common header view.
func (b SMP) MAD() MAD { return MAD(b) }

// Directed reports whether the SMP is directed-route (MgmtClass 0x81).
func (b SMP) Directed() bool { return b[madMgmtClass] == ClassSubnDR }

// MKey is the management key.
func (b SMP) MKey() uint64 { return binary.BigEndian.Uint64(b[smpMKey:]) }

// Direction is the D bit of a directed-route SMP: false outbound (towards
// the destination), true returning (IBA 14.2.2).
func (b SMP) Direction() bool { return b.MAD().Status()&smpDirection != 0 }

// Status is the 15-bit status of a directed-route SMP (the D bit removed),
// or the whole status of a LID-routed one.
func (b SMP) Status() uint16 {
	if b.Directed() {
		return b.MAD().Status() &^ smpDirection
	}
	return b.MAD().Status()
}

// HopPointer and HopCount are the directed-route path cursor and length.
func (b SMP) HopPointer() uint8 { return b[smpHopPointer] }
func (b SMP) HopCount() uint8   { return b[smpHopCount] }

// DrSLID and DrDLID are the LIDs of the LID-routed parts before and after
// the directed-route part; PermissiveLID when there are none.
func (b SMP) DrSLID() uint16 { return binary.BigEndian.Uint16(b[smpDrSLID:]) }
func (b SMP) DrDLID() uint16 { return binary.BigEndian.Uint16(b[smpDrDLID:]) }

// Data is the 64-byte SMP data (aliases b).
func (b SMP) Data() []byte { return b[smpData : smpData+DataSize] }

// InitialPath and ReturnPath alias the 64-byte path arrays of a
// directed-route SMP.
func (b SMP) InitialPath() []byte { return b[smpInitialPath : smpInitialPath+MaxHops] }
func (b SMP) ReturnPath() []byte  { return b[smpReturnPath : smpReturnPath+MaxHops] }

// SetDirection sets or clears the D bit, keeping the status.
func (b SMP) SetDirection(d bool) {
	s := b.MAD().Status() &^ smpDirection
	if d {
		s |= smpDirection
	}
	b.MAD().SetStatus(s)
}

// SetStatus sets the status, keeping the D bit of a directed-route SMP.
func (b SMP) SetStatus(st uint16) {
	if b.Directed() {
		b.MAD().SetStatus(b.MAD().Status()&smpDirection | st&^smpDirection)
		return
	}
	b.MAD().SetStatus(st)
}

// SetHopPointer moves the directed-route cursor.
func (b SMP) SetHopPointer(p uint8) { b[smpHopPointer] = p }

// SMPFields is an SMP in struct form. For a LID-routed SMP the
// directed-route fields are not written (their bytes are reserved) and
// Data is the only payload.
type SMPFields struct {
	MgmtClass     uint8 // ClassSubnLID or ClassSubnDR
	Method        uint8
	Status        uint16 // 15 bits for directed route
	Direction     bool   // D bit (directed route)
	HopPointer    uint8
	HopCount      uint8
	TransactionID uint64
	AttributeID   uint16
	AttrModifier  uint32
	MKey          uint64
	DrSLID        uint16
	DrDLID        uint16
	Data          [DataSize]byte
	InitialPath   [MaxHops]byte
	ReturnPath    [MaxHops]byte
}

// Encode writes the whole 256-byte SMP, reserved bytes zero. b must hold
// Size bytes.
func (b SMP) Encode(f *SMPFields) {
	_ = b[Size-1]
	st, cs := f.Status, uint16(0)
	if f.MgmtClass == ClassSubnDR {
		st &^= smpDirection
		if f.Direction {
			st |= smpDirection
		}
		cs = uint16(f.HopPointer)<<8 | uint16(f.HopCount)
	}
	MAD(b).Encode(&Fields{
		BaseVersion: BaseVersion, MgmtClass: f.MgmtClass, ClassVersion: SMPClassVersion,
		Method: f.Method, Status: st, ClassSpecific: cs, TransactionID: f.TransactionID,
		AttributeID: f.AttributeID, AttrModifier: f.AttrModifier,
	})
	binary.BigEndian.PutUint64(b[smpMKey:], f.MKey)
	clear(b[smpDrSLID:smpData])
	if f.MgmtClass == ClassSubnDR {
		binary.BigEndian.PutUint16(b[smpDrSLID:], f.DrSLID)
		binary.BigEndian.PutUint16(b[smpDrDLID:], f.DrDLID)
	}
	copy(b[smpData:], f.Data[:])
	if f.MgmtClass == ClassSubnDR {
		copy(b[smpInitialPath:], f.InitialPath[:])
		copy(b[smpReturnPath:], f.ReturnPath[:])
	} else {
		clear(b[smpInitialPath:Size])
	}
}

// Fields fills f from the SMP.
func (b SMP) Fields(f *SMPFields) {
	m := MAD(b)
	*f = SMPFields{
		MgmtClass: m.MgmtClass(), Method: m.Method(), Status: b.Status(),
		TransactionID: m.TransactionID(), AttributeID: m.AttributeID(), AttrModifier: m.AttributeModifier(),
		MKey: b.MKey(),
	}
	copy(f.Data[:], b.Data())
	if b.Directed() {
		f.Direction = b.Direction()
		f.HopPointer, f.HopCount = b.HopPointer(), b.HopCount()
		f.DrSLID, f.DrDLID = b.DrSLID(), b.DrDLID()
		copy(f.InitialPath[:], b.InitialPath())
		copy(f.ReturnPath[:], b.ReturnPath())
	}
}

// Validate checks a received SMP: a whole MAD with base version 1, a
// subnet management class (0x01 or 0x81) of class version 1, and for
// directed route a HopCount below 64 (IBA C14-6) and a HopPointer no
// further than HopCount+1 (C14-9:5, C14-13:5). offset is the SMP's
// position in the packet, for errors.
func (b SMP) Validate(offset int) error {
	if err := MAD(b).Validate(offset); err != nil {
		if e, ok := err.(*wire.Error); ok {
			e.Header = "SMP"
		}
		return err
	}
	switch c := b[madMgmtClass]; c {
	case ClassSubnLID, ClassSubnDR:
	default:
		return wire.Errorf("SMP", "MgmtClass", offset+madMgmtClass, wire.ReasonInvalid,
			"class 0x%02x is not subnet management (0x01 or 0x81)", c)
	}
	if v := b[madClassVersion]; v != SMPClassVersion {
		return wire.Errorf("SMP", "ClassVersion", offset+madClassVersion, wire.ReasonUnsupported,
			"class version %d, subnet management is version %d", v, SMPClassVersion)
	}
	if !b.Directed() {
		return nil
	}
	hc, hp := b.HopCount(), b.HopPointer()
	if hc >= MaxHops {
		return wire.Errorf("SMP", "HopCount", offset+smpHopCount, wire.ReasonInvalid,
			"hop count %d, at most %d", hc, MaxHops-1)
	}
	if int(hp) > int(hc)+1 {
		return wire.Errorf("SMP", "HopPointer", offset+smpHopPointer, wire.ReasonInconsistent,
			"hop pointer %d beyond hop count %d + 1", hp, hc)
	}
	return nil
}

// LIDOrPermissive is the LID a port puts in an LRH: its own, or the
// permissive LID while no SM has given it one (IBA 14.2.2.1: a port with
// no LID sends directed-route SMPs from the permissive LID).
func LIDOrPermissive(lid uint16) uint16 {
	if lid == 0 {
		return PermissiveLID
	}
	return lid
}
