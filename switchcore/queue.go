package switchcore

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// fifo is a ring of frames that grows by doubling and never shrinks, so
// the steady state allocates nothing.
type fifo struct {
	buf        []*frame.Frame
	head, size int
}

func (q *fifo) len() int { return q.size }

func (q *fifo) push(f *frame.Frame) {
	if q.size == len(q.buf) {
		n := max(16, 2*len(q.buf))
		nb := make([]*frame.Frame, n)
		for i := range q.size {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = f
	q.size++
}

func (q *fifo) peek() *frame.Frame {
	if q.size == 0 {
		return nil
	}
	return q.buf[q.head]
}

func (q *fifo) pop() *frame.Frame {
	if q.size == 0 {
		return nil
	}
	f := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.size--
	return f
}

// egressQueue is one of a port's eight egress queues (or IB VLs).
type egressQueue struct {
	fifo
	bytes int
	acct  account // BUFFER_QUEUE profile; acct.prof == nil: unlimited
	wred  *WREDProfile
	sched Scheduler
	// deficit is the DWRR deficit in bytes.
	deficit int
	// nonEmptySince is when the queue last became non-empty (watchdog).
	nonEmptySince clock.Time
}

func (s *Switch) initQueue(p *port, q int) {
	e := &p.eq[q]
	if n := p.cfg.BufferQueue[q]; n != "" {
		e.acct.prof = s.cfg.BufferProfiles[n]
		e.acct.pool = s.pools[e.acct.prof.Pool]
	}
	if n := p.cfg.WRED[q]; n != "" {
		e.wred = s.cfg.WREDProfiles[n]
	}
	e.sched = Scheduler{Type: SchedDWRR, Weight: 1}
	if n := p.cfg.Scheduler[q]; n != "" {
		e.sched = *s.cfg.Schedulers[n]
	}
}

// enqueue appends an admitted frame to egress queue q of p.
func (s *Switch) enqueue(p *port, q int, f *frame.Frame) {
	e := &p.eq[q]
	if e.size == 0 {
		e.nonEmptySince = s.clk.Now()
	}
	e.push(f)
	e.bytes += f.Len()
	if e.acct.prof != nil {
		e.acct.add(f.Len())
	}
	if c := &p.c.Prio[q]; e.bytes > c.QueueWatermark {
		c.QueueWatermark = e.bytes
	}
}

// dequeued does the queue bookkeeping for f just popped from queue q.
// Ingress buffer is released by the caller (release) where appropriate.
func (s *Switch) dequeued(p *port, q int, f *frame.Frame) {
	e := &p.eq[q]
	e.bytes -= f.Len()
	if e.acct.prof != nil {
		e.acct.sub(f.Len())
	}
	if e.size == 0 {
		e.deficit = 0
	}
}
