package main

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/nicd"
)

// The perf engine: perftest's client loop, driven over two emunics'
// control sockets. Each QP pair has its own two control connections (a
// session on each daemon), so several pairs post and poll in parallel
// and everything a pair created goes away when its connections close.

// perfConn is one QP pair and the two sessions that own it.
type perfConn struct {
	a, b *nicd.Client
	pair *nicd.Pair
}

func (c *perfConn) close() {
	if c.pair != nil {
		c.pair.Close()
	}
	if c.a != nil {
		c.a.Close()
	}
	if c.b != nil {
		c.b.Close()
	}
}

// perfPairConfig sizes the pairs of a run.
type perfPairConfig struct {
	BufSize int   // bytes of each side's buffer (the largest message)
	Depth   int   // send work requests in flight (-t)
	MTU     int   // path MTU bytes; 0: the ports'
	TC      uint8 // traffic class (DSCP<<2); 0: the NIC's RoCE DSCP
	SL      uint8
	Timeout uint8 // local ACK timeout exponent (4.096 us x 2^Timeout); 0: the NIC's default 14
}

// openPerfConns dials both daemons n times and sets a connected RC pair
// up on each connection pair, as perftest's client and server do over
// their out-of-band exchange: a buffer registered on each side, a CQ
// shared by send and receive completions, a QP, the QPN/PSN/GID/MAC
// exchanged, both QPs brought to RTS.
func openPerfConns(srcCtl, dstCtl string, n int, cfg perfPairConfig) (conns []*perfConn, err error) {
	defer func() {
		if err != nil {
			for _, c := range conns {
				c.close()
			}
			conns = nil
		}
	}()
	for range n {
		c := &perfConn{}
		conns = append(conns, c)
		if c.a, err = nicd.Dial(srcCtl); err != nil {
			return conns, err
		}
		if c.b, err = nicd.Dial(dstCtl); err != nil {
			return conns, err
		}
		if c.pair, err = newPerfPair(c.a, c.b, cfg); err != nil {
			return conns, err
		}
	}
	return conns, nil
}

// newPerfPair is nicd.NewPair with the connection's traffic class,
// service level and ACK timeout (perftest -T, -S and -u) and a receive queue twice the send
// depth, so a SEND test's receiver restocks without RNR waits.
func newPerfPair(a, b *nicd.Client, cfg perfPairConfig) (p *nicd.Pair, err error) {
	p = &nicd.Pair{A: a, B: b, Depth: cfg.Depth}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	access := nic.IBV_ACCESS_LOCAL_WRITE | nic.IBV_ACCESS_REMOTE_WRITE | nic.IBV_ACCESS_REMOTE_READ
	side := func(c *nicd.Client, buf **nicd.Buffer, mr **nicd.MRInfo, cq *uint32, qp **nicd.QPInfo) error {
		var err error
		if *buf, err = nicd.NewBuffer(cfg.BufSize); err != nil {
			return err
		}
		if *mr, err = c.RegMR(*buf, access); err != nil {
			return err
		}
		if *cq, err = c.CreateCQ(4 * max(cfg.Depth, 64)); err != nil {
			return err
		}
		*qp, err = c.CreateQP(nicd.QPCreate{SendCQ: *cq, RecvCQ: *cq, MaxSendWR: cfg.Depth, MaxRecv: 2 * max(cfg.Depth, 64)})
		return err
	}
	if err = side(a, &p.ABuf, &p.AMR, &p.ACQ, &p.AQP); err != nil {
		return p, fmt.Errorf("source side: %w", err)
	}
	if err = side(b, &p.BBuf, &p.BMR, &p.BCQ, &p.BQP); err != nil {
		return p, fmt.Errorf("destination side: %w", err)
	}
	attr := &nicd.ConnectAttr{MTU: cfg.MTU, TrafficClass: cfg.TC, SL: cfg.SL, Timeout: cfg.Timeout}
	if err = a.Connect(p.AQP.Handle, p.BQP, attr); err != nil {
		return p, fmt.Errorf("source side: %w", err)
	}
	if err = b.Connect(p.BQP.Handle, p.AQP, attr); err != nil {
		return p, fmt.Errorf("destination side: %w", err)
	}
	return p, nil
}

// perfPollTimeout bounds the wait for one completion: a lossless fabric
// may pause a sender, but not for this long.
const perfPollTimeout = 10 * time.Second

// bwRun is one QP's bandwidth run.
type bwRun struct {
	msgs        uint64
	bytes       uint64
	first, last time.Time
	samples     []perfSample
}

