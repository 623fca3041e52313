package nic

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
)

// The completer matches what comes back from the responder (ACKs, NAKs,
// READ responses, atomic ACKs) against the send queue, completes WQEs in
// order and decides retransmission (rxe_comp.c). It also runs on the local
// ACK timeout. Retransmission is go-back-N: resend from the oldest
// unacknowledged PSN (or, in GoBack0 mode, from the start of its message).

type completer struct {
	idx       uint32 // oldest send WQE not completed
	psn       uint32 // oldest PSN not acknowledged: the response expected next
	retryLeft uint8
	rnrLeft   uint8
	// gapRetried: a READ-response gap at psn already triggered a resend;
	// further responses beyond the gap are dropped until it is filled.
	gapRetried bool
}

type compState uint8

const (
	compGetWQE compState = iota
	compCheckPSN
	compCheckACK
	compRead
	compAtomic
	compWriteSend
	compCompWQE
	compErrorRetry
	compRNRRetry
	compError
	compDone
	numCompStates
)

var compStateNames = [numCompStates]string{
	"GET_WQE", "CHECK_PSN", "CHECK_ACK", "READ", "ATOMIC", "WRITE_SEND", "COMP_WQE",
	"ERROR_RETRY", "RNR_RETRY", "ERROR", "DONE",
}

func (s compState) String() string { return compStateNames[s] }

// compCtx carries one run of the completer.
type compCtx struct {
	h        *bth.Headers // nil on a timer run
	psn      uint32
	w        *sendWQE
	used     bool // the packet acknowledged something
	status   WCStatus
	reason   Counter // why a retry: timeout, sequence NAK, implied NAK
	rnrDelay clock.Time
}

func (q *QP) runCompleter(c *compCtx, s compState) {
	for s != compDone {
		if q.nic.trace != nil {
			q.nic.trace(q.qpn, "comp", s.String())
		}
		switch s {
		case compGetWQE:
			s = q.compGetWQE(c)
		case compCheckPSN:
			s = q.compCheckPSN(c)
		case compCheckACK:
			s = q.compCheckACK(c)
		case compRead:
			s = q.compRead(c)
		case compAtomic:
			s = q.compAtomic(c)
		case compWriteSend:
			s = q.compWriteSend(c)
		case compCompWQE:
			s = q.compCompWQE(c)
		case compErrorRetry:
			s = q.compErrorRetry(c)
		case compRNRRetry:
			s = q.compRNRRetry(c)
		case compError:
			s = q.compError(c)
		}
	}
	if q.state == IBV_QPS_RTS || q.state == IBV_QPS_SQD {
		q.syncReq()
		q.completeInOrder()
	}
}

// onResponse runs the completer for one ACK, NAK or response packet.
func (q *QP) onResponse(h *bth.Headers) {
	if q.typ != IBV_QPT_RC || (q.state != IBV_QPS_RTS && q.state != IBV_QPS_SQD) {
		q.nic.cnt[RxQPState]++
		return
	}
	c := compCtx{h: h, psn: h.BTH.PSN()}
	if !bth.PSNBefore(c.psn, q.req.highPSN) {
		// Every genuine response names a PSN already sent.
		q.nic.cnt[ReqBadResponse]++
		return
	}
	q.runCompleter(&c, compGetWQE)
}

// outstanding reports whether a sent WQE awaits its acknowledgement.
func (q *QP) outstanding() bool {
	return q.comp.idx != q.req.idx || (q.comp.idx != q.sqTail && q.sqSlot(q.comp.idx).started)
}

func (q *QP) compGetWQE(c *compCtx) compState {
	if !q.outstanding() {
		if !c.used {
			q.dropResponse(c)
		}
		return compDone
	}
	c.w = q.sqSlot(q.comp.idx)
	if c.w.failed {
		c.status = c.w.errStatus
		return compError
	}
	return compCheckPSN
}

// dropResponse counts a response that matches nothing outstanding.
func (q *QP) dropResponse(c *compCtx) {
	if bth.PSNBefore(c.psn, q.comp.psn) {
		q.nic.cnt[ReqDupResponse]++
	} else {
		q.nic.cnt[ReqBadResponse]++
	}
}

// compCheckPSN places the packet's PSN against the oldest WQE.
func (q *QP) compCheckPSN(c *compCtx) compState {
	w := c.w
	if bth.PSNDiff(c.psn, w.lastPSN) > 0 {
		// It acknowledges past this WQE (ACKs are cumulative in the IBA
		// reliable service). A READ or atomic whose response never came was
		// lost: an implied NAK. Resend once per gap, as below: the
		// responses to the READs behind it, already on their way, each
		// look the same, and retrying for every one of them spent the
		// whole retry count (7) on one lost packet within microseconds.
		if w.op.readOrAtomic() {
			if q.comp.gapRetried {
				q.nic.cnt[ReqBadResponse]++
				return compDone
			}
			q.comp.gapRetried = true
			c.reason = ImpliedNakSeqErr
			return compErrorRetry
		}
		return compCompWQE
	}
	d := bth.PSNDiff(c.psn, q.comp.psn)
	if d < 0 {
		if !c.used {
			q.nic.cnt[ReqDupResponse]++
		}
		return compDone
	}
	if d > 0 && c.h.Info.Flags.Has(bth.Response) {
		// A READ response beyond the one expected: the ones between were
		// lost. Resend once per gap (an implied NAK), drop the rest.
		if q.comp.gapRetried {
			q.nic.cnt[ReqBadResponse]++
			return compDone
		}
		q.comp.gapRetried = true
		c.reason = ImpliedNakSeqErr
		return compErrorRetry
	}
	return compCheckACK
}

