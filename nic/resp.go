package nic

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/frame"
)

// The responder checks and executes incoming requests and queues what goes
// back (rxe_resp.c). Each check is one function returning the next state;
// the error states name the IBA error class they implement (as rxe's comments do): class
// B, a PSN sequence error, is answered with a NAK and the packet dropped;
// class C (invalid request, remote access) is answered with a NAK and the
// QP goes to ERR; class D (duplicates without state, UC/UD problems) is a
// silent, counted drop.
//
// What goes back leaves in PSN order through one queue per QP: ACKs (and
// NAKs), READ responses and atomic ACKs. A new ACK coalesces with an ACK
// still waiting at the tail, so a burst of AckReq packets costs one ACK.

type outKind uint8

const (
	outACK outKind = iota // ACK or NAK (syn)
	outRead
	outAtomic
)

type respOut struct {
	kind  outKind
	syn   bth.Syndrome
	psn   uint32
	res   *respRes
	fatal bool // the QP goes to ERR once this NAK is sent
}

// outQueue is a growable ring of responder output.
type outQueue struct {
	buf  []respOut
	head int
	n    int
}

func (o *outQueue) push(e respOut) {
	if o.n == len(o.buf) {
		nb := make([]respOut, max(2*len(o.buf), 8))
		for i := range o.n {
			nb[i] = o.buf[(o.head+i)&(len(o.buf)-1)]
		}
		o.buf, o.head = nb, 0
	}
	o.buf[(o.head+o.n)&(len(o.buf)-1)] = e
	o.n++
}

func (o *outQueue) front() *respOut { return &o.buf[o.head] }
func (o *outQueue) back() *respOut  { return &o.buf[(o.head+o.n-1)&(len(o.buf)-1)] }
func (o *outQueue) pop() {
	o.buf[o.head] = respOut{}
	o.head = (o.head + 1) & (len(o.buf) - 1)
	o.n--
}

// drop removes res's entry (a READ or atomic being answered again), the
// others keeping their order.
func (o *outQueue) drop(res *respRes) {
	k := 0
	for i := range o.n {
		if e := o.buf[(o.head+i)&(len(o.buf)-1)]; e.res != res {
			o.buf[(o.head+k)&(len(o.buf)-1)] = e
			k++
		}
	}
	for i := k; i < o.n; i++ {
		o.buf[(o.head+i)&(len(o.buf)-1)] = respOut{}
	}
	o.n = k
}

func (o *outQueue) clear() {
	for o.n > 0 {
		if e := o.front(); e.res != nil {
			e.res.pending, e.res.replay = false, false
		}
		o.pop()
	}
}

// respRes is a responder resource: the state of one READ or atomic kept
// for max_dest_rd_atomic requests so that a duplicate can be answered
// again (the atomic's result is replayed, not re-executed).
type respRes struct {
	used      bool
	atomic    bool
	origFirst uint32 // PSN of the original request
	firstPSN  uint32 // PSN the current (re)transmission starts at
	lastPSN   uint32
	cur       uint32 // next response PSN to send
	buf       []byte // READ: the bytes from firstPSN on
	orig      uint64 // atomic: the value found at the address
	pending   bool   // in the output queue
	// replay: pending to answer a duplicate, after the first answer was
	// sent whole (respDuplicate).
	replay bool
}

type responder struct {
	epsn        uint32 // expected PSN
	msn         uint32 // message sequence number (AETH)
	inMsg       bool   // inside a multi-packet SEND or WRITE
	msgWrite    bool
	msgFirstPSN uint32
	nakSent     bool // a NAK for epsn is out; further gaps stay quiet
	ucDrop      bool // UC: discarding until the next FIRST/ONLY
	fatal       bool // a fatal NAK is queued
	recvOff     uint32
	wbuf        []byte
	woff, wlen  uint32
	res         []respRes
	resNext     int
	out         outQueue
}

func (r *responder) reset() {
	r.out.clear()
	res, out := r.res, r.out
	clear(res)
	*r = responder{res: res, out: out}
}

func (r *responder) setResources(k int) {
	if len(r.res) != k {
		r.out.clear()
		r.res = make([]respRes, k)
		r.resNext = 0
	}
}

type respState uint8

