package wire

import "encoding/binary"

// Link-state advertisements: the emulated switches' own routing protocol,
// with which a RoCE fabric's switches learn which links are down and
// route around them (the emulator's stand-in for the OSPF, IS-IS or BGP
// with BFD a data-center fabric runs). One frame, sent to the
// nearest-bridge group address 01-80-C2-00-00-0E (link-local: a bridge
// never forwards it; LLDP uses it too) with the IEEE 802 local
// experimental EtherType 0x88B5, so Wireshark shows it as such and no
// other protocol's dissector claims it:
//
//	DA SA 0x88B5 | version(1)=2 | origin length(1) | origin |
//	             epoch(8) | sequence(8) | topology(8) | count(2) |
//	             count x (name length(1) | port name)  | zero pad to 60
//
// origin is the advertising switch's name; the port names are its ports
// whose links are down, the whole list every time (a receiver keeps the
// newest advertisement per origin: (epoch, sequence) orders them, the
// epoch telling a restarted switch's advertisements from its earlier
// life's). topology is a digest of the fabric as the origin's lab file
// describes it (0: not given): every switch computes its routes from its
// own copy, and switches whose copies differ route inconsistently, which
// a receiver can only tell by comparing digests. Version 1 had no
// topology field.
const (
	EtherTypeLinkState = 0x88B5
	linkStateVersion   = 2
	linkStateFixed     = EthernetSize + 1 + 1 + 8 + 8 + 8 + 2 // without the names
)

// LinkStateDst is the link-local group address advertisements go to.
var LinkStateDst = MAC{0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E}

// LinkState is one switch's advertisement.
type LinkState struct {
	Origin     string
	Epoch, Seq uint64
	Topology   uint64   // digest of the origin's lab file's fabric; 0: not given
	Down       []string // its ports whose links are down
}

// LinkStateLen is the frame length an advertisement takes (at least the
// 60-byte minimum), or -1 if a name is longer than 255 bytes or there are
// more than 65535 of them.
func LinkStateLen(l *LinkState) int {
	if len(l.Origin) > 255 || len(l.Down) > 0xFFFF {
		return -1
	}
	n := linkStateFixed + len(l.Origin)
	for _, d := range l.Down {
		if len(d) > 255 {
			return -1
		}
		n += 1 + len(d)
	}
	return max(n, MinFrameSize)
}

// EncodeLinkState writes the advertisement into b, which must hold
// LinkStateLen(l) bytes, and returns its length.
func EncodeLinkState(b []byte, src MAC, l *LinkState) int {
	n := LinkStateLen(l)
	clear(b[:n])
	EncodeEthernet(b, &EthernetFields{Dst: LinkStateDst, Src: src, EtherType: EtherTypeLinkState})
	i := EthernetSize
	b[i], b[i+1] = linkStateVersion, byte(len(l.Origin))
	i += 2
	i += copy(b[i:], l.Origin)
	binary.BigEndian.PutUint64(b[i:], l.Epoch)
	binary.BigEndian.PutUint64(b[i+8:], l.Seq)
	binary.BigEndian.PutUint64(b[i+16:], l.Topology)
	binary.BigEndian.PutUint16(b[i+24:], uint16(len(l.Down)))
	i += 26
	for _, d := range l.Down {
		b[i] = byte(len(d))
		i += 1 + copy(b[i+1:], d)
	}
	return n
}

// DecodeLinkState decodes an untagged advertisement frame.
func DecodeLinkState(b []byte, l *LinkState) error {
	if len(b) < linkStateFixed {
		return Truncated("LinkState", "header", 0, linkStateFixed, len(b))
	}
	if et := binary.BigEndian.Uint16(b[12:]); et != EtherTypeLinkState {
		return Errorf("LinkState", "EtherType", 12, ReasonInvalid, "EtherType 0x%04x", et)
	}
	i := EthernetSize
	if b[i] != linkStateVersion {
		return Errorf("LinkState", "version", i, ReasonUnsupported, "version %d", b[i])
	}
	on := int(b[i+1])
	i += 2
	if len(b) < i+on+26 {
		return Truncated("LinkState", "origin", i, i+on+26, len(b))
	}
	l.Origin = string(b[i : i+on])
	i += on
	l.Epoch = binary.BigEndian.Uint64(b[i:])
	l.Seq = binary.BigEndian.Uint64(b[i+8:])
	l.Topology = binary.BigEndian.Uint64(b[i+16:])
	count := int(binary.BigEndian.Uint16(b[i+24:]))
	i += 26
	l.Down = l.Down[:0]
	for k := range count {
		if i >= len(b) {
			return Truncated("LinkState", "ports", i, i+1, len(b))
		}
		dn := int(b[i])
		if i+1+dn > len(b) {
			return Truncated("LinkState", "ports", i, i+1+dn, len(b))
		}
		if dn == 0 {
			return Errorf("LinkState", "ports", i, ReasonInvalid, "port %d has an empty name", k)
		}
		l.Down = append(l.Down, string(b[i+1:i+1+dn]))
		i += 1 + dn
	}
	return nil
}
