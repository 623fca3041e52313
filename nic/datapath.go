package nic

import (
	"encoding/binary"
	"errors"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// fifo is a growable ring of frames.
type fifo struct {
	buf  []*frame.Frame
	head int
	n    int
}

func (q *fifo) push(f *frame.Frame) {
	if q.n == len(q.buf) {
		nb := make([]*frame.Frame, max(2*len(q.buf), 16))
		for i := range q.n {
			nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = f
	q.n++
}

func (q *fifo) pop() *frame.Frame {
	if q.n == 0 {
		return nil
	}
	f := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return f
}

// txQueue is one priority's egress: frames in arrival order (host frames,
// CNPs) and the QPs that have something to send, served round robin.
type txQueue struct {
	frames fifo
	qps    []*QP
	rr     int
	// qpTurn: the queued frames went last, the QPs go next (kick).
	qpTurn bool
}

// schedule puts q on its priority's active list and wakes the port.
func (n *NIC) schedule(q *QP) {
	if !q.scheduled {
		q.scheduled = true
		tq := &n.q[q.prio]
		tq.qps = append(tq.qps, q)
	}
	n.wake()
}

func (n *NIC) unschedule(q *QP) {
	if !q.scheduled {
		return
	}
	tq := &n.q[q.prio]
	for i, x := range tq.qps {
		if x == q {
			tq.removeAt(i)
			break
		}
	}
}

func (tq *txQueue) removeAt(i int) {
	q := tq.qps[i]
	q.scheduled = false
	last := len(tq.qps) - 1
	copy(tq.qps[i:], tq.qps[i+1:])
	tq.qps[last] = nil
	tq.qps = tq.qps[:last]
	if tq.rr > i {
		tq.rr--
	}
}

// wake makes the port look for work as soon as it is free.
func (n *NIC) wake() { n.armPort(max(n.clk.Now(), n.busyUntil)) }

// armPort arms the port timer for t unless it already fires no later.
func (n *NIC) armPort(t clock.Time) {
	if at, ok := n.portTimer.When(); ok && at <= t {
		return
	}
	n.portTimer.Reset(t)
}

// kick is the port timer: if the port is free, start the next frame.
// MAC control frames go first, then priorities 7..0 strictly; a paused
// priority is skipped; within a priority the queued frames (the host's,
// CNPs, MADs) and the QPs take turns, one in two while both have
// something to send, the QPs round-robin among themselves: a host that
// keeps its queue full on the RDMA priority (TCP over IPoIB on the RDMA
// VL) cannot starve the QPs, as an HCA's arbiter does not let IPoIB's UD
// QP starve the others. A QP whose pacing holds it back reports when it may send;
// the timer is armed for the earliest such time or pause end. On an IB
// port flow-control packets go first, and a VL whose head packet lacks
// credit is skipped until the peer grants more (IBA 7.9.4).
func (n *NIC) kick() {
	now := n.clk.Now()
	if n.tx == nil || n.linkDown || n.txHeld {
		return
	}
	if now < n.busyUntil {
		n.armPort(n.busyUntil)
		return
	}
	if n.ibl.fcDue != 0 {
		n.transmit(n.nextFC(), now, false)
		return
	}
	if n.sma != nil {
		if f := n.sma.q.pop(); f != nil {
			n.transmit(f, now, false)
			return
		}
		if !n.portActive() {
			return // the SM's OnPortActive wakes the port
		}
	}
	if f := n.macCtl.pop(); f != nil {
		n.assertXoff(f, now)
		n.transmit(f, now, false)
		return
	}
	wake := clock.Never
	ib := n.ib()
	for p := 7; p >= 0; p-- {
		tq := &n.q[p]
		if ib && n.ibl.held[p] != nil {
			// The VL's head packet waits for credit; a flow-control
			// packet from the peer wakes the port.
			if f := n.ibl.held[p]; n.ibCredit(f.Priority, f) {
				n.ibl.held[p] = nil
				n.transmit(f, now, true)
				return
			}
			continue
		}
		if tq.frames.n == 0 && len(tq.qps) == 0 {
			continue
		}
		if until := n.prio[p].pausedUntil; until > now {
			wake = min(wake, until)
			continue
		}
		if tq.frames.n > 0 && (!tq.qpTurn || len(tq.qps) == 0) {
			tq.qpTurn = true
			if n.start(p, tq.frames.pop(), now) {
				return
			}
			continue
		}
		pulled := false
		for k := len(tq.qps); k > 0 && len(tq.qps) > 0; k-- {
			if tq.rr >= len(tq.qps) {
				tq.rr = 0
			}
			q := tq.qps[tq.rr]
			f, at := q.pull(now)
			if f != nil {
				tq.rr++
				tq.qpTurn, pulled = false, true
				if n.start(p, f, now) {
					return
				}
				break
			}
			if at == clock.Never {
				tq.removeAt(tq.rr)
				continue
			}
			wake = min(wake, at)
			tq.rr++
		}
		if !pulled && tq.frames.n > 0 {
			// No QP may send now (paced, or done): the frames do not
			// wait for their turn.
			if n.start(p, tq.frames.pop(), now) {
				return
			}
		}
	}
	if wake != clock.Never {
		n.armPort(wake)
	}
}

// start transmits data frame f of queue p now and reports true, or, on an
// IB port whose VL lacks the credit for it, holds it at the head of the
// queue and reports false.
func (n *NIC) start(p int, f *frame.Frame, now clock.Time) bool {
	if n.ib() && int(f.Priority) != p {
		// A UD QP sits on one queue but each send's address handle
		// picks its VL: the frame joins its own VL's queue, so that a
		// hold for credit blocks that VL only (no order is owed to UD).
		n.q[f.Priority].frames.push(f)
		n.armPort(now)
		return false
	}
	if n.ib() && !n.ibCredit(f.Priority, f) {
		n.ibl.held[p] = f
		return false
	}
	n.transmit(f, now, true)
	return true
}

// transmit starts f now: the port is busy until its tail and the wire
// overhead after it (wire.Overhead: preamble, FCS and inter-frame gap on
// Ethernet) have left. MAC control frames (data false) are not a
// priority's traffic.
func (n *NIC) transmit(f *frame.Frame, now clock.Time, data bool) {
	l := len(f.Data)
	f.TailAt = now + clock.SerializationTime(l, n.cfg.Rate)
	if f.Born == 0 {
		f.Born = now
	}
	n.busyUntil = now + clock.SerializationTime(l+wire.Overhead(n.ib()), n.cfg.Rate)
	n.port.TxPacketsPhy++
	n.port.TxBytesPhy += uint64(l)
	if data {
		if n.ib() {
			n.ibSent(f.Priority, f)
		}
		pc := &n.prio[f.Priority&7]
		pc.TxPackets++
		pc.TxBytes += uint64(l)
	}
	n.tx.Transmit(f)
	n.armPort(n.busyUntil)
}

// SendHost queues a frame from the host kernel. It is classified like any
// frame and shares the priority queues, PFC and the port with the RDMA
// engine. A RoCEv2 frame from a host RoCE stack (soft-RoCE) is marked ECT(0)
// as the engine's own are. Ownership passes to the NIC.
func (n *NIC) SendHost(f *frame.Frame) {
	if n.ib() {
		n.sendHostIB(f)
		return
	}
	p := n.classify(f.Data)
	f.Priority = p
	if !n.cfg.NotECT {
		markRoCEECT(f.Data)
	}
	tq := &n.q[p]
	if tq.frames.n >= n.cfg.HostQueueFrames {
		n.cnt[TxQueueDropped]++
		f.Put()
		return
	}
	tq.frames.push(f)
	n.wake()
}

// markRoCEECT sets ECT(0) on a Not-ECT RoCEv2 frame. The ICRC masks the
// traffic class, so it stays valid (IBA A17.3.3).
func markRoCEECT(b []byte) {
	l3, ok := roceL3(b)
	if ok && wire.IPECN(b[l3:]) == wire.ECNNotECT {
		wire.SetIPECN(b[l3:], wire.ECNECT0)
	}
}

// roceL3 returns the IP header offset of a UDP 4791 frame.
func roceL3(b []byte) (int, bool) {
	if len(b) < wire.EthernetSize {
		return 0, false
	}
	l3 := wire.EthernetSize
	et := binary.BigEndian.Uint16(b[12:])
	if et == wire.EtherTypeVLAN && len(b) >= l3+wire.VLANTagSize {
		et = binary.BigEndian.Uint16(b[16:])
		l3 += wire.VLANTagSize
	}
	switch et {
	case wire.EtherTypeIPv4:
		if len(b) < l3+wire.IPv4MinSize+wire.UDPSize || b[l3]>>4 != 4 || b[l3+9] != wire.IPProtoUDP {
			return 0, false
		}
		l4 := l3 + int(b[l3]&0xF)*4
		return l3, len(b) >= l4+wire.UDPSize && binary.BigEndian.Uint16(b[l4+2:]) == wire.RoCEv2Port
	case wire.EtherTypeIPv6:
		if len(b) < l3+wire.IPv6Size+wire.UDPSize || b[l3]>>4 != 6 || b[l3+6] != wire.IPProtoUDP {
			return 0, false
		}
		return l3, binary.BigEndian.Uint16(b[l3+wire.IPv6Size+2:]) == wire.RoCEv2Port
	}
	return 0, false
}

// forUs reports whether the RoCEv2 frame with IP header at l3 is addressed
// to the NIC's IP.
func (n *NIC) forUs(b []byte, l3 int) bool {
	if n.ip4 {
		if b[l3]>>4 != 4 {
			return false
		}
		return [4]byte(b[l3+16:l3+20]) == n.ip.As4()
	}
	return b[l3]>>4 == 6 && [16]byte(b[l3+24:l3+40]) == n.ip.As16()
}

// Receive takes a frame from the wire, whole (the NIC stores and
// forwards: it is called at f.TailAt). MAC control frames drive PFC;
// RoCEv2 frames for the NIC's address go to the engine; everything else
// goes up to the host. Ownership passes to the NIC.
func (n *NIC) Receive(f *frame.Frame) {
	b := f.Data
	n.port.RxPacketsPhy++
	n.port.RxBytesPhy += uint64(len(b))
	if n.ib() {
		n.receiveIB(f)
		return
	}
	if len(b) >= wire.EthernetSize && binary.BigEndian.Uint16(b[12:]) == wire.EtherTypeMACControl {
		// MAC control frames are counted by rx_pause_ctrl_phy, not as a
		// priority's traffic.
		n.receiveMACControl(f)
		f.Put()
		return
	}
	p := n.classify(b)
	pc := &n.prio[p]
	pc.RxPackets++
	pc.RxBytes += uint64(len(b))
	if l3, ok := roceL3(b); ok && n.forUs(b, l3) {
		if !n.receiveRoCE(f, p) {
			f.Put()
		}
		return
	}
	n.up(f)
}

// up hands a frame to the host.
func (n *NIC) up(f *frame.Frame) {
	if n.host == nil {
		n.cnt[RxNoHost]++
		f.Put()
		return
	}
	n.host(f)
}

// receiveRoCE decodes a RoCEv2 frame for our address, verifies its ICRC
// and hands it to the QP it names. It reports whether it passed the frame
// up to the host; otherwise the caller puts it back.
func (n *NIC) receiveRoCE(f *frame.Frame, prio uint8) bool {
	pkt := &n.pkt
	if err := pkt.Decode(f.Data, bth.VerifyICRC); err != nil {
		// A corrupted byte may make a header undecodable before the ICRC
		// is reached; the ICRC still tells corruption from a malformed
		// sender, so check it whenever the IP datagram can be found.
		var we *wire.Error
		if errors.As(err, &we) && we.Reason == wire.ReasonChecksum || !icrcOK(f.Data) {
			n.cnt[RxICRCErr]++
		} else {
			n.cnt[RxMalformed]++
		}
		return false
	}
	h := &pkt.Headers
	// The notification point counts every CE-marked RoCEv2 packet for our
	// address, as mlx5's does per packet, before any QP is looked at: a
	// packet for a QP this engine does not have, or one its QP refuses,
	// was marked all the same. Only an accepted packet may make a CNP
	// (notifyCE): the CNP goes to the QP's peer, at most one per flow
	// per np_min_time_between_cnps.
	ce := wire.IPECN(pkt.L3()) == wire.ECNCE
	if ce {
		n.cnt[NPECNMarkedRoCEPackets]++
	}
	q := n.QP(h.BTH.DestQP())
	if h.Info.Transport == bth.TransportCNP && q != nil {
		n.receiveCNP(q)
		return false
	}
	// A frame for a QP this engine does not have (a CNP too: rp_cnp_ignored
	// is for CNPs a QP without congestion control ignores) is counted
	// as such, then goes to the host's own RoCE stack, whose QP it may
	// be, or is dropped when there is no host.
	if q == nil {
		n.cnt[RxUnknownQP]++
		if n.host != nil {
			n.host(f)
			return true
		}
		return false
	}
	if !n.accept(q, h, len(f.Data)) {
		return false
	}
	if ce {
		n.notifyCE(q, pkt, prio)
	}
	if h.Info.Flags&bth.Request != 0 {
		var g *[grhSize]byte
		if q.typ == IBV_QPT_UD {
			// Verbs give a UD receiver the GRH; RoCEv2 over IPv4 puts
			// the IPv4 header in its last 20 bytes.
			g = &n.grh
			*g = [grhSize]byte{}
			if pkt.IPVersion == 4 {
				copy(g[20:], pkt.IPv4[:20])
			} else {
				copy(g[:], pkt.IPv6[:grhSize])
			}
		}
		q.respond(&pkt.Headers, g, 0, 0)
	} else {
		q.onResponse(h)
	}
	return false
}

// accept decides whether q takes a packet of size bytes with headers h
// (either fabric): its state and type must accept the transport and the
// P_Key must match; an accepted packet is counted.
func (n *NIC) accept(q *QP, h *bth.Headers, size int) bool {
	if !q.acceptsTransport(h.Info.Transport) {
		n.cnt[RxQPState]++
		return false
	}
	if h.BTH.PKey()&0x7FFF != q.pkey&0x7FFF {
		n.cnt[RxPKeyViolation]++
		return false
	}
	n.cnt[RdmaRxPackets]++
	n.cnt[RdmaRxBytes] += uint64(size)
	q.Stats.RxPackets++
	q.Stats.RxBytes += uint64(size)
	q.Stats.RxPayloadBytes += uint64(len(h.Payload))
	return true
}

// acceptsTransport reports whether packets of transport t may reach the QP
// at all in its state (IBA 10.3.1: RESET and INIT drop everything).
func (q *QP) acceptsTransport(t bth.Transport) bool {
	switch q.state {
	case IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_ERR:
		return false
	}
	switch q.typ {
	case IBV_QPT_RC:
		return t == bth.TransportRC
	case IBV_QPT_UC:
		return t == bth.TransportUC
	}
	return t == bth.TransportUD
}

// icrcOK verifies the ICRC of a RoCEv2 frame whose headers may not
// decode; it reports true when the datagram cannot even be delimited.
func icrcOK(b []byte) bool {
	l3, ok := roceL3(b)
	if !ok {
		return true
	}
	var end, hdr int
	if b[l3]>>4 == 4 {
		end, hdr = l3+int(binary.BigEndian.Uint16(b[l3+2:])), int(b[l3]&0x0f)*4
	} else {
		end, hdr = l3+wire.IPv6Size+int(binary.BigEndian.Uint16(b[l3+4:])), wire.IPv6Size
	}
	// A datagram too short for a BTH and an ICRC has no ICRC to be wrong:
	// it is malformed, not corrupted.
	if end > len(b) || end < l3+hdr+wire.UDPSize+bth.BTHSize+bth.ICRCSize {
		return true
	}
	return bth.VerifyICRCRoCE(b[l3:end])
}
