package bth

import "github.com/emufabric/emufabric/wire"

// CNP is a view of the 16 reserved bytes that follow the BTH of a RoCEv2
// Congestion Notification Packet (IBA Annex A17, wire-formats.md §6).
//
// A CNP is BTH{OpCode 0x81, BECN=1, DestQP = the QP to throttle, A=0,
// PSN=0} followed by 16 zero bytes and the ICRC; its UDP payload is 32
// bytes. A NIC sends it back to the source of a packet that arrived with IP
// ECN = CE.
type CNP []byte

// CNPSize is the length of the reserved CNP body.
const CNPSize = 16

// NVIDIA firmware defaults for CNPs (mlxconfig CNP_DSCP_P1, CNP_802P_PRIO_P1):
// DSCP 48 (TOS 0xC0, Not-ECT) and 802.1p priority 6.
const (
	CNPDefaultDSCP     = 48
	CNPDefaultPriority = 6
)

// Encode zeroes the CNP body.
func (b CNP) Encode() { clear(b[:CNPSize]) }

// Validate checks the length and that the reserved bytes are zero.
func (b CNP) Validate(offset int) error {
	if len(b) < CNPSize {
		return wire.Truncated("CNP", "", offset, CNPSize, len(b))
	}
	for i, c := range b[:CNPSize] {
		if c != 0 {
			return wire.Errorf("CNP", "Reserved", offset+i, wire.ReasonInvalid, "reserved byte %d is 0x%02x, must be 0", i, c)
		}
	}
	return nil
}

// CNPFields returns the BTH of a CNP that throttles destQP: OpCode 0x81,
// BECN set (as the Mellanox sample shows), every other flag clear, PSN 0.
func CNPFields(destQP uint32, pkey uint16) BTHFields {
	return BTHFields{OpCode: CNPOpcode, PKey: pkey, BECN: true, DestQP: destQP & QPNMask}
}
