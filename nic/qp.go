package nic

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// QPCap sizes a QP's queues (struct ibv_qp_cap).
type QPCap struct {
	MaxSendWR, MaxRecvWR   int
	MaxSendSGE, MaxRecvSGE int
	MaxInlineData          int
}

// QPInitAttr creates a QP (struct ibv_qp_init_attr).
type QPInitAttr struct {
	QPType         QPType
	SendCQ, RecvCQ *CQ
	Cap            QPCap
	SQSigAll       bool // every send WR completes, signaled or not
}

// AHAttr is an address vector (struct ibv_ah_attr with its GRH): where the
// peer is on the wire. A RoCE port reads DMAC and DGID; an IB port DLID
// and SL (its packets are local: no GRH).
type AHAttr struct {
	DLID uint16
	DMAC wire.MAC
	// DGID is the peer's GID as an address: IPv4 (or IPv4-mapped IPv6)
	// for RoCEv2 over IPv4, IPv6 otherwise.
	DGID netip.Addr
	// TrafficClass is the IP traffic class byte (DSCP<<2); 0 means the
	// NIC's RoCE DSCP (Config.RoCEDSCP), as a device default does. The ECN
	// bits are the NIC's to set.
	TrafficClass uint8
	FlowLabel    uint32 // 0: derived from the QP numbers (rdma_calc_flow_label)
	HopLimit     uint8  // 0: 64
	SL           uint8  // the priority under trust pcp; IB: the service level (0..15)
}

// AH is an address handle for UD sends (ibv_create_ah).
type AH struct {
	pd   *PD
	attr AHAttr
	dip  netip.Addr
}

// CreateAH creates an address handle.
func (pd *PD) CreateAH(attr *AHAttr) (*AH, error) {
	if pd.nic.ib() {
		if err := checkAHIB(pd.nic, attr); err != nil {
			return nil, err
		}
		return &AH{pd: pd, attr: *attr}, nil
	}
	dip, err := gidAddr(attr.DGID)
	if err != nil {
		return nil, err
	}
	if err := checkAH(pd.nic, attr, dip); err != nil {
		return nil, err
	}
	return &AH{pd: pd, attr: *attr, dip: dip}, nil
}

func checkAHIB(n *NIC, a *AHAttr) error {
	switch {
	case a.DLID == 0 || a.DLID >= 0xC000:
		return fmt.Errorf("address vector: dlid %d is not a unicast LID", a.DLID)
	case a.SL > 15:
		return fmt.Errorf("address vector: sl %d out of 0..15", a.SL)
	}
	return nil
}

func gidAddr(gid netip.Addr) (netip.Addr, error) {
	if !gid.IsValid() {
		return netip.Addr{}, errors.New("address vector: no destination GID")
	}
	return gid.Unmap(), nil
}

func checkAH(n *NIC, a *AHAttr, dip netip.Addr) error {
	switch {
	case dip.Is4() != n.cfg.IP.Unmap().Is4():
		return fmt.Errorf("address vector: GID %v and the NIC address %v are not the same IP version", dip, n.cfg.IP)
	case a.SL > 7:
		return fmt.Errorf("address vector: sl %d out of 0..7", a.SL)
	case a.FlowLabel > 0xFFFFF:
		return fmt.Errorf("address vector: flow label 0x%x is more than 20 bits", a.FlowLabel)
	}
	return nil
}

// SendWR is a send work request (struct ibv_send_wr). The SGList is copied
// at post time.
type SendWR struct {
	WRID           uint64
	SGList         []SGE
	Opcode         WROpcode
	SendFlags      SendFlags
	ImmData        uint32 // IBV_WR_*_WITH_IMM
	InvalidateRKey uint32 // IBV_WR_SEND_WITH_INV
	RDMA           struct {
		RemoteAddr uint64
		RKey       uint32
	}
	Atomic struct {
		RemoteAddr uint64
		CompareAdd uint64 // compare (CmpSwap) or add (FetchAdd) operand
		Swap       uint64
		RKey       uint32
	}
	UD struct {
		AH         *AH
		RemoteQPN  uint32
		RemoteQKey uint32 // high bit set: use the QP's own Q_Key (IBA 10.2.4)
	}
}

