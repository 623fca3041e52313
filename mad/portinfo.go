package mad

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// PortInfo is a view of the 64-byte PortInfo attribute (IBA 14.2.5.6).
// This emulator reads and writes the fields below (byte offsets); the
// error counters and other fields are written 0:
//
//	 0 M_Key(64)  8 GidPrefix(64)  16 LID(16)  18 MasterSMLID(16)
//	20 CapabilityMask(32)  24 DiagCode(16)  26 M_KeyLeasePeriod(16)
//	28 LocalPortNum(8)  29 LinkWidthEnabled(8)  30 LinkWidthSupported(8)  31 LinkWidthActive(8)
//	32 LinkSpeedSupported(4) | PortState(4)
//	33 PortPhysicalState(4) | LinkDownDefaultState(4)
//	34 M_KeyProtectBits(2) | Reserved(3) | LMC(3)
//	35 LinkSpeedActive(4) | LinkSpeedEnabled(4)
//	36 NeighborMTU(4) | MasterSMSL(4)
//	37 VLCap(4) | InitType(4)
//	38 VLHighLimit(8)  39 VLArbitrationHighCap(8)  40 VLArbitrationLowCap(8)
//	41 InitTypeReply(4) | MTUCap(4)
//	42 VLStallCount(3) | HOQLife(5)
//	43 OperationalVLs(4) | PartitionEnforcementInbound/Outbound, FilterRawInbound/Outbound(1 each)
//	44 M_KeyViolations(16)  46 P_KeyViolations(16)  48 Q_KeyViolations(16)
//	50 GUIDCap(8)  51 ClientReregister(1) | Reserved(2) | SubnetTimeOut(5)
//	52 Reserved(3) | RespTimeValue(5)  53 LocalPhyErrors(4) | OverrunErrors(4)
//	54 MaxCreditHint(16)  56 Reserved(8) | LinkRoundTripLatency(24)
//	60 CapabilityMask2(16)  62 LinkSpeedExtActive(4) | LinkSpeedExtSupported(4)
//	63 Reserved(3) | LinkSpeedExtEnabled(5)
//
// The extended speeds (FDR, EDR, HDR) were added in IBA 1.3; a port
// running one reports it in LinkSpeedExtActive (LinkSpeedActive then
// holds the highest legacy speed).
//
// On a switch only port 0 (the management port) has a LID; the LID of an
// external port is undefined and written 0.
type PortInfo []byte

// PortInfoSize is the size of the attribute.
const PortInfoSize = 64

// Port states (PortInfo.PortState, IBA Table 148). In a Set, 0 means "no
// state change".
const (
	PortStateNoChange = 0
	PortStateDown     = 1
	PortStateInit     = 2
	PortStateArmed    = 3
	PortStateActive   = 4
)

// Physical port states (PortInfo.PortPhysicalState).
const (
	PhysStateNoChange     = 0
	PhysStateSleep        = 1
	PhysStatePolling      = 2
	PhysStateDisabled     = 3
	PhysStateTraining     = 4
	PhysStateLinkUp       = 5
	PhysStateErrorRecover = 6
	PhysStatePhyTest      = 7
)

// MTU codes (NeighborMTU, MTUCap; IBA 14.2.5.6).
const (
	MTU256  = 1
	MTU512  = 2
	MTU1024 = 3
	MTU2048 = 4
	MTU4096 = 5
)

// Link widths (LinkWidth*, bit masks) and speeds (LinkSpeed*, LinkSpeedExt*).
const (
	Width1X  = 1
	Width4X  = 2
	Width8X  = 4
	Width12X = 8

	SpeedSDR = 1 // 2.5 Gb/s per lane
	SpeedDDR = 2 // 5
	SpeedQDR = 4 // 10

	SpeedExtFDR = 1 // 14.0625 Gb/s per lane
	SpeedExtEDR = 2 // 25.78125
	SpeedExtHDR = 4 // 53.125
)

