package mad

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// SwitchInfo is a view of the SwitchInfo attribute (IBA 14.2.5.4):
//
//	 0 LinearFDBCap(16)     2 RandomFDBCap(16)
//	 4 MulticastFDBCap(16)  6 LinearFDBTop(16)
//	 8 DefaultPort(8)  9 DefaultMulticastPrimaryPort(8)  10 DefaultMulticastNotPrimaryPort(8)
//	11 LifeTimeValue(5) | PortStateChange(1) | OptimizedSLtoVLMappingProgramming(2)
//	12 LIDsPerPort(16)     14 PartitionEnforcementCap(16)
//	16 InboundEnforcementCap(1) | OutboundEnforcementCap(1) | FilterRawInboundCap(1) |
//	   FilterRawOutboundCap(1) | EnhancedPort0(1) | Reserved(3)
//	17 Reserved(8)  18 MulticastFDBTop(16)
//
// PortStateChange is set by the switch whenever one of its ports changes
// state to or from Down; a subnet manager's light sweep reads it to decide
// whether to re-discover, and clears it by writing 1 (IBA 14.2.5.4).
type SwitchInfo []byte

// SwitchInfoSize is the number of bytes this view covers.
const SwitchInfoSize = 20

const siPortStateChange = 0x04 // bit in byte 11

func (b SwitchInfo) LinearFDBCap() uint16    { return binary.BigEndian.Uint16(b[0:]) }
func (b SwitchInfo) RandomFDBCap() uint16    { return binary.BigEndian.Uint16(b[2:]) }
func (b SwitchInfo) MulticastFDBCap() uint16 { return binary.BigEndian.Uint16(b[4:]) }
func (b SwitchInfo) LinearFDBTop() uint16    { return binary.BigEndian.Uint16(b[6:]) }
func (b SwitchInfo) DefaultPort() uint8      { return b[8] }
func (b SwitchInfo) LifeTimeValue() uint8    { return b[11] >> 3 }
func (b SwitchInfo) PortStateChange() bool   { return b[11]&siPortStateChange != 0 }
func (b SwitchInfo) LIDsPerPort() uint16     { return binary.BigEndian.Uint16(b[12:]) }
func (b SwitchInfo) PartitionEnforcementCap() uint16 {
	return binary.BigEndian.Uint16(b[14:])
}
func (b SwitchInfo) EnhancedPort0() bool { return b[16]&0x08 != 0 }

// SwitchInfoFields is SwitchInfo in struct form.
type SwitchInfoFields struct {
	LinearFDBCap, RandomFDBCap, MulticastFDBCap, LinearFDBTop uint16
	DefaultPort                                               uint8
	LifeTimeValue                                             uint8 // 5 bits
	PortStateChange                                           bool
	LIDsPerPort, PartitionEnforcementCap                      uint16
	EnhancedPort0                                             bool
}

// Encode writes the 20 bytes; multicast and enforcement fields this
// emulator does not model are written 0.
func (b SwitchInfo) Encode(f *SwitchInfoFields) {
	_ = b[SwitchInfoSize-1]
	clear(b[:SwitchInfoSize])
	binary.BigEndian.PutUint16(b[0:], f.LinearFDBCap)
	binary.BigEndian.PutUint16(b[2:], f.RandomFDBCap)
	binary.BigEndian.PutUint16(b[4:], f.MulticastFDBCap)
	binary.BigEndian.PutUint16(b[6:], f.LinearFDBTop)
	b[8] = f.DefaultPort
	b[11] = f.LifeTimeValue << 3
	if f.PortStateChange {
		b[11] |= siPortStateChange
	}
	binary.BigEndian.PutUint16(b[12:], f.LIDsPerPort)
	binary.BigEndian.PutUint16(b[14:], f.PartitionEnforcementCap)
	if f.EnhancedPort0 {
		b[16] |= 0x08
	}
}

// Fields returns the attribute in struct form.
func (b SwitchInfo) Fields() SwitchInfoFields {
	return SwitchInfoFields{
		LinearFDBCap: b.LinearFDBCap(), RandomFDBCap: b.RandomFDBCap(), MulticastFDBCap: b.MulticastFDBCap(),
		LinearFDBTop: b.LinearFDBTop(), DefaultPort: b.DefaultPort(), LifeTimeValue: b.LifeTimeValue(),
		PortStateChange: b.PortStateChange(), LIDsPerPort: b.LIDsPerPort(),
		PartitionEnforcementCap: b.PartitionEnforcementCap(), EnhancedPort0: b.EnhancedPort0(),
	}
}

// Validate checks the length and that LinearFDBTop lies within the
// capacity (IBA 14.2.5.4: entries above LinearFDBTop are invalid).
func (b SwitchInfo) Validate(offset int) error {
	if len(b) < SwitchInfoSize {
		return wire.Truncated("SwitchInfo", "", offset, SwitchInfoSize, len(b))
	}
	if top, lcap := b.LinearFDBTop(), b.LinearFDBCap(); lcap > 0 && top >= lcap {
		return wire.Errorf("SwitchInfo", "LinearFDBTop", offset+6, wire.ReasonInconsistent,
			"LinearFDBTop %d, capacity %d entries", top, lcap)
	}
	return nil
}

// LFTBlock is one block of the LinearForwardingTable attribute (IBA
// 14.2.5.10): 64 one-byte port numbers for LIDs block*64 .. block*64+63,
// the block number being the SMP's AttributeModifier. Port 255 means "no
// route"; port 0 is the switch's own management port.
type LFTBlock []byte

const (
	// LFTBlockSize is the number of entries per block.
	LFTBlockSize = 64
	// LFTNoPort marks an unused entry.
	LFTNoPort = 0xFF
)

// Port returns the output port of entry i (LID block*64+i).
func (b LFTBlock) Port(i int) uint8 { return b[i] }

// Validate checks the length.
func (b LFTBlock) Validate(offset int) error {
	if len(b) < LFTBlockSize {
		return wire.Truncated("LinearForwardingTable", "Port", offset, LFTBlockSize, len(b))
	}
	return nil
}
