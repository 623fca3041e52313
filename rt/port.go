package rt

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/emufabric/emufabric/frame"
)

// PortConfig configures a Port.
type PortConfig struct {
	// Index is stored in every received frame's InPort.
	Index int
	// Name names the port in log lines (e.g. "sw1:p1").
	Name string
	// Log receives routine start/stop and transport errors; nil discards.
	Log *Logger
	// Deliver is called on the loop's goroutine with the frames of one
	// received batch; it takes ownership of every frame (and must Put the
	// ones it drops). The slice itself is reused after Deliver returns.
	Deliver func(frames []*frame.Frame)
	// Pacer, if set, releases transmitted frames at its link rate; nil
	// writes them as soon as the writer gets them (the engine paces, as a
	// switch egress port does with its serialization timer).
	Pacer *Pacer
	// TxQueue is the number of frames that may wait for the writer; more
	// are dropped (counted as TxQueueDrops). Default 4 batches. With a
	// Pacer it is also the delay line: it must hold the frames in flight,
	// rate x Delay / frame size, or a long link drops.
	TxQueue int
	// Backpressure makes Transmit wait for room in a full queue instead of
	// dropping. The wait stalls the whole loop (its timers too), which in
	// turn stops its readers: right for a plain forwarding path, where the
	// kernel's own queues and TCP then absorb the back-pressure; wrong for
	// an engine port, whose engine paces at the link rate and must keep
	// its timers running.
	Backpressure bool
}

// PortCounters are a port's transport counters (not the engine's).
type PortCounters struct {
	RxFrames, RxBytes atomic.Uint64
	TxFrames, TxBytes atomic.Uint64
	TxDirect          atomic.Uint64 // of TxFrames: written from the loop (Shm.TryWrite), not by the writer
	RxTooLarge        atomic.Uint64 // frames dropped: larger than a frame buffer
	RxLinkErrors      atomic.Uint64 // times the link failed reading (not closed, not the peer's end): e.g. a corrupt shared-memory ring; the port stops
	TxQueueDrops      atomic.Uint64 // frames dropped: the writer's queue was full
	TxErrors          atomic.Uint64 // frames the transport refused
}

// Port connects a Link to a Loop: RoutineRead reads batches into frames of
// the loop's pool and hands them to the loop; Transmit (loop goroutine)
// queues frames for RoutineWrite, which writes them in batches.
//
// Frames never cross goroutines in both directions at once: the loop gives
// the reader batches of empty frames from its pool and gets them back
// filled, so Get and Put only happen on the loop goroutine. On transmit the
// loop copies the frame into one of the writer's buffers and Puts it at
// once.
type Port struct {
	loop *Loop
	link Link
	cfg  PortConfig

	rxFree chan *rxBatch // batches of empty frames for the reader
	txFree chan *txBuf
	txQ    chan *txBuf
	// queued is the bytes in the unpaced writer's queue, handed over by
	// Transmit and not yet written (TxBacklog).
	queued atomic.Int64
	quit   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	rxDone chan struct{}
	rxErr  error // why RoutineRead stopped; read after rxDone is closed

	// Counters are updated by the port's goroutines; read them any time.
	Counters PortCounters

	deliver []*frame.Frame // scratch handed to Deliver, loop goroutine only

	// direct is the link's non-blocking single-frame write (a Shm), used
	// by Transmit while the writer has nothing queued; nil with a Pacer.
	direct directWriter
}

// directWriter is a link that can take one frame without waiting and
// without a system call (Shm.TryWrite): the loop then writes it itself,
// saving the copy into a writer buffer and the hand-off to the writer.
type directWriter interface {
	TryWrite(b []byte) bool
}

type rxBatch struct {
	port   *Port
	frames []*frame.Frame
	bufs   [][]byte
	sizes  []int
	n      int
}

type txBuf struct {
	b [frame.MaxFrame]byte
	n int
}

