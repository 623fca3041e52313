package nicd

import (
	"errors"
	"fmt"
	"time"

	"github.com/emufabric/emufabric/nic"
)

// The ping-pong of perftest's write_lat and send_lat, played by the two
// emunics.
//
// ib_write_lat and ib_send_lat do not time a message to its completion:
// the client sends, the server answers with a message of its own as soon
// as it sees the first one land (write_lat polls the last byte of its
// buffer, send_lat its receive CQ), the client does the same with the
// answer, and a sample is half the time from one post to the next: one
// trip across the fabric. perf_lat with PingPong plays the client in A's
// daemon, perf_pong the server in B's. The bytes of an answer are those
// of the message it answers (B sends back what A wrote), so both buffers
// end as the source was.
//
// How a side sees a WRITE land: A stamps the last byte of each message
// with its number (1 to 255, then round again), as perftest does, and B
// waits for its copy of that byte to show the number; B cannot count the
// WRITEs placed since its run started, since A's first may land before
// B's request reaches its daemon. B's answer carries the same bytes, so A
// cannot watch the byte it stamped: A counts the WRITEs placed through
// its QP since its own run started, which no answer can precede. Both wake
// on the QP's write notification (nic.QP.SetWriteNotify), not by spinning.

// PongParams are a perf_pong request's: Iters times, wait for the peer's
// message on QP, then answer with WR, signaled. A WRITE has landed when
// the byte at Watch (Addr and LKey; Length is ignored) shows the message's
// number (the client zeroes it before the peer starts); a SEND when a
// receive completes on CQ. Recv is the receive posted for the peer's next
// SEND before each answer; the client posts the first before the peer
// starts.
type PongParams struct {
	QP    uint32       `json:"qp"`
	CQ    uint32       `json:"cq"`
	WR    WorkRequest  `json:"wr"`
	Watch *SGE         `json:"watch,omitempty"`
	Recv  *WorkRequest `json:"recv,omitempty"`
	Iters int          `json:"iters"`
}

// stampOf is the number of message i: 1 to 255, round again (never 0, the
// value the watched byte starts from).
func stampOf(i int) byte { return byte(i%255 + 1) }

// pingPong is one side's count of a ping-pong run: the peer's messages
// that have arrived and its own that have completed. The connection's
// goroutine only.
type pingPong struct {
	s        *session
	op       string
	qp, cq   uint32
	send     bool   // the peer's messages are SENDs (receive completions), else WRITEs
	base     uint64 // the QP's WRITE count when the run started
	watch    []byte // the byte that shows the peer's WRITEs' numbers (pong), or nil: count them
	mark     []byte // the last byte of the side's own WRITE, stamped with its number (ping), or nil
	arrived  int
	sent     int
	done     int
	buf      []nic.WC
	deadline time.Duration
}

// newPingPong sets a side's run up on qp and cq: watch is the byte a pong
// watches, mark the last byte of a ping's WRITE (nil: none).
func (s *session) newPingPong(op string, qp, cq uint32, send bool, watch, mark *SGE) (*pingPong, error) {
	pp := &pingPong{s: s, op: op, qp: qp, cq: cq, send: send, buf: make([]nic.WC, 16), deadline: s.runWait(qp)}
	err := s.do(func() error {
		q, ok := s.qps[qp]
		if !ok {
			return fmt.Errorf("%s: no QP %d", op, qp)
		}
		if _, ok := s.cqs[cq]; !ok {
			return fmt.Errorf("%s: no CQ %d", op, cq)
		}
		pp.base = q.writes
		if watch != nil {
			b, err := s.memByte(watch.Addr, watch.LKey)
			if err != nil {
				return fmt.Errorf("%s: watch: %w", op, err)
			}
			pp.watch = b
		}
		if mark != nil {
			b, err := s.memByte(mark.Addr, mark.LKey)
			if err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			pp.mark = b
		}
		return nil
	})
	return pp, err
}

// lastByte is the last byte of wr's data, nil without data.
func lastByte(wr *WorkRequest) *SGE {
	if len(wr.SG) == 0 || wr.SG[len(wr.SG)-1].Length == 0 {
		return nil
	}
	last := wr.SG[len(wr.SG)-1]
	return &SGE{Addr: last.Addr + uint64(last.Length) - 1, LKey: last.LKey}
}

