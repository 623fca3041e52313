package mad

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/clock"
)

// Performance management (IBA 16.1, class 0x04): GMPs sent to a port's
// QP1 (the GSI, Q_Key GSIQKey) on a data VL, LID-routed. A PerfMgt MAD is
// the common header, 40 reserved bytes, then 192 bytes of attribute data
// (Linux ib_pma.h's struct ib_pma_mad).
const (
	ClassPerfMgt        = 0x04
	PerfMgtClassVersion = 1
	// GSIQP and GSIQKey address a port's General Services Interface.
	GSIQP   = 1
	GSIQKey = 0x80010000
	// PerfDataOffset is where a PerfMgt MAD's attribute data starts.
	PerfDataOffset = HeaderSize + 40

	AttrClassPortInfo = 0x0001
	AttrPortCounters  = 0x0012
)

// PortCounters is the PortCounters attribute (IBA 16.1.3.5): a port's
// error and traffic counters, each saturating at its width's maximum.
// Byte offsets (bit widths):
//
//	 0 reserved(8) PortSelect(8) CounterSelect(16)
//	 4 SymbolErrorCounter(16) LinkErrorRecoveryCounter(8) LinkDownedCounter(8)
//	 8 PortRcvErrors(16) PortRcvRemotePhysicalErrors(16)
//	12 PortRcvSwitchRelayErrors(16) PortXmitDiscards(16)
//	16 PortXmitConstraintErrors(8) PortRcvConstraintErrors(8) CounterSelect2(8)
//	   LocalLinkIntegrityErrors(4) ExcessiveBufferOverrunErrors(4)
//	20 reserved(16) VL15Dropped(16)
//	24 PortXmitData(32) 28 PortRcvData(32) 32 PortXmitPkts(32)
//	36 PortRcvPkts(32) 40 PortXmitWait(32)
//
// PortXmitData and PortRcvData count 4-byte words.
type PortCounters []byte

// PortCountersSize is the attribute's length.
const PortCountersSize = 44

// PortCountersFields are the values Encode writes (wider values saturate).
// PerfMgtCapXmitWait is the PerfMgt ClassPortInfo CapabilityMask bit that
// says PortCounters' PortXmitWait is counted (IB_PMA_CLASS_CAP_XMIT_WAIT,
// bit 12); perfquery prints the mask in its header.
const PerfMgtCapXmitWait = 0x1000

// XmitWaitTick is the tick PortXmitWait counts in, on every emulated
// port (emunic's PMA, emuswitch's port_xmit_wait and vlN_xmit_wait): one
// microsecond of lab time (the daemons' clock, dilated with the lab).
// IBA 16.1.3.5 counts PortXmitWait in ticks during which the port had data
// to send and sent none, and leaves the tick's length to the
// implementation; a microsecond keeps the 32-bit field from saturating
// for 71 minutes of waiting, and reads as the simulator report's
// port_xmit_wait_us. The time is the credit waits': from a VL's packet
// finding no credit until it leaves, summed over the VLs.
const XmitWaitTick = clock.Microsecond

// XmitWaitTicks is time t in PortXmitWait's ticks (XmitWaitTick), rounded
// down; a negative t is none.
func XmitWaitTicks(t clock.Time) uint64 { return uint64(max(t, 0) / XmitWaitTick) }

type PortCountersFields struct {
	PortSelect              uint8
	SymbolErrors            uint64
	LinkErrorRecovery       uint64
	LinkDowned              uint64
	RcvErrors               uint64
	RcvRemotePhysicalErrors uint64
	RcvSwitchRelayErrors    uint64
	XmitDiscards            uint64
	VL15Dropped             uint64
	// ExcessiveBufferOverrun counts packets received beyond the credit
	// the port granted (4 bits; IBA counts runs of such flow-control
	// periods, the emulator each packet).
	ExcessiveBufferOverrun uint64
	XmitData, RcvData      uint64 // in 4-byte words
	XmitPkts, RcvPkts      uint64
	XmitWait               uint64 // in XmitWaitTicks
}

func sat(v uint64, bits uint) uint64 { return min(v, 1<<bits-1) }

// Encode writes f into b (PortCountersSize bytes).
func (b PortCounters) Encode(f *PortCountersFields) {
	clear(b[:PortCountersSize])
	b[1] = f.PortSelect
	binary.BigEndian.PutUint16(b[4:], uint16(sat(f.SymbolErrors, 16)))
	b[6] = uint8(sat(f.LinkErrorRecovery, 8))
	b[7] = uint8(sat(f.LinkDowned, 8))
	binary.BigEndian.PutUint16(b[8:], uint16(sat(f.RcvErrors, 16)))
	binary.BigEndian.PutUint16(b[10:], uint16(sat(f.RcvRemotePhysicalErrors, 16)))
	binary.BigEndian.PutUint16(b[12:], uint16(sat(f.RcvSwitchRelayErrors, 16)))
	binary.BigEndian.PutUint16(b[14:], uint16(sat(f.XmitDiscards, 16)))
	b[19] = uint8(sat(f.ExcessiveBufferOverrun, 4)) // the low nibble; LocalLinkIntegrityErrors, the high, is 0
	binary.BigEndian.PutUint16(b[22:], uint16(sat(f.VL15Dropped, 16)))
	binary.BigEndian.PutUint32(b[24:], uint32(sat(f.XmitData, 32)))
	binary.BigEndian.PutUint32(b[28:], uint32(sat(f.RcvData, 32)))
	binary.BigEndian.PutUint32(b[32:], uint32(sat(f.XmitPkts, 32)))
	binary.BigEndian.PutUint32(b[36:], uint32(sat(f.RcvPkts, 32)))
	binary.BigEndian.PutUint32(b[40:], uint32(sat(f.XmitWait, 32)))
}

// Fields decodes the attribute.
func (b PortCounters) Fields() PortCountersFields {
	u16 := func(o int) uint64 { return uint64(binary.BigEndian.Uint16(b[o:])) }
	u32 := func(o int) uint64 { return uint64(binary.BigEndian.Uint32(b[o:])) }
	return PortCountersFields{
		PortSelect: b[1], SymbolErrors: u16(4), LinkErrorRecovery: uint64(b[6]), LinkDowned: uint64(b[7]),
		RcvErrors: u16(8), RcvRemotePhysicalErrors: u16(10), RcvSwitchRelayErrors: u16(12), XmitDiscards: u16(14),
		ExcessiveBufferOverrun: uint64(b[19] & 0x0F),
		VL15Dropped:            u16(22), XmitData: u32(24), RcvData: u32(28), XmitPkts: u32(32), RcvPkts: u32(36), XmitWait: u32(40),
	}
}