// CapabilityMask bits used here.
const (
	CapIsSM               = 1 << 1
	CapIsTrapSupported    = 1 << 5
	CapIsSystemImageGUID  = 1 << 11
	CapIsSMDisabled       = 1 << 10
	CapIsCMSupported      = 1 << 16
	CapIsDeviceManagement = 1 << 19
)

func (b PortInfo) MKey() uint64           { return binary.BigEndian.Uint64(b[0:]) }
func (b PortInfo) GIDPrefix() uint64      { return binary.BigEndian.Uint64(b[8:]) }
func (b PortInfo) LID() uint16            { return binary.BigEndian.Uint16(b[16:]) }
func (b PortInfo) MasterSMLID() uint16    { return binary.BigEndian.Uint16(b[18:]) }
func (b PortInfo) CapabilityMask() uint32 { return binary.BigEndian.Uint32(b[20:]) }
func (b PortInfo) LocalPortNum() uint8    { return b[28] }
func (b PortInfo) LinkWidthEnabled() uint8 {
	return b[29]
}
func (b PortInfo) LinkWidthSupported() uint8 { return b[30] }
func (b PortInfo) LinkWidthActive() uint8    { return b[31] }
func (b PortInfo) LinkSpeedSupported() uint8 { return b[32] >> 4 }
func (b PortInfo) PortState() uint8          { return b[32] & 0x0F }
func (b PortInfo) PhysState() uint8          { return b[33] >> 4 }
func (b PortInfo) LinkDownDefault() uint8    { return b[33] & 0x0F }
func (b PortInfo) LMC() uint8                { return b[34] & 0x07 }
func (b PortInfo) LinkSpeedActive() uint8    { return b[35] >> 4 }
func (b PortInfo) LinkSpeedEnabled() uint8   { return b[35] & 0x0F }
func (b PortInfo) NeighborMTU() uint8        { return b[36] >> 4 }
func (b PortInfo) MasterSMSL() uint8         { return b[36] & 0x0F }
func (b PortInfo) VLCap() uint8              { return b[37] >> 4 }
func (b PortInfo) MTUCap() uint8             { return b[41] & 0x0F }
func (b PortInfo) OperationalVLs() uint8     { return b[43] >> 4 }
func (b PortInfo) SubnetTimeOut() uint8      { return b[51] & 0x1F }
func (b PortInfo) LinkSpeedExtActive() uint8 { return b[62] >> 4 }
func (b PortInfo) LinkSpeedExtSupported() uint8 {
	return b[62] & 0x0F
}
func (b PortInfo) LinkSpeedExtEnabled() uint8 { return b[63] & 0x1F }

// PortInfoFields is PortInfo in struct form (the modelled fields).
type PortInfoFields struct {
	MKey               uint64
	GIDPrefix          uint64
	LID                uint16
	MasterSMLID        uint16
	CapabilityMask     uint32
	LocalPortNum       uint8
	LinkWidthEnabled   uint8
	LinkWidthSupported uint8
	LinkWidthActive    uint8
	LinkSpeedSupported uint8
	PortState          uint8
	PhysState          uint8
	LinkDownDefault    uint8
	LMC                uint8
	LinkSpeedActive    uint8
	LinkSpeedEnabled   uint8
	NeighborMTU        uint8
	MasterSMSL         uint8
	VLCap              uint8
	VLHighLimit        uint8
	VLArbHighCap       uint8
	VLArbLowCap        uint8
	MTUCap             uint8
	OperationalVLs     uint8
	SubnetTimeOut      uint8
	LinkSpeedExtActive uint8
	LinkSpeedExtSupp   uint8
	LinkSpeedExtEnable uint8
}

