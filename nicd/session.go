package nicd

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/wire"
)

// session is one control connection's share of the RDMA engine: a
// protection domain and the regions, CQs and QPs created in it. The maps
// are touched on the loop goroutine only; the mappings are released by
// release (or by the daemon's Close) after the QPs that could use them are
// gone.
type session struct {
	d      *Daemon
	pd     *nic.PD
	next   uint32
	mrs    map[uint32]*mrEntry
	cqs    map[uint32]*cqEntry
	qps    map[uint32]*qpEntry
	joined bool

	mapMu sync.Mutex
	maps  [][]byte // every mapping ever made, unmapped once

	// gone is closed when the client left during a long request
	// (perf_bw, perf_lat, perf_recv); nil otherwise. The connection's goroutine only.
	gone <-chan struct{}
}

type mrEntry struct {
	mr  *nic.MR
	mem []byte
}

type cqEntry struct {
	cq *nic.CQ
	// ready is signalled (never blocking) when a completion is added, so
	// a poll_cq waiting for completions wakes without polling the loop.
	ready chan struct{}
}

type qpEntry struct {
	qp  *nic.QP
	psn uint32
	// writes counts the RDMA WRITEs placed in the session's memory through
	// the QP (loop goroutine); wrote is signalled (never blocking) at each,
	// so a ping-pong waiting for one wakes without polling the loop.
	writes uint64
	wrote  chan struct{}
}

func newSession(d *Daemon) *session {
	return &session{d: d, mrs: map[uint32]*mrEntry{}, cqs: map[uint32]*cqEntry{}, qps: map[uint32]*qpEntry{}}
}

// handleID returns the next handle. Loop goroutine.
func (s *session) handleID() uint32 {
	s.next++
	return s.next
}

// join registers the session with the daemon and allocates its PD on
// first use. Loop goroutine.
func (s *session) join() {
	if s.joined {
		return
	}
	s.joined = true
	s.pd = s.d.nic.AllocPD()
	s.d.sessions[s] = struct{}{}
}

// do runs fn on the loop after joining and returns its error.
func (s *session) do(fn func() error) error {
	var ferr error
	if err := s.d.Do(func() { s.join(); ferr = fn() }); err != nil {
		return err
	}
	return ferr
}

// release destroys the session's QPs (so the engine stops touching its
// memory), deregisters its regions, then unmaps them.
func (s *session) release() {
	err := s.d.Do(func() {
		if !s.joined {
			return
		}
		for _, q := range s.qps {
			q.qp.Destroy()
		}
		for _, m := range s.mrs {
			m.mr.Dereg()
		}
		for _, c := range s.cqs {
			c.cq.SetNotify(nil)
		}
		clear(s.qps)
		clear(s.mrs)
		clear(s.cqs)
		delete(s.d.sessions, s)
	})
	if err != nil {
		// The loop is gone: the daemon's Close unmaps after it stopped.
		return
	}
	s.unmapAll()
}

