package bth

import (
	"net/netip"

	"github.com/emufabric/emufabric/wire"
)

// RoCEv2 frames (IBA Annex A17): Ethernet [802.1Q] | IPv4 or IPv6 | UDP
// (destination port 4791) | BTH | extension headers | payload | pad | ICRC
// [| Ethernet padding up to 60 bytes].
//
// The Ethernet padding comes after the ICRC and is not covered by it
// (wire-formats.md §1): receivers find the ICRC from the IP/UDP length,
// never from the end of the frame.

// DefaultTTL is the IPv4 TTL / IPv6 hop limit the builder uses when
// RoCEFields.TTL is 0 (rxe uses the GID attribute's hop limit, 64 by default
// for RoCEv2).
const DefaultTTL = 64

// RoCEFields describes a RoCEv2 frame to build.
type RoCEFields struct {
	// Ethernet addresses and the optional 802.1Q tag. EtherType is set by
	// the builder from the IP version.
	Ethernet wire.EthernetFields
	// Src and Dst select IPv4 (both Is4) or IPv6 (both Is6, not
	// IPv4-mapped).
	Src, Dst  netip.Addr
	DSCP, ECN uint8
	TTL       uint8  // IPv4 TTL or IPv6 Hop Limit; 0 means DefaultTTL
	ID        uint16 // IPv4 Identification (DF is always set: RoCE is never fragmented)
	FlowLabel uint32 // IPv6 Flow Label (20 bits); also the UDP source-port entropy when non-zero
	// SrcPort is the UDP source port. 0 derives it as Linux does
	// (rdma_get_udp_sport): from FlowLabel if non-zero, else from the
	// local QPN SrcQP and the BTH DestQP.
	SrcPort uint16
	SrcQP   uint32

	BTH     BTHFields // PadCount is computed from len(Payload)
	Ext     ExtFields // the extension headers BTH.OpCode carries
	Payload []byte
}

func (f *RoCEFields) ipv6() bool { return f.Src.Is6() && !f.Src.Is4In6() }

// ipHdrLen returns the IP header length the builder writes.
func (f *RoCEFields) ipHdrLen() int {
	if f.ipv6() {
		return ipv6Size
	}
	return ipv4MinSize
}

// FrameLen returns the length of the frame EncodeRoCE writes for f, Ethernet
// padding included, or -1 if the opcode is not decodable.
func (f *RoCEFields) FrameLen() int {
	t := TransportLen(f.BTH.OpCode, len(f.Payload))
	if t < 0 {
		return -1
	}
	n := wire.EthernetHeaderLen(f.Ethernet.Tagged) + f.ipHdrLen() + udpSize + t + ICRCSize
	return max(n, wire.MinFrameSize)
}