// runBandwidth runs perftest's bandwidth loop on one QP, in the requester's
// emunic (nicd perf_bw), and collects its result: keep depth
// work requests in flight, every cqMod-th signaled (CQ moderation; with
// RC, a signaled completion means every earlier request of the QP
// completed too), for iters messages or, with duration > 0, until the
// time is up. The message always covers the first size bytes of the
// requester's buffer and lands in the first size bytes of the
// responder's, as perftest's do. For SEND the responder's receive queue
// is kept stocked by its emunic (nicd perf_recv) for a run of iters
// messages; a -D run, whose count nobody knows before it ends, is
// restocked from here.
func runBandwidth(p *nicd.Pair, op nic.WROpcode, size, iters int, duration time.Duration, cqMod, postList int) (bwRun, error) {
	var r bwRun
	var restock *perfRestock
	var recv *nicd.Receiver
	if op == nic.IBV_WR_SEND && duration == 0 {
		var err error
		if recv, err = p.StartReceiver(size, 2*max(p.Depth, 64), iters); err != nil {
			return r, err
		}
	} else if op == nic.IBV_WR_SEND {
		var err error
		if restock, err = startRestock(p, size); err != nil {
			return r, err
		}
		defer restock.stop()
	}
	// The loop itself runs in the requester's emunic (nicd/perf_bw.go), as
	// perftest runs on the host next to its RNIC: completions are then
	// microseconds from the repost, not a control round trip and a wait
	// for this process's CPU.
	res, err := p.A.PerfBW(&nicd.BWParams{QP: p.AQP.Handle, CQ: p.ACQ,
		WR: nicd.WorkRequest{Opcode: op, SG: []nicd.SGE{{Addr: p.AMR.Addr, Length: uint32(size), LKey: p.AMR.LKey}},
			RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey},
		Depth: p.Depth, Iters: iters, CQMod: cqMod, PostList: postList, DurationMs: int(duration / time.Millisecond)})
	if recv != nil {
		got, rerr := recv.Wait(err != nil)
		if err == nil && rerr == nil && got.Msgs != res.Msgs {
			rerr = fmt.Errorf("receiver: %d messages received, %d sent", got.Msgs, res.Msgs)
		}
		if err == nil {
			err = rerr
		}
	}
	if err != nil {
		return r, err
	}
	r.msgs = res.Msgs
	r.bytes = res.Msgs * uint64(size)
	r.first, r.last = time.Unix(0, res.FirstNs), time.Unix(0, res.LastNs)
	for _, s := range res.Samples {
		r.samples = append(r.samples, perfSample{at: time.Unix(0, s.AtNs), bytes: s.Bytes})
	}
	if restock != nil {
		if err := restock.wait(int(res.Msgs)); err != nil {
			return r, err
		}
	}
	return r, nil
}

// perfRestock keeps a SEND responder's receive queue stocked: it polls
// the responder's CQ and posts one receive for each receive completed.
type perfRestock struct {
	p        *nicd.Pair
	rwr      *nicd.WorkRequest
	quit     chan struct{}
	finished chan error
	mu       sync.Mutex
	received int
}

func startRestock(p *nicd.Pair, size int) (*perfRestock, error) {
	rs := &perfRestock{p: p, quit: make(chan struct{}), finished: make(chan error, 1),
		rwr: &nicd.WorkRequest{SG: []nicd.SGE{{Addr: p.BMR.Addr, Length: uint32(size), LKey: p.BMR.LKey}}}}
	if _, err := p.B.PostRecv(p.BQP.Handle, rs.rwr, 2*max(p.Depth, 64)); err != nil {
		return nil, err
	}
	go func() { rs.finished <- rs.loop() }()
	return rs, nil
}

func (rs *perfRestock) loop() error {
	for {
		select {
		case <-rs.quit:
			return nil
		default:
		}
		wcs, err := rs.p.B.PollCQ(rs.p.BCQ, 2*max(rs.p.Depth, 64), 1, 100*time.Millisecond)
		if err != nil {
			return err
		}
		for _, w := range wcs {
			if w.Status != nic.IBV_WC_SUCCESS {
				return errors.New("receive completion: " + w.Status.String())
			}
		}
		if len(wcs) > 0 {
			rs.mu.Lock()
			rs.received += len(wcs)
			rs.mu.Unlock()
			if _, err := rs.p.B.PostRecv(rs.p.BQP.Handle, rs.rwr, len(wcs)); err != nil {
				return err
			}
		}
	}
}

