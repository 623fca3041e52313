// Package dissect decodes captured frames into ordered JSON objects, one per
// frame: every header the emulator encodes, its fields under the names the
// specs use (IBTA for the transport: opcode, se, m, padcnt, tver, pkey, fecn,
// becn, dqpn, ackreq, psn, ...), and the CRC verdicts icrc_ok, vcrc_ok and
// lpcrc_ok. It is what `emulab decode` prints.
//
// The decoding itself is done by the wire and bth packages; this package only
// walks the headers in order and names what they found. A frame that does
// not decode yields the members decoded so far and the *wire.Error of the
// header and field that failed. A CRC or checksum that does not verify is
// not an error: it is reported as a false verdict, because a corrupted frame
// is exactly what a user may want to look at.
//
// This is a tool path, not the hot path: it allocates freely.
package dissect

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// Record decodes one capture record: Ethernet frames, and ERF records
// holding IB data (type 21) or link (type 25) packets, and raw IB packets
// (link type 247). The object starts with "linktype" and, for ERF,
// "erf_type".
func Record(rec *capture.Record) (Object, error) {
	switch rec.LinkType {
	case capture.LinkTypeEthernet:
		return Ethernet(Object{{"linktype", "ethernet"}}, rec.Data)
	case capture.LinkTypeERF:
		o := Object{{"linktype", "erf"}, {"erf_type", rec.ERF.Type}}
		switch rec.ERF.Type {
		case capture.ERFTypeInfiniBand:
			return IB(o, rec.Data)
		case capture.ERFTypeInfiniBandLink:
			return IBLink(o, rec.Data)
		}
		return o, wire.Errorf("ERF", "Type", 0, wire.ReasonUnsupported, "ERF record type %d", rec.ERF.Type)
	case capture.LinkTypeInfiniBand:
		return IB(Object{{"linktype", "infiniband"}}, rec.Data)
	}
	return nil, wire.Errorf("capture", "LinkType", -1, wire.ReasonUnsupported, "link type %s", rec.LinkType)
}

// Ethernet decodes an Ethernet frame (no FCS) and appends its headers to o.
// "eth.ethertype" is the type of what follows the header, after the 802.1Q
// tag when there is one ("vlan").
func Ethernet(o Object, b []byte) (Object, error) {
	var l2 wire.L2
	if err := wire.DecodeEthernet(b, &l2); err != nil {
		return o, err
	}
	o = o.Add("eth", Object{{"dst", l2.Dst.String()}, {"src", l2.Src.String()}, {"ethertype", l2.EtherType}})
	if l2.Tagged {
		o = o.Add("vlan", Object{{"pcp", l2.PCP}, {"dei", bit(l2.DEI)}, {"vid", l2.VID}})
	}
	switch l2.EtherType {
	case wire.EtherTypeMACControl:
		return macControl(o, b)
	case wire.EtherTypeIPv4:
		return ipv4(o, b, l2.HdrLen)
	case wire.EtherTypeIPv6:
		return ipv6(o, b, l2.HdrLen)
	}
	// Another protocol: not something the emulator encodes, and not an
	// error either; say how much follows.
	return o.Add("payload_len", len(b)-l2.HdrLen), nil
}

func macControl(o Object, b []byte) (Object, error) {
	var mc wire.MACControl
	if err := wire.DecodeMACControl(b, &mc); err != nil {
		return o, err
	}
	if mc.Opcode == wire.MACControlOpPause {
		return o.Add("pause", Object{{"opcode", mc.Opcode}, {"quanta", mc.Time[0]}}), nil
	}
	return o.Add("pfc", Object{{"opcode", mc.Opcode}, {"enable", mc.Enable}, {"time", mc.Time[:]}}), nil
}

