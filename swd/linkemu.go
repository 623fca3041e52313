package swd

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/rt"
)

// Link emulation in real time.
//
// The switch engine serializes every egress frame at its port speed with
// its own re-armable timer; the loop's rt.Clock replays late timer wake-ups
// at their due times (up to rt.DefaultMaxLag, 5 ms), so the engine's frame
// start times are exact link time even on a loaded machine. What the
// engine does not model is the wire behind the port: propagation delay,
// the receiver's cut-through point, loss and corruption, and a wire slower
// than the port (`link ... rate`). A delayLine does that, per direction,
// on the loop goroutine: it books each frame on an rt.Pacer (next-free-time
// at the wire's rate, release at start + delay + ser(min(len, HeadBytes))
// of the receiver) in the engine's own time, and hands the frame on when
// it is due.
//
// Why the Pacer is used with exact arithmetic (Burst < 0) and not inside
// the rt.Port writer: its slack exists to catch up on the writer
// goroutine's late wake-ups, which the engine clock already replays here
// (5 ms of replay holds the rate; 200 us of pacer slack under-delivers on a
// loaded 2-core machine, 2 ms holds it). Booking in engine time keeps one
// catch-up mechanism instead of two that would fight, and lets `link rate`
// replace the Pacer at run time (its configuration is fixed).
//
// releaseSlack: frames due within it are released at once. A runtime
// timer cannot wake up finer than tens of microseconds, so holding a frame
// for less only adds a wake-up's latency; the price is that delays below
// releaseSlack are not visible in real time (they are in the simulator).
const releaseSlack = 50 * clock.Microsecond

// maxWireQueue bounds the queue in front of a wire slower than its port
// (after `link rate`): a frame that could not start within maxWireQueue
// is dropped (link_queue_drop), as by a drop-tail queue of that many
// seconds of the wire. Without a bound a 1 Gb/s wire behind a 100 Gb/s
// port would buffer ever more and TCP would see seconds of delay.
const maxWireQueue = 5 * clock.Millisecond

// delayLineLimit bounds the frames one direction of a wire may hold: a
// wire slower than its port (after `link rate`) or a long delay fills it;
// beyond it frames are dropped and counted (link_queue_drop). 16384 frames
// hold 1 ms of a 100 Gb/s wire at 1500 bytes.
const delayLineLimit = 16384

// unpaced is the rate of a wire that only delays (the ingress from an
// emunic, which paced its frames itself): so fast that a frame's
// serialization rounds to nothing and nothing ever queues on it.
const unpaced = 1 << 62

// delayLine is one direction of an emulated wire. Loop goroutine only.
type delayLine struct {
	clk   *rt.Clock
	pacer *rt.Pacer
	cfg   rt.PacerConfig
	timer clock.Timer
	sink  func(f *frame.Frame, release, tail clock.Time)
	q     []pending
	head  int
	drops uint64
	// busy is the tail of the last frame booked: the wire is taken until
	// then.
	busy clock.Time
	// lossless: the wire never drops for lack of room (an IB link, whose
	// sender is bounded by the receiver's credits: the frames in flight
	// never exceed the receive buffer plus the small flow-control and
	// VL15 packets, however slow the wire).
	lossless bool
}

type pending struct {
	f             *frame.Frame
	release, tail clock.Time
}

func newDelayLine(clk *rt.Clock, cfg rt.PacerConfig, sink func(f *frame.Frame, release, tail clock.Time)) *delayLine {
	cfg.Burst = -1
	d := &delayLine{clk: clk, cfg: cfg, sink: sink}
	d.pacer = rt.NewPacer(clk, cfg)
	d.timer = clk.NewTimer(d.fire)
	return d
}

// setRate and setDelay change the wire; frames already booked keep their
// times.
func (d *delayLine) setRate(bps uint64) {
	d.cfg.Rate = bps
	d.pacer = rt.NewPacer(d.clk, d.cfg)
}

func (d *delayLine) setDelay(t clock.Time) {
	d.cfg.Delay = t
	d.pacer = rt.NewPacer(d.clk, d.cfg)
}

// push books f, offered at now, whose tail arrives at tailIn (0: whole).
func (d *delayLine) push(now clock.Time, f *frame.Frame, tailIn clock.Time) {
	if d.busy-now > maxWireQueue && !d.lossless {
		d.drops++
		f.Put()
		return
	}
	_, tail, rel := d.pacer.Book(now, f.Len(), tailIn)
	d.busy = tail
	tail += d.cfg.Delay
	if d.head == len(d.q) && rel <= now+releaseSlack {
		d.sink(f, rel, tail)
		return
	}
	if len(d.q)-d.head >= delayLineLimit && !d.lossless {
		d.drops++
		f.Put()
		return
	}
	if d.head > 0 && d.head == len(d.q) {
		d.q, d.head = d.q[:0], 0
	}
	d.q = append(d.q, pending{f, rel, tail})
	if len(d.q)-d.head == 1 {
		d.timer.Reset(rel - releaseSlack)
	}
}

// fire releases what is due; it runs as the timer's callback, where Now
// is the due time (replayed if the wake-up was late).
func (d *delayLine) fire() {
	now := d.clk.Now()
	for d.head < len(d.q) && d.q[d.head].release <= now+releaseSlack {
		p := d.q[d.head]
		d.q[d.head] = pending{}
		d.head++
		d.sink(p.f, p.release, p.tail)
	}
	if d.head == len(d.q) {
		d.q, d.head = d.q[:0], 0
		return
	}
	if d.head > len(d.q)/2 {
		n := copy(d.q, d.q[d.head:])
		clear(d.q[n:])
		d.q, d.head = d.q[:n], 0
	}
	d.timer.Reset(d.q[d.head].release - releaseSlack)
}

// flush drops everything held (link down).
func (d *delayLine) flush() int {
	n := 0
	for d.head < len(d.q) {
		d.q[d.head].f.Put()
		d.q[d.head] = pending{}
		d.head++
		n++
	}
	d.q, d.head = d.q[:0], 0
	d.timer.Stop()
	return n
}

// held is the number of frames on the wire.
func (d *delayLine) held() int { return len(d.q) - d.head }