func (q *QP) compCheckACK(c *compCtx) compState {
	n := q.nic
	h := c.h
	w := c.w
	switch {
	case h.Info.Flags.Has(bth.Response): // READ response
		if w.op != IBV_WR_RDMA_READ {
			n.cnt[ReqBadResponse]++
			return compDone
		}
		return compRead
	case h.BTH.OpCode() == bth.RCAtomicAcknowledge:
		if !w.op.isAtomic() || !h.AETH.Syndrome().IsACK() {
			n.cnt[ReqBadResponse]++
			return compDone
		}
		return compAtomic
	}
	syn := h.AETH.Syndrome()
	switch {
	case syn.IsACK():
		if w.op.readOrAtomic() {
			// An ACK inside a READ's PSN range completes nothing: the
			// data has to come.
			n.cnt[ReqDupResponse]++
			return compDone
		}
		return compWriteSend
	case syn.IsRNR():
		c.rnrDelay, _ = syn.RNRDelay()
		return compRNRRetry
	}
	switch syn.NAKCode() {
	case bth.NAKPSNSequenceError:
		// The responder expects c.psn: everything before it arrived.
		q.advance(c.psn)
		c.reason = PacketSeqErr
		return compErrorRetry
	case bth.NAKInvalidRequest:
		n.cnt[ReqRemoteInvalidReq]++
		c.status = IBV_WC_REM_INV_REQ_ERR
	case bth.NAKRemoteAccessError:
		n.cnt[ReqRemoteAccessErr]++
		c.status = IBV_WC_REM_ACCESS_ERR
	case bth.NAKRemoteOperationalError:
		n.cnt[ReqRemoteOpErr]++
		c.status = IBV_WC_REM_OP_ERR
	default:
		n.cnt[ReqRemoteInvalidReq]++
		c.status = IBV_WC_REM_INV_RD_REQ_ERR
	}
	return compError
}

// compRead places one READ response's payload.
func (q *QP) compRead(c *compCtx) compState {
	w := c.w
	k := bth.PSNDistance(w.firstPSN, c.psn)
	off := k * uint32(q.mtu)
	want := min(uint32(q.mtu), w.sg.size-off)
	last := c.psn == w.lastPSN
	if uint32(len(c.h.Payload)) != want || c.h.Info.Flags.Has(bth.Last) != last {
		q.nic.cnt[ReqBadResponse]++
		return compDone
	}
	q.nic.copyIn(q.pd, &w.sg, off, c.h.Payload)
	c.used = true
	q.advance(bth.PSNAdd(c.psn, 1))
	if last {
		return compCompWQE
	}
	return compDone
}

// compAtomic stores the original value (host byte order, little-endian)
// at the WQE's local address.
func (q *QP) compAtomic(c *compCtx) compState {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], c.h.AtomicAckETH.OrigData())
	q.nic.copyIn(q.pd, &c.w.sg, 0, b[:])
	c.used = true
	q.advance(bth.PSNAdd(c.psn, 1))
	return compCompWQE
}

// compWriteSend: an ACK at or inside a SEND/WRITE.
func (q *QP) compWriteSend(c *compCtx) compState {
	c.used = true
	q.advance(bth.PSNAdd(c.psn, 1))
	if c.psn == c.w.lastPSN {
		return compCompWQE
	}
	return compDone
}

func (q *QP) compCompWQE(c *compCtx) compState {
	w := c.w
	c.used = true
	last := w.lastPSN
	q.advance(bth.PSNAdd(last, 1))
	// completeSend frees the slot before its completion is seen, and a
	// post from the CQ's notify may fill it again: w is not read after.
	q.completeSend(w, IBV_WC_SUCCESS)
	if c.h != nil && bth.PSNDiff(c.psn, last) > 0 {
		return compGetWQE // the packet may acknowledge the next WQE too
	}
	return compDone
}

// advance records that every PSN before psn is acknowledged. Progress
// renews the retry budgets (as rxe's reset_retry_counters does) and the
// ACK timer.
func (q *QP) advance(psn uint32) {
	if !bth.PSNBefore(q.comp.psn, psn) {
		return
	}
	q.comp.psn = psn
	q.comp.gapRetried = false
	q.comp.retryLeft = q.attr.RetryCnt
	q.comp.rnrLeft = q.attr.RNRRetry
	q.armRetry()
	q.nic.schedule(q)
}