// Encode writes the 64 bytes, unmodelled fields 0.
func (b PortInfo) Encode(f *PortInfoFields) {
	_ = b[PortInfoSize-1]
	clear(b[:PortInfoSize])
	binary.BigEndian.PutUint64(b[0:], f.MKey)
	binary.BigEndian.PutUint64(b[8:], f.GIDPrefix)
	binary.BigEndian.PutUint16(b[16:], f.LID)
	binary.BigEndian.PutUint16(b[18:], f.MasterSMLID)
	binary.BigEndian.PutUint32(b[20:], f.CapabilityMask)
	b[28] = f.LocalPortNum
	b[29], b[30], b[31] = f.LinkWidthEnabled, f.LinkWidthSupported, f.LinkWidthActive
	b[32] = f.LinkSpeedSupported<<4 | f.PortState&0x0F
	b[33] = f.PhysState<<4 | f.LinkDownDefault&0x0F
	b[34] = f.LMC & 0x07
	b[35] = f.LinkSpeedActive<<4 | f.LinkSpeedEnabled&0x0F
	b[36] = f.NeighborMTU<<4 | f.MasterSMSL&0x0F
	b[37] = f.VLCap << 4
	b[38], b[39], b[40] = f.VLHighLimit, f.VLArbHighCap, f.VLArbLowCap
	b[41] = f.MTUCap & 0x0F
	b[43] = f.OperationalVLs << 4
	b[51] = f.SubnetTimeOut & 0x1F
	b[62] = f.LinkSpeedExtActive<<4 | f.LinkSpeedExtSupp&0x0F
	b[63] = f.LinkSpeedExtEnable & 0x1F
}

// Fields returns the modelled fields.
func (b PortInfo) Fields() PortInfoFields {
	return PortInfoFields{
		MKey: b.MKey(), GIDPrefix: b.GIDPrefix(), LID: b.LID(), MasterSMLID: b.MasterSMLID(),
		CapabilityMask: b.CapabilityMask(), LocalPortNum: b.LocalPortNum(),
		LinkWidthEnabled: b.LinkWidthEnabled(), LinkWidthSupported: b.LinkWidthSupported(), LinkWidthActive: b.LinkWidthActive(),
		LinkSpeedSupported: b.LinkSpeedSupported(), PortState: b.PortState(), PhysState: b.PhysState(),
		LinkDownDefault: b.LinkDownDefault(), LMC: b.LMC(), LinkSpeedActive: b.LinkSpeedActive(),
		LinkSpeedEnabled: b.LinkSpeedEnabled(), NeighborMTU: b.NeighborMTU(), MasterSMSL: b.MasterSMSL(),
		VLCap: b.VLCap(), VLHighLimit: b[38], VLArbHighCap: b[39], VLArbLowCap: b[40], MTUCap: b.MTUCap(),
		OperationalVLs: b.OperationalVLs(), SubnetTimeOut: b.SubnetTimeOut(),
		LinkSpeedExtActive: b.LinkSpeedExtActive(), LinkSpeedExtSupp: b.LinkSpeedExtSupported(),
		LinkSpeedExtEnable: b.LinkSpeedExtEnabled(),
	}
}

// Validate checks the length and the enumerated fields: PortState 0..4,
// PortPhysicalState 0..7, NeighborMTU and MTUCap 0..5 (0 only in a Set,
// meaning no change; IBA 14.2.5.6).
func (b PortInfo) Validate(offset int) error {
	if len(b) < PortInfoSize {
		return wire.Truncated("PortInfo", "", offset, PortInfoSize, len(b))
	}
	if s := b.PortState(); s > PortStateActive {
		return wire.Errorf("PortInfo", "PortState", offset+32, wire.ReasonInvalid, "port state %d, defined are 0..4", s)
	}
	if s := b.PhysState(); s > PhysStatePhyTest {
		return wire.Errorf("PortInfo", "PortPhysicalState", offset+33, wire.ReasonInvalid, "physical state %d, defined are 0..7", s)
	}
	if m := b.NeighborMTU(); m > MTU4096 {
		return wire.Errorf("PortInfo", "NeighborMTU", offset+36, wire.ReasonInvalid, "MTU code %d, defined are 1..5", m)
	}
	if m := b.MTUCap(); m > MTU4096 {
		return wire.Errorf("PortInfo", "MTUCap", offset+41, wire.ReasonInvalid, "MTU code %d, defined are 1..5", m)
	}
	return nil
}