// Attach starts a port on link. Call it before Run or on the loop's
// goroutine (it takes frames from the loop's pool). The port is closed by
// Close or by the loop's Close.
func (l *Loop) Attach(link Link, cfg PortConfig) (*Port, error) {
	if cfg.Deliver == nil {
		return nil, errors.New("rt: PortConfig.Deliver is nil")
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	bs := max(link.BatchSize(), 1)
	if cfg.TxQueue <= 0 {
		cfg.TxQueue = 4 * bs
	}
	p := &Port{
		loop:    l,
		link:    link,
		cfg:     cfg,
		rxFree:  make(chan *rxBatch, 2),
		txFree:  make(chan *txBuf, cfg.TxQueue),
		txQ:     make(chan *txBuf, cfg.TxQueue),
		quit:    make(chan struct{}),
		rxDone:  make(chan struct{}),
		deliver: make([]*frame.Frame, 0, bs),
	}
	if dw, ok := link.(directWriter); ok && cfg.Pacer == nil {
		p.direct = dw
	}
	l.ports = append(l.ports, p)
	l.mu.Unlock()

	// Two batches: the reader fills one while the loop delivers the other.
	for range 2 {
		b := &rxBatch{port: p, frames: make([]*frame.Frame, bs), bufs: make([][]byte, bs), sizes: make([]int, bs)}
		for i := range b.frames {
			b.frames[i] = l.pool.Get(frame.MaxFrame)
		}
		p.rxFree <- b
	}
	for range cfg.TxQueue {
		p.txFree <- new(txBuf)
	}
	p.wg.Add(2)
	go p.RoutineRead()
	go p.RoutineWrite()
	return p, nil
}

// Link is the port's transport.
func (p *Port) Link() Link { return p.link }

// TxBacklog is the bytes handed to the port that the peer has not read
// yet: those waiting for the port's writer, and those written to a link
// that can tell what its peer has not read (Backlogger). The writer's
// queue counts because on a busy machine the writer runs late too: the
// loop then hands it a burst that goes into the link all at once, after
// any check of the link alone said there was room. A paced port's delay
// line is the emulated wire, not a backlog, and does not count. Any
// goroutine.
func (p *Port) TxBacklog() int {
	n := int(p.queued.Load())
	if b, ok := p.link.(Backlogger); ok {
		n += b.TxBacklog()
	}
	return n
}

// RoutineRead reads batches from the link until it is closed or fails.
func (p *Port) RoutineRead() {
	defer p.wg.Done()
	defer close(p.rxDone)
	p.cfg.Log.verbosef("port %s: RoutineRead started", p.cfg.Name)
	defer func() {
		if p.rxErr != nil && !errors.Is(p.rxErr, ErrClosed) {
			p.cfg.Log.errorf("port %s: read: %v", p.cfg.Name, p.rxErr)
		}
		p.cfg.Log.verbosef("port %s: RoutineRead stopped", p.cfg.Name)
	}()
	if sr, ok := p.link.(streamReader); ok {
		p.readStream(sr)
		return
	}
	for {
		var b *rxBatch
		select {
		case b = <-p.rxFree:
		case <-p.quit:
			p.rxErr = ErrClosed
			return
		}
		for i, f := range b.frames {
			b.bufs[i] = f.Data[:cap(f.Data)]
		}
		n, err := p.link.Read(b.bufs, b.sizes, 0)
		if errors.Is(err, ErrFrameTooLarge) {
			p.Counters.RxTooLarge.Add(1)
			err = nil
		}
		// Frames read before a failure are delivered, then the port
		// stops (a corrupt ring after good records).
		if n > 0 {
			b.n = n
			select {
			case p.loop.rx <- b:
			case <-p.quit:
				p.rxErr = ErrClosed
				return
			}
		} else if err == nil {
			p.rxFree <- b
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, ErrClosed) {
				err = ErrClosed
			} else {
				p.Counters.RxLinkErrors.Add(1)
			}
			p.rxErr = err
			return
		}
	}
}