// memByte is the byte at addr of the session's region with lkey, in the
// memory the NIC reads and writes. Loop goroutine; the byte is read and
// written there too.
func (s *session) memByte(addr uint64, lkey uint32) ([]byte, error) {
	for _, m := range s.mrs {
		if m.mr.LKey() != lkey {
			continue
		}
		if addr < m.mr.Addr() || addr-m.mr.Addr() >= uint64(m.mr.Len()) {
			return nil, fmt.Errorf("address %#x outside region %#x (%d bytes)", addr, m.mr.Addr(), m.mr.Len())
		}
		off := addr - m.mr.Addr()
		return m.mr.Buf()[off : off+1], nil
	}
	return nil, fmt.Errorf("no region with lkey %#x", lkey)
}

// stamp writes message i's number into the last byte of the side's
// WRITE, for the peer to watch (perftest's post_buf). The engine is not
// touching that byte: message i-1 has completed (settled) and its answer
// has landed (arrival), and message i is not posted yet; the post that
// follows hands the byte to the engine's loop.
func (pp *pingPong) stamp(i int) {
	if pp.mark != nil {
		pp.mark[0] = stampOf(i)
	}
}

// post posts wr (signaled) as the run's next message.
func (pp *pingPong) post(wr *WorkRequest) error {
	w := *wr
	w.WRID, w.Signaled = uint64(pp.sent), true
	r, err := pp.s.postSend(&Request{QP: pp.qp, WR: &w, Repeat: 1})
	if err != nil {
		return fmt.Errorf("%s: message %d: %w", pp.op, pp.sent, err)
	}
	if r.Posted != 1 {
		return fmt.Errorf("%s: message %d not posted", pp.op, pp.sent)
	}
	pp.sent++
	return nil
}

// postRecv posts one receive for the peer's next message.
func (pp *pingPong) postRecv(wr *WorkRequest) error {
	if _, err := pp.s.postRecv(&Request{QP: pp.qp, WR: wr, Repeat: 1}); err != nil {
		return fmt.Errorf("%s: receive for message %d: %w", pp.op, pp.arrived+1, err)
	}
	return nil
}

// poll takes the CQ's completions and the QP's WRITE count on the loop
// and returns the channels that signal the next change. A failed
// completion ends the run.
func (pp *pingPong) poll() (ready, wrote chan struct{}, err error) {
	s := pp.s
	err = s.do(func() error {
		q, ok1 := s.qps[pp.qp]
		c, ok2 := s.cqs[pp.cq]
		if !ok1 || !ok2 {
			return fmt.Errorf("%s: the QP or CQ was destroyed", pp.op)
		}
		ready, wrote = c.ready, q.wrote
		for {
			k := c.cq.PollCQ(pp.buf)
			for _, w := range pp.buf[:k] {
				if w.Status != nic.IBV_WC_SUCCESS {
					if w.Opcode == nic.IBV_WC_RECV {
						return fmt.Errorf("%s: receive for message %d: %v", pp.op, pp.arrived, w.Status)
					}
					return fmt.Errorf("%s: message %d: %v", pp.op, w.WRID, w.Status)
				}
				if w.Opcode == nic.IBV_WC_RECV {
					pp.arrived++
				} else {
					pp.done++
				}
			}
			if k < len(pp.buf) {
				break
			}
		}
		if c.cq.Overflowed() {
			return fmt.Errorf("%s: the CQ overflowed", pp.op)
		}
		switch {
		case pp.send:
		case pp.watch != nil:
			// The byte shows the number of the last WRITE that landed;
			// the one awaited is the next.
			if pp.watch[0] == stampOf(pp.arrived) {
				pp.arrived++
			}
		default:
			pp.arrived = int(q.writes - pp.base)
		}
		return nil
	})
	return ready, wrote, err
}

// waitFor returns once cond holds after a poll, or with an error when a
// completion failed, nothing changed for the run's deadline, the client
// left or the daemon closes.
func (pp *pingPong) waitFor(what string, cond func() bool) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ready, wrote, err := pp.poll()
		if err != nil {
			return err
		}
		if cond() {
			return nil
		}
		if timer == nil {
			timer = time.NewTimer(pp.deadline)
		}
		select {
		case <-ready:
		case <-wrote:
		case <-timer.C:
			return fmt.Errorf("%s: %s not within %v", pp.op, what, pp.deadline)
		case <-pp.s.d.closing:
			return ErrClosed
		case <-pp.s.gone:
			return fmt.Errorf("%s: %w after %d of its messages", pp.op, errClientGone, pp.sent)
		}
	}
}