const (
	respCheckPSN respState = iota
	respCheckOpSeq
	respCheckOpValid
	respCheckResource
	respCheckLength
	respCheckRKey
	respExecute
	respComplete
	respAcknowledge
	respDuplicate
	respErrRNR
	respErrInvalid
	respErrAccess
	respErrLength
	respDone
	numRespStates
)

var respStateNames = [numRespStates]string{
	"CHECK_PSN", "CHECK_OP_SEQ", "CHECK_OP_VALID", "CHECK_RESOURCE", "CHECK_LENGTH", "CHECK_RKEY",
	"EXECUTE", "COMPLETE", "ACKNOWLEDGE", "DUPLICATE_REQUEST", "ERR_RNR", "ERR_INVALID_REQUEST",
	"ERR_REMOTE_ACCESS", "ERR_LENGTH", "DONE",
}

func (s respState) String() string { return respStateNames[s] }

type respCtx struct {
	h     *bth.Headers
	flags bth.OpFlags
	psn   uint32
	buf   []byte // the target of a WRITE FIRST/ONLY, READ or atomic
}

// respond runs the responder for one request packet. For UD, grh is what
// the receiver's buffer gets in its first 40 bytes (nil: the packet had
// none), slid and sl the sender's (IB; 0 on RoCE).
func (q *QP) respond(h *bth.Headers, grh *[grhSize]byte, slid uint16, sl uint8) {
	if q.resp.fatal {
		q.nic.cnt[RxQPState]++
		return
	}
	if q.typ == IBV_QPT_UD {
		q.respondUD(h, grh, slid, sl)
		return
	}
	c := respCtx{h: h, flags: h.Info.Flags, psn: h.BTH.PSN()}
	s := respCheckPSN
	for s != respDone {
		if q.nic.trace != nil {
			q.nic.trace(q.qpn, "resp", s.String())
		}
		switch s {
		case respCheckPSN:
			s = q.respCheckPSN(&c)
		case respCheckOpSeq:
			s = q.respCheckOpSeq(&c)
		case respCheckOpValid:
			s = q.respCheckOpValid(&c)
		case respCheckResource:
			s = q.respCheckResource(&c)
		case respCheckLength:
			s = q.respCheckLength(&c)
		case respCheckRKey:
			s = q.respCheckRKey(&c)
		case respExecute:
			s = q.respExecute(&c)
		case respComplete:
			s = q.respComplete(&c)
		case respAcknowledge:
			s = q.respAcknowledge(&c)
		case respDuplicate:
			s = q.respDuplicate(&c)
		case respErrRNR:
			s = q.respErrRNR(&c)
		case respErrInvalid:
			s = q.respErrInvalid(&c)
		case respErrAccess:
			s = q.respErrAccess(&c)
		case respErrLength:
			s = q.respErrLength(&c)
		}
	}
}

// abandon forgets a partly received message (UC after a gap; GoBack0 on
// any gap). A SEND's receive WQE is consumed only when the message
// completes, so it stays for the next one.
func (r *responder) abandon() {
	r.inMsg, r.recvOff, r.wbuf, r.woff, r.wlen = false, 0, nil, 0, 0
}

// ucDropMsg discards the rest of a UC message after a class D error.
func (q *QP) ucDropMsg(c *respCtx) respState {
	r := &q.resp
	r.abandon()
	r.ucDrop = !c.flags.Has(bth.Last)
	r.epsn = bth.PSNAdd(c.psn, 1)
	return respDone
}

func (q *QP) respCheckPSN(c *respCtx) respState {
	n := q.nic
	r := &q.resp
	d := bth.PSNDiff(c.psn, r.epsn)
	if q.typ == IBV_QPT_UC {
		// UC: a gap loses the message in progress; a FIRST or
		// ONLY starts afresh, anything else is discarded until one comes.
		if d != 0 {
			n.cnt[OutOfSequence]++
			r.abandon()
			r.epsn = c.psn
			if !c.flags.Has(bth.First) {
				r.ucDrop = true
				r.epsn = bth.PSNAdd(c.psn, 1)
				return respDone
			}
			r.ucDrop = false
			return respCheckOpSeq
		}
		if r.ucDrop {
			if !c.flags.Has(bth.First) {
				n.cnt[RxUCDropped]++
				r.epsn = bth.PSNAdd(c.psn, 1)
				return respDone
			}
			r.ucDrop = false
		}
		return respCheckOpSeq
	}
	switch {
	case d > 0:
		// Class B: NAK once per gap (rxe's sent_psn_nak), drop.
		n.cnt[OutOfSequence]++
		if n.cfg.Retransmit == GoBack0 && r.inMsg {
			r.epsn = r.msgFirstPSN
			r.abandon()
		}
		if !r.nakSent {
			r.nakSent = true
			q.queueACK(bth.NAKSyndrome(bth.NAKPSNSequenceError), r.epsn, false)
		}
		return respDone
	case d < 0:
		return respDuplicate
	}
	r.nakSent = false
	return respCheckOpSeq
}

