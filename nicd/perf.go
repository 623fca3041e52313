package nicd

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/emufabric/emufabric/nic"
)

// Pair is a connected RC QP pair across two daemons, set up the way
// perftest does: a buffer registered on each side, a CQ and a QP on each,
// QPN/PSN/GID exchanged, both QPs brought to RTS. A is the requester of
// Run; B the responder.
type Pair struct {
	A, B       *Client
	ABuf, BBuf *Buffer
	AMR, BMR   *MRInfo
	AQP, BQP   *QPInfo
	ACQ, BCQ   uint32 // each side's one CQ (send and receive)
	Depth      int
}

// PairConfig sizes a Pair; zero fields take the defaults noted.
type PairConfig struct {
	BufSize int // bytes of each side's buffer; default 1 MiB
	Depth   int // work requests in flight (perftest -t); default 128, perftest's
	MTU     int // path MTU bytes; default the ports' MTU
}

// NewPair sets a connected pair up between the daemons a and b.
func NewPair(a, b *Client, cfg PairConfig) (p *Pair, err error) {
	if cfg.BufSize <= 0 {
		cfg.BufSize = 1 << 20
	}
	if cfg.Depth <= 0 {
		cfg.Depth = 128
	}
	p = &Pair{A: a, B: b, Depth: cfg.Depth}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	access := nic.IBV_ACCESS_LOCAL_WRITE | nic.IBV_ACCESS_REMOTE_WRITE | nic.IBV_ACCESS_REMOTE_READ
	side := func(c *Client) (*Buffer, *MRInfo, uint32, *QPInfo, error) {
		buf, err := NewBuffer(cfg.BufSize)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		mr, err := c.RegMR(buf, access)
		if err != nil {
			return buf, nil, 0, nil, err
		}
		// Send and receive completions share the CQ: 2 x depth, plus
		// room for a receive queue kept stocked.
		cq, err := c.CreateCQ(4 * cfg.Depth)
		if err != nil {
			return buf, mr, 0, nil, err
		}
		qp, err := c.CreateQP(QPCreate{SendCQ: cq, RecvCQ: cq, MaxSendWR: cfg.Depth, MaxRecv: cfg.Depth})
		return buf, mr, cq, qp, err
	}
	if p.ABuf, p.AMR, p.ACQ, p.AQP, err = side(a); err != nil {
		return p, fmt.Errorf("side A: %w", err)
	}
	if p.BBuf, p.BMR, p.BCQ, p.BQP, err = side(b); err != nil {
		return p, fmt.Errorf("side B: %w", err)
	}
	attr := &ConnectAttr{MTU: cfg.MTU}
	if err = a.Connect(p.AQP.Handle, p.BQP, attr); err != nil {
		return p, err
	}
	if err = b.Connect(p.BQP.Handle, p.AQP, attr); err != nil {
		return p, err
	}
	return p, nil
}

// Close unmaps the local buffers (the daemons release theirs when the
// clients close).
func (p *Pair) Close() {
	if p.ABuf != nil {
		p.ABuf.Close()
	}
	if p.BBuf != nil {
		p.BBuf.Close()
	}
}

// PerfResult is what a Run moved.
type PerfResult struct {
	Op       nic.WROpcode
	Size     int
	Messages int
	Bytes    uint64
	Elapsed  time.Duration // first post to last completion
}

// Gbps is the goodput in Gb/s (perftest --report_gbits, BW average).
func (r PerfResult) Gbps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / r.Elapsed.Seconds() / 1e9
}

// Run is ib_write_bw / ib_read_bw / ib_send_bw: iters messages of size
// bytes from A's buffer to B's (READ: from B's into A's), Depth in
// flight, every one signaled, run by A's daemon (perf_bw). For SEND, B's
// daemon keeps B's receive queue stocked (perf_recv).
func (p *Pair) Run(op nic.WROpcode, size, iters int) (PerfResult, error) {
	res := PerfResult{Op: op, Size: size}
	switch op {
	case nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_READ, nic.IBV_WR_SEND:
	default:
		return res, fmt.Errorf("perf: operation %v: write, read or send", op)
	}
	if size <= 0 || size > len(p.ABuf.Bytes) || size > len(p.BBuf.Bytes) || iters <= 0 {
		return res, fmt.Errorf("perf: size %d and iters %d out of range", size, iters)
	}
	wr := &WorkRequest{Opcode: op, Signaled: true,
		SG:         []SGE{{Addr: p.AMR.Addr, Length: uint32(size), LKey: p.AMR.LKey}},
		RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey}
	var recv *Receiver
	if op == nic.IBV_WR_SEND {
		var err error
		if recv, err = p.StartReceiver(size, p.Depth, iters); err != nil {
			return res, err
		}
	}
	// A's daemon runs the post-and-poll loop (perf_bw), every request
	// signaled.
	r, err := p.A.PerfBW(&BWParams{QP: p.AQP.Handle, CQ: p.ACQ, WR: *wr, Depth: p.Depth, Iters: iters, CQMod: 1})
	if err = recv.after(err); err != nil {
		return res, err
	}
	res.Elapsed = time.Duration(r.LastNs - r.FirstNs)
	res.Messages = int(r.Msgs)
	res.Bytes = r.Msgs * uint64(size)
	return res, nil
}

// Receiver is a perf_recv run on B, the responder's side of a SEND test:
// B's daemon posts B's receives (into the first size bytes of B's buffer)
// and reposts them as messages arrive.
type Receiver struct {
	p    *Pair
	done chan struct{}
	res  *RecvResult
	err  error
}