// armRetry runs the local ACK timer while anything is unacknowledged.
func (q *QP) armRetry() {
	if q.timeout == 0 || !bth.PSNBefore(q.comp.psn, q.req.highPSN) {
		q.retryTimer.Stop()
		return
	}
	q.retryTimer.Reset(q.nic.clk.Now() + q.timeout)
}

func (q *QP) compErrorRetry(c *compCtx) compState {
	n := q.nic
	if q.comp.retryLeft == 0 {
		n.cnt[ReqTransportRetries]++
		c.status = IBV_WC_RETRY_EXC_ERR
		return compError
	}
	q.comp.retryLeft--
	n.cnt[c.reason]++
	switch c.reason {
	case LocalAckTimeoutErr:
		q.Stats.Timeouts++
	case PacketSeqErr:
		q.Stats.SeqNAKs++
	}
	from := q.comp.psn
	if n.cfg.Retransmit == GoBack0 {
		// Restart the whole message; the responder discarded its part.
		from = c.w.firstPSN
		q.comp.psn = from
	}
	q.seekReq(from)
	q.armRetry()
	return compDone
}

func (q *QP) compRNRRetry(c *compCtx) compState {
	n := q.nic
	if q.attr.RNRRetry != 7 { // rnr_retry 7 means retry forever
		if q.comp.rnrLeft == 0 {
			n.cnt[ReqRNRRetries]++
			c.status = IBV_WC_RNR_RETRY_EXC_ERR
			return compError
		}
		q.comp.rnrLeft--
	}
	n.cnt[RNRNakRetryErr]++
	q.Stats.RNRNAKs++
	// The RNR NAK acknowledges what came before its PSN; resend from it
	// after the delay it asks for.
	if bth.PSNBefore(q.comp.psn, c.psn) {
		q.comp.psn = c.psn
	}
	q.seekReq(q.comp.psn)
	q.req.waitRNR = true
	q.retryTimer.Stop()
	q.rnrTimer.Reset(n.clk.Now() + c.rnrDelay)
	return compDone
}

// compError completes the WQE with an error and stops the QP: RC goes to
// ERR, UC and UD to SQE.
func (q *QP) compError(c *compCtx) compState {
	q.completeSend(c.w, c.status)
	if q.typ == IBV_QPT_RC {
		q.toError()
	} else {
		q.toSQE()
	}
	return compDone
}

// onRetryTimer is the local ACK timeout.
func (q *QP) onRetryTimer() {
	if q.typ != IBV_QPT_RC || (q.state != IBV_QPS_RTS && q.state != IBV_QPS_SQD) || q.req.waitRNR || !q.outstanding() {
		return
	}
	c := compCtx{reason: LocalAckTimeoutErr, w: q.sqSlot(q.comp.idx)}
	if c.w.failed {
		c.status = c.w.errStatus
		q.runCompleter(&c, compError)
		return
	}
	q.runCompleter(&c, compErrorRetry)
}

func (q *QP) onRNRTimer() {
	q.req.waitRNR = false
	if q.state == IBV_QPS_RTS || q.state == IBV_QPS_SQD {
		q.nic.schedule(q)
	}
}

// seekReq points the requester at psn: the WQE that holds it, or the next
// unsent one.
func (q *QP) seekReq(psn uint32) {
	i := q.comp.idx
	for i != q.sqTail {
		w := q.sqSlot(i)
		if !w.started || bth.PSNDiff(psn, w.lastPSN) <= 0 {
			break
		}
		i++
	}
	q.req.idx, q.req.psn, q.req.noAck = i, psn, 0
	q.req.rdOut = 0
	for j := q.comp.idx; j != i; j++ {
		if w := q.sqSlot(j); w.op.readOrAtomic() && !w.failed {
			q.req.rdOut++
		}
	}
	q.nic.schedule(q)
}

// syncReq keeps the requester from lagging the completer: an ACK for
// packets sent before a rewind can acknowledge past the resend point.
func (q *QP) syncReq() {
	if int32(q.req.idx-q.comp.idx) < 0 || bth.PSNBefore(q.req.psn, q.comp.psn) {
		q.seekReq(q.comp.psn)
	}
}

// completeInOrder completes what needs no acknowledgement, in order: UC and
// UD WQEs once sent, and a WQE that failed locally (then the QP stops).
func (q *QP) completeInOrder() {
	for q.comp.idx != q.req.idx {
		w := q.sqSlot(q.comp.idx)
		if w.failed {
			q.completeSend(w, w.errStatus)
			if q.typ == IBV_QPT_RC {
				q.toError()
			} else {
				q.toSQE()
			}
			return
		}
		if q.typ == IBV_QPT_RC {
			return
		}
		q.completeSend(w, IBV_WC_SUCCESS)
	}
}
