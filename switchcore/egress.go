package switchcore

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// The transmitter of a port: one frame on the wire at a time, the next one
// chosen when the previous tail has left (contract timing section).
//
// Order: control frames (PFC, IB flow control, VL15) first, never paused;
// then strict-priority queues, highest index first; then DWRR among the
// remaining queues with a deficit in bytes (quantum = weight * (MTU + 128),
// so one visit always covers at least one largest frame). A queue is
// eligible when it holds a frame, is not paused by a received PFC, and its
// head frame's tail has arrived — except the one frame allowed to cut
// through (p.ctFrame), which may start as soon as its headers are in.

func (p *port) quantumUnit() int { return p.cfg.MTU + 128 }

// tryTx starts the next frame on p if the wire is free, or arms p's timer
// for the earliest time something could start.
func (s *Switch) tryTx(p *port) {
	if !p.up || p.tx == nil || p.inTx {
		return
	}
	p.inTx = true
	defer func() { p.inTx = false }()
	for {
		now := s.clk.Now()
		if now < p.busyUntil {
			p.txTimer.Reset(p.busyUntil)
			return
		}
		if f := p.pfcq.pop(); f != nil {
			s.pfcSent(p, f)
			s.transmit(p, f, now, false)
			continue
		}
		if f := p.ctrl.pop(); f != nil {
			s.transmit(p, f, now, false)
			continue
		}
		if s.cfg.Fabric == FabricIB {
			// ibTx sends flow-control packets first, held or not.
			if !s.ibTx(p, now) {
				return
			}
			continue
		}
		if p.txHeld {
			return // HoldTx(false) calls tryTx again
		}
		q, wake := s.selectQueue(p, now)
		if q < 0 {
			if wake != clock.Never {
				p.txTimer.Reset(wake)
			}
			return
		}
		e := &p.eq[q]
		f := e.pop()
		ct := f == p.ctFrame
		s.dequeued(p, q, f)
		if e.sched.Type == SchedDWRR {
			e.deficit -= f.Len()
		}
		if s.cfg.ECNMarkAt == MarkAtDequeue && e.wred != nil {
			if s.applyWRED(p, q, f, e.bytes) {
				s.dropAfterAdmit(p, f, DropWRED)
				continue
			}
		}
		if w := &p.wd[q]; w.stormed {
			p.c.Prio[q].PFCWDTxOK++
		}
		s.release(f)
		s.transmit(p, f, now, ct)
	}
}

// transmit puts f on p's wire starting now. A cut-through frame cannot
// finish before its own tail has arrived. The wire takes the next frame
// the per-frame overhead (wire.Overhead: preamble, FCS and inter-frame gap
// on Ethernet) after the tail.
func (s *Switch) transmit(p *port, f *frame.Frame, now clock.Time, ct bool) {
	n := f.Len()
	ovh := wire.Overhead(s.cfg.Fabric == FabricIB)
	tail := now + clock.SerializationTime(n, p.speed)
	p.busyUntil = now + clock.SerializationTime(n+ovh, p.speed)
	if ct && f.TailAt > tail {
		tail = f.TailAt
		p.busyUntil = tail + clock.SerializationTime(ovh, p.speed)
	}
	f.TailAt = tail
	p.c.TxPacketsPhy++
	p.c.TxBytesPhy += uint64(n)
	if s.cfg.Fabric == FabricIB {
		countIBPacket(&p.c.XmitPkts, &p.c.XmitData, f.Len())
	}
	if f.InPort >= 0 {
		c := &p.c.Prio[f.Priority&7]
		c.TxPackets++
		c.TxBytes += uint64(n)
	}
	p.txTimer.Reset(p.busyUntil)
	p.tx.Transmit(f)
}

// eligible reports whether queue q's head may start at now; if not, it
// returns the earliest time it could (Never if only an event can unblock
// it).
func (p *port) eligible(q int, now clock.Time) (bool, clock.Time) {
	e := &p.eq[q]
	f := e.peek()
	if f == nil {
		return false, clock.Never
	}
	if p.queuePaused(q, now) {
		return false, p.pausedUntil[q]
	}
	if f.TailAt > now && f != p.ctFrame {
		return false, f.TailAt
	}
	return true, 0
}

// selectQueue picks the queue to serve next, or returns -1 and the earliest
// wake-up time.
func (s *Switch) selectQueue(p *port, now clock.Time) (int, clock.Time) {
	wake := clock.Never
	anyDWRR := false
	for q := NumPriorities - 1; q >= 0; q-- {
		ok, w := p.eligible(q, now)
		if !ok {
			wake = min(wake, w)
			continue
		}
		if p.eq[q].sched.Type == SchedStrict {
			return q, 0
		}
		anyDWRR = true
	}
	if !anyDWRR {
		return -1, wake
	}
	// Deficit round robin over eligible DWRR queues. Each full pass grants
	// every eligible queue one quantum >= one largest frame, so two passes
	// always find a queue.
	for range 3 * NumPriorities {
		q := p.rr
		e := &p.eq[q]
		if e.sched.Type == SchedDWRR {
			if ok, _ := p.eligible(q, now); ok {
				if !p.granted[q] {
					e.deficit += e.sched.Weight * p.quantumUnit()
					p.granted[q] = true
				}
				if e.deficit >= e.peek().Len() {
					return q, 0
				}
			}
		}
		p.granted[q] = false
		p.rr = (p.rr + 1) % NumPriorities
	}
	return -1, wake
}