// respCheckOpSeq: inside a message only its MIDDLE and LAST may come;
// outside, only a FIRST or an ONLY (the opcode sequence rules of the IBA
// transport layer).
func (q *QP) respCheckOpSeq(c *respCtx) respState {
	r := &q.resp
	f := c.flags
	ok := true
	if r.inMsg {
		same := r.msgWrite && f.Has(bth.Write) || !r.msgWrite && f.Has(bth.Send)
		ok = same && !f.Has(bth.First)
		if !ok && q.typ == IBV_QPT_UC && f.Has(bth.First) {
			r.abandon() // UC: a new message replaces the unfinished one
			ok = true
		}
	} else {
		ok = f.Has(bth.First)
	}
	if ok {
		return respCheckOpValid
	}
	if q.typ == IBV_QPT_UC {
		q.nic.cnt[RxUCDropped]++
		return q.ucDropMsg(c)
	}
	return respErrInvalid
}

// respCheckOpValid: the QP must allow the operation (IBV_QP_ACCESS_FLAGS).
func (q *QP) respCheckOpValid(c *respCtx) respState {
	var need AccessFlags
	switch {
	case c.flags.Has(bth.Write):
		need = IBV_ACCESS_REMOTE_WRITE
	case c.flags.Has(bth.Read):
		need = IBV_ACCESS_REMOTE_READ
	case c.flags.Has(bth.Atomic):
		need = IBV_ACCESS_REMOTE_ATOMIC
	}
	if q.attr.QPAccessFlags&need == need {
		return respCheckResource
	}
	if q.typ == IBV_QPT_UC {
		q.nic.cnt[RxUCDropped]++
		return q.ucDropMsg(c)
	}
	return respErrInvalid
}

// respCheckResource: a SEND (at its FIRST) and a WRITE with immediate (at
// its LAST) need a receive WQE; a READ or atomic needs a free responder
// resource.
func (q *QP) respCheckResource(c *respCtx) respState {
	r := &q.resp
	f := c.flags
	needRQ := f.Has(bth.Send) && f.Has(bth.First) || f.Has(bth.Write) && f.Has(bth.HasImmDt)
	if needRQ && q.rqHead == q.rqTail {
		if q.typ == IBV_QPT_UC {
			q.nic.cnt[OutOfBuffer]++
			return q.ucDropMsg(c)
		}
		return respErrRNR
	}
	if f.Has(bth.Read) || f.Has(bth.Atomic) {
		if s := &r.res[r.resNext]; s.pending {
			if !s.replay {
				return respErrInvalid // more than max_dest_rd_atomic outstanding
			}
			// The oldest resource is answering a duplicate again, but
			// this new request shows the requester has finished that
			// one (it keeps at most max_rd_atomic outstanding): the
			// replay is moot, and the resource is taken back, as rxe
			// reclaims its oldest. A requester whose ACK timer fired
			// while the first answer was on its way sends such
			// duplicates.
			r.out.drop(s)
			s.pending, s.replay = false, false
		}
	}
	return respCheckLength
}

