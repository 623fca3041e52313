package swd

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/rt"
)

// Egress back-pressure from a socket transport.
//
// The engine serializes at the emulated link rate, which may be faster
// than the machine moves frames between processes (a 100 Gb/s port on a
// laptop), and the real-time clock replays late timers in bursts. A frame
// the transport's writer cannot queue is lost, and a loss on a lossless
// priority is exactly what the lab must never show. So when a port's
// writer holds more than holdHigh frames the daemon holds the engine's
// transmitter for that port (switchcore.HoldTx: control frames still go)
// until the writer has drained below holdLow. The frames wait in the
// port's egress queues, where the engine's buffer accounting sends PFC
// and marks ECN, as behind a slower link. The loop itself never blocks: it
// keeps reading every port, so two switches that fill each other's
// sockets both ways still drain each other (a blocked loop could
// deadlock them).
//
// Toward another switch the port is also held while the link's backlog
// (the bytes handed to the port that the peer has not read yet: the
// writer's queue and the ring's unread bytes, rt.Port.TxBacklog) is
// rt.MaxBacklog of the wire's rate (2 ms of the link), and released at
// half, as emunic's transmit gate does (nicd/gate.go). The writer's queue
// drains into the ring at the machine's speed, so holdHigh alone lets a
// peer switch that runs late find the whole ring waiting when it wakes:
// 4 MiB, 17 ms of a 2 Gb/s link, all sent before the peer could see any
// and send XOFF, which overruns its lossless PGs' headroom by megabytes.
// Held, the frames wait in this switch's egress queues, where its buffer
// accounting sends PFC upstream. Toward an emunic the ring stays the
// bound: the NIC has no headroom to overrun, and its reads are the
// receiver's throughput.
const (
	holdHigh = txQueue * 3 / 4
	holdLow  = txQueue / 4
	// holdPollWall is the wall time between checks while held; the loop
	// also re-checks after every event it runs anyway (afterEvent).
	holdPollWall = 20 * clock.Microsecond
)

// txHold is one port's back-pressure state. Loop goroutine only.
type txHold struct {
	sent  uint64 // frames handed to the current transport
	base  uint64 // the transport's finished count when it was attached
	held  bool
	holds uint64 // times the port was held (counter transport_tx_hold)
	// backlogHolds counts the holds for the link's backlog (a peer switch
	// reading late), of holds; backlogMax is the largest backlog seen.
	backlogHolds uint64
	backlogMax   int
	timer        clock.Timer
}

// inflight is the number of frames handed to the transport that its
// writer has not finished with (written, dropped or failed).
func (p *swPort) inflight() uint64 {
	c := &p.tr.Counters
	done := c.TxFrames.Load() + c.TxQueueDrops.Load() + c.TxErrors.Load() - p.hold.base
	if done >= p.hold.sent {
		return 0
	}
	return p.hold.sent - done
}

// sendTransport hands f to the socket transport and holds the engine's
// transmitter when the writer falls behind.
func (p *swPort) sendTransport(f *frame.Frame) {
	p.tr.Transmit(f)
	h := &p.hold
	h.sent++
	if h.held {
		return
	}
	over := false
	if lim := p.backlogLimit(); lim > 0 {
		b := p.tr.TxBacklog()
		h.backlogMax = max(h.backlogMax, b)
		over = b >= lim
	}
	if over || p.inflight() >= holdHigh {
		h.held = true
		h.holds++
		if over {
			h.backlogHolds++
		}
		p.d.sw.HoldTx(p.idx, true)
		p.armHoldPoll()
	}
}

// backlogHigh: the ring backlog is still above half the limit, where a
// held port stays held.
func (p *swPort) backlogHigh() bool {
	lim := p.backlogLimit()
	return lim > 0 && p.tr.TxBacklog() > lim/2
}

// backlogLimit is the ring backlog at which the port is held (see above),
// 0 for none: a peer that is not a switch.
func (p *swPort) backlogLimit() int {
	if !p.swPeer {
		return 0
	}
	return rt.MaxBacklog(p.rate)
}

func (p *swPort) armHoldPoll() {
	d := p.d
	if p.hold.timer == nil {
		p.hold.timer = d.clk.NewTimer(p.checkHold)
	}
	poll := max(holdPollWall/clock.Time(max(d.clk.Dilation(), 1)), clock.Nanosecond)
	p.hold.timer.Reset(d.clk.Now() + poll)
}

// checkHold releases a held port once its writer has drained.
func (p *swPort) checkHold() {
	h := &p.hold
	if !h.held {
		return
	}
	if p.tr != nil && (p.inflight() > holdLow || p.backlogHigh()) {
		p.armHoldPoll()
		return
	}
	p.releaseHold()
}

func (p *swPort) releaseHold() {
	h := &p.hold
	if h.timer != nil {
		h.timer.Stop()
	}
	if h.held {
		h.held = false
		p.d.sw.HoldTx(p.idx, false)
	}
}

// resetHold starts the accounting afresh for a new transport (or none).
func (p *swPort) resetHold() {
	p.releaseHold()
	p.hold.sent = 0
	p.hold.base = 0
	if p.tr != nil {
		c := &p.tr.Counters
		p.hold.base = c.TxFrames.Load() + c.TxQueueDrops.Load() + c.TxErrors.Load()
	}
}

// afterEvent runs after every event of the loop: the TAP trains are
// written, and held ports are re-checked (the clock's alarm fires tens of
// microseconds late, long enough for a writer to drain and idle a link).
func (d *Daemon) afterEvent() {
	d.flushTAPs()
	for _, p := range d.ports {
		if p.hold.held {
			p.checkHold()
		}
	}
}