// receive runs on the loop goroutine: it stamps the frames, swaps fresh
// ones into the batch, returns the batch to the reader and delivers.
func (p *Port) receive(b *rxBatch) {
	now := p.loop.clk.Now()
	pool := p.loop.pool
	out := p.deliver[:0]
	var bytes uint64
	for i := 0; i < b.n; i++ {
		f := b.frames[i]
		f.SetLen(b.sizes[i])
		f.InPort = p.cfg.Index
		f.HeadAt, f.TailAt = now, now
		bytes += uint64(b.sizes[i])
		out = append(out, f)
		b.frames[i] = pool.Get(frame.MaxFrame)
	}
	p.Counters.RxFrames.Add(uint64(b.n))
	p.Counters.RxBytes.Add(bytes)
	b.n = 0
	p.rxFree <- b // never blocks: at most two batches exist
	p.cfg.Deliver(out)
	clear(out)
}

// Transmit queues f for the writer and returns it to its pool: it
// implements the engines' PortTx. Loop goroutine only. On a link that
// takes a frame without waiting (a Shm) and while the writer has nothing
// queued, it writes f itself instead. A full queue drops
// the frame (TxQueueDrops): the engine transmits at the link rate, so the
// queue only fills when the transport cannot keep up.
func (p *Port) Transmit(f *frame.Frame) {
	// Every writer buffer free means nothing queued or being written: a
	// frame written now cannot overtake one.
	if p.direct != nil && len(p.txFree) == cap(p.txFree) && p.direct.TryWrite(f.Data) {
		p.Counters.TxFrames.Add(1)
		p.Counters.TxDirect.Add(1)
		p.Counters.TxBytes.Add(uint64(len(f.Data)))
		f.Put()
		return
	}
	var tb *txBuf
	select {
	case tb = <-p.txFree:
	default:
		if p.cfg.Backpressure {
			select {
			case tb = <-p.txFree:
			case <-p.quit:
			}
		}
	}
	if tb == nil {
		f.Put()
		p.Counters.TxQueueDrops.Add(1)
		return
	}
	tb.n = copy(tb.b[:], f.Data)
	f.Put()
	if p.cfg.Pacer == nil {
		p.queued.Add(int64(tb.n))
	}
	p.txQ <- tb // never blocks: txQ holds every buffer
}

// RoutineWrite writes queued frames in batches, paced if configured.
func (p *Port) RoutineWrite() {
	defer p.wg.Done()
	p.cfg.Log.verbosef("port %s: RoutineWrite started", p.cfg.Name)
	defer p.cfg.Log.verbosef("port %s: RoutineWrite stopped", p.cfg.Name)
	if p.cfg.Pacer != nil {
		p.writePaced()
		return
	}
	bs := max(p.link.BatchSize(), 1)
	batch := make([]*txBuf, 0, bs)
	bufs := make([][]byte, 0, bs)
	for {
		batch, bufs = batch[:0], bufs[:0]
		select {
		case tb := <-p.txQ:
			batch = append(batch, tb)
		case <-p.quit:
			return
		}
	gather:
		for len(batch) < bs {
			select {
			case tb := <-p.txQ:
				batch = append(batch, tb)
			default:
				break gather
			}
		}
		for _, tb := range batch {
			bufs = append(bufs, tb.b[:tb.n])
		}
		ok := p.write(bufs)
		for _, tb := range batch {
			p.queued.Add(-int64(tb.n))
			p.txFree <- tb
		}
		if !ok {
			return
		}
	}
}

