package switchcore

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// Receive takes a frame arriving on port at f.HeadAt (the current time):
// classify, admit into the ingress buffer, forward, and enqueue or start it
// at the egress port. It takes ownership of f.
func (s *Switch) Receive(port int, f *frame.Frame) {
	if port < 0 || port >= len(s.ports) {
		f.Put()
		return
	}
	p := &s.ports[port]
	p.c.RxPacketsPhy++
	p.c.RxBytesPhy += uint64(f.Len())
	f.InPort = -1 // not admitted yet: nothing to release
	if !p.up {
		s.drop(p, -1, f, DropLinkDown)
		return
	}
	if s.cfg.Fabric == FabricIB {
		countIBPacket(&p.c.RcvPkts, &p.c.RcvData, f.Len())
		s.receiveIB(p, f)
		return
	}
	if f.Corrupt && s.headBytes == 0 {
		// Frames carry no FCS bytes here; f.Corrupt stands for a failed
		// FCS check, which only a store-and-forward switch can act on.
		s.drop(p, -1, f, DropFCSError)
		return
	}
	var l2 wire.L2
	if err := wire.DecodeEthernet(f.Data, &l2); err != nil {
		s.drop(p, -1, f, DropMalformed)
		return
	}
	switch l2.EtherType {
	case wire.EtherTypeMACControl:
		s.receiveMACControl(p, f)
		return
	case wire.EtherTypeLinkState:
		// The switches' own, on their link-local address; any other
		// frame of the local experimental EtherType is forwarded.
		if l2.Dst == wire.LinkStateDst {
			if f.Corrupt {
				// It ends here: the frame check applies whatever the
				// cut-through, and a corrupt copy, stored, would hide
				// the good one behind the same sequence number.
				s.drop(p, -1, f, DropFCSError)
				return
			}
			s.receiveLinkState(p, f)
			return
		}
	}
	var key flowKey
	isIP := false
	tc := uint8(0)
	switch l2.EtherType {
	case wire.EtherTypeIPv4, wire.EtherTypeIPv6:
		l3 := f.Data[l2.HdrLen:]
		if !parseFlow(l2.EtherType, l2.HdrLen, l3, &key) {
			s.drop(p, -1, f, DropMalformed)
			return
		}
		isIP = true
		if s.cfg.Trust == TrustDSCP {
			tc = s.cfg.DSCPToTC[wire.IPDSCP(l3)]
		} else if l2.Tagged {
			tc = s.cfg.Dot1pToTC[l2.PCP]
		}
	default:
		if l2.Tagged {
			tc = s.cfg.Dot1pToTC[l2.PCP]
		}
	}
	f.Priority = tc
	f.PG = s.cfg.TCToPG[tc]
	f.Class = s.cfg.TCToQueue[tc]
	pc := &p.c.Prio[tc]
	pc.RxPackets++
	pc.RxBytes += uint64(f.Len())
	s.fdb.learn(l2.Src, port)

	// PFC watchdog, drop action: traffic arriving on a stormed priority is
	// discarded so it cannot build up behind the storm.
	if w := &p.wd[f.Class]; w.stormed {
		if w.action == PFCWDDrop {
			pc.PFCWDRxDrop++
			s.drop(p, int(tc), f, DropPFCWD)
			return
		}
		pc.PFCWDRxOK++
	}

	out, routed := s.forward(port, &l2, isIP, &key)
	if out < 0 {
		s.drop(p, int(tc), f, DropNoRoute)
		return
	}
	op := &s.ports[out]
	if f.Len()-l2.HdrLen > op.cfg.MTU {
		s.drop(p, int(tc), f, DropMTUExceeded)
		return
	}
	if routed && s.cfg.DecrementTTL {
		if !decrementTTL(f.Data[l2.HdrLen:]) {
			s.drop(p, int(tc), f, DropTTLExpired)
			return
		}
	}
	if !s.admit(p, f) {
		return
	}
	f.InPort = port
	s.toEgress(op, f)
}

