package nic

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// IPoIB, datagram mode (RFC 4391): each IP packet of the host travels as
// one UD SEND_ONLY whose payload is the 4-byte IPoIB header (the EtherType,
// two reserved bytes) and the packet, from this port's IPoIB QP to the
// peer's. The host sees an Ethernet interface (its TAP cannot be an
// ARPHRD_INFINIBAND one), so the NIC is the translator: the kernel's
// next-hop MAC names the neighbour, whose LID and QPN the lab configured
// statically (as it configures the kernel's neighbour entries), and ARP
// requests for a neighbour are answered by the NIC itself. There is no
// multicast group (no SA, no MCG join), so the host's broadcast and
// multicast frames other than ARP are dropped and counted.

// IPoIBQPN is the QP number of every port's IPoIB QP. Verbs QPs never get
// it. Real HCAs pick one per interface and publish it in the 20-byte
// hardware address; one known number spares emufabric that exchange.
const IPoIBQPN = 0x000040

// IPoIBQKey is the Q_Key of the IPoIB broadcast group an SM usually sets
// (the opensm default partition's); every IPoIB packet carries it.
const IPoIBQKey = 0x0000000B

// ipoibHdr is the IPoIB encapsulation header (RFC 4391 §6).
const ipoibHdr = 4

// IPoIB configures a port's IPoIB interface.
type IPoIB struct {
	// SL is the service level of IPoIB traffic (default 0).
	SL uint8
	// Neighbours are the other hosts of the subnet.
	Neighbours []IPoIBNeighbour
}

// IPoIBNeighbour is one peer interface: the address and MAC its host
// kernel uses, and where its IPoIB QP is on the fabric.
type IPoIBNeighbour struct {
	IP  netip.Addr
	MAC wire.MAC
	LID uint16
}

func (c *IPoIB) validate(nc *Config) error {
	if c.SL > 15 {
		return fmt.Errorf("nic %q: ipoib sl %d out of 0..15", nc.Name, c.SL)
	}
	for i, nb := range c.Neighbours {
		if nb.LID == 0 || nb.LID >= 0xC000 {
			return fmt.Errorf("nic %q: ipoib neighbour %d (%v): lid %d is not a unicast LID", nc.Name, i, nb.IP, nb.LID)
		}
	}
	return nil
}

func (c *IPoIB) byMAC(m wire.MAC) *IPoIBNeighbour {
	for i := range c.Neighbours {
		if c.Neighbours[i].MAC == m {
			return &c.Neighbours[i]
		}
	}
	return nil
}

func (c *IPoIB) byLID(lid uint16) *IPoIBNeighbour {
	for i := range c.Neighbours {
		if c.Neighbours[i].LID == lid {
			return &c.Neighbours[i]
		}
	}
	return nil
}

func (c *IPoIB) byIP(a netip.Addr) *IPoIBNeighbour {
	for i := range c.Neighbours {
		if c.Neighbours[i].IP == a {
			return &c.Neighbours[i]
		}
	}
	return nil
}

const (
	etherTypeARP = 0x0806
	arpSize      = 28
)

// sendHostIB queues one Ethernet frame of the host as an IPoIB packet.
// Ownership of f passes to the NIC.
func (n *NIC) sendHostIB(f *frame.Frame) {
	b := f.Data
	ip := n.cfg.IPoIB
	if ip == nil || len(b) < wire.EthernetSize {
		n.cnt[IPoIBUnsupported]++
		f.Put()
		return
	}
	et := binary.BigEndian.Uint16(b[12:])
	if et == etherTypeARP {
		n.answerARP(b)
		f.Put()
		return
	}
	nb := ip.byMAC(wire.MAC(b[0:6]))
	switch {
	case et != wire.EtherTypeIPv4 && et != wire.EtherTypeIPv6:
		n.cnt[IPoIBUnsupported]++ // VLAN tags, LLDP, ...: no IPoIB encoding
		f.Put()
		return
	case nb == nil:
		n.cnt[IPoIBNoNeighbour]++ // broadcast, multicast or unknown MAC
		f.Put()
		return
	case len(b)-wire.EthernetSize+ipoibHdr > n.cfg.PortMTU:
		n.cnt[IPoIBUnsupported]++ // larger than the IPoIB MTU (PortMTU - 4)
		f.Put()
		return
	case n.q[n.slToVL(ip.SL)].frames.n >= n.cfg.HostQueueFrames:
		n.cnt[TxQueueDropped]++
		f.Put()
		return
	}
	// The IPoIB header takes the place of the Ethernet addresses' last
	// four bytes: EtherType then two reserved bytes, the packet after.
	pl := b[wire.EthernetSize-ipoibHdr:]
	binary.BigEndian.PutUint16(pl[0:], et)
	pl[2], pl[3] = 0, 0
	n.ipoibPSN = bth.PSNAdd(n.ipoibPSN, 1)
	n.rf.BTH = bth.BTHFields{OpCode: bth.UDSendOnly, PKey: n.cfg.PKeys[0], DestQP: IPoIBQPN, PSN: n.ipoibPSN}
	n.rf.Ext = bth.ExtFields{DETH: bth.DETHFields{QKey: IPoIBQKey, SrcQP: IPoIBQPN}}
	out := n.emitIB(nb.LID, ip.SL, pl)
	out.Note = "ipoib"
	f.Put()
	n.cnt[IPoIBTxPackets]++
	n.q[out.Priority].frames.push(out)
	n.wake()
}

