package nic

import (
	"errors"
	"fmt"
)

// Connect is what RDMA-CM (or a perftest exchange) does for a program: it
// creates a protection domain, completion queues, a memory region and a QP
// on each NIC and walks both QPs RESET -> INIT -> RTR -> RTS facing each
// other. Drivers (the simulator's traffic section, examples) use it to
// set up a connection in one call.

// ConnectOpts configures Connect; zero fields take the defaults noted.
type ConnectOpts struct {
	Type         QPType // IBV_QPT_RC (default), IBV_QPT_UC or IBV_QPT_UD
	MTU          MTU    // default IBV_MTU_4096 (capped by each port's MTU)
	Timeout      uint8  // default 14 (67 ms, a common rdma-core choice)
	RetryCnt     uint8  // default 7
	RNRRetry     uint8  // default 7 (infinite)
	MinRNRTimer  uint8  // default 12 (0.64 ms)
	MaxRdAtomic  uint8  // default 16, both directions
	SendWR       int    // default 128
	RecvWR       int    // default 128
	BufSize      int    // bytes of each side's memory region; default 1 MiB
	TrafficClass uint8  // DSCP<<2; 0 takes the NIC's RoCE DSCP
	SL           uint8  // priority under trust pcp; IB: the service level
	PSN          uint32 // initial PSN of both directions
	QKey         uint32 // UD; default 0x11111111
}

func (o *ConnectOpts) fill() {
	if o.Type == 0 {
		o.Type = IBV_QPT_RC
	}
	if o.MTU == 0 {
		o.MTU = IBV_MTU_4096
	}
	if o.Timeout == 0 {
		o.Timeout = 14
	}
	if o.RetryCnt == 0 {
		o.RetryCnt = 7
	}
	if o.RNRRetry == 0 {
		o.RNRRetry = 7
	}
	if o.MinRNRTimer == 0 {
		o.MinRNRTimer = 12
	}
	if o.MaxRdAtomic == 0 {
		o.MaxRdAtomic = 16
	}
	if o.SendWR == 0 {
		o.SendWR = 128
	}
	if o.RecvWR == 0 {
		o.RecvWR = 128
	}
	if o.BufSize == 0 {
		o.BufSize = 1 << 20
	}
	if o.QKey == 0 {
		o.QKey = 0x11111111
	}
}

// Endpoint is one side of a connection.
type Endpoint struct {
	NIC    *NIC
	PD     *PD
	SendCQ *CQ
	RecvCQ *CQ
	QP     *QP
	MR     *MR
	// Peer is the other side's QP number and, for UD, an address handle
	// to it.
	PeerQPN uint32
	AH      *AH
	QKey    uint32
}

// Connect connects a QP on a with a QP on b.
func Connect(a, b *NIC, o ConnectOpts) (*Endpoint, *Endpoint, error) {
	o.fill()
	if a == b {
		return nil, nil, errors.New("connect: both ends on one NIC (loopback is not modelled)")
	}
	ea, err := newEndpoint(a, &o)
	if err != nil {
		return nil, nil, err
	}
	eb, err := newEndpoint(b, &o)
	if err != nil {
		return nil, nil, err
	}
	if err := ea.connect(eb, &o); err != nil {
		return nil, nil, err
	}
	if err := eb.connect(ea, &o); err != nil {
		return nil, nil, err
	}
	return ea, eb, nil
}

func newEndpoint(n *NIC, o *ConnectOpts) (*Endpoint, error) {
	e := &Endpoint{NIC: n, PD: n.AllocPD(), QKey: o.QKey}
	var err error
	if e.SendCQ, err = n.CreateCQ(o.SendWR); err != nil {
		return nil, err
	}
	if e.RecvCQ, err = n.CreateCQ(o.RecvWR); err != nil {
		return nil, err
	}
	access := IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC
	if e.MR, err = e.PD.RegMR(make([]byte, o.BufSize), access); err != nil {
		return nil, err
	}
	e.QP, err = e.PD.CreateQP(&QPInitAttr{QPType: o.Type, SendCQ: e.SendCQ, RecvCQ: e.RecvCQ,
		Cap: QPCap{MaxSendWR: o.SendWR, MaxRecvWR: o.RecvWR, MaxSendSGE: 1, MaxRecvSGE: 1}})
	return e, err
}

func (e *Endpoint) connect(peer *Endpoint, o *ConnectOpts) error {
	q := e.QP
	ah := AHAttr{DLID: peer.NIC.cfg.LID, DMAC: peer.NIC.cfg.MAC, DGID: peer.NIC.GID(), TrafficClass: o.TrafficClass, SL: o.SL}
	e.PeerQPN = peer.QP.QPN()
	steps := []struct {
		attr QPAttr
		mask QPAttrMask
	}{
		{QPAttr{QPState: IBV_QPS_INIT, PortNum: 1, QKey: o.QKey,
			QPAccessFlags: IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC},
			IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT},
		{QPAttr{QPState: IBV_QPS_RTR, PathMTU: o.MTU, DestQPNum: peer.QP.QPN(), RQPSN: o.PSN,
			MaxDestRdAtomic: o.MaxRdAtomic, MinRNRTimer: o.MinRNRTimer, AHAttr: ah}, IBV_QP_STATE},
		{QPAttr{QPState: IBV_QPS_RTS, SQPSN: o.PSN, Timeout: o.Timeout, RetryCnt: o.RetryCnt,
			RNRRetry: o.RNRRetry, MaxRdAtomic: o.MaxRdAtomic}, IBV_QP_STATE | IBV_QP_SQ_PSN},
	}
	switch o.Type {
	case IBV_QPT_UD:
		steps[0].mask |= IBV_QP_QKEY
		var err error
		if e.AH, err = e.PD.CreateAH(&ah); err != nil {
			return err
		}
	case IBV_QPT_UC:
		steps[0].mask |= IBV_QP_ACCESS_FLAGS
		steps[1].mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
	default:
		steps[0].mask |= IBV_QP_ACCESS_FLAGS
		steps[1].mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER
		steps[2].mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC
	}
	for _, s := range steps {
		if err := q.ModifyQP(&s.attr, s.mask); err != nil {
			return fmt.Errorf("connect %s QP %d: %w", e.NIC.cfg.Name, q.QPN(), err)
		}
	}
	return nil
}