// EncodeRoCE builds the frame described by f at the start of b and returns
// its length. It computes the IP and UDP lengths, the IPv4 header checksum,
// PadCnt, the UDP source port (if f.SrcPort is 0) and the ICRC, and pads the
// frame to 60 bytes after the ICRC. The UDP checksum is 0, as rxe and RoCE
// NICs send it. Nothing is allocated.
func EncodeRoCE(b []byte, f *RoCEFields) (int, error) {
	v6 := f.ipv6()
	switch {
	case v6 && !(f.Dst.Is6() && !f.Dst.Is4In6()):
		return 0, wire.Errorf("IPv6", "Dst", -1, wire.ReasonInconsistent, "source is IPv6, destination %v is not", f.Dst)
	case !v6 && !f.Src.Is4():
		return 0, wire.Errorf("IPv4", "Src", -1, wire.ReasonInvalid, "source address %v is neither IPv4 nor IPv6", f.Src)
	case !v6 && !f.Dst.Is4():
		return 0, wire.Errorf("IPv4", "Dst", -1, wire.ReasonInconsistent, "source is IPv4, destination %v is not", f.Dst)
	}
	total := f.FrameLen()
	if total < 0 {
		return 0, wire.Errorf("BTH", "OpCode", -1, wire.ReasonInvalid, "cannot encode %s", f.BTH.OpCode)
	}
	if len(b) < total {
		return 0, wire.Truncated("Ethernet", "", -1, total, len(b))
	}
	eth := f.Ethernet
	eth.EtherType = wire.EtherTypeIPv4
	if v6 {
		eth.EtherType = wire.EtherTypeIPv6
	}
	l3 := wire.EncodeEthernet(b, &eth)
	ipHdr := f.ipHdrLen()
	l4 := l3 + ipHdr
	l5 := l4 + udpSize
	tn, err := EncodeTransport(b[l5:], &f.BTH, &f.Ext, f.Payload)
	if err != nil {
		return 0, err
	}
	icrcAt := l5 + tn
	end := icrcAt + ICRCSize
	udpLen := udpSize + tn + ICRCSize
	ttl := f.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if v6 {
		wire.IPv6(b[l3:]).Encode(&wire.IPv6Fields{
			DSCP: f.DSCP, ECN: f.ECN, FlowLabel: f.FlowLabel, PayloadLength: uint16(udpLen),
			NextHeader: wire.IPProtoUDP, HopLimit: ttl, Src: f.Src.As16(), Dst: f.Dst.As16(),
		})
	} else {
		wire.IPv4(b[l3:]).Encode(&wire.IPv4Fields{
			DSCP: f.DSCP, ECN: f.ECN, TotalLength: uint16(ipHdr + udpLen), ID: f.ID, DF: true,
			TTL: ttl, Protocol: wire.IPProtoUDP, Src: f.Src.As4(), Dst: f.Dst.As4(),
		})
	}
	sport := f.SrcPort
	if sport == 0 {
		sport = wire.RoCESourcePortForQPs(f.FlowLabel, f.SrcQP, f.BTH.DestQP&QPNMask)
	}
	wire.UDP(b[l4:]).Encode(&wire.UDPFields{SrcPort: sport, DstPort: wire.RoCEv2Port, Length: uint16(udpLen)})
	var crc uint32
	if v6 {
		crc, _ = ICRCRoCEv6(b[l3:icrcAt])
	} else {
		crc, _ = ICRCRoCEv4(b[l3:icrcAt])
	}
	PutICRC(b[icrcAt:], crc)
	clear(b[end:total])
	return total, nil
}

// Packet is a decoded RoCEv2 frame. Every slice aliases the frame; decoding
// allocates nothing, so a Packet can be reused frame after frame.
type Packet struct {
	L2        wire.L2
	IPVersion uint8     // 4 or 6
	IPv4      wire.IPv4 // the IPv4 datagram (header through ICRC), nil for IPv6
	IPv6      wire.IPv6 // the IPv6 datagram (header through ICRC), nil for IPv4
	UDP       wire.UDP  // the UDP datagram (header through ICRC)
	Headers             // BTH, extension headers, payload, pad
	ICRC      uint32    // the ICRC as read from the wire (stored LSB first)
	ICRCOK    bool      // set when VerifyICRC was asked and the ICRC matched
	Trailer   []byte    // bytes after the IP datagram: Ethernet padding
}

// L3 returns the IP datagram, header through ICRC.
func (p *Packet) L3() []byte {
	if p.IPVersion == 6 {
		return p.IPv6
	}
	return p.IPv4
}

