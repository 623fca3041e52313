package nicd

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/emufabric/emufabric/nic"
)

// The perftest bandwidth loop, run inside the requester's emunic.
//
// ib_write_bw runs on the host next to its RNIC, where a completion is
// microseconds from the loop that reposts. Played by a client across the
// control socket, every completion costs a round trip and waits for the
// client's process to get a CPU: with perftest's tx depth 128 and CQ
// moderation 100 the send queue holds 28 unsent messages when a signaled
// completion returns (1.5 ms at 10 Gb/s), which a descheduled client
// misses, and the link idles (docs/performance.md). So a client asks for
// the whole loop with one perf_bw request, and the daemon runs it on the
// session's own verbs (postSend, pollCQ): the same calls, without the
// socket and the other process.

// BWParams are a perf_bw request's: keep Depth work requests like WR in
// flight on QP, every CQMod-th signaled (and the last), for Iters messages
// or, with DurationMs > 0, until that much wall time has passed (then up
// to a signaled request). WR's WRID and Signaled are the loop's.
type BWParams struct {
	QP         uint32      `json:"qp"`
	CQ         uint32      `json:"cq"`
	WR         WorkRequest `json:"wr"`
	Depth      int         `json:"depth"`
	Iters      int         `json:"iters"`
	CQMod      int         `json:"cq_mod"`
	DurationMs int         `json:"duration_ms,omitempty"`
	// PostList (perftest -l) above 1 posts the work requests PostList at
	// a time, each list in one call to the NIC (one doorbell: the engine
	// sees the list at once), and only once PostList send queue slots are
	// free; CQMod must divide it, so each list ends with a signaled
	// request. 0 or 1: every refill posts whatever is free.
	PostList int `json:"post_list,omitempty"`
}

// BWSample is the bytes completed by a time (Unix nanoseconds, the
// daemon's wall clock), one per completion batch.
type BWSample struct {
	AtNs  int64  `json:"at_ns"`
	Bytes uint64 `json:"bytes"`
}

// BWResult is a perf_bw run: messages completed, the time of the first
// post and of the last completion, and the samples between.
type BWResult struct {
	Msgs    uint64     `json:"msgs"`
	FirstNs int64      `json:"first_ns"`
	LastNs  int64      `json:"last_ns"`
	Samples []BWSample `json:"samples"`
}

// errClientGone ends a long request whose client closed its connection.
var errClientGone = errors.New("the client closed its connection")

// bwPollTimeout bounds the wait for one completion: a lossless fabric may
// pause a sender, but not for this long. runWait scales it.
const bwPollTimeout = 10 * time.Second

// runWait is how long a perf loop on qp waits for one completion or
// message before it gives up: bwPollTimeout of the lab's time, or twice as
// long as the requester itself takes to give up on a lost packet (a large
// -u), in wall time: a dilated lab's 67 ms ACK timeout is seconds of the
// wall clock, and a run must not end before the retransmission it waits
// for. At most 10 minutes.
func (s *session) runWait(qp uint32) time.Duration {
	var give time.Duration
	s.do(func() error {
		if e, ok := s.qps[qp]; ok {
			give = 2 * e.qp.GiveUpTime().Duration()
		}
		return nil
	})
	dil := time.Duration(max(s.d.clk.Dilation(), 1))
	return min(max(bwPollTimeout, give)*dil, 10*time.Minute)
}

func (p *BWParams) check() error {
	switch {
	case p.Depth < 1:
		return fmt.Errorf("perf_bw: depth %d: at least 1", p.Depth)
	case p.CQMod < 1 || p.CQMod > p.Depth:
		return fmt.Errorf("perf_bw: cq_mod %d: 1 to the depth (%d)", p.CQMod, p.Depth)
	case p.Iters < 1 && p.DurationMs <= 0:
		return fmt.Errorf("perf_bw: iters %d: at least 1 (or a duration)", p.Iters)
	case p.DurationMs < 0:
		return fmt.Errorf("perf_bw: duration_ms %d: not negative", p.DurationMs)
	case p.PostList > 1 && (p.PostList > p.Depth || p.PostList%p.CQMod != 0):
		return fmt.Errorf("perf_bw: post_list %d: at most the depth (%d) and a multiple of cq_mod (%d)", p.PostList, p.Depth, p.CQMod)
	case p.PostList > 1 && p.DurationMs <= 0 && p.Iters%p.PostList != 0:
		return fmt.Errorf("perf_bw: iters %d: a multiple of post_list (%d)", p.Iters, p.PostList)
	}
	return nil
}