func (s *session) createCQ(req *Request) (*Response, error) {
	if req.CQE < 0 {
		// Absent (0) asks for the smallest; a negative size is a mistake,
		// not a request for 1 entry.
		return nil, fmt.Errorf("cqe %d: a completion queue holds 1 or more entries", req.CQE)
	}
	var h uint32
	err := s.do(func() error {
		cq, err := s.d.nic.CreateCQ(max(req.CQE, 1))
		if err != nil {
			return err
		}
		e := &cqEntry{cq: cq, ready: make(chan struct{}, 1)}
		cq.SetNotify(func(*nic.CQ) {
			select {
			case e.ready <- struct{}{}:
			default:
			}
		})
		h = s.handleID()
		s.cqs[h] = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Response{CQ: h}, nil
}

func (s *session) createQP(req *Request) (*Response, error) {
	typ := nic.IBV_QPT_RC
	switch req.QPType {
	case "", "rc":
	case "uc":
		typ = nic.IBV_QPT_UC
	default:
		return nil, fmt.Errorf("create_qp: qp_type %q: rc or uc (UD needs address handles, not offered over the control socket)", req.QPType)
	}
	var info QPInfo
	err := s.do(func() error {
		scq, ok1 := s.cqs[req.SendCQ]
		rcq, ok2 := s.cqs[req.RecvCQ]
		if !ok1 || !ok2 {
			return fmt.Errorf("create_qp: send_cq %d / recv_cq %d: no such CQ", req.SendCQ, req.RecvCQ)
		}
		qp, err := s.pd.CreateQP(&nic.QPInitAttr{QPType: typ, SendCQ: scq.cq, RecvCQ: rcq.cq,
			Cap: nic.QPCap{MaxSendWR: max(req.MaxSendWR, 1), MaxRecvWR: req.MaxRecvWR, MaxSendSGE: nic.MaxSGE, MaxRecvSGE: nic.MaxSGE}})
		if err != nil {
			return err
		}
		h := s.handleID()
		// A random initial PSN, as perftest and RDMA-CM pick one.
		e := &qpEntry{qp: qp, psn: rand.Uint32() & 0xFFFFFF, wrote: make(chan struct{}, 1)}
		qp.SetWriteNotify(func() {
			e.writes++
			select {
			case e.wrote <- struct{}{}:
			default:
			}
		})
		s.qps[h] = e
		info = QPInfo{Handle: h, QPN: qp.QPN(), PSN: e.psn, GID: s.d.nic.GID().String(),
			MAC: s.d.cfg.NIC.MAC.String(), MTU: s.d.cfg.NIC.PortMTU, LID: s.d.nic.LID()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Response{QP: &info}, nil
}

// connect walks the QP RESET -> INIT -> RTR -> RTS facing the remote QP,
// as perftest does after exchanging QPN, PSN and GID.
func (s *session) connect(req *Request) (*Response, error) {
	if req.Remote == nil {
		return nil, errors.New("connect: no remote")
	}
	gid, err := netip.ParseAddr(req.Remote.GID)
	if err != nil {
		return nil, fmt.Errorf("connect: remote gid: %w", err)
	}
	hw, err := net.ParseMAC(req.Remote.MAC)
	if err != nil || len(hw) != 6 {
		return nil, fmt.Errorf("connect: remote mac %q: want six bytes", req.Remote.MAC)
	}
	var a ConnectAttr
	if req.Attr != nil {
		a = *req.Attr
	}
	mtuBytes := s.d.cfg.NIC.PortMTU
	if req.Remote.MTU > 0 {
		mtuBytes = min(mtuBytes, req.Remote.MTU)
	}
	if a.MTU > 0 {
		mtuBytes = min(mtuBytes, a.MTU)
	}
	mtu, ok := nic.MTUFor(mtuBytes)
	if !ok {
		return nil, fmt.Errorf("connect: mtu %d: want 256, 512, 1024, 2048 or 4096", mtuBytes)
	}
	def := func(v *uint8, d uint8) {
		if *v == 0 {
			*v = d
		}
	}
	def(&a.Timeout, 14)
	def(&a.RetryCnt, 7)
	def(&a.RNRRetry, 7)
	def(&a.MinRNRTimer, 12)
	def(&a.MaxRdAtomic, 16)
	err = s.do(func() error {
		e, ok := s.qps[req.QP]
		if !ok {
			return fmt.Errorf("connect: no QP %d", req.QP)
		}
		q := e.qp
		ah := nic.AHAttr{DLID: req.Remote.LID, DMAC: wire.MAC(hw), DGID: gid, TrafficClass: a.TrafficClass, SL: a.SL}
		remote := nic.IBV_ACCESS_REMOTE_WRITE | nic.IBV_ACCESS_REMOTE_READ | nic.IBV_ACCESS_REMOTE_ATOMIC
		steps := []struct {
			attr nic.QPAttr
			mask nic.QPAttrMask
		}{
			{nic.QPAttr{QPState: nic.IBV_QPS_INIT, PortNum: 1, QPAccessFlags: remote},
				nic.IBV_QP_STATE | nic.IBV_QP_PKEY_INDEX | nic.IBV_QP_PORT | nic.IBV_QP_ACCESS_FLAGS},
			{nic.QPAttr{QPState: nic.IBV_QPS_RTR, PathMTU: mtu, DestQPNum: req.Remote.QPN, RQPSN: req.Remote.PSN & 0xFFFFFF,
				MaxDestRdAtomic: a.MaxRdAtomic, MinRNRTimer: a.MinRNRTimer, AHAttr: ah},
				nic.IBV_QP_STATE | nic.IBV_QP_AV | nic.IBV_QP_PATH_MTU | nic.IBV_QP_DEST_QPN | nic.IBV_QP_RQ_PSN},
			{nic.QPAttr{QPState: nic.IBV_QPS_RTS, SQPSN: e.psn, Timeout: a.Timeout, RetryCnt: a.RetryCnt,
				RNRRetry: a.RNRRetry, MaxRdAtomic: a.MaxRdAtomic}, nic.IBV_QP_STATE | nic.IBV_QP_SQ_PSN},
		}
		if q.Type() == nic.IBV_QPT_RC {
			steps[1].mask |= nic.IBV_QP_MAX_DEST_RD_ATOMIC | nic.IBV_QP_MIN_RNR_TIMER
			steps[2].mask |= nic.IBV_QP_TIMEOUT | nic.IBV_QP_RETRY_CNT | nic.IBV_QP_RNR_RETRY | nic.IBV_QP_MAX_QP_RD_ATOMIC
		}
		for _, st := range steps {
			if err := q.ModifyQP(&st.attr, st.mask); err != nil {
				return fmt.Errorf("connect: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Response{}, nil
}

func (s *session) destroyQP(req *Request) (*Response, error) {
	err := s.do(func() error {
		e, ok := s.qps[req.QP]
		if !ok {
			return fmt.Errorf("destroy_qp: no QP %d", req.QP)
		}
		e.qp.Destroy()
		delete(s.qps, req.QP)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Response{}, nil
}

func toSGL(in []SGE) ([]nic.SGE, error) {
	if len(in) > nic.MaxSGE {
		return nil, fmt.Errorf("%d SGEs, at most %d", len(in), nic.MaxSGE)
	}
	out := make([]nic.SGE, len(in))
	for i, e := range in {
		out[i] = nic.SGE{Addr: e.Addr, Length: e.Length, LKey: e.LKey}
	}
	return out, nil
}

// postSend posts the work request Repeat times (at least once), with
// WRIDs wr_id, wr_id+1, ...: a batch in one round trip, as a perftest
// client posts its tx-depth. It stops at the first refused post and
// reports how many were posted.
func (s *session) postSend(req *Request) (*Response, error) {
	if req.WR == nil {
		return nil, errors.New("post_send: no wr")
	}
	sg, err := toSGL(req.WR.SG)
	if err != nil {
		return nil, fmt.Errorf("post_send: %w", err)
	}
	switch req.WR.Opcode {
	case nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_WRITE_WITH_IMM, nic.IBV_WR_SEND, nic.IBV_WR_SEND_WITH_IMM, nic.IBV_WR_RDMA_READ:
	default:
		return nil, fmt.Errorf("post_send: opcode %v: the control socket offers RDMA WRITE (with immediate), SEND (with immediate) and RDMA READ", req.WR.Opcode)
	}
	wr := nic.SendWR{SGList: sg, Opcode: req.WR.Opcode, ImmData: req.WR.Imm}
	if req.WR.Signaled {
		wr.SendFlags = nic.IBV_SEND_SIGNALED
	}
	wr.RDMA.RemoteAddr, wr.RDMA.RKey = req.WR.RemoteAddr, req.WR.RKey
	posted := 0
	err = s.do(func() error {
		e, ok := s.qps[req.QP]
		if !ok {
			return fmt.Errorf("post_send: no QP %d", req.QP)
		}
		for i := range max(req.Repeat, 1) {
			wr.WRID = req.WR.WRID + uint64(i)
			if err := e.qp.PostSend(&wr); err != nil {
				return err
			}
			posted++
		}
		return nil
	})
	return &Response{Posted: posted}, err
}

func (s *session) postRecv(req *Request) (*Response, error) {
	if req.WR == nil {
		return nil, errors.New("post_recv: no wr")
	}
	sg, err := toSGL(req.WR.SG)
	if err != nil {
		return nil, fmt.Errorf("post_recv: %w", err)
	}
	wr := nic.RecvWR{SGList: sg}
	posted := 0
	err = s.do(func() error {
		e, ok := s.qps[req.QP]
		if !ok {
			return fmt.Errorf("post_recv: no QP %d", req.QP)
		}
		for i := range max(req.Repeat, 1) {
			wr.WRID = req.WR.WRID + uint64(i)
			if err := e.qp.PostRecv(&wr); err != nil {
				return err
			}
			posted++
		}
		return nil
	})
	return &Response{Posted: posted}, err
}

// maxPoll bounds the completions one poll_cq returns.
const maxPoll = 4096

// pollCQ returns up to Max completions (default 16). With Min > 0 it
// waits, up to TimeoutMs (default 1000, at most 60000), until at least
// Min have been collected: the completion channel of a verbs program,
// without a round trip per completion.
func (s *session) pollCQ(req *Request) (*Response, error) {
	limit := req.Max
	if limit <= 0 {
		limit = 16
	}
	limit = min(limit, maxPoll)
	want := min(req.Min, limit)
	wait := time.Duration(req.TimeoutMs) * time.Millisecond
	if wait <= 0 {
		wait = time.Second
	}
	wait = min(wait, 10*time.Minute)
	var deadline <-chan time.Time
	var out []WC
	buf := make([]nic.WC, limit)
	for {
		var ready chan struct{}
		err := s.do(func() error {
			e, ok := s.cqs[req.CQ]
			if !ok {
				return fmt.Errorf("poll_cq: no CQ %d", req.CQ)
			}
			ready = e.ready
			k := e.cq.PollCQ(buf[:limit-len(out)])
			for _, w := range buf[:k] {
				out = append(out, WC{WRID: w.WRID, Status: w.Status, Opcode: w.Opcode, ByteLen: w.ByteLen,
					Imm: w.ImmData, QPNum: w.QPNum, Flags: w.WCFlags})
			}
			if e.cq.Overflowed() {
				return errors.New("poll_cq: the CQ overflowed (completions were lost; size it for the work requests in flight)")
			}
			return nil
		})
		if err != nil {
			return &Response{WC: out}, err
		}
		if len(out) >= want || len(out) == limit {
			return &Response{WC: out}, nil
		}
		if deadline == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-ready:
		case <-deadline:
			return &Response{WC: out}, nil
		case <-s.d.closing:
			return &Response{WC: out}, ErrClosed
		case <-s.gone:
			return &Response{WC: out}, errClientGone
		}
	}
}