// RecvWR is a receive work request (struct ibv_recv_wr).
type RecvWR struct {
	WRID   uint64
	SGList []SGE
}

// sendWQE is a posted send work request and the engine's progress on it.
type sendWQE struct {
	wrID       uint64
	op         WROpcode
	flags      SendFlags
	sg         sgl
	imm        uint32
	invRKey    uint32
	remoteAddr uint64
	rkey       uint32
	compareAdd uint64
	swap       uint64
	ah         *AH
	udQPN      uint32
	udQKey     uint32

	started           bool // PSNs assigned
	failed            bool // a local error: completes with errStatus, no packet
	errStatus         WCStatus
	firstPSN, lastPSN uint32 // a READ spans one PSN per response packet
	npkts             uint32
}

type recvWQE struct {
	wrID uint64
	sg   sgl
}

// QPStats are per-QP figures for reports (throughput, FCT, retransmits).
type QPStats struct {
	TxPackets, TxBytes     uint64 // frames this QP sent (requests, responses, ACKs)
	RxPackets, RxBytes     uint64 // frames this QP accepted
	RxPayloadBytes         uint64 // their payload (message bytes, pad excluded)
	RetransmittedPackets   uint64
	Timeouts, SeqNAKs      uint64
	RNRNAKs                uint64
	CNPsSent, CNPsReceived uint64
	CompletedWRs           uint64 // successful send-queue completions
	CompletedBytes         uint64 // their message bytes
}

// QP is a queue pair.
type QP struct {
	nic    *NIC
	pd     *PD
	qpn    uint32
	typ    QPType
	state  QPState
	sendCQ *CQ
	recvCQ *CQ
	sigAll bool
	cap    QPCap
	attr   QPAttr

	// Derived at RTR/RTS.
	mtu       int
	pkey      uint16
	dscp      uint8
	prio      uint8
	dmac      wire.MAC
	dip       netip.Addr
	sport     uint16
	flowLabel uint32
	timeout   clock.Time // local ACK timeout, 0 = infinite

	sq      []sendWQE // power-of-two ring
	sqTail  uint32    // next slot to post
	rq      []recvWQE
	rqHead  uint32 // next WQE to consume
	rqTail  uint32 // next slot to post
	sqDrain bool   // SQD reached with nothing in flight

	req  requester
	comp completer
	resp responder

	// Datapath.
	scheduled  bool
	rp         cc.Algorithm // nil without congestion control
	ccTimer    clock.Timer
	ccArmed    clock.Time
	lastStart  clock.Time // pacing: start of the last paced frame
	lastLen    int
	npFlow     cc.NPFlow
	retryTimer clock.Timer
	rnrTimer   clock.Timer

	// wrote is called when an RDMA WRITE has been placed (SetWriteNotify).
	wrote func()

	Stats QPStats
}

// SetWriteNotify sets a function called on the NIC's loop each time an
// RDMA WRITE without immediate data has been placed whole in this QP's
// memory (its last packet executed; RC and UC deliver in order, so every
// byte before it is in place too). Such a WRITE consumes no receive WQE
// and completes nothing at the responder: a program waiting for one polls
// the bytes, as perftest's write_lat polls the last byte of its buffer. A
// daemon that plays the program waits for this instead of spinning on a
// CPU the emulator needs. f must not block; nil removes it.
func (q *QP) SetWriteNotify(f func()) { q.wrote = f }

// QPN is the QP number.
func (q *QP) QPN() uint32 { return q.qpn }