// respCheckLength: FIRST and MIDDLE carry exactly the path MTU, LAST and
// ONLY at most it; a SEND fits its receive WQE; a WRITE delivers exactly
// its DMA length.
func (q *QP) respCheckLength(c *respCtx) respState {
	r := &q.resp
	f := c.flags
	pl := uint32(len(c.h.Payload))
	mtu := uint32(q.mtu)
	if f.Has(bth.Last) && pl > mtu || !f.Has(bth.Last) && f&(bth.First|bth.Middle) != 0 && pl != mtu {
		return q.invalid(c)
	}
	switch {
	case f.Has(bth.Send):
		off := r.recvOff
		if f.Has(bth.First) {
			off = 0
		}
		if off+pl > q.rq[q.rqHead&uint32(len(q.rq)-1)].sg.size {
			return respErrLength
		}
	case f.Has(bth.Write) && f.Has(bth.First):
		dma := c.h.RETH.DMALen()
		if f.Has(bth.Last) && dma != pl || !f.Has(bth.Last) && dma <= pl {
			return q.invalid(c)
		}
		return respCheckRKey
	case f.Has(bth.Write):
		if r.woff+pl > r.wlen || f.Has(bth.Last) && r.woff+pl != r.wlen {
			return q.invalid(c)
		}
	case f.Has(bth.Read), f.Has(bth.Atomic):
		return respCheckRKey
	}
	return respExecute
}

func (q *QP) invalid(c *respCtx) respState {
	if q.typ == IBV_QPT_UC {
		q.nic.cnt[RxUCDropped]++
		return q.ucDropMsg(c)
	}
	return respErrInvalid
}

// respCheckRKey: R_Key, access right and range (a remote access error
// otherwise); a zero-length RDMA operation checks no key. Atomics must
// be 8-byte aligned (an invalid request otherwise).
func (q *QP) respCheckRKey(c *respCtx) respState {
	n := q.nic
	var (
		key    uint32
		va     uint64
		length uint32
		need   AccessFlags
	)
	switch f := c.flags; {
	case f.Has(bth.Atomic):
		a := c.h.AtomicETH
		if a.VA()&7 != 0 {
			return respErrInvalid
		}
		key, va, length, need = a.RKey(), a.VA(), 8, IBV_ACCESS_REMOTE_ATOMIC
	case f.Has(bth.Read):
		key, va, length, need = c.h.RETH.RKey(), c.h.RETH.VA(), c.h.RETH.DMALen(), IBV_ACCESS_REMOTE_READ
	default:
		key, va, length, need = c.h.RETH.RKey(), c.h.RETH.VA(), c.h.RETH.DMALen(), IBV_ACCESS_REMOTE_WRITE
	}
	if length == 0 {
		c.buf = nil
		return respExecute
	}
	buf, _, chk := n.lookup(q.pd, key, va, length, need)
	if chk != mrOK {
		if q.typ == IBV_QPT_UC {
			n.cnt[RespRemoteAccessErr]++
			return q.ucDropMsg(c)
		}
		return respErrAccess
	}
	c.buf = buf
	return respExecute
}

func (q *QP) respExecute(c *respCtx) respState {
	n := q.nic
	r := &q.resp
	f := c.flags
	pl := c.h.Payload
	switch {
	case f.Has(bth.Send):
		if f.Has(bth.First) {
			r.recvOff = 0
			if !f.Has(bth.Last) {
				r.inMsg, r.msgWrite, r.msgFirstPSN = true, false, c.psn
			}
		}
		w := &q.rq[q.rqHead&uint32(len(q.rq)-1)]
		n.copyIn(q.pd, &w.sg, r.recvOff, pl)
		r.recvOff += uint32(len(pl))
	case f.Has(bth.Write):
		if f.Has(bth.First) {
			n.cnt[RxWriteRequests]++
			r.wbuf, r.woff, r.wlen = c.buf, 0, c.h.RETH.DMALen()
			if !f.Has(bth.Last) {
				r.inMsg, r.msgWrite, r.msgFirstPSN = true, true, c.psn
			}
		}
		copy(r.wbuf[r.woff:], pl)
		r.woff += uint32(len(pl))
	case f.Has(bth.Read):
		n.cnt[RxReadRequests]++
		dma := c.h.RETH.DMALen()
		npkts := max(1, (dma+uint32(q.mtu)-1)/uint32(q.mtu))
		slot := r.takeRes()
		*slot = respRes{used: true, origFirst: c.psn, firstPSN: c.psn, lastPSN: bth.PSNAdd(c.psn, int(npkts)-1), cur: c.psn, buf: c.buf, pending: true}
		q.queueOut(respOut{kind: outRead, res: slot})
		r.epsn = bth.PSNAdd(c.psn, int(npkts))
		r.msn++
		return respDone
	case f.Has(bth.Atomic):
		n.cnt[RxAtomicRequests]++
		a := c.h.AtomicETH
		orig := binary.LittleEndian.Uint64(c.buf)
		if c.h.BTH.OpCode() == bth.RCCompareSwap {
			if orig == a.Compare() {
				binary.LittleEndian.PutUint64(c.buf, a.SwapAdd())
			}
		} else {
			binary.LittleEndian.PutUint64(c.buf, orig+a.SwapAdd())
		}
		slot := r.takeRes()
		*slot = respRes{used: true, atomic: true, origFirst: c.psn, firstPSN: c.psn, lastPSN: c.psn, cur: c.psn, orig: orig, pending: true}
		q.queueOut(respOut{kind: outAtomic, res: slot})
		r.epsn = bth.PSNAdd(c.psn, 1)
		r.msn++
		return respDone
	}
	r.epsn = bth.PSNAdd(c.psn, 1)
	if f.Has(bth.Last) {
		r.inMsg = false
		r.msn++
		if f.Has(bth.Send) || f.Has(bth.HasImmDt) {
			return respComplete
		}
		if q.wrote != nil {
			q.wrote()
		}
	}
	return respAcknowledge
}