// wait waits until the responder has seen n receive completions (the
// sender's completions come from the ACKs, which the responder sends
// after placing the data, so they are there or on the way), then stops.
func (rs *perfRestock) wait(n int) error {
	deadline := time.Now().Add(perfPollTimeout)
	for {
		rs.mu.Lock()
		got := rs.received
		rs.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case err := <-rs.finished:
			rs.finished <- err
			if err == nil {
				err = errors.New("receiver stopped")
			}
			return fmt.Errorf("receiver: %d of %d messages: %w", got, n, err)
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("receiver: %d of %d receive completions within %v", got, n, perfPollTimeout)
		}
	}
	rs.stop()
	return <-rs.finished
}

func (rs *perfRestock) stop() {
	select {
	case <-rs.quit:
	default:
		close(rs.quit)
	}
}

// bwAggregate runs every pair's bandwidth loop at once and sums them.
func bwAggregate(conns []*perfConn, op nic.WROpcode, size, iters int, duration time.Duration, cqMod, postList int, noPeak bool) (bwRow, error) {
	runs := make([]bwRun, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { runs[i], errs[i] = runBandwidth(c.pair, op, size, iters, duration, cqMod, postList) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return bwRow{}, fmt.Errorf("QP %d: %w", i, err)
		}
	}
	row := bwRow{Size: size}
	var first, last time.Time
	var per [][]perfSample
	for i, r := range runs {
		row.Iters += r.msgs
		if i == 0 || r.first.Before(first) {
			first = r.first
		}
		if r.last.After(last) {
			last = r.last
		}
		per = append(per, r.samples)
	}
	var total uint64
	for _, r := range runs {
		total += r.bytes
	}
	if el := last.Sub(first); el > 0 {
		row.Average = float64(total) / el.Seconds()
		row.MsgRate = float64(row.Iters) / el.Seconds()
	}
	// perftest measures the peak in iteration mode only.
	if !noPeak && duration == 0 {
		depth := uint64(conns[0].pair.Depth)
		window := min(depth*uint64(size)*uint64(len(conns)), total/2)
		if window > 0 {
			row.Peak = peakRate(mergeSamples(per), window)
		}
	}
	// Per-iteration iterations, as perftest prints them with -q: each QP
	// ran iters; the table shows one QP's count in iteration mode.
	if duration == 0 {
		row.Iters = uint64(iters)
	}
	return row, nil
}

// perfBuffers returns a pair's source (the bytes that travel) and
// destination (where they land): for READ the responder's buffer is the
// source and the requester's the destination.
func perfBuffers(p *nicd.Pair, op nic.WROpcode) (src, dst []byte) {
	if op == nic.IBV_WR_RDMA_READ {
		return p.BBuf.Bytes, p.ABuf.Bytes
	}
	return p.ABuf.Bytes, p.BBuf.Bytes
}

// prepareBuffers fills each pair's source with its own pattern and
// zeroes its destination, before a size's run.
func prepareBuffers(conns []*perfConn, op nic.WROpcode, size int) {
	for i, c := range conns {
		src, dst := perfBuffers(c.pair, op)
		fillPattern(src, uint64(i+1)<<32|uint64(size))
		clear(dst)
	}
}

// verifyBuffers checks byte for byte that each pair's destination holds
// the first size bytes of its source and nothing beyond them.
func verifyBuffers(conns []*perfConn, op nic.WROpcode, size int) error {
	for i, c := range conns {
		src, dst := perfBuffers(c.pair, op)
		if err := compareDest(src, dst, size); err != nil {
			return fmt.Errorf("QP %d: %w", i, err)
		}
	}
	return nil
}

// verifyLatency checks a latency run's memory. read_lat's as the
// bandwidth tests'. A ping-pong's answers carry back what they answer, so
// the requester's buffer ends as the responder's, whatever landed there:
// the responder's is checked against the source as it was before the run,
// but for a WRITE's last byte, which carries each message's number (the
// run itself waits for each), and the requester's against the responder's.
func verifyLatency(p *nicd.Pair, op nic.WROpcode, size int, before []byte) error {
	if op == nic.IBV_WR_RDMA_READ {
		src, dst := perfBuffers(p, op)
		return compareDest(src, dst, size)
	}
	dst := p.BBuf.Bytes
	n := size
	if op == nic.IBV_WR_RDMA_WRITE {
		n = size - 1
	}
	if err := compareDest(before[:n], dst[:n], n); err != nil {
		return err
	}
	for k := size; k < len(dst); k++ {
		if dst[k] != 0 {
			return fmt.Errorf("destination byte %d, beyond the %d-byte message, was written (%#02x)", k, size, dst[k])
		}
	}
	if a := p.ABuf.Bytes; !bytes.Equal(a[:size], dst[:size]) {
		for k := range size {
			if a[k] != dst[k] {
				return fmt.Errorf("the answers left the requester's byte %d at %#02x, the responder's is %#02x", k, a[k], dst[k])
			}
		}
	}
	return nil
}