// Decode decodes a RoCEv2 frame starting at the Ethernet destination
// address. The IP datagram ends where the IP header says; the UDP length
// must agree with it; the ICRC is the last 4 bytes of the UDP datagram.
// Everything after the datagram is Trailer (Ethernet padding). Errors are
// *wire.Error naming the header and field.
func (p *Packet) Decode(frame []byte, flags DecodeFlags) error {
	*p = Packet{}
	if err := wire.DecodeEthernet(frame, &p.L2); err != nil {
		return err
	}
	l3 := p.L2.HdrLen
	var dgram []byte // IP header through ICRC
	var ipHdr int
	switch p.L2.EtherType {
	case wire.EtherTypeIPv4:
		ip := wire.IPv4(frame[l3:])
		if err := ip.Validate(l3); err != nil {
			return err
		}
		if ip.Protocol() != wire.IPProtoUDP {
			return wire.Errorf("IPv4", "Protocol", l3, wire.ReasonUnsupported, "protocol %d is not UDP", ip.Protocol())
		}
		ipHdr = ip.HeaderLen()
		dgram = ip[:ip.TotalLength()]
		p.IPVersion, p.IPv4 = 4, dgram
	case wire.EtherTypeIPv6:
		ip := wire.IPv6(frame[l3:])
		if err := ip.Validate(l3); err != nil {
			return err
		}
		if ip.NextHeader() != wire.IPProtoUDP {
			return wire.Errorf("IPv6", "NextHeader", l3, wire.ReasonUnsupported, "next header %d is not UDP", ip.NextHeader())
		}
		ipHdr = ipv6Size
		dgram = ip[:ipv6Size+int(ip.PayloadLength())]
		p.IPVersion, p.IPv6 = 6, dgram
	default:
		return wire.Errorf("Ethernet", "EtherType", p.L2.HdrLen-2, wire.ReasonUnsupported,
			"EtherType 0x%04x is not IPv4 or IPv6", p.L2.EtherType)
	}
	l4 := l3 + ipHdr
	udp := wire.UDP(dgram[ipHdr:])
	if err := udp.Validate(l4, len(udp)); err != nil {
		return err
	}
	if udp.DstPort() != wire.RoCEv2Port {
		return wire.Errorf("UDP", "DstPort", l4, wire.ReasonUnsupported, "destination port %d is not %d", udp.DstPort(), wire.RoCEv2Port)
	}
	p.UDP = udp
	p.Trailer = frame[l3+len(dgram):]
	l5 := l4 + udpSize
	t := udp[udpSize:]
	if len(t) < BTHSize+ICRCSize {
		return wire.Errorf("UDP", "Length", l4, wire.ReasonTruncated,
			"UDP payload %d bytes, a RoCEv2 packet needs at least %d (BTH + ICRC)", len(t), BTHSize+ICRCSize)
	}
	icrcAt := len(t) - ICRCSize
	p.ICRC = WireICRC(t[icrcAt:])
	if err := p.Headers.Decode(t[:icrcAt], l5); err != nil {
		return err
	}
	if flags&VerifyICRC != 0 {
		want, _ := ICRCRoCE(dgram[:len(dgram)-ICRCSize])
		if want != p.ICRC {
			return wire.Errorf("ICRC", "ICRC", l5+icrcAt, wire.ReasonChecksum,
				"wire 0x%08x, computed 0x%08x", p.ICRC, want)
		}
		p.ICRCOK = true
	}
	return nil
}

// RoCEFieldsOf fills f from a decoded packet so that EncodeRoCE(f) gives the
// same frame back (payload aliased, not copied). The UDP source port and
// IPv4 ID are taken as they are.
func (p *Packet) RoCEFieldsOf(f *RoCEFields) {
	*f = RoCEFields{
		Ethernet: wire.EthernetFields{Dst: p.L2.Dst, Src: p.L2.Src, Tagged: p.L2.Tagged,
			PCP: p.L2.PCP, DEI: p.L2.DEI, VID: p.L2.VID},
		SrcPort: p.UDP.SrcPort(),
		BTH:     p.BTH.Fields(),
		Ext:     p.Headers.ExtFields(),
		Payload: p.Payload,
	}
	if p.IPVersion == 6 {
		f.Src, f.Dst = netip.AddrFrom16(p.IPv6.Src()), netip.AddrFrom16(p.IPv6.Dst())
		f.DSCP, f.ECN, f.TTL, f.FlowLabel = p.IPv6.DSCP(), p.IPv6.ECN(), p.IPv6.HopLimit(), p.IPv6.FlowLabel()
	} else {
		f.Src, f.Dst = netip.AddrFrom4(p.IPv4.Src()), netip.AddrFrom4(p.IPv4.Dst())
		f.DSCP, f.ECN, f.TTL, f.ID = p.IPv4.DSCP(), p.IPv4.ECN(), p.IPv4.TTL(), p.IPv4.ID()
	}
}