func (r *responder) takeRes() *respRes {
	s := &r.res[r.resNext]
	r.resNext = (r.resNext + 1) % len(r.res)
	return s
}

// respComplete completes the receive WQE of a SEND or WRITE with
// immediate; a SEND with Invalidate invalidates the named R_Key.
func (q *QP) respComplete(c *respCtx) respState {
	r := &q.resp
	w := &q.rq[q.rqHead&uint32(len(q.rq)-1)]
	wc := WC{WRID: w.wrID, Status: IBV_WC_SUCCESS, Opcode: IBV_WC_RECV, QPNum: q.qpn, ByteLen: r.recvOff,
		PKeyIndex: q.attr.PKeyIndex, SrcQP: q.attr.DestQPNum}
	if c.flags.Has(bth.Write) {
		wc.Opcode, wc.ByteLen = IBV_WC_RECV_RDMA_WITH_IMM, r.wlen
	}
	if c.h.ImmDt != nil {
		wc.WCFlags |= IBV_WC_WITH_IMM
		wc.ImmData = c.h.ImmDt.Value()
	}
	if c.h.IETH != nil {
		key := c.h.IETH.RKey()
		idx := int(key >> 8)
		if idx < len(q.nic.mrs) && q.nic.mrs[idx] != nil && q.nic.mrs[idx].key == key && q.nic.mrs[idx].pd == q.pd {
			q.nic.mrs[idx].valid = false
		}
		wc.WCFlags |= IBV_WC_WITH_INV
		wc.InvalidatedRKey = key
	}
	q.rqHead++
	q.recvCQ.push(&wc)
	return respAcknowledge
}

// respAcknowledge queues an ACK when the requester asked for one. In
// GoBack0 mode the responder acknowledges whole messages only: it may
// still discard the message's first part.
func (q *QP) respAcknowledge(c *respCtx) respState {
	if q.typ == IBV_QPT_RC && c.h.BTH.AckReq() && (q.nic.cfg.Retransmit != GoBack0 || c.flags.Has(bth.Last)) {
		q.queueACK(bth.ACKSyndrome(bth.CreditCodeInvalid), c.psn, false)
	}
	return respDone
}

// respDuplicate answers a request it already executed : a SEND
// or WRITE with an ACK; a READ by sending the responses again from the
// requested PSN; an atomic by replaying the saved result, never executing
// it twice.
func (q *QP) respDuplicate(c *respCtx) respState {
	n := q.nic
	r := &q.resp
	n.cnt[DuplicateRequest]++
	switch f := c.flags; {
	case f.Has(bth.Read):
		for i := range r.res {
			res := &r.res[i]
			if !res.used || res.atomic {
				continue
			}
			if bth.PSNInWindow(c.psn, res.origFirst, bth.PSNDistance(res.origFirst, res.lastPSN)+1) {
				buf, _, chk := n.lookup(q.pd, c.h.RETH.RKey(), c.h.RETH.VA(), c.h.RETH.DMALen(), IBV_ACCESS_REMOTE_READ)
				if chk != mrOK && c.h.RETH.DMALen() != 0 {
					return respDone
				}
				res.firstPSN, res.cur, res.buf = c.psn, c.psn, buf
				if !res.pending {
					r.dropLater(res.origFirst)
					res.pending, res.replay = true, true
					q.queueOut(respOut{kind: outRead, res: res})
				}
				return respDone
			}
		}
	case f.Has(bth.Atomic):
		for i := range r.res {
			if res := &r.res[i]; res.used && res.atomic && res.origFirst == c.psn {
				if !res.pending {
					r.dropLater(res.origFirst)
					res.pending, res.replay = true, true
					q.queueOut(respOut{kind: outAtomic, res: res})
				}
				return respDone
			}
		}
	default:
		q.queueACK(bth.ACKSyndrome(bth.CreditCodeInvalid), bth.PSNAdd(r.epsn, -1), false)
	}
	return respDone
}

