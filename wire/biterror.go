package wire

import "encoding/binary"

// BitErrorIndex is where an emulated wire puts a bit error in frame b, the
// same byte in the simulator and in real time: one the receiver's
// end-to-end check covers and no header holds, so the frame still reaches
// the check it fails. For Ethernet it is the last byte of the IP packet
// (inside RoCEv2's ICRC; a TCP, UDP or ICMP payload's last byte, which
// their checksums cover), not the padding of a short frame; for a PAUSE
// or PFC frame the opcode (nothing else would notice the error); for IB the
// byte before the VCRC (the ICRC's last, or a link packet's). A frame too
// short to tell gets its last byte. -1 for an empty frame.
func BitErrorIndex(b []byte, ib bool) int {
	if len(b) == 0 {
		return -1
	}
	i := len(b) - 1
	if ib {
		if len(b) > 3 {
			i = len(b) - 3
		}
		return i
	}
	h := EthernetSize
	if len(b) >= EthernetSize+4 && binary.BigEndian.Uint16(b[12:]) == EtherTypeVLAN {
		h += 4
	}
	if len(b) >= EthernetSize+2 && binary.BigEndian.Uint16(b[12:]) == EtherTypeMACControl {
		// PAUSE and PFC carry no check but the FCS, which would drop
		// the frame: the opcode's low byte goes, so the receiver takes
		// it for no pause at all, as after an FCS drop (a short frame's
		// last byte is padding nobody reads).
		return EthernetSize + 1
	}
	switch {
	case len(b) >= h+IPv4MinSize && b[h]>>4 == 4:
		if end := h + int(binary.BigEndian.Uint16(b[h+2:])); end <= len(b) && end > h {
			i = end - 1
		}
	case len(b) >= h+40 && b[h]>>4 == 6:
		if end := h + 40 + int(binary.BigEndian.Uint16(b[h+4:])); end <= len(b) && end > h {
			i = end - 1
		}
	}
	return i
}
