package nic

import (
	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// The requester turns send WQEs into packets (rxe_req.c). It runs when the
// port offers the QP a turn and produces at most one packet per turn, so a
// QP never queues more than the packet on the wire: pacing, PFC and
// retransmission act on packets not yet built.

type requester struct {
	psn     uint32 // PSN of the next packet to send
	highPSN uint32 // one past the highest PSN ever sent (tells a resend)
	idx     uint32 // send-queue index of the WQE being sent
	rdOut   int    // READ/atomic WQEs sent and not completed
	noAck   int    // packets since the last one with AckReq
	waitRNR bool   // an RNR NAK holds the requester until the RNR timer
}

type reqState uint8

const (
	reqGetWQE reqState = iota
	reqCheckFence
	reqCheckRdAtomic
	reqCheckWindow
	reqCheckLocal
	reqBuild
	reqLocalError
	reqDone
	reqExit
	numReqStates
)

var reqStateNames = [numReqStates]string{
	"GET_WQE", "CHECK_FENCE", "CHECK_RD_ATOMIC", "CHECK_WINDOW", "CHECK_LOCAL", "BUILD",
	"LOCAL_ERROR", "DONE", "EXIT",
}

func (s reqState) String() string { return reqStateNames[s] }

// reqCtx carries one run of the requester.
type reqCtx struct {
	w      *sendWQE
	status WCStatus
	f      *frame.Frame
}

// request runs the requester state machine once: it returns the next
// packet of the QP, or nil if there is none now.
func (q *QP) request(now clock.Time) *frame.Frame {
	var c reqCtx
	s := reqGetWQE
	for {
		if q.nic.trace != nil {
			q.nic.trace(q.qpn, "req", s.String())
		}
		switch s {
		case reqGetWQE:
			s = q.reqGetWQE(&c)
		case reqCheckFence:
			s = q.reqCheckFence(&c)
		case reqCheckRdAtomic:
			s = q.reqCheckRdAtomic(&c)
		case reqCheckWindow:
			s = q.reqCheckWindow(&c)
		case reqCheckLocal:
			s = q.reqCheckLocal(&c)
		case reqBuild:
			s = q.reqBuild(&c, now)
		case reqLocalError:
			s = q.reqLocalError(&c)
		case reqDone:
			return c.f
		default: // reqExit
			return nil
		}
	}
}

// reqGetWQE: only RTS sends; SQD finishes the WQEs it had begun.
func (q *QP) reqGetWQE(c *reqCtx) reqState {
	if q.state != IBV_QPS_RTS && q.state != IBV_QPS_SQD || q.req.waitRNR || q.req.idx == q.sqTail {
		return reqExit
	}
	c.w = q.sqSlot(q.req.idx)
	if q.state == IBV_QPS_SQD && !c.w.started {
		return reqExit
	}
	return reqCheckFence
}

// reqCheckFence: a fenced WR waits for every earlier READ and atomic
// (IBV_SEND_FENCE).
func (q *QP) reqCheckFence(c *reqCtx) reqState {
	if c.w.flags&IBV_SEND_FENCE != 0 && q.req.rdOut > 0 {
		return reqExit
	}
	return reqCheckRdAtomic
}

// reqCheckRdAtomic: at most max_rd_atomic READ/atomic requests outstanding
// (the responder keeps only that many responder resources).
func (q *QP) reqCheckRdAtomic(c *reqCtx) reqState {
	if q.typ == IBV_QPT_RC && c.w.op.readOrAtomic() && q.req.rdOut >= int(max(q.attr.MaxRdAtomic, 1)) {
		return reqExit
	}
	return reqCheckWindow
}

// reqCheckWindow bounds the unacknowledged PSNs (the 24-bit PSN space allows fewer than 2^23).
//
// In GoBack0 mode the responder acknowledges whole messages only, so a
// window smaller than a message would stall it: the window is then the
// PSN space's own limit.
func (q *QP) reqCheckWindow(c *reqCtx) reqState {
	limit := q.nic.cfg.MaxInflight
	if q.nic.cfg.Retransmit == GoBack0 {
		limit = bth.PSNHalfWindow - 1
	}
	if q.typ == IBV_QPT_RC && int(bth.PSNDistance(q.comp.psn, q.req.psn)) >= limit {
		return reqExit
	}
	return reqCheckLocal
}

// reqCheckLocal validates a WQE the first time it is sent and gives it its
// PSNs: one per packet, and for a READ one per response packet.
func (q *QP) reqCheckLocal(c *reqCtx) reqState {
	w := c.w
	if w.started {
		return reqBuild
	}
	need := AccessFlags(0)
	if w.op.readOrAtomic() {
		need = IBV_ACCESS_LOCAL_WRITE
	}
	switch {
	case q.typ == IBV_QPT_UD && int(w.sg.size) > q.mtu:
		c.status = IBV_WC_LOC_LEN_ERR
		return reqLocalError
	case w.op.isAtomic() && w.sg.size != 8:
		c.status = IBV_WC_LOC_LEN_ERR
		return reqLocalError
	case w.sg.size > 1<<31:
		c.status = IBV_WC_LOC_LEN_ERR
		return reqLocalError
	case !q.nic.checkSGL(q.pd, &w.sg, need):
		c.status = IBV_WC_LOC_PROT_ERR
		return reqLocalError
	}
	w.started = true
	w.firstPSN = q.req.psn
	w.npkts = 1
	if !w.op.isAtomic() && q.typ != IBV_QPT_UD && w.sg.size > 0 {
		w.npkts = (w.sg.size + uint32(q.mtu) - 1) / uint32(q.mtu)
	}
	w.lastPSN = bth.PSNAdd(w.firstPSN, int(w.npkts)-1)
	return reqBuild
}

// reqLocalError: the WQE fails without a packet. It completes in order
// (after the WQEs before it), then the QP goes to ERR (RC) or SQE (UC, UD).
func (q *QP) reqLocalError(c *reqCtx) reqState {
	w := c.w
	w.started, w.failed, w.errStatus = true, true, c.status
	w.firstPSN, w.lastPSN, w.npkts = q.req.psn, bth.PSNAdd(q.req.psn, -1), 0
	q.req.idx++
	q.completeInOrder()
	return reqExit
}

// A packet's position in its message selects the opcode (sendOpcode,
// writeOpcode give the RC ones; a UC opcode is the RC one plus 0x20: the
// same low five bits under transport bits 001, IBA 9.2).
const (
	posFirst = iota
	posMiddle
	posLast
	posOnly
)

func sendOpcode(pos int, imm, inv bool) bth.Opcode {
	switch pos {
	case posFirst:
		return bth.RCSendFirst
	case posMiddle:
		return bth.RCSendMiddle
	case posLast:
		switch {
		case imm:
			return bth.RCSendLastWithImmediate
		case inv:
			return bth.RCSendLastWithInvalidate
		}
		return bth.RCSendLast
	}
	switch {
	case imm:
		return bth.RCSendOnlyWithImmediate
	case inv:
		return bth.RCSendOnlyWithInvalidate
	}
	return bth.RCSendOnly
}

func writeOpcode(pos int, imm bool) bth.Opcode {
	switch pos {
	case posFirst:
		return bth.RCWriteFirst
	case posMiddle:
		return bth.RCWriteMiddle
	case posLast:
		if imm {
			return bth.RCWriteLastWithImmediate
		}
		return bth.RCWriteLast
	}
	if imm {
		return bth.RCWriteOnlyWithImmediate
	}
	return bth.RCWriteOnly
}

// reqBuild builds the packet at req.psn of the WQE.
func (q *QP) reqBuild(c *reqCtx, now clock.Time) reqState {
	n := q.nic
	w := c.w
	psn := q.req.psn
	k := bth.PSNDistance(w.firstPSN, psn) // packet index within the message
	mtu := uint32(q.mtu)
	last := k+1 >= w.npkts
	pos := posMiddle
	switch {
	case k == 0 && last:
		pos = posOnly
	case k == 0:
		pos = posFirst
	case last:
		pos = posLast
	}
	rf := &n.rf
	rf.BTH = bth.BTHFields{PKey: q.pkey, DestQP: q.attr.DestQPNum, PSN: psn}
	rf.Ext = bth.ExtFields{}
	var payload []byte
	var ah *AH
	switch {
	case q.typ == IBV_QPT_UD:
		rf.BTH.OpCode = bth.UDSendOnly
		if w.op == IBV_WR_SEND_WITH_IMM {
			rf.BTH.OpCode = bth.UDSendOnlyWithImmediate
		}
		qkey := w.udQKey
		if qkey&0x80000000 != 0 {
			qkey = q.attr.QKey // IBA 10.2.4: high bit set takes the QP's Q_Key
		}
		rf.BTH.DestQP = w.udQPN
		rf.Ext.DETH.QKey, rf.Ext.DETH.SrcQP = qkey, q.qpn
		rf.Ext.ImmDt = w.imm
		rf.BTH.SE = w.flags&IBV_SEND_SOLICITED != 0
		payload = n.payload(q, w, 0, w.sg.size)
		ah = w.ah
	case w.op.isSend():
		rf.BTH.OpCode = sendOpcode(pos, w.op == IBV_WR_SEND_WITH_IMM, w.op == IBV_WR_SEND_WITH_INV)
		off := k * mtu
		payload = n.payload(q, w, off, min(mtu, w.sg.size-off))
		rf.Ext.ImmDt, rf.Ext.IETH = w.imm, w.invRKey
		rf.BTH.SE = last && w.flags&IBV_SEND_SOLICITED != 0
	case w.op.isWrite():
		rf.BTH.OpCode = writeOpcode(pos, w.op == IBV_WR_RDMA_WRITE_WITH_IMM)
		off := k * mtu
		payload = n.payload(q, w, off, min(mtu, w.sg.size-off))
		rf.Ext.RETH = bth.RETHFields{VA: w.remoteAddr, RKey: w.rkey, DMALen: w.sg.size}
		rf.Ext.ImmDt = w.imm
		rf.BTH.SE = last && w.op == IBV_WR_RDMA_WRITE_WITH_IMM && w.flags&IBV_SEND_SOLICITED != 0
	case w.op == IBV_WR_RDMA_READ:
		// A resent READ asks only for what is still missing (the responder restarts at that PSN).
		off := k * mtu
		rf.BTH.OpCode = bth.RCReadRequest
		rf.Ext.RETH = bth.RETHFields{VA: w.remoteAddr + uint64(off), RKey: w.rkey, DMALen: w.sg.size - off}
		last = true
	default: // atomics
		rf.BTH.OpCode = bth.RCCompareSwap
		rf.Ext.AtomicETH = bth.AtomicETHFields{VA: w.remoteAddr, RKey: w.rkey, SwapAdd: w.swap, Compare: w.compareAdd}
		if w.op == IBV_WR_ATOMIC_FETCH_AND_ADD {
			rf.BTH.OpCode = bth.RCFetchAdd
			rf.Ext.AtomicETH.SwapAdd, rf.Ext.AtomicETH.Compare = w.compareAdd, 0
		}
	}
	if q.typ == IBV_QPT_UC {
		rf.BTH.OpCode += 0x20 // UC opcodes: RC's with transport bits 001
	}
	if q.typ == IBV_QPT_RC {
		rf.BTH.AckReq = last || w.op.readOrAtomic() || q.req.noAck+1 >= n.cfg.AckReqEvery
		if rf.BTH.AckReq {
			q.req.noAck = 0
		} else {
			q.req.noAck++
		}
	}
	c.f = n.emitTo(q, ah, payload)

	if bth.PSNBefore(psn, q.req.highPSN) {
		n.cnt[RoCEAdpRetrans]++
		q.Stats.RetransmittedPackets++
	}
	if w.op == IBV_WR_RDMA_READ {
		q.req.psn = bth.PSNAdd(w.lastPSN, 1)
	} else {
		q.req.psn = bth.PSNAdd(psn, 1)
	}
	if bth.PSNBefore(q.req.highPSN, q.req.psn) {
		q.req.highPSN = q.req.psn
	}
	if last {
		q.req.idx++
		if w.op.readOrAtomic() {
			q.req.rdOut++
		}
		if q.typ != IBV_QPT_RC {
			// UC and UD complete when the last packet leaves (no
			// acknowledgement on unreliable services).
			q.completeInOrder()
		}
	}
	if q.typ == IBV_QPT_RC && q.timeout != 0 {
		if _, armed := q.retryTimer.When(); !armed {
			q.retryTimer.Reset(now + q.timeout)
		}
	}
	return reqDone
}

// payload returns k bytes of the WQE's gather list from off: in place when
// they lie in one SGE, else gathered into the NIC's scratch buffer.
func (n *NIC) payload(q *QP, w *sendWQE, off, k uint32) []byte {
	if b, ok := n.contiguous(q.pd, &w.sg, off, k); ok {
		return b
	}
	dst := n.gather[:k]
	n.copyOut(q.pd, &w.sg, off, dst)
	return dst
}

// pull gives the port the QP's next frame: responder output first (ACKs
// and NAKs are never held back, READ responses are paced), then the
// requester's next packet if pacing allows. It returns (nil, t) when the
// QP may send at t, and (nil, Never) when it has nothing to send until an
// event (a post, an ACK, a timer) schedules it again.
func (q *QP) pull(now clock.Time) (*frame.Frame, clock.Time) {
	if q.state == IBV_QPS_RESET || q.state == IBV_QPS_INIT {
		return nil, clock.Never
	}
	if q.resp.out.n > 0 {
		if e := q.resp.out.front(); e.kind == outRead {
			if at := q.paceAt(); at > now {
				return nil, at
			}
		}
		f, paced := q.respond1()
		q.sent(f, now, paced)
		return f, 0
	}
	if q.state != IBV_QPS_RTS && q.state != IBV_QPS_SQD || q.req.waitRNR || q.req.idx == q.sqTail {
		return nil, clock.Never
	}
	if at := q.paceAt(); at > now {
		return nil, at
	}
	f := q.request(now)
	if f == nil {
		return nil, clock.Never
	}
	q.sent(f, now, true)
	return f, 0
}

func (q *QP) sent(f *frame.Frame, now clock.Time, paced bool) {
	l := len(f.Data)
	q.Stats.TxPackets++
	q.Stats.TxBytes += uint64(l)
	if paced {
		q.sentData(now, l)
	}
}