// GiveUpTime is how long the requester keeps resending a request whose
// acknowledgement does not come before it fails it (IBV_WC_RETRY_EXC_ERR):
// its local ACK timeout times the first try and every retry. 0 with no
// timeout (it never gives up).
func (q *QP) GiveUpTime() clock.Time {
	return q.timeout * clock.Time(int(q.attr.RetryCnt)+1)
}

// State is the QP state.
func (q *QP) State() QPState { return q.state }

// Type is the QP's transport service.
func (q *QP) Type() QPType { return q.typ }

// Priority is the priority the QP's frames are queued and sent at.
func (q *QP) Priority() uint8 { return q.prio }

// Rate is the QP's current allowed rate (bits/s): its congestion control
// algorithm's, or the link rate without one.
func (q *QP) Rate() uint64 {
	if q.rp == nil {
		return q.nic.cfg.Rate
	}
	return q.rp.Rate()
}

// CC returns the QP's congestion control algorithm (nil if none).
func (q *QP) CC() cc.Algorithm { return q.rp }

// firstQPN: QP 0 and 1 are the SMI and GSI QPs, not data QPs.
const firstQPN = 2

// CreateQP creates a QP in RESET (ibv_create_qp).
func (pd *PD) CreateQP(init *QPInitAttr) (*QP, error) {
	n := pd.nic
	switch {
	case init.QPType != IBV_QPT_RC && init.QPType != IBV_QPT_UC && init.QPType != IBV_QPT_UD:
		return nil, fmt.Errorf("create_qp: unsupported type %v", init.QPType)
	case init.SendCQ == nil || init.RecvCQ == nil:
		return nil, errors.New("create_qp: send and receive CQs are required")
	case init.SendCQ.nic != n || init.RecvCQ.nic != n:
		return nil, errors.New("create_qp: CQ of another device")
	case init.Cap.MaxSendWR < 1 || init.Cap.MaxSendWR > 1<<15 || init.Cap.MaxRecvWR < 0 || init.Cap.MaxRecvWR > 1<<15:
		return nil, errors.New("create_qp: max_send_wr must be in 1..32768 and max_recv_wr in 0..32768")
	case init.Cap.MaxSendSGE > MaxSGE || init.Cap.MaxRecvSGE > MaxSGE:
		return nil, fmt.Errorf("create_qp: at most %d SGEs", MaxSGE)
	}
	if len(n.qps) == 0 {
		n.qps = make([]*QP, firstQPN)
	}
	if len(n.qps) == IPoIBQPN {
		n.qps = append(n.qps, nil) // IPoIB's, on every port
	}
	qpn := uint32(len(n.qps))
	if qpn > bth.QPNMask {
		return nil, errors.New("create_qp: out of QP numbers")
	}
	q := &QP{nic: n, pd: pd, qpn: qpn, typ: init.QPType, sendCQ: init.SendCQ, recvCQ: init.RecvCQ,
		sigAll: init.SQSigAll, cap: init.Cap}
	q.sq = make([]sendWQE, pow2(init.Cap.MaxSendWR))
	q.rq = make([]recvWQE, pow2(max(init.Cap.MaxRecvWR, 1)))
	q.retryTimer = n.clk.NewTimer(q.onRetryTimer)
	q.rnrTimer = n.clk.NewTimer(q.onRNRTimer)
	q.ccTimer = n.clk.NewTimer(q.onCCTimer)
	q.ccArmed = clock.Never
	q.reset()
	n.qps = append(n.qps, q)
	return q, nil
}

func pow2(n int) int {
	s := 1
	for s < n {
		s <<= 1
	}
	return s
}

// Destroy destroys the QP (ibv_destroy_qp): its number stops receiving.
func (q *QP) Destroy() {
	q.toReset()
	q.nic.qps[q.qpn] = nil
}