// writePaced is RoutineWrite with a Pacer. Frames are booked on the
// emulated link as soon as the writer sees them and wait in a delay line
// (pend) until they are due, while newer frames keep arriving and being
// booked behind them: a propagation delay holds frames back without
// idling the link. The delay line is bounded by TxQueue, which must hold
// rate x delay worth of frames (see PortConfig).
func (p *Port) writePaced() {
	pc := p.cfg.Pacer
	bs := max(p.link.BatchSize(), 1)
	pend := make([]*txBuf, 0, p.cfg.TxQueue)
	bufs := make([][]byte, 0, p.cfg.TxQueue)
	// An Alarm, not a time.Timer: a frame due in microseconds must not
	// wait for the runtime's millisecond sleep (see Alarm).
	timer := NewAlarm()
	defer timer.Close()
	for {
		if len(pend) == 0 {
			select {
			case tb := <-p.txQ:
				pend = append(pend, tb)
			case <-p.quit:
				return
			}
		}
	gather:
		for {
			select {
			case tb := <-p.txQ:
				pend = append(pend, tb)
			default:
				break gather
			}
		}
		bufs = bufs[:0]
		for _, tb := range pend {
			bufs = append(bufs, tb.b[:tb.n])
		}
		// Admit books what is new and forgets the due prefix it returns.
		for k := pc.Admit(bufs); k > 0; {
			m := min(k, bs)
			if !p.write(bufs[:m]) {
				return
			}
			for _, tb := range pend[:m] {
				p.txFree <- tb
			}
			pend = pend[:copy(pend, pend[m:])]
			bufs = bufs[:copy(bufs, bufs[m:])]
			k -= m
		}
		if len(pend) == 0 {
			continue
		}
		d := pc.WaitDuration()
		if d <= 0 {
			continue
		}
		timer.Reset(d)
		select {
		case <-timer.C:
		case tb := <-p.txQ:
			timer.Stop()
			pend = append(pend, tb)
		case <-p.quit:
			timer.Stop()
			return
		}
	}
}

// merger is a link that merges consecutive segments of a flow into one
// write (a TAP: Queue and Flush, gro_linux.go), as a NIC's receive offload
// hands the kernel one large frame instead of many: one write(2) and one
// pass of the receiving stack per train instead of per segment.
type merger interface {
	Queue(b []byte, offset int) error
	Flush() error
}

// write sends bufs and counts; it reports false when the port is closing.
func (p *Port) write(bufs [][]byte) bool {
	if m, ok := p.link.(merger); ok {
		return p.writeMerged(m, bufs)
	}
	n, err := p.link.Write(bufs, 0)
	var bytes uint64
	for _, b := range bufs[:n] {
		bytes += uint64(len(b))
	}
	p.Counters.TxFrames.Add(uint64(n))
	p.Counters.TxBytes.Add(bytes)
	if err != nil {
		p.Counters.TxErrors.Add(uint64(len(bufs) - n))
		if errors.Is(err, ErrClosed) {
			return false
		}
		p.cfg.Log.errorf("port %s: write: %v", p.cfg.Name, err)
	}
	return true
}

// writeMerged hands a batch to a merging link and flushes it: the frames
// that arrived together leave together, merged where they continue one
// another. A failed write may lose a whole train; the link counts the
// frames exactly (TAPCounters.TxErrors), the port counts the failures.
func (p *Port) writeMerged(m merger, bufs [][]byte) bool {
	var bytes uint64
	for _, b := range bufs {
		bytes += uint64(len(b))
		if err := m.Queue(b, 0); err != nil && !p.writeFailed(err) {
			return false
		}
	}
	if err := m.Flush(); err != nil && !p.writeFailed(err) {
		return false
	}
	p.Counters.TxFrames.Add(uint64(len(bufs)))
	p.Counters.TxBytes.Add(bytes)
	return true
}

// writeFailed counts and logs a failed write; false when the link closed.
func (p *Port) writeFailed(err error) bool {
	p.Counters.TxErrors.Add(1)
	if errors.Is(err, ErrClosed) {
		return false
	}
	p.cfg.Log.errorf("port %s: write: %v", p.cfg.Name, err)
	return true
}

// Done is closed when the reader stopped (link closed or failed); Err then
// says why.
func (p *Port) Done() <-chan struct{} { return p.rxDone }

// Err is why the reader stopped, nil while it runs.
func (p *Port) Err() error {
	select {
	case <-p.rxDone:
		return p.rxErr
	default:
		return nil
	}
}

// Close closes the link and waits for the port's goroutines.
func (p *Port) Close() error {
	var err error
	p.once.Do(func() {
		close(p.quit)
		err = p.link.Close()
		p.wg.Wait()
	})
	return err
}