// toEgress hands an admitted frame to its egress port: drops that happen
// at the egress (down port, watchdog, egress threshold, WRED at enqueue) are
// counted there, then the frame is queued and the transmitter kicked.
func (s *Switch) toEgress(op *port, f *frame.Frame) {
	q := int(f.Class)
	if !op.up {
		s.dropAfterAdmit(op, f, DropLinkDown)
		return
	}
	if w := &op.wd[q]; w.stormed && w.action == PFCWDDrop {
		op.c.Prio[q].PFCWDTxDrop++
		s.dropAfterAdmit(op, f, DropPFCWD)
		return
	}
	e := &op.eq[q]
	lossless := s.ports[f.InPort].pg[f.PG].lossless
	if e.acct.prof != nil && !lossless && !e.acct.fits(f.Len()) {
		s.dropAfterAdmit(op, f, DropEgressThreshold)
		return
	}
	if s.cfg.ECNMarkAt == MarkAtEnqueue && e.wred != nil {
		if s.applyWRED(op, q, f, e.bytes) {
			s.dropAfterAdmit(op, f, DropWRED)
			return
		}
	}
	ct := s.headBytes > 0 && op.speed >= s.ports[f.InPort].speed
	s.enqueue(op, q, f)
	if ct {
		op.ctFrame = f
		s.tryTx(op)
		op.ctFrame = nil
		return
	}
	s.tryTx(op)
}

// parseFlow validates the IP (and UDP) headers and fills the ECMP key.
func parseFlow(et uint16, off int, l3 []byte, k *flowKey) bool {
	var l4 []byte
	if et == wire.EtherTypeIPv4 {
		ip := wire.IPv4(l3)
		if ip.ValidateHeader(off) != nil { // a router forwards fragments
			return false
		}
		src, dst := ip.Src(), ip.Dst()
		copy(k.src[12:], src[:])
		copy(k.dst[12:], dst[:])
		k.src[10], k.src[11], k.dst[10], k.dst[11] = 0xFF, 0xFF, 0xFF, 0xFF
		k.v4 = true
		k.proto = ip.Protocol()
		l4 = l3[ip.HeaderLen():ip.TotalLength()]
		if ip.MF() || ip.FragmentOffset() != 0 {
			// A fragment: only the first carries the ports, so every
			// fragment of a datagram hashes on the addresses alone and
			// they all take one path (no reordering across paths).
			return true
		}
	} else {
		ip := wire.IPv6(l3)
		if ip.Validate(off) != nil {
			return false
		}
		k.src, k.dst = ip.Src(), ip.Dst()
		k.proto = ip.NextHeader()
		l4 = l3[wire.IPv6Size : wire.IPv6Size+int(ip.PayloadLength())]
	}
	switch k.proto {
	case wire.IPProtoUDP:
		u := wire.UDP(l4)
		if len(u) < wire.UDPSize {
			return false
		}
		k.sport, k.dport = u.SrcPort(), u.DstPort()
	case wire.IPProtoTCP, wire.IPProtoSCTP:
		// Their ports are where UDP's are: each TCP connection takes its
		// own path, as a switch's 5-tuple ECMP hash spreads them.
		if len(l4) >= 4 {
			k.sport, k.dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
		}
	}
	return true
}

// forward returns the egress port for a frame from inPort, or -1, and
// whether it was routed at L3.
func (s *Switch) forward(inPort int, l2 *wire.L2, isIP bool, k *flowKey) (int, bool) {
	if e, ok := s.fdb.m[l2.Dst]; ok && e.static {
		return e.port, false
	}
	if isIP && len(s.lpm.routes) > 0 {
		var i int
		if k.v4 {
			var d [4]byte
			copy(d[:], k.dst[12:])
			i = s.lpm.lookup4(d)
		} else {
			i = s.lpm.lookup6(k.dst)
		}
		if i >= 0 {
			ports := s.lpm.nextHops(i)
			if len(ports) == 1 {
				return ports[0], true
			}
			return ports[ecmpHash(s.cfg.ECMPSeed, k)%uint64(len(ports))], true
		}
	}
	if e, ok := s.fdb.m[l2.Dst]; ok && e.port != inPort {
		return e.port, false
	}
	return -1, false
}

// decrementTTL lowers the IPv4 TTL (checksum updated) or IPv6 hop limit;
// it reports false when the packet must not be forwarded (TTL <= 1).
func decrementTTL(l3 []byte) bool {
	switch wire.IPVersion(l3) {
	case 4:
		ip := wire.IPv4(l3)
		if ip.TTL() <= 1 {
			return false
		}
		ip.SetTTLWithChecksumUpdate(ip.TTL() - 1)
	case 6:
		if l3[7] <= 1 {
			return false
		}
		l3[7]--
	}
	return true
}