// PostSend posts one send work request (ibv_post_send). Like verbs it
// checks what it can at once (opcode for the QP type, SGE count, queue
// room, UD address) and reports the rest in a completion.
func (q *QP) PostSend(wr *SendWR) error {
	switch q.state {
	case IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR:
		return fmt.Errorf("post_send: QP %d in %v", q.qpn, q.state)
	}
	if !wr.Opcode.valid() {
		return fmt.Errorf("post_send: bad opcode %d", wr.Opcode)
	}
	switch q.typ {
	case IBV_QPT_UC:
		if wr.Opcode.readOrAtomic() || wr.Opcode == IBV_WR_SEND_WITH_INV {
			return fmt.Errorf("post_send: %v not allowed on UC", wr.Opcode)
		}
	case IBV_QPT_UD:
		if wr.Opcode != IBV_WR_SEND && wr.Opcode != IBV_WR_SEND_WITH_IMM {
			return fmt.Errorf("post_send: %v not allowed on UD", wr.Opcode)
		}
		if wr.UD.AH == nil || wr.UD.AH.pd != q.pd {
			return errors.New("post_send: UD needs an address handle of the QP's PD")
		}
	}
	if len(wr.SGList) > max(q.cap.MaxSendSGE, 1) {
		return fmt.Errorf("post_send: %d SGEs, QP allows %d", len(wr.SGList), q.cap.MaxSendSGE)
	}
	if int(q.sqTail-q.comp.idx) >= q.cap.MaxSendWR {
		return errors.New("post_send: send queue full (ENOMEM)")
	}
	w := &q.sq[q.sqTail&uint32(len(q.sq)-1)]
	*w = sendWQE{wrID: wr.WRID, op: wr.Opcode, flags: wr.SendFlags, imm: wr.ImmData, invRKey: wr.InvalidateRKey}
	if err := w.sg.set(wr.SGList); err != nil {
		return fmt.Errorf("post_send: %w", err)
	}
	switch {
	case wr.Opcode.isAtomic():
		w.remoteAddr, w.rkey = wr.Atomic.RemoteAddr, wr.Atomic.RKey
		w.compareAdd, w.swap = wr.Atomic.CompareAdd, wr.Atomic.Swap
	case q.typ == IBV_QPT_UD:
		w.ah, w.udQPN, w.udQKey = wr.UD.AH, wr.UD.RemoteQPN&bth.QPNMask, wr.UD.RemoteQKey
	default:
		w.remoteAddr, w.rkey = wr.RDMA.RemoteAddr, wr.RDMA.RKey
	}
	q.sqTail++
	if q.state == IBV_QPS_ERR || q.state == IBV_QPS_SQE {
		// Verbs lets a program post to a QP in ERR or SQE; the WR is
		// flushed (IBA QP state machine).
		q.flushSend()
		return nil
	}
	q.nic.schedule(q)
	return nil
}

// PostRecv posts one receive work request (ibv_post_recv).
func (q *QP) PostRecv(wr *RecvWR) error {
	if q.state == IBV_QPS_RESET {
		return fmt.Errorf("post_recv: QP %d in RESET", q.qpn)
	}
	if len(wr.SGList) > max(q.cap.MaxRecvSGE, 1) {
		return fmt.Errorf("post_recv: %d SGEs, QP allows %d", len(wr.SGList), q.cap.MaxRecvSGE)
	}
	if int(q.rqTail-q.rqHead) >= q.cap.MaxRecvWR {
		return errors.New("post_recv: receive queue full (ENOMEM)")
	}
	w := &q.rq[q.rqTail&uint32(len(q.rq)-1)]
	w.wrID = wr.WRID
	if err := w.sg.set(wr.SGList); err != nil {
		return fmt.Errorf("post_recv: %w", err)
	}
	// Checked at post time rather than at arrival (where verbs reports
	// IBV_WC_LOC_PROT_ERR): the engine writes receive buffers directly.
	if !q.nic.checkSGL(q.pd, &w.sg, IBV_ACCESS_LOCAL_WRITE) {
		return errors.New("post_recv: SGE outside a region of the QP's PD with IBV_ACCESS_LOCAL_WRITE")
	}
	q.rqTail++
	if q.state == IBV_QPS_ERR {
		q.flushRecv()
	}
	return nil
}

