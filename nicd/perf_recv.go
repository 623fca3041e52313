package nicd

import (
	"errors"
	"fmt"
	"time"

	"github.com/emufabric/emufabric/nic"
)

// The responder's half of ib_send_bw and ib_send_lat, run inside its
// emunic.
//
// A SEND consumes a receive the responder posted; perftest's server keeps
// its receive queue stocked next to its RNIC, reposting as completions
// come. Played across the control socket, each batch of completions cost
// a round trip and a wait for the client's CPU before the receives were
// back, and the samples of send_lat carried the socket's round trips
// (docs/performance.md). So the client asks the responder's daemon for the
// whole receive side with one perf_recv request, beside the requester's
// perf_bw or perf_lat, and the daemon runs it on the session's own verbs.

// RecvParams are a perf_recv request's: keep up to Stock receives like WR
// posted on QP until Iters messages have been received, posting no more
// than Iters in all (so none is left behind for the next run on the QP).
// Primed receives of the run were posted by the client already (with
// post_recv, before it started the requester, so that the first message
// finds one); the loop posts the rest of the stock. WR's WRID is the
// loop's.
type RecvParams struct {
	QP     uint32      `json:"qp"`
	CQ     uint32      `json:"cq"`
	WR     WorkRequest `json:"wr"`
	Stock  int         `json:"stock"`
	Iters  int         `json:"iters"`
	Primed int         `json:"primed,omitempty"`
}

// RecvResult is a perf_recv run: the messages received and the times
// (Unix nanoseconds, the daemon's wall clock) of the first and the last
// receive completion.
type RecvResult struct {
	Msgs    uint64 `json:"msgs"`
	FirstNs int64  `json:"first_ns"`
	LastNs  int64  `json:"last_ns"`
}

func (p *RecvParams) check() error {
	switch {
	case p.Stock < 1:
		return fmt.Errorf("perf_recv: stock %d: at least 1", p.Stock)
	case p.Iters < 1:
		return fmt.Errorf("perf_recv: iters %d: at least 1", p.Iters)
	case p.Primed < 0 || p.Primed > min(p.Stock, p.Iters):
		return fmt.Errorf("perf_recv: primed %d: 0 to the stock and the iters (%d)", p.Primed, min(p.Stock, p.Iters))
	}
	return nil
}

// perfRecv runs the receive side on the session's QP; the connection
// waits for it. It returns once Iters receives have completed; a client
// that closes its connection, a failed receive or ten seconds without one
// end it with an error.
func (s *session) perfRecv(req *Request) (*Response, error) {
	p := req.Recv
	if p == nil {
		return nil, errors.New("perf_recv: no recv")
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	wr := p.WR
	posted, got := p.Primed, 0
	wait := s.runWait(p.QP)
	post := func(k int) error {
		wr.WRID = uint64(posted)
		r, err := s.postRecv(&Request{QP: p.QP, WR: &wr, Repeat: k})
		if r != nil {
			posted += r.Posted
		}
		if err != nil {
			return fmt.Errorf("perf_recv: after %d of %d receives: %w", posted, p.Iters, err)
		}
		return nil
	}
	if k := min(p.Stock, p.Iters) - posted; k > 0 {
		if err := post(k); err != nil {
			return nil, err
		}
	}
	var res RecvResult
	for got < p.Iters {
		select {
		case <-s.gone:
			return nil, fmt.Errorf("perf_recv: %w after %d of %d messages", errClientGone, got, p.Iters)
		default:
		}
		r, err := s.pollCQ(&Request{CQ: p.CQ, Max: p.Stock, Min: 1, TimeoutMs: int(wait / time.Millisecond)})
		if err != nil {
			return nil, err
		}
		if len(r.WC) == 0 {
			return nil, fmt.Errorf("perf_recv: no message within %v after %d of %d", wait, got, p.Iters)
		}
		now := time.Now().UnixNano()
		for _, w := range r.WC {
			if w.Status != nic.IBV_WC_SUCCESS {
				return nil, fmt.Errorf("perf_recv: receive %d: %v", w.WRID, w.Status)
			}
		}
		if got == 0 {
			res.FirstNs = now
		}
		got += len(r.WC)
		res.LastNs = now
		if k := min(len(r.WC), p.Iters-posted); k > 0 {
			if err := post(k); err != nil {
				return nil, err
			}
		}
	}
	res.Msgs = uint64(got)
	return &Response{Recv: &res}, nil
}