// MTUBytes returns the MTU of an MTU code (256..4096), 0 for an undefined code.
func MTUBytes(code uint8) int {
	if code < MTU256 || code > MTU4096 {
		return 0
	}
	return 128 << code
}

// MTUCode returns the largest MTU code whose MTU is at most n bytes (0 if
// n < 256).
func MTUCode(n int) uint8 {
	c := uint8(0)
	for m := MTU256; m <= MTU4096; m++ {
		if 128<<m <= n {
			c = uint8(m)
		}
	}
	return c
}

// PortStateName is ibstat's name of a port state.
func PortStateName(s uint8) string {
	switch s {
	case PortStateDown:
		return "Down"
	case PortStateInit:
		return "Initializing"
	case PortStateArmed:
		return "Armed"
	case PortStateActive:
		return "Active"
	}
	return "Unknown"
}

// PhysStateName is ibstat's name of a physical port state.
func PhysStateName(s uint8) string {
	switch s {
	case PhysStateSleep:
		return "Sleep"
	case PhysStatePolling:
		return "Polling"
	case PhysStateDisabled:
		return "Disabled"
	case PhysStateTraining:
		return "PortConfigurationTraining"
	case PhysStateLinkUp:
		return "LinkUp"
	case PhysStateErrorRecover:
		return "LinkErrorRecovery"
	case PhysStatePhyTest:
		return "PhyTest"
	}
	return "Unknown"
}

// LaneGbps returns the signalling rate of one lane in Gb/s for a port's
// active speed: the extended speed when one is active, else the legacy one.
func LaneGbps(speed, speedExt uint8) float64 {
	switch speedExt {
	case SpeedExtFDR:
		return 14.0625
	case SpeedExtEDR:
		return 25.78125
	case SpeedExtHDR:
		return 53.125
	}
	switch speed {
	case SpeedSDR:
		return 2.5
	case SpeedDDR:
		return 5
	case SpeedQDR:
		return 10
	}
	return 0
}

// RateGbps is the port's rate as ibstat's Rate prints it: lanes times the
// rounded per-lane data rate, 14 (FDR), 25 (EDR) or 50 (HDR), else the
// legacy signalling rate (SDR/DDR/QDR use 8b/10b and ibstat prints the
// signalling figure): 4X FDR 56, EDR 100, HDR 200, QDR 40.
func (f *PortInfoFields) RateGbps() float64 {
	lanes := float64(Lanes(f.LinkWidthActive))
	switch f.LinkSpeedExtActive {
	case SpeedExtFDR:
		return 14 * lanes
	case SpeedExtEDR:
		return 25 * lanes
	case SpeedExtHDR:
		return 50 * lanes
	}
	return lanes * LaneGbps(f.LinkSpeedActive, 0)
}

// Lanes returns the lane count of a LinkWidthActive value.
func Lanes(width uint8) int {
	switch width {
	case Width1X:
		return 1
	case Width4X:
		return 4
	case Width8X:
		return 8
	case Width12X:
		return 12
	}
	return 0
}

// LinkFor returns the width, legacy speed and extended speed of the
// standard 4X link closest below bps (1X SDR for anything under 10 Gb/s):
// 4X HDR 200G, EDR 100G, FDR 56G, QDR 40G, DDR 20G, SDR 10G.
func LinkFor(bps uint64) (width, speed, speedExt uint8) {
	switch {
	case bps >= 200e9:
		return Width4X, SpeedQDR, SpeedExtHDR
	case bps >= 100e9:
		return Width4X, SpeedQDR, SpeedExtEDR
	case bps >= 56e9:
		return Width4X, SpeedQDR, SpeedExtFDR
	case bps >= 40e9:
		return Width4X, SpeedQDR, 0
	case bps >= 20e9:
		return Width4X, SpeedDDR, 0
	case bps >= 10e9:
		return Width4X, SpeedSDR, 0
	}
	return Width1X, SpeedSDR, 0
}