// perfBW runs the loop on the session's QP; the connection waits for it.
func (s *session) perfBW(req *Request) (*Response, error) {
	p := req.BW
	if p == nil {
		return nil, errors.New("perf_bw: no bw")
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	var size uint64
	for _, sg := range p.WR.SG {
		size += uint64(sg.Length)
	}
	target := p.Iters
	if p.DurationMs > 0 {
		target = math.MaxInt
	}
	signaled := func(i int) bool { return (i+1)%p.CQMod == 0 || i == target-1 }
	wr := p.WR
	wait := s.runWait(p.QP)
	posted, done := 0, 0
	send := func(n int) (int, error) {
		r, err := s.postSend(&Request{QP: p.QP, WR: &wr, Repeat: n})
		if r == nil {
			return 0, err
		}
		return r.Posted, err
	}
	// postList posts the next k requests (a multiple of the list) a list
	// at a time, each list in one engine call.
	postList := func(k int) error {
		for ; k > 0; k -= p.PostList {
			got, err := s.postBatch(p.QP, &wr, posted, p.PostList, signaled)
			posted += got
			if err != nil {
				return err
			}
		}
		return nil
	}
	// post posts the next k requests: runs of unsignaled ones, each closed
	// by a signaled one, one post_send per run.
	post := func(k int) error {
		if p.PostList > 1 {
			return postList(k)
		}
		for k > 0 {
			n := 0
			for n < k && !signaled(posted+n) {
				n++
			}
			if n > 0 {
				wr.WRID, wr.Signaled = uint64(posted), false
				got, err := send(n)
				posted += got
				k -= got
				if err != nil {
					return err
				}
			}
			if k > 0 {
				wr.WRID, wr.Signaled = uint64(posted), true
				got, err := send(1)
				posted += got
				k -= got
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	var res BWResult
	first := time.Now()
	res.FirstNs = first.UnixNano()
	res.Samples = append(res.Samples, BWSample{AtNs: res.FirstNs})
	deadline := first.Add(time.Duration(p.DurationMs) * time.Millisecond)
	k0 := min(p.Depth, target)
	if p.PostList > 1 {
		k0 -= k0 % p.PostList
	}
	if err := post(k0); err != nil {
		return nil, err
	}
	for done < target {
		select {
		case <-s.gone:
			return nil, fmt.Errorf("perf_bw: %w after %d of %d messages", errClientGone, done, posted)
		default:
		}
		if p.DurationMs > 0 && target == math.MaxInt && !time.Now().Before(deadline) {
			// Time is up: stop at a signaled request, so the last
			// completion tells that everything arrived. The last one
			// posted was signaled by the moderation alone (signaled
			// would now say yes for it whatever it was).
			target = posted
			if posted%p.CQMod != 0 {
				target = posted + 1
			}
		}
		// A signaled request is in flight: the queue is refilled to the
		// depth after every poll, and any depth consecutive requests hold
		// one (cq_mod <= depth); after the deadline the closing one is
		// posted by that refill.
		sig := 0
		for i := done; i < posted; i++ {
			if signaled(i) {
				sig++
			}
		}
		r, err := s.pollCQ(&Request{CQ: p.CQ, Max: p.Depth, Min: max(1, sig/2), TimeoutMs: int(wait / time.Millisecond)})
		if err != nil {
			return nil, err
		}
		if len(r.WC) == 0 {
			return nil, fmt.Errorf("perf_bw: no completion within %v after %d of %d messages", wait, done, posted)
		}
		for _, w := range r.WC {
			if w.Status != nic.IBV_WC_SUCCESS {
				return nil, fmt.Errorf("perf_bw: message %d: %v", w.WRID, w.Status)
			}
			done = max(done, int(w.WRID)+1)
		}
		res.LastNs = time.Now().UnixNano()
		res.Samples = append(res.Samples, BWSample{AtNs: res.LastNs, Bytes: uint64(done) * size})
		k := min(p.Depth-(posted-done), target-posted)
		if p.PostList > 1 {
			// Whole lists only: the rest waits for the next completions.
			k -= k % p.PostList
		}
		if k > 0 {
			if err := post(k); err != nil {
				return nil, err
			}
		}
	}
	res.Msgs = uint64(done)
	return &Response{BW: &res}, nil
}

// LatParams are a perf_lat request's: Iters messages like WR on QP, one at
// a time, each signaled (WR's WRID and Signaled are the loop's). With
// PingPong the peer answers each (perf_pong, run beside it) and a sample is
// half the time from the post to the answer's arrival; a SEND ping-pong
// posts Recv for each answer.
type LatParams struct {
	QP       uint32       `json:"qp"`
	CQ       uint32       `json:"cq"`
	WR       WorkRequest  `json:"wr"`
	Iters    int          `json:"iters"`
	PingPong bool         `json:"ping_pong,omitempty"`
	Recv     *WorkRequest `json:"recv,omitempty"`
}

// perfLat is ib_write_lat / ib_read_lat / ib_send_lat's loop run in the
// requester's daemon: each message timed from its post to its completion,
// on the session's verbs, so a sample is the fabric's round trip without
// the control socket's. A SEND needs a receive at the responder: run
// perf_recv there alongside (perf_recv.go).
func (s *session) perfLat(req *Request) (*Response, error) {
	p := req.Lat
	if p == nil {
		return nil, errors.New("perf_lat: no lat")
	}
	if p.Iters < 1 {
		return nil, fmt.Errorf("perf_lat: iters %d: at least 1", p.Iters)
	}
	switch p.WR.Opcode {
	case nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_READ, nic.IBV_WR_SEND:
	default:
		return nil, fmt.Errorf("perf_lat: opcode %v: RDMA WRITE, READ or SEND", p.WR.Opcode)
	}
	if p.PingPong {
		return s.perfPing(p)
	}
	wr := p.WR
	wr.Signaled = true
	samples := make([]int64, 0, p.Iters)
	wait := s.runWait(p.QP)
	for i := range p.Iters {
		select {
		case <-s.gone:
			return nil, fmt.Errorf("perf_lat: %w after %d of %d messages", errClientGone, i, p.Iters)
		default:
		}
		wr.WRID = uint64(i)
		t0 := time.Now()
		if r, err := s.postSend(&Request{QP: p.QP, WR: &wr, Repeat: 1}); err != nil {
			return nil, err
		} else if r.Posted != 1 {
			return nil, fmt.Errorf("perf_lat: message %d not posted", i)
		}
		r, err := s.pollCQ(&Request{CQ: p.CQ, Max: 1, Min: 1, TimeoutMs: int(wait / time.Millisecond)})
		if err != nil {
			return nil, err
		}
		if len(r.WC) != 1 {
			return nil, fmt.Errorf("perf_lat: no completion within %v for message %d", wait, i)
		}
		if r.WC[0].Status != nic.IBV_WC_SUCCESS {
			return nil, fmt.Errorf("perf_lat: message %d: %v", i, r.WC[0].Status)
		}
		samples = append(samples, time.Since(t0).Nanoseconds())
	}
	return &Response{LatNs: samples}, nil
}

// postBatch posts n work requests like wr, numbered (WRID) from first,
// those for which signaled says so signaled, in one engine call: a
// program's ibv_post_send of a linked list, which reaches the NIC with
// one doorbell. It returns how many were posted.
func (s *session) postBatch(qp uint32, wr *WorkRequest, first, n int, signaled func(int) bool) (int, error) {
	switch wr.Opcode {
	case nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_WRITE_WITH_IMM, nic.IBV_WR_SEND, nic.IBV_WR_SEND_WITH_IMM, nic.IBV_WR_RDMA_READ:
	default:
		return 0, fmt.Errorf("post_send: opcode %v: the control socket offers RDMA WRITE (with immediate), SEND (with immediate) and RDMA READ", wr.Opcode)
	}
	sg, err := toSGL(wr.SG)
	if err != nil {
		return 0, fmt.Errorf("post_send: %w", err)
	}
	w := nic.SendWR{SGList: sg, Opcode: wr.Opcode, ImmData: wr.Imm}
	w.RDMA.RemoteAddr, w.RDMA.RKey = wr.RemoteAddr, wr.RKey
	posted := 0
	err = s.do(func() error {
		e, ok := s.qps[qp]
		if !ok {
			return fmt.Errorf("post_send: no QP %d", qp)
		}
		for i := first; i < first+n; i++ {
			w.WRID, w.SendFlags = uint64(i), 0
			if signaled(i) {
				w.SendFlags = nic.IBV_SEND_SIGNALED
			}
			if err := e.qp.PostSend(&w); err != nil {
				return err
			}
			posted++
		}
		return nil
	})
	return posted, err
}