func ipv4(o Object, frame []byte, off int) (Object, error) {
	ip := wire.IPv4(frame[off:])
	checksumOK := true
	if err := ip.Validate(off); err != nil {
		var we *wire.Error
		if !errors.As(err, &we) || we.Reason != wire.ReasonChecksum {
			return o, err
		}
		// A wrong header checksum is a verdict, not a reason to stop;
		// Validate checks fragments after the checksum, so check them here.
		checksumOK = false
		if ip.MF() || ip.FragmentOffset() != 0 {
			return o, wire.Errorf("IPv4", "FragmentOffset", off, wire.ReasonUnsupported, "fragmented datagram")
		}
	}
	o = o.Add("ipv4", Object{
		{"dscp", ip.DSCP()}, {"ecn", ip.ECN()}, {"total_length", ip.TotalLength()}, {"id", ip.ID()},
		{"df", bit(ip.DF())}, {"ttl", ip.TTL()}, {"protocol", ip.Protocol()},
		{"checksum", ip.Checksum()}, {"checksum_ok", checksumOK},
		{"src", netip.AddrFrom4(ip.Src()).String()}, {"dst", netip.AddrFrom4(ip.Dst()).String()},
	})
	return udp(o, frame, off, ip.HeaderLen(), int(ip.TotalLength()), ip.Protocol())
}

func ipv6(o Object, frame []byte, off int) (Object, error) {
	ip := wire.IPv6(frame[off:])
	if err := ip.Validate(off); err != nil {
		return o, err
	}
	o = o.Add("ipv6", Object{
		{"dscp", ip.DSCP()}, {"ecn", ip.ECN()}, {"flow_label", ip.FlowLabel()},
		{"payload_length", ip.PayloadLength()}, {"next_header", ip.NextHeader()}, {"hop_limit", ip.HopLimit()},
		{"src", netip.AddrFrom16(ip.Src()).String()}, {"dst", netip.AddrFrom16(ip.Dst()).String()},
	})
	return udp(o, frame, off, wire.IPv6Size, wire.IPv6Size+int(ip.PayloadLength()), ip.NextHeader())
}

// udp decodes what follows an IP header of hl bytes in a datagram of tl
// bytes starting at frame[off], and then names the Ethernet padding after
// the datagram (a short RoCEv2 frame is padded after its ICRC).
func udp(o Object, frame []byte, off, hl, tl int, proto uint8) (Object, error) {
	o, err := l4(o, frame, off, hl, tl, proto)
	if pad := len(frame) - off - tl; err == nil && pad > 0 {
		o = o.Add("eth_padding", pad)
	}
	return o, err
}

func l4(o Object, frame []byte, off, hl, tl int, proto uint8) (Object, error) {
	if proto != wire.IPProtoUDP {
		return o.Add("payload_len", tl-hl), nil
	}
	u := wire.UDP(frame[off+hl : off+tl])
	if err := u.Validate(off+hl, tl-hl); err != nil {
		return o, err
	}
	o = o.Add("udp", Object{{"sport", u.SrcPort()}, {"dport", u.DstPort()}, {"length", u.Length()}, {"checksum", u.Checksum()}})
	if u.DstPort() != wire.RoCEv2Port {
		return o.Add("payload_len", int(u.Length())-wire.UDPSize), nil
	}
	return roce(o, frame[off:off+tl], off, hl)
}

// EncodeLine renders an object as one line of JSON, newline included.
func EncodeLine(o Object) []byte { return append(o.appendJSON(nil), '\n') }

// FrameError is the error of one frame that did not decode: it says which
// frame (counting from 1, as Wireshark does) and wraps the *wire.Error that
// names the header and field.
type FrameError struct {
	Frame int
	Err   error
}

func (e *FrameError) Error() string { return fmt.Sprintf("frame %d: %v", e.Frame, e.Err) }
func (e *FrameError) Unwrap() error { return e.Err }

// errCaptureTruncated reports a frame the capture cut short (snap length):
// its headers decoded, but its tail (payload, ICRC) is missing.
func errCaptureTruncated(orig, have int) error {
	return wire.Errorf("capture", "CapLen", -1, wire.ReasonTruncated,
		"frame was %d bytes on the wire, %d captured", orig, have)
}