// dropLater gives up the answers still queued for READs and atomics
// after the one at psn, whose replay is about to be queued. Queued ahead
// of it, they would reach the requester before the answer it is missing,
// and it drops everything past its gap: the replay would fill the gap and
// leave nothing to send until its ACK timer fired (67 ms at -u 14; never,
// with no timeout). The requester resends those requests after the one
// it asked again for, and they are answered again, in order, as rxe
// abandons a read in progress on a duplicate.
func (r *responder) dropLater(psn uint32) {
	for i := range r.res {
		if res := &r.res[i]; res.used && res.pending && bth.PSNBefore(psn, res.origFirst) {
			r.out.drop(res)
			res.pending, res.replay = false, false
		}
	}
}

// respErrRNR: no receive WQE: an RNR NAK asking for min_rnr_timer (IBA
// 9.7.5.2.8); the requester resends this PSN after the delay.
func (q *QP) respErrRNR(c *respCtx) respState {
	r := &q.resp
	q.nic.cnt[OutOfBuffer]++
	if !r.nakSent {
		r.nakSent = true
		q.queueACK(bth.RNRSyndrome(q.attr.MinRNRTimer), c.psn, false)
	}
	return respDone
}

// respErrInvalid: class C, NAK invalid request, then ERR.
func (q *QP) respErrInvalid(c *respCtx) respState {
	q.nic.cnt[RespInvalidRequest]++
	q.queueACK(bth.NAKSyndrome(bth.NAKInvalidRequest), c.psn, true)
	return respDone
}

// respErrAccess: class C, NAK remote access error, then ERR.
func (q *QP) respErrAccess(c *respCtx) respState {
	q.nic.cnt[RespRemoteAccessErr]++
	q.queueACK(bth.NAKSyndrome(bth.NAKRemoteAccessError), c.psn, true)
	return respDone
}

// respErrLength: a SEND longer than its receive WQE. The WQE completes
// with IBV_WC_LOC_LEN_ERR; RC answers with an invalid-request NAK and
// goes to ERR, UC drops the message.
func (q *QP) respErrLength(c *respCtx) respState {
	n := q.nic
	n.cnt[RespLocalLengthErr]++
	w := &q.rq[q.rqHead&uint32(len(q.rq)-1)]
	n.cnt[RespCQEError]++
	q.recvCQ.push(&WC{WRID: w.wrID, Status: IBV_WC_LOC_LEN_ERR, Opcode: IBV_WC_RECV, QPNum: q.qpn})
	q.rqHead++
	if q.typ == IBV_QPT_UC {
		return q.ucDropMsg(c)
	}
	q.queueACK(bth.NAKSyndrome(bth.NAKInvalidRequest), c.psn, true)
	return respDone
}

// queueACK queues an ACK or NAK; an ACK replaces one still waiting at the
// tail (ACKs are cumulative).
func (q *QP) queueACK(syn bth.Syndrome, psn uint32, fatal bool) {
	r := &q.resp
	if fatal {
		r.fatal = true
	}
	if syn.IsACK() && r.out.n > 0 {
		if t := r.out.back(); t.kind == outACK && t.syn.IsACK() {
			t.psn = psn
			return
		}
	}
	q.queueOut(respOut{kind: outACK, syn: syn, psn: psn, fatal: fatal})
}

func (q *QP) queueOut(e respOut) {
	q.resp.out.push(e)
	q.nic.schedule(q)
}