// receiveIPoIB turns an IPoIB packet back into the Ethernet frame the host
// expects, in place: the 14-byte header ends where the IPoIB header does.
// It reports whether it kept f.
func (n *NIC) receiveIPoIB(f *frame.Frame, pkt *bth.IBPacket) bool {
	h := &pkt.Headers
	ip := n.cfg.IPoIB
	switch {
	case ip == nil:
		n.cnt[IPoIBUnsupported]++ // no IPoIB interface on this port
		return false
	case h.Info.Transport != bth.TransportUD || h.BTH.OpCode() != bth.UDSendOnly:
		n.cnt[IPoIBUnsupported]++
		return false
	case h.DETH.QKey() != IPoIBQKey:
		n.cnt[RxQKeyViolation]++
		return false
	case len(h.Payload) < ipoibHdr:
		n.cnt[RxMalformed]++
		return false
	}
	nb := ip.byLID(pkt.LRH.SLID())
	if nb == nil {
		n.cnt[IPoIBNoNeighbour]++
		return false
	}
	n.cnt[IPoIBRxPackets]++
	// Payload aliases f.Data: find its offset, then grow the frame's
	// view 10 bytes before the IPoIB header and trim the trailer.
	start := len(f.Data) - len(h.Pad) - bth.ICRCSize - wire.VCRCSize - len(h.Payload)
	et := binary.BigEndian.Uint16(h.Payload)
	end := start + len(h.Payload)
	f.SetLen(end)
	f.TrimFront(start + ipoibHdr - wire.EthernetSize)
	b := f.Data
	copy(b[0:6], n.cfg.MAC[:])
	copy(b[6:12], nb.MAC[:])
	binary.BigEndian.PutUint16(b[12:], et)
	f.Note = ""
	n.up(f)
	return true
}

// answerARP replies to the host's ARP request for a neighbour, as the
// neighbour would (RFC 826); anything else ARP is dropped and counted.
func (n *NIC) answerARP(b []byte) {
	a := b[wire.EthernetSize:]
	if len(a) < arpSize || binary.BigEndian.Uint16(a[6:]) != 1 || binary.BigEndian.Uint16(a[2:]) != wire.EtherTypeIPv4 {
		n.cnt[IPoIBUnsupported]++
		return
	}
	target := netip.AddrFrom4([4]byte(a[24:28]))
	nb := n.cfg.IPoIB.byIP(target)
	if nb == nil {
		n.cnt[IPoIBNoNeighbour]++
		return
	}
	r := n.pool.Get(wire.EthernetSize + arpSize)
	d := r.Data
	copy(d[0:6], b[6:12])
	copy(d[6:12], nb.MAC[:])
	binary.BigEndian.PutUint16(d[12:], etherTypeARP)
	p := d[wire.EthernetSize:]
	copy(p[0:6], a[0:6]) // htype, ptype, hlen, plen
	binary.BigEndian.PutUint16(p[6:], 2)
	copy(p[8:14], nb.MAC[:])
	copy(p[14:18], a[24:28])
	copy(p[18:24], a[8:14])
	copy(p[24:28], a[14:18])
	n.cnt[IPoIBARPReplies]++
	n.up(r)
}
