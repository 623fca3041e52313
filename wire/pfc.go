package wire

import (
	"encoding/binary"
	"math/bits"

	"github.com/emufabric/emufabric/clock"
)

// MAC Control frames: IEEE 802.3x PAUSE (Annex 31B) and IEEE 802.1Qbb
// Priority-based Flow Control. Both are sent to the reserved multicast
// address 01-80-C2-00-00-01 with EtherType 0x8808, are never VLAN-tagged,
// and are padded to the 60-byte minimum (wire-formats.md §9):
//
//	PAUSE: DA SA 0x8808 | opcode 0x0001 | pause_time(2)            | 42 zero bytes
//	PFC:   DA SA 0x8808 | opcode 0x0101 | class-enable vector(2)   |
//	                      time[0] ... time[7] (2 each)             | 26 zero bytes
//
// The class-enable vector's high octet is reserved (0); bit n of the low
// octet enables time[n]. A time of 0 with its bit set means XON (resume).
const (
	MACControlOpPause   = 0x0001
	MACControlOpPFC     = 0x0101
	MACControlFrameSize = 60

	// QuantumBits is the length of one pause quantum: 512 bit times.
	QuantumBits = 512
)

// MACControlDst is the reserved destination of PAUSE and PFC frames.
var MACControlDst = MAC{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}

// MACControl is a decoded PAUSE or PFC frame.
type MACControl struct {
	Opcode uint16
	// Enable is the class-enable vector for PFC. A PAUSE is reported as
	// Enable 0xFF with Time[0..7] all equal to its pause_time, so a receiver
	// can treat both kinds alike: PAUSE stops every priority.
	Enable uint8
	Time   [8]uint16
}

// Paused reports whether the frame asks priority p to stop (time > 0).
func (m *MACControl) Paused(p int) bool { return m.Enable&(1<<p) != 0 && m.Time[p] != 0 }

// Resumed reports whether the frame says XON for priority p (time = 0).
func (m *MACControl) Resumed(p int) bool { return m.Enable&(1<<p) != 0 && m.Time[p] == 0 }

func encodeMACControlHeader(b []byte, src MAC, op uint16) {
	copy(b[0:6], MACControlDst[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:], EtherTypeMACControl)
	binary.BigEndian.PutUint16(b[14:], op)
	clear(b[16:MACControlFrameSize])
}

// EncodePFC writes a 60-byte PFC frame into b and returns 60. Times of
// priorities whose enable bit is clear are written as 0, as 802.1Qbb asks.
func EncodePFC(b []byte, src MAC, enable uint8, times *[8]uint16) int {
	encodeMACControlHeader(b, src, MACControlOpPFC)
	binary.BigEndian.PutUint16(b[16:], uint16(enable))
	for p := 0; p < 8; p++ {
		if enable&(1<<p) != 0 {
			binary.BigEndian.PutUint16(b[18+2*p:], times[p])
		}
	}
	return MACControlFrameSize
}

// EncodePause writes a 60-byte 802.3x PAUSE frame into b and returns 60.
func EncodePause(b []byte, src MAC, quanta uint16) int {
	encodeMACControlHeader(b, src, MACControlOpPause)
	binary.BigEndian.PutUint16(b[16:], quanta)
	return MACControlFrameSize
}

// DecodeMACControl decodes a PAUSE or PFC frame starting at the Ethernet
// destination address. It rejects what a conforming receiver would not act
// on: a tag, the wrong opcode, a short body, or a non-zero reserved octet of
// the class-enable vector. The destination address is not checked: 802.3
// receivers act on MAC Control frames addressed to them as well.
func DecodeMACControl(frame []byte, mc *MACControl) error {
	if len(frame) < EthernetSize {
		return Truncated("Ethernet", "EtherType", 0, EthernetSize, len(frame))
	}
	switch et := binary.BigEndian.Uint16(frame[12:]); et {
	case EtherTypeMACControl:
	case EtherTypeVLAN:
		return Errorf("MACControl", "EtherType", 12, ReasonInvalid, "MAC Control frames are never VLAN-tagged")
	default:
		return Errorf("MACControl", "EtherType", 12, ReasonInvalid, "EtherType 0x%04x is not MAC Control", et)
	}
	if len(frame) < 16 {
		return Truncated("MACControl", "Opcode", 14, 16, len(frame))
	}
	mc.Opcode = binary.BigEndian.Uint16(frame[14:])
	switch mc.Opcode {
	case MACControlOpPause:
		if len(frame) < 18 {
			return Truncated("PAUSE", "pause_time", 16, 18, len(frame))
		}
		t := binary.BigEndian.Uint16(frame[16:])
		mc.Enable = 0xFF
		for p := range mc.Time {
			mc.Time[p] = t
		}
	case MACControlOpPFC:
		if len(frame) < 34 {
			return Truncated("PFC", "Time", 16, 34, len(frame))
		}
		cev := binary.BigEndian.Uint16(frame[16:])
		if cev>>8 != 0 {
			return Errorf("PFC", "ClassEnableVector", 16, ReasonInvalid, "reserved high octet 0x%02x", cev>>8)
		}
		mc.Enable = uint8(cev)
		for p := range mc.Time {
			mc.Time[p] = binary.BigEndian.Uint16(frame[18+2*p:])
		}
	default:
		return Errorf("MACControl", "Opcode", 14, ReasonUnsupported, "opcode 0x%04x", mc.Opcode)
	}
	return nil
}

// XoffRefresh is how often a sender that keeps its peer paused re-sends an
// XOFF of q quanta at bps: half the pause time (at least 1 ns), so each
// XOFF lands while the previous one still holds, with a margin for an XOFF
// that waits behind a full frame or is lost. A switch's default
// pfc_refresh is the same; a storming NIC (the lab's pfc_storm without an
// interval) uses it in the simulator and in emunic, and keeps the peer
// paused without a gap, as a NIC with a stuck receive pipeline does.
func XoffRefresh(q uint16, bps uint64) clock.Time {
	return max(QuantaToTime(q, bps)/2, clock.Nanosecond)
}

// QuantaToTime converts pause quanta to time at a link speed: one quantum is
// 512 bit times (802.3 §31B.3.1), 5.12 ns at 100 Gb/s.
func QuantaToTime(q uint16, bps uint64) clock.Time {
	if bps == 0 {
		return 0
	}
	// q*512 bits * 1e12 ps / bps; q*512 < 2^25, times 1e12 < 2^65: split.
	bits := uint64(q) * QuantumBits
	return clock.Time(bits*1_000_000/bps*1_000_000 + (bits*1_000_000%bps)*1_000_000/bps)
}

// TimeToQuanta converts a duration to pause quanta at a link speed, rounding
// up (a pause must last at least t) and saturating at 0xFFFF.
func TimeToQuanta(t clock.Time, bps uint64) uint16 {
	if t <= 0 || bps == 0 {
		return 0
	}
	// ceil(t[ps] * bps / (512 * 1e12)), in 128 bits: t*bps overflows 64.
	const den = QuantumBits * 1_000_000_000_000
	hi, lo := bits.Mul64(uint64(t), bps)
	if hi >= den {
		return 0xFFFF
	}
	q, rem := bits.Div64(hi, lo, den)
	if rem != 0 {
		q++
	}
	if q > 0xFFFF {
		return 0xFFFF
	}
	return uint16(q)
}
