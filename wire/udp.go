package wire

import "encoding/binary"

// UDP is a view of a UDP header (RFC 768): SrcPort, DstPort, Length, Checksum.
// Accessors do not bounds-check: call Validate first.
type UDP []byte

const (
	UDPSize = 8
	// RoCEv2Port is IANA's "roce" port, the UDP destination of every RoCEv2
	// packet (IBA Annex A17.2.1).
	RoCEv2Port = 4791

	// RoCE UDP source ports carry flow entropy in 0xC000..0xFFFF
	// (Linux include/rdma/ib_verbs.h IB_ROCE_UDP_ENCAP_VALID_PORT_MIN/MAX).
	RoCESourcePortMin = 0xC000
	RoCESourcePortMax = 0xFFFF
)

// UDPFields describes a UDP header to encode.
type UDPFields struct {
	SrcPort, DstPort uint16
	Length           uint16
	Checksum         uint16
}

func (b UDP) SrcPort() uint16  { return binary.BigEndian.Uint16(b[0:]) }
func (b UDP) DstPort() uint16  { return binary.BigEndian.Uint16(b[2:]) }
func (b UDP) Length() uint16   { return binary.BigEndian.Uint16(b[4:]) }
func (b UDP) Checksum() uint16 { return binary.BigEndian.Uint16(b[6:]) }

// Encode writes the 8-byte header.
func (b UDP) Encode(f *UDPFields) {
	binary.BigEndian.PutUint16(b[0:], f.SrcPort)
	binary.BigEndian.PutUint16(b[2:], f.DstPort)
	binary.BigEndian.PutUint16(b[4:], f.Length)
	binary.BigEndian.PutUint16(b[6:], f.Checksum)
}

// Validate checks the header against ipPayload, the bytes the IP header
// says belong to the datagram (IPv4 TotalLength - IHL, IPv6 PayloadLength):
// UDP Length must equal that.
func (b UDP) Validate(offset, ipPayload int) error {
	if len(b) < UDPSize {
		return Truncated("UDP", "Length", offset, UDPSize, len(b))
	}
	l := int(b.Length())
	if l < UDPSize {
		return Errorf("UDP", "Length", offset, ReasonInvalid, "length %d < 8", l)
	}
	if l != ipPayload {
		return Errorf("UDP", "Length", offset, ReasonInconsistent, "UDP length %d, IP payload %d", l, ipPayload)
	}
	if l > len(b) {
		return Errorf("UDP", "Length", offset, ReasonTruncated, "length %d, %d bytes present", l, len(b))
	}
	return nil
}

// RoCEFlowLabel derives a 20-bit flow label from the local and remote QP
// numbers, exactly as Linux rdma_calc_flow_label (include/rdma/ib_verbs.h)
// does when the GID attribute carries no flow label.
func RoCEFlowLabel(lqpn, rqpn uint32) uint32 {
	v := uint64(lqpn) * uint64(rqpn)
	v ^= v >> 20
	v ^= v >> 40
	return uint32(v & 0xFFFFF)
}

// RoCESourcePort folds a 20-bit flow label into the RoCEv2 UDP source port
// range 0xC000..0xFFFF, as Linux rdma_flow_label_to_udp_sport does: the low
// 14 bits XOR the high 6 bits, with the two top bits set.
func RoCESourcePort(flowLabel uint32) uint16 {
	lo := flowLabel & 0x3FFF
	hi := flowLabel & 0xFC000
	lo ^= hi >> 14
	return uint16(lo | RoCESourcePortMin)
}

// RoCESourcePortForQPs is rdma_get_udp_sport: the flow label if non-zero,
// otherwise one derived from the QP pair.
func RoCESourcePortForQPs(flowLabel, lqpn, rqpn uint32) uint16 {
	if flowLabel == 0 {
		flowLabel = RoCEFlowLabel(lqpn, rqpn)
	}
	return RoCESourcePort(flowLabel)
}