// StartReceiver starts B's receive side of a SEND test of iters messages,
// keeping up to stock receives posted (at most the QP's receive queue).
// The first receives are posted before it returns, so the requester's
// first message, started next, finds one (no RNR wait); Wait for it
// after the requester's loop.
func (p *Pair) StartReceiver(size, stock, iters int) (*Receiver, error) {
	rwr := WorkRequest{SG: []SGE{{Addr: p.BMR.Addr, Length: uint32(size), LKey: p.BMR.LKey}}}
	primed, err := p.B.PostRecv(p.BQP.Handle, &rwr, min(stock, iters))
	if err != nil {
		return nil, fmt.Errorf("perf: receiver: %w", err)
	}
	r := &Receiver{p: p, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.res, r.err = p.B.PerfRecv(&RecvParams{QP: p.BQP.Handle, CQ: p.BCQ, WR: rwr,
			Stock: stock, Iters: iters, Primed: primed})
	}()
	return r, nil
}

// Wait returns the receive side's result. With abort (the requester's
// loop failed, so the messages will not all come) a receiver still
// running is ended at once by closing B's connection: the pair is
// unusable afterwards.
func (r *Receiver) Wait(abort bool) (*RecvResult, error) {
	if abort {
		select {
		case <-r.done:
		default:
			r.p.B.Close()
		}
	}
	<-r.done
	if r.err != nil {
		return nil, fmt.Errorf("perf: receiver: %w", r.err)
	}
	return r.res, nil
}

// after waits for r, if there is one, once the requester's loop ended
// with err, and returns the first error of the two.
func (r *Receiver) after(err error) error {
	if r == nil {
		return err
	}
	if _, rerr := r.Wait(err != nil); err == nil {
		return rerr
	}
	return err
}

// LatencyResult holds one latency sample per message.
type LatencyResult struct {
	Op      nic.WROpcode
	Size    int
	Samples []time.Duration // post to completion, per message, in order
}

// Percentile returns the p-th percentile (0..100) of the samples, by the
// nearest-rank method (perftest reports typical = median and 99%).
func (r LatencyResult) Percentile(p float64) time.Duration {
	if len(r.Samples) == 0 {
		return 0
	}
	s := slices.Clone(r.Samples)
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// Latency is ib_write_lat / ib_read_lat / ib_send_lat's measurement seen
// from A, one message in flight, run in the daemons as perftest runs next
// to its RNIC. WRITE and SEND play perftest's ping-pong: B's daemon
// answers each message with one of its own from B's buffer into A's
// (perf_pong), and a sample is half the time from A's post to the
// answer's arrival, one trip across the fabric. READ is a round trip by
// nature: a sample is the time from the post to the completion.
func (p *Pair) Latency(op nic.WROpcode, size, iters int) (LatencyResult, error) {
	res := LatencyResult{Op: op, Size: size}
	switch op {
	case nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_READ, nic.IBV_WR_SEND:
	default:
		return res, fmt.Errorf("perf: operation %v: write, read or send", op)
	}
	if size <= 0 || size > len(p.ABuf.Bytes) || size > len(p.BBuf.Bytes) || iters <= 0 {
		return res, fmt.Errorf("perf: size %d and iters %d out of range", size, iters)
	}
	lat := &LatParams{QP: p.AQP.Handle, CQ: p.ACQ, Iters: iters,
		WR: WorkRequest{Opcode: op, Signaled: true,
			SG:         []SGE{{Addr: p.AMR.Addr, Length: uint32(size), LKey: p.AMR.LKey}},
			RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey}}
	if op == nic.IBV_WR_RDMA_READ {
		s, err := p.A.PerfLat(lat)
		res.Samples = s
		return res, err
	}
	pong := &PongParams{QP: p.BQP.Handle, CQ: p.BCQ, Iters: iters,
		WR: WorkRequest{Opcode: op, Signaled: true,
			SG:         []SGE{{Addr: p.BMR.Addr, Length: uint32(size), LKey: p.BMR.LKey}},
			RemoteAddr: p.AMR.Addr, RKey: p.AMR.RKey}}
	lat.PingPong = true
	if op == nic.IBV_WR_RDMA_WRITE {
		// B watches the last byte of A's WRITEs, stamped with their
		// numbers from 1; a number left from an earlier run must not
		// pass for this run's first.
		p.BBuf.Bytes[size-1] = 0
		pong.Watch = &SGE{Addr: p.BMR.Addr + uint64(size) - 1, Length: 1, LKey: p.BMR.LKey}
	}
	if op == nic.IBV_WR_SEND {
		lat.Recv = &WorkRequest{SG: lat.WR.SG}
		pong.Recv = &WorkRequest{SG: pong.WR.SG}
		// B's receive for A's first message is there before A starts.
		if _, err := p.B.PostRecv(p.BQP.Handle, pong.Recv, 1); err != nil {
			return res, fmt.Errorf("perf: responder: %w", err)
		}
	}
	// Each side runs in its daemon; whichever fails first ends the other
	// at once by closing its connection (the pair is unusable afterwards,
	// as after Receiver.Wait's abort) rather than leave it waiting for
	// messages that will not come.
	pongDone, pingDone := make(chan error, 1), make(chan error, 1)
	go func() { pongDone <- p.B.PerfPong(pong) }()
	go func() {
		s, err := p.A.PerfLat(lat)
		res.Samples = s
		pingDone <- err
	}()
	select {
	case err := <-pingDone:
		if err != nil {
			p.B.Close()
			<-pongDone
			return res, err
		}
		if perr := <-pongDone; perr != nil {
			return res, fmt.Errorf("perf: responder: %w", perr)
		}
	case perr := <-pongDone:
		if perr != nil {
			p.A.Close()
			<-pingDone
			return res, fmt.Errorf("perf: responder: %w", perr)
		}
		if err := <-pingDone; err != nil {
			return res, err
		}
	}
	return res, nil
}