// arrival waits for the peer's n-th message.
func (pp *pingPong) arrival(n int) error {
	return pp.waitFor(fmt.Sprintf("the peer's message %d", n-1), func() bool { return pp.arrived >= n })
}

// finish waits for the completions of the side's own messages.
func (pp *pingPong) finish() error {
	return pp.waitFor("the completion of every message", func() bool { return pp.done >= pp.sent })
}

// settled waits for the side's last message to complete before the next
// is posted, as perftest's latency loops poll their send completion each
// time round. An answer can come before the acknowledgement of the
// message it answers (the acknowledgement lost, or late), and a latency
// run's send queue holds one message: posting the next at once would find
// it full.
func (pp *pingPong) settled() error {
	if pp.done >= pp.sent {
		return nil
	}
	return pp.waitFor(fmt.Sprintf("the completion of message %d", pp.sent-1), func() bool { return pp.done >= pp.sent })
}

// perfPong is the server's side of a ping-pong: answer each of the peer's
// messages as it lands.
func (s *session) perfPong(req *Request) (*Response, error) {
	p := req.Pong
	if p == nil {
		return nil, errors.New("perf_pong: no pong")
	}
	if p.Iters < 1 {
		return nil, fmt.Errorf("perf_pong: iters %d: at least 1", p.Iters)
	}
	if err := pingPongOp(p.WR.Opcode, p.Recv != nil); err != nil {
		return nil, fmt.Errorf("perf_pong: %w", err)
	}
	if p.Recv == nil && p.Watch == nil {
		return nil, errors.New("perf_pong: a WRITE ping-pong needs watch, the byte the peer's WRITEs end on")
	}
	pp, err := s.newPingPong("perf_pong", p.QP, p.CQ, p.Recv != nil, p.Watch, nil)
	if err != nil {
		return nil, err
	}
	for i := range p.Iters {
		if err := pp.arrival(i + 1); err != nil {
			return nil, err
		}
		// The receive for the peer's next message goes before the answer
		// that lets the peer send it: no RNR wait.
		if p.Recv != nil && i+1 < p.Iters {
			if err := pp.postRecv(p.Recv); err != nil {
				return nil, err
			}
		}
		if err := pp.settled(); err != nil {
			return nil, err
		}
		if err := pp.post(&p.WR); err != nil {
			return nil, err
		}
	}
	if err := pp.finish(); err != nil {
		return nil, err
	}
	return &Response{}, nil
}

// pingPong is perf_lat's client side with PingPong: post, wait for the
// answer, a sample of half the time between.
func (s *session) perfPing(p *LatParams) (*Response, error) {
	if err := pingPongOp(p.WR.Opcode, p.Recv != nil); err != nil {
		return nil, fmt.Errorf("perf_lat: %w", err)
	}
	var mark *SGE
	if p.Recv == nil {
		mark = lastByte(&p.WR)
	}
	pp, err := s.newPingPong("perf_lat", p.QP, p.CQ, p.Recv != nil, nil, mark)
	if err != nil {
		return nil, err
	}
	samples := make([]int64, 0, p.Iters)
	for i := range p.Iters {
		if p.Recv != nil {
			if err := pp.postRecv(p.Recv); err != nil {
				return nil, err
			}
		}
		if err := pp.settled(); err != nil {
			return nil, err
		}
		pp.stamp(i)
		t0 := time.Now()
		if err := pp.post(&p.WR); err != nil {
			return nil, err
		}
		if err := pp.arrival(i + 1); err != nil {
			return nil, err
		}
		samples = append(samples, time.Since(t0).Nanoseconds()/2)
	}
	if err := pp.finish(); err != nil {
		return nil, err
	}
	return &Response{LatNs: samples}, nil
}

// pingPongOp checks a ping-pong's message: an RDMA WRITE, or a SEND
// with a receive for the peer's.
func pingPongOp(op nic.WROpcode, recv bool) error {
	switch {
	case op == nic.IBV_WR_RDMA_WRITE && !recv, op == nic.IBV_WR_SEND && recv:
		return nil
	case op == nic.IBV_WR_SEND:
		return errors.New("a SEND ping-pong needs recv, the receive for the peer's messages")
	case op == nic.IBV_WR_RDMA_WRITE:
		return errors.New("a WRITE ping-pong takes no recv")
	}
	return fmt.Errorf("opcode %v: a ping-pong is of RDMA WRITEs or SENDs", op)
}