// respond1 builds the frame at the head of the output queue. It reports
// whether the frame is paced (READ responses carry data).
func (q *QP) respond1() (*frame.Frame, bool) {
	n := q.nic
	r := &q.resp
	e := *r.out.front()
	rf := &n.rf
	rf.BTH = bth.BTHFields{PKey: q.pkey, DestQP: q.attr.DestQPNum}
	rf.Ext = bth.ExtFields{}
	ack := bth.AETHFields{Syndrome: bth.ACKSyndrome(bth.CreditCodeInvalid), MSN: r.msn}
	var payload []byte
	paced := false
	switch e.kind {
	case outACK:
		rf.BTH.OpCode, rf.BTH.PSN = bth.RCAcknowledge, e.psn
		rf.Ext.AETH = bth.AETHFields{Syndrome: e.syn, MSN: r.msn}
		r.out.pop()
	case outAtomic:
		rf.BTH.OpCode, rf.BTH.PSN = bth.RCAtomicAcknowledge, e.res.origFirst
		rf.Ext.AETH, rf.Ext.AtomicAckETH = ack, e.res.orig
		e.res.pending, e.res.replay = false, false
		r.out.pop()
	case outRead:
		res := e.res
		mtu := uint32(q.mtu)
		off := bth.PSNDistance(res.firstPSN, res.cur) * mtu
		first, last := res.cur == res.firstPSN, res.cur == res.lastPSN
		switch {
		case first && last:
			rf.BTH.OpCode = bth.RCReadResponseOnly
		case first:
			rf.BTH.OpCode = bth.RCReadResponseFirst
		case last:
			rf.BTH.OpCode = bth.RCReadResponseLast
		default:
			rf.BTH.OpCode = bth.RCReadResponseMiddle
		}
		rf.BTH.PSN = res.cur
		rf.Ext.AETH = ack
		total := uint32(len(res.buf))
		payload = res.buf[off : off+min(mtu, total-off)]
		res.cur = bth.PSNAdd(res.cur, 1)
		if last {
			res.pending, res.replay = false, false
			r.out.pop()
		}
		paced = true
	}
	f := n.emitTo(q, nil, payload)
	if e.fatal {
		q.toError()
	}
	return f, paced
}

// grhSize is the GRH verbs place at the start of a UD receive buffer.
const grhSize = 40

// respondUD receives a UD SEND : Q_Key, a receive WQE, length;
// the first 40 bytes of the buffer are the GRH's (for RoCEv2 over IPv4, the
// IPv4 header in its last 20 bytes), as verbs programs expect; without a
// GRH they are left alone and IBV_WC_GRH is clear.
func (q *QP) respondUD(h *bth.Headers, grh *[grhSize]byte, slid uint16, sl uint8) {
	n := q.nic
	if h.DETH.QKey() != q.attr.QKey {
		n.cnt[RxQKeyViolation]++
		return
	}
	if q.rqHead == q.rqTail {
		n.cnt[OutOfBuffer]++
		return
	}
	pl := len(h.Payload)
	if pl > q.mtu {
		n.cnt[RxUDTooLong]++
		return
	}
	w := &q.rq[q.rqHead&uint32(len(q.rq)-1)]
	q.rqHead++
	if uint32(grhSize+pl) > w.sg.size {
		n.cnt[RespLocalLengthErr]++
		n.cnt[RespCQEError]++
		q.recvCQ.push(&WC{WRID: w.wrID, Status: IBV_WC_LOC_LEN_ERR, Opcode: IBV_WC_RECV, QPNum: q.qpn})
		return
	}
	wc := WC{WRID: w.wrID, Status: IBV_WC_SUCCESS, Opcode: IBV_WC_RECV, QPNum: q.qpn, ByteLen: uint32(grhSize + pl),
		SrcQP: h.DETH.SrcQP(), PKeyIndex: q.attr.PKeyIndex, SLID: slid, SL: sl}
	if grh != nil {
		n.copyIn(q.pd, &w.sg, 0, grh[:])
		wc.WCFlags |= IBV_WC_GRH
	}
	n.copyIn(q.pd, &w.sg, grhSize, h.Payload)
	if h.ImmDt != nil {
		wc.WCFlags |= IBV_WC_WITH_IMM
		wc.ImmData = h.ImmDt.Value()
	}
	q.recvCQ.push(&wc)
}
