// Package zoo builds the frame zoo: one frame of every kind the emulator
// encodes, each with its name and the field values it was built from.
//
// The zoo is a teaching capture (open it in Wireshark and every RoCEv2
// opcode, AETH syndrome, CNP, PFC and IB packet is there, named by a comment)
// and the input of the interop tests: tshark must decode every frame to the
// values in Want, scapy must agree with every ICRC.
//
// Contents, in order:
//
//   - RoCEv2 over IPv4, then over IPv6: one frame per RC, UC and UD opcode of
//     the bth opcode table (walked, not listed), with payloads that exercise
//     every PadCnt;
//   - RoCEv2/IPv4 RC ACKNOWLEDGE with every AETH syndrome: the 32 ACK credit
//     codes (0x1F: no credit count), the 32 RNR NAK timers, the NAK codes
//     0x60-0x64 (0x64, invalid RD request, is defined for RD only; it is here
//     because the syndrome encoding defines it and Wireshark decodes it);
//   - a CNP over IPv4 and over IPv6 (DSCP 48, PCP 6, BECN=1);
//   - an ECN-CE frame, a FECN frame, a VLAN-tagged frame (PCP 3, DSCP 26), an
//     empty SEND that needs Ethernet padding;
//   - PFC XOFF and XON, 802.3x PAUSE and its resume (quanta 0);
//   - a link-state advertisement of the switches' routing;
//   - native IB data packets without and with a GRH, and IB link
//     flow-control packets (normal and init), which go to ERF records.
//
// Everything is deterministic: the same bytes on every run.
package zoo

import (
	"fmt"
	"net/netip"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/wire"
)

// Link says which kind of link an entry belongs to and so how it is stored.
type Link uint8

const (
	// LinkEthernet: an Ethernet frame without FCS (pcap link type 1).
	LinkEthernet Link = iota
	// LinkIB: a native IB data packet, LRH through VCRC (ERF record type 21).
	LinkIB
	// LinkIBFlowControl: a 6-byte IB link packet (ERF record type 25).
	LinkIBFlowControl
)

func (l Link) String() string {
	switch l {
	case LinkEthernet:
		return "ethernet"
	case LinkIB:
		return "ib"
	case LinkIBFlowControl:
		return "ib-link"
	}
	return fmt.Sprintf("link(%d)", uint8(l))
}

// Entry is one frame of the zoo.
type Entry struct {
	Name string // what the frame is, e.g. "RoCEv2/IPv4 RC_SEND_ONLY"
	Link Link
	Data []byte
	Want Want // the values the frame was built from
}

// Want holds the intended field values of an entry. Only the headers the
// frame has are set; the others are nil.
type Want struct {
	// Ethernet, with EtherType the type after the tag (IPv4, IPv6, MAC
	// control). Nil for IB entries.
	Ethernet *wire.EthernetFields

	// RoCEv2: IP and UDP.
	IPVersion uint8 // 4 or 6; 0 when not RoCEv2
	Src, Dst  netip.Addr
	DSCP, ECN uint8
	TTL       uint8  // IPv4 TTL or IPv6 Hop Limit
	FlowLabel uint32 // IPv6 only
	SrcPort   uint16 // UDP source port

	// Transport (RoCEv2 and native IB). BTH.PadCount is the PadCnt on the
	// wire; Ext holds the headers BTH.OpCode carries (see OpInfo.Has).
	BTH        *bth.BTHFields
	Ext        bth.ExtFields
	PayloadLen int

	// PFC or PAUSE, as wire.DecodeMACControl reports it.
	MACControl *wire.MACControl

	// Native IB.
	LRH    *wire.LRHFields
	GRH    *wire.GRHFields
	IBLink *wire.IBLinkFields
}

// Addresses and ports of the zoo's two hosts. Documentation ranges only
// (RFC 5737, RFC 3849); locally administered MACs.
var (
	HostA   = wire.MAC{0x02, 0x00, 0x5e, 0x00, 0x00, 0x0a}
	HostB   = wire.MAC{0x02, 0x00, 0x5e, 0x00, 0x00, 0x0b}
	IPv4A   = netip.MustParseAddr("192.0.2.10")
	IPv4B   = netip.MustParseAddr("192.0.2.11")
	IPv6A   = netip.MustParseAddr("2001:db8::a")
	IPv6B   = netip.MustParseAddr("2001:db8::b")
	LIDA    = uint16(0x0011)
	LIDB    = uint16(0x0022)
	GIDA    = netip.MustParseAddr("fe80::2:c903:a:1").As16()
	GIDB    = netip.MustParseAddr("fe80::2:c903:a:2").As16()
	DataVID = uint16(100)
)

// QP numbers. None is 0 or 1: Wireshark dissects the payload of packets to or
// from QP1 (the GSI) as a MAD, and the zoo's payloads are not MADs.
const (
	QPRequester = 0x000011 // local QP on host A
	QPResponder = 0x000022 // its peer on host B
	QPUD        = 0x000033 // UD destination QP
	UDQKey      = 0x11111111
)

// RoCE QoS of the zoo (wire-formats.md §10): data on DSCP 26 with ECT(0),
// priority 3 when tagged; CNPs on DSCP 48, priority 6, Not-ECT.
const (
	DataDSCP = 26
	DataPCP  = 3
)

// All returns the whole zoo: the Ethernet entries, then the IB entries.
func All() []Entry {
	return append(Ethernet(), IB()...)
}

// Ethernet returns the entries that go on an Ethernet link.
func Ethernet() []Entry {
	var z []Entry
	z = append(z, opcodeWalk(4)...)
	z = append(z, opcodeWalk(6)...)
	z = append(z, syndromes()...)
	z = append(z, specials()...)
	z = append(z, macControl()...)
	z = append(z, linkState()...)
	return z
}

// IB returns the native InfiniBand entries: data packets, then link packets.
func IB() []Entry {
	return append(ibData(), ibLinks()...)
}