// sqSlot returns the send WQE of ring index i.
func (q *QP) sqSlot(i uint32) *sendWQE { return &q.sq[i&uint32(len(q.sq)-1)] }

// reset returns every engine field to its RESET value.
func (q *QP) reset() {
	q.sqTail, q.rqHead, q.rqTail = 0, 0, 0
	q.req = requester{}
	q.comp = completer{}
	q.resp.reset()
	q.sqDrain = false
	q.lastStart, q.lastLen = 0, 0
	q.npFlow = cc.NPFlow{}
}

// toReset stops timers and leaves the scheduler.
func (q *QP) toReset() {
	q.retryTimer.Stop()
	q.rnrTimer.Stop()
	q.ccTimer.Stop()
	q.ccArmed = clock.Never
	q.nic.unschedule(q)
	q.state = IBV_QPS_RESET
	q.rp = nil // a new connection starts at line rate
	q.reset()
}

// completeSend adds the completion of the send WQE at comp.idx (signaled
// ones, or every one with an error) and moves past it.
func (q *QP) completeSend(w *sendWQE, status WCStatus) {
	n := q.nic
	if status == IBV_WC_SUCCESS {
		q.Stats.CompletedWRs++
		q.Stats.CompletedBytes += uint64(w.sg.size)
	} else if status == IBV_WC_WR_FLUSH_ERR {
		n.cnt[ReqCQEFlushError]++
	} else {
		n.cnt[ReqCQEError]++
	}
	signal := status != IBV_WC_SUCCESS || q.sigAll || w.flags&IBV_SEND_SIGNALED != 0
	wc := WC{WRID: w.wrID, Status: status, Opcode: wcOpcodeOf(w.op), QPNum: q.qpn}
	if status == IBV_WC_SUCCESS {
		wc.ByteLen = w.sg.size
	}
	if w.op.readOrAtomic() && !w.failed && int32(q.req.idx-q.comp.idx) > 0 {
		q.req.rdOut--
	}
	// The WQE's slot is free before its completion is seen: a CQ's
	// notify may post the next request at once (a stream keeping its
	// depth), and must find the room the completion made. w is not used
	// after this.
	q.comp.idx++
	if signal {
		q.sendCQ.push(&wc)
	}
}

// flushSend completes every outstanding send WQE with IBV_WC_WR_FLUSH_ERR.
func (q *QP) flushSend() {
	for q.comp.idx != q.sqTail {
		q.completeSend(q.sqSlot(q.comp.idx), IBV_WC_WR_FLUSH_ERR)
	}
	q.req.idx = q.comp.idx
	q.req.rdOut = 0
}

// flushRecv completes every posted receive WQE with IBV_WC_WR_FLUSH_ERR.
func (q *QP) flushRecv() {
	for q.rqHead != q.rqTail {
		w := &q.rq[q.rqHead&uint32(len(q.rq)-1)]
		q.nic.cnt[RespCQEFlushError]++
		q.recvCQ.push(&WC{WRID: w.wrID, Status: IBV_WC_WR_FLUSH_ERR, Opcode: IBV_WC_RECV, QPNum: q.qpn})
		q.rqHead++
	}
}

// toError moves the QP to ERR (IBA QP state machine): timers stop, both queues are
// flushed, nothing more is sent or accepted.
func (q *QP) toError() {
	if q.state == IBV_QPS_ERR {
		return
	}
	q.state = IBV_QPS_ERR
	q.retryTimer.Stop()
	q.rnrTimer.Stop()
	q.resp.out.clear()
	q.flushSend()
	q.flushRecv()
}

// toSQE moves a UC or UD QP to SQE after a send error: the send queue is
// flushed; receiving continues (IBA QP state machine).
func (q *QP) toSQE() {
	q.state = IBV_QPS_SQE
	q.flushSend()
}
