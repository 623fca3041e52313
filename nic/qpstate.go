package nic

import (
	"fmt"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// QPAttr holds QP attributes (struct ibv_qp_attr); ModifyQP applies the
// fields its mask names.
type QPAttr struct {
	QPState         QPState
	CurQPState      QPState
	PathMTU         MTU
	QKey            uint32
	RQPSN           uint32
	SQPSN           uint32
	DestQPNum       uint32
	QPAccessFlags   AccessFlags // what the responder allows remote peers
	PKeyIndex       uint16
	PortNum         uint8
	AHAttr          AHAttr
	Timeout         uint8 // local ACK timeout 4.096 µs * 2^Timeout; 0 = infinite
	RetryCnt        uint8 // 0..7
	RNRRetry        uint8 // 0..7, 7 = infinite
	MinRNRTimer     uint8 // RNR NAK timer code this responder asks for (IBA table 45)
	MaxRdAtomic     uint8 // READ/atomic requests this requester keeps outstanding
	MaxDestRdAtomic uint8 // READ/atomic requests this responder keeps state for
	SQDrainNotify   bool
}

// One row of the IBA Modify QP table (Linux ib_modify_qp_is_ok): what a transition
// requires and what it may change, per transport.
type transition struct {
	ok       bool
	required [3]QPAttrMask // RC, UC, UD
	optional [3]QPAttrMask
}

func tIdx(t QPType) int {
	switch t {
	case IBV_QPT_UC:
		return 1
	case IBV_QPT_UD:
		return 2
	}
	return 0
}

const (
	rtsOptRC = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE
	rtsOptUC = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE
	rtsOptUD = IBV_QP_CUR_STATE | IBV_QP_QKEY
	sqdOptRC = IBV_QP_CUR_STATE | IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
		IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC
	sqdOptUC = IBV_QP_CUR_STATE | IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE
	sqdOptUD = IBV_QP_CUR_STATE | IBV_QP_PKEY_INDEX | IBV_QP_QKEY
)

// qpTransitions[cur][next] is the IBA Modify QP transition table (as
// Linux's ib_modify_qp_is_ok encodes it). Every state may go to RESET and
// to ERR with no attributes.
var qpTransitions = func() (t [numQPStates][numQPStates]transition) {
	for s := range numQPStates {
		t[s][IBV_QPS_RESET] = transition{ok: true}
		t[s][IBV_QPS_ERR] = transition{ok: true}
	}
	initAttrs := [3]QPAttrMask{
		IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
	}
	t[IBV_QPS_RESET][IBV_QPS_INIT] = transition{ok: true, required: initAttrs}
	t[IBV_QPS_INIT][IBV_QPS_INIT] = transition{ok: true, optional: initAttrs}
	t[IBV_QPS_INIT][IBV_QPS_RTR] = transition{ok: true,
		required: [3]QPAttrMask{
			IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
			0,
		},
		optional: [3]QPAttrMask{
			IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
			IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
			IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
		}}
	t[IBV_QPS_RTR][IBV_QPS_RTS] = transition{ok: true,
		required: [3]QPAttrMask{
			IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
			IBV_QP_SQ_PSN,
			IBV_QP_SQ_PSN,
		},
		optional: [3]QPAttrMask{rtsOptRC, rtsOptUC, rtsOptUD}}
	t[IBV_QPS_RTS][IBV_QPS_RTS] = transition{ok: true, optional: [3]QPAttrMask{rtsOptRC, rtsOptUC, rtsOptUD}}
	t[IBV_QPS_RTS][IBV_QPS_SQD] = transition{ok: true, optional: [3]QPAttrMask{IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY}}
	t[IBV_QPS_SQD][IBV_QPS_RTS] = transition{ok: true, optional: [3]QPAttrMask{rtsOptRC, rtsOptUC, rtsOptUD}}
	t[IBV_QPS_SQD][IBV_QPS_SQD] = transition{ok: true, optional: [3]QPAttrMask{sqdOptRC, sqdOptUC, sqdOptUD}}
	t[IBV_QPS_SQE][IBV_QPS_RTS] = transition{ok: true, optional: [3]QPAttrMask{
		IBV_QP_CUR_STATE, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS, IBV_QP_CUR_STATE | IBV_QP_QKEY}}
	return t
}()

// ModifyQPError says why ModifyQP refused (verbs returns EINVAL).
type ModifyQPError struct {
	From, To QPState
	Type     QPType
	Mask     QPAttrMask // the offending attributes, if any
	Reason   string
}

func (e *ModifyQPError) Error() string {
	s := fmt.Sprintf("modify_qp %v %v -> %v: %s", e.Type, e.From, e.To, e.Reason)
	if e.Mask != 0 {
		s += " (" + e.Mask.String() + ")"
	}
	return s
}

// ModifyQP changes the QP's state and attributes (ibv_modify_qp). The
// transition must be in the IBA table with every required attribute and
// nothing outside required|optional; values are range-checked.
func (q *QP) ModifyQP(attr *QPAttr, mask QPAttrMask) error {
	cur := q.state
	if mask&IBV_QP_CUR_STATE != 0 && attr.CurQPState != cur {
		if !(attr.CurQPState == IBV_QPS_SQE && cur == IBV_QPS_RTS) {
			return &ModifyQPError{From: cur, To: attr.QPState, Type: q.typ, Reason: fmt.Sprintf("cur_qp_state %v, QP is in %v", attr.CurQPState, cur)}
		}
	}
	next := cur
	if mask&IBV_QP_STATE != 0 {
		next = attr.QPState
	}
	if next >= numQPStates {
		return &ModifyQPError{From: cur, To: next, Type: q.typ, Reason: "unknown state"}
	}
	tr := qpTransitions[cur][next]
	e := &ModifyQPError{From: cur, To: next, Type: q.typ}
	if !tr.ok {
		e.Reason = "transition not allowed"
		return e
	}
	ti := tIdx(q.typ)
	attrs := mask &^ IBV_QP_STATE
	if miss := tr.required[ti] &^ attrs; miss != 0 {
		e.Reason, e.Mask = "missing required attributes", miss
		return e
	}
	if extra := attrs &^ (tr.required[ti] | tr.optional[ti]); extra != 0 {
		e.Reason, e.Mask = "attributes not allowed in this transition", extra
		return e
	}
	if bad := attrs & (IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE); bad != 0 {
		e.Reason, e.Mask = "automatic path migration is not supported", bad
		return e
	}
	if err := q.checkAttr(attr, attrs, e); err != nil {
		return err
	}
	q.applyAttr(attr, attrs)
	return q.enter(cur, next)
}

func (q *QP) checkAttr(a *QPAttr, m QPAttrMask, e *ModifyQPError) error {
	n := q.nic
	bad := func(bit QPAttrMask, why string) error { e.Mask, e.Reason = bit, why; return e }
	if m&IBV_QP_PKEY_INDEX != 0 && int(a.PKeyIndex) >= len(n.cfg.PKeys) {
		return bad(IBV_QP_PKEY_INDEX, fmt.Sprintf("pkey_index %d, table has %d", a.PKeyIndex, len(n.cfg.PKeys)))
	}
	if m&IBV_QP_PORT != 0 && a.PortNum != 1 {
		return bad(IBV_QP_PORT, fmt.Sprintf("port %d, the NIC has port 1", a.PortNum))
	}
	if m&IBV_QP_ACCESS_FLAGS != 0 && a.QPAccessFlags&^accessKnown != 0 {
		return bad(IBV_QP_ACCESS_FLAGS, "unknown access flags")
	}
	if m&IBV_QP_PATH_MTU != 0 && a.PathMTU.Bytes() == 0 {
		return bad(IBV_QP_PATH_MTU, fmt.Sprintf("path_mtu code %d", a.PathMTU))
	}
	if m&IBV_QP_PATH_MTU != 0 && q.typ == IBV_QPT_UD {
		return bad(IBV_QP_PATH_MTU, "UD QPs take the port MTU")
	}
	if m&(IBV_QP_RQ_PSN|IBV_QP_SQ_PSN|IBV_QP_DEST_QPN) != 0 && (a.RQPSN > bth.PSNMask || a.SQPSN > bth.PSNMask || a.DestQPNum > bth.QPNMask) {
		return bad(m&(IBV_QP_RQ_PSN|IBV_QP_SQ_PSN|IBV_QP_DEST_QPN), "PSN or QP number wider than 24 bits")
	}
	if m&IBV_QP_TIMEOUT != 0 && a.Timeout > 31 {
		return bad(IBV_QP_TIMEOUT, "timeout exponent above 31")
	}
	if m&IBV_QP_RETRY_CNT != 0 && a.RetryCnt > 7 {
		return bad(IBV_QP_RETRY_CNT, "retry_cnt above 7")
	}
	if m&IBV_QP_RNR_RETRY != 0 && a.RNRRetry > 7 {
		return bad(IBV_QP_RNR_RETRY, "rnr_retry above 7")
	}
	if m&IBV_QP_MIN_RNR_TIMER != 0 && a.MinRNRTimer > 31 {
		return bad(IBV_QP_MIN_RNR_TIMER, "min_rnr_timer above 31")
	}
	if m&IBV_QP_MAX_QP_RD_ATOMIC != 0 && a.MaxRdAtomic > 16 {
		return bad(IBV_QP_MAX_QP_RD_ATOMIC, "max_rd_atomic above 16")
	}
	if m&IBV_QP_MAX_DEST_RD_ATOMIC != 0 && a.MaxDestRdAtomic > 16 {
		return bad(IBV_QP_MAX_DEST_RD_ATOMIC, "max_dest_rd_atomic above 16")
	}
	if m&IBV_QP_AV != 0 && n.ib() {
		if err := checkAHIB(n, &a.AHAttr); err != nil {
			return bad(IBV_QP_AV, err.Error())
		}
	} else if m&IBV_QP_AV != 0 {
		dip, err := gidAddr(a.AHAttr.DGID)
		if err == nil {
			err = checkAH(n, &a.AHAttr, dip)
		}
		if err != nil {
			return bad(IBV_QP_AV, err.Error())
		}
	}
	return nil
}

func (q *QP) applyAttr(a *QPAttr, m QPAttrMask) {
	t := &q.attr
	if m&IBV_QP_PKEY_INDEX != 0 {
		t.PKeyIndex = a.PKeyIndex
	}
	if m&IBV_QP_PORT != 0 {
		t.PortNum = a.PortNum
	}
	if m&IBV_QP_ACCESS_FLAGS != 0 {
		t.QPAccessFlags = a.QPAccessFlags
	}
	if m&IBV_QP_QKEY != 0 {
		t.QKey = a.QKey
	}
	if m&IBV_QP_AV != 0 {
		t.AHAttr = a.AHAttr
	}
	if m&IBV_QP_PATH_MTU != 0 {
		t.PathMTU = a.PathMTU
	}
	if m&IBV_QP_DEST_QPN != 0 {
		t.DestQPNum = a.DestQPNum
	}
	if m&IBV_QP_RQ_PSN != 0 {
		t.RQPSN = a.RQPSN
	}
	if m&IBV_QP_SQ_PSN != 0 {
		t.SQPSN = a.SQPSN
	}
	if m&IBV_QP_TIMEOUT != 0 {
		t.Timeout = a.Timeout
	}
	if m&IBV_QP_RETRY_CNT != 0 {
		t.RetryCnt = a.RetryCnt
	}
	if m&IBV_QP_RNR_RETRY != 0 {
		t.RNRRetry = a.RNRRetry
	}
	if m&IBV_QP_MIN_RNR_TIMER != 0 {
		t.MinRNRTimer = a.MinRNRTimer
	}
	if m&IBV_QP_MAX_QP_RD_ATOMIC != 0 {
		t.MaxRdAtomic = a.MaxRdAtomic
	}
	if m&IBV_QP_MAX_DEST_RD_ATOMIC != 0 {
		t.MaxDestRdAtomic = a.MaxDestRdAtomic
	}
	if m&IBV_QP_EN_SQD_ASYNC_NOTIFY != 0 {
		t.SQDrainNotify = a.SQDrainNotify
	}
	q.derive(m)
}

// derive recomputes what the datapath reads from the attributes.
func (q *QP) derive(m QPAttrMask) {
	n := q.nic
	a := &q.attr
	q.pkey = n.cfg.PKeys[a.PKeyIndex]
	q.mtu = n.cfg.PortMTU
	if q.typ != IBV_QPT_UD && a.PathMTU != 0 {
		// The active MTU of a path is the smaller of the two.
		q.mtu = min(a.PathMTU.Bytes(), n.cfg.PortMTU)
	}
	q.timeout = 0
	if a.Timeout != 0 {
		// Local ACK timeout = 4.096 µs * 2^timeout (IBA QP attributes).
		q.timeout = 4096 * clock.Nanosecond << a.Timeout
	}
	if m&(IBV_QP_AV|IBV_QP_DEST_QPN) != 0 || q.dscp == 0 {
		q.dscp = a.AHAttr.TrafficClass >> 2
		if q.dscp == 0 {
			q.dscp = n.cfg.RoCEDSCP
		}
		q.dmac = a.AHAttr.DMAC
		q.dip = a.AHAttr.DGID.Unmap()
		q.flowLabel = a.AHAttr.FlowLabel
		if q.flowLabel == 0 && q.typ == IBV_QPT_RC {
			// Linux ib_core gives RC QPs without a flow label one derived
			// from the QP pair (rdma_calc_flow_label), so RoCEv2/IPv6
			// frames carry it and the UDP source port follows it.
			q.flowLabel = wire.RoCEFlowLabel(q.qpn, a.DestQPNum)
		}
		q.sport = wire.RoCESourcePortForQPs(q.flowLabel, q.qpn, a.DestQPNum)
		prio := n.prioOfDSCP(q.dscp)
		if n.cfg.Trust == TrustPCP {
			prio = a.AHAttr.SL & 7
		}
		if n.ib() {
			prio = n.slToVL(a.AHAttr.SL)
		}
		if prio != q.prio && q.scheduled {
			n.unschedule(q)
			q.prio = prio
			n.schedule(q)
		}
		q.prio = prio
	}
}

// enter performs the side effects of a state change.
func (q *QP) enter(cur, next QPState) error {
	n := q.nic
	switch next {
	case IBV_QPS_RESET:
		q.toReset()
		return nil
	case IBV_QPS_ERR:
		q.toError()
		return nil
	}
	q.state = next
	switch {
	case cur == IBV_QPS_INIT && next == IBV_QPS_RTR:
		q.resp.epsn = q.attr.RQPSN
		q.resp.setResources(int(max(q.attr.MaxDestRdAtomic, 1)))
		q.npFlow = cc.NPFlow{}
	case cur == IBV_QPS_RTR && next == IBV_QPS_RTS:
		q.req.psn = q.attr.SQPSN
		q.req.highPSN = q.attr.SQPSN
		q.comp.psn = q.attr.SQPSN
		q.comp.retryLeft = q.attr.RetryCnt
		q.comp.rnrLeft = q.attr.RNRRetry
		switch {
		case q.rp != nil:
		case n.cfg.CC == "dcqcn":
			q.rp = cc.NewRP(*n.cfg.DCQCN, n.cfg.Rate)
		case n.cfg.CC == "ibcc":
			q.rp = n.newIBCCRP(q.mtu)
		}
	case next == IBV_QPS_SQD:
		q.sqDrain = false
	}
	if next == IBV_QPS_RTS || next == IBV_QPS_SQD {
		n.schedule(q)
	}
	return nil
}

// QueryQP returns the QP's attributes (ibv_query_qp); the state fields are
// current.
func (q *QP) QueryQP() QPAttr {
	a := q.attr
	a.QPState, a.CurQPState = q.state, q.state
	return a
}

// SQDrained reports, in SQD, that every WQE begun before SQD completed
// (the IBV_EVENT_SQ_DRAINED condition).
func (q *QP) SQDrained() bool {
	return q.state == IBV_QPS_SQD && q.comp.idx == q.req.idx && (q.req.idx == q.sqTail || !q.sqSlot(q.req.idx).started)
}
