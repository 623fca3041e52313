package rt

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// Link emulation in real time.
//
// The engines (a switch's, a NIC's) serialize every egress frame at their
// port speed with their own re-armable timers; the loop's Clock replays
// late timer wake-ups at their due times (up to DefaultMaxLag, 5 ms), so
// the engines' frame start times are exact link time even on a loaded
// machine. What an engine does not model is the wire behind its port:
// propagation delay, the receiver's cut-through point, loss and
// corruption, and a wire slower than the port (`link ... rate`). A
// DelayLine does that, per direction, on the loop goroutine: it books each
// frame on a Pacer (next-free-time at the wire's rate, release at start +
// delay + ser(min(len, HeadBytes)) of the receiver) in the engine's own
// time, and hands the frame on when it is due. Loss and corruption are the
// caller's, before Push (Corrupt), since what a lost
// frame leaves behind (a capture note, a counter) is the daemon's.
//
// Why the Pacer is used with exact arithmetic (Burst < 0) and not inside
// the Port writer: its slack exists to catch up on the writer
// goroutine's late wake-ups, which the engine clock already replays here
// (5 ms of replay holds the rate; 200 us of pacer slack under-delivers on a
// loaded 2-core machine, 2 ms holds it). Booking in engine time keeps one
// catch-up mechanism instead of two that would fight.
//
// A change at run time (`link set ... rate|delay`, SetRate, SetDelay)
// applies to the frames that start on the wire after it: frames held that
// have not started are booked again, in order; the frame on the wire sends
// the rest of its bits at the new rate, as the engine feeding the wire
// does (SetRate); a frame handed on already (ReleaseSlack) keeps its
// times, and so does the frame on the wire after a new delay (its bits
// are on their way). The simulator has no such change (a lab file's
// schedule takes links down and up only). And a wire never
// reorders: a frame arrives (head and tail) no earlier than the frame
// before it, so after a shorter delay the frames behind one still in
// flight bunch up behind it instead of overtaking it, as a real link's
// FIFO would deliver them.
//
// ReleaseSlack (wall time): frames due within it are released at once. A
// runtime timer cannot wake up finer than tens of microseconds, so holding
// a frame for less only adds a wake-up's latency; the price is that
// delays below ReleaseSlack are not visible in real time (they are in the
// simulator), and a frame may go up to ReleaseSlack before its time. In a
// dilated clock the slack is that many times less of the lab's time: it
// is the wall clock's limit, not the lab's.
const ReleaseSlack = 50 * clock.Microsecond

// MaxWireQueue bounds the queue in front of a wire slower than its port
// (after `link rate`): a frame that could not start within MaxWireQueue
// is dropped (link_queue_drop), as by a drop-tail queue of that many
// seconds of the wire. Without a bound a 1 Gb/s wire behind a 100 Gb/s
// port would buffer ever more and TCP would see seconds of delay.
const MaxWireQueue = 5 * clock.Millisecond

// DelayLineLimit bounds the frames one direction of a wire may hold: a
// wire slower than its port (after `link rate`) or a long delay fills it;
// beyond it frames are dropped and counted (link_queue_drop). 16384 frames
// hold 1 ms of a 100 Gb/s wire at 1500 bytes.
const DelayLineLimit = 16384

// Unpaced is the rate of a wire that only delays (the ingress from an
// emunic, which paced its frames itself): so fast that a frame's
// serialization rounds to nothing and nothing ever queues on it.
const Unpaced = 1 << 62

// DelayLine is one direction of an emulated wire. Loop goroutine only.
type DelayLine struct {
	clk   *Clock
	pacer *Pacer
	cfg   PacerConfig
	timer clock.Timer
	sink  func(f *frame.Frame, release, tail clock.Time)
	q     []pending
	head  int
	drops uint64
	slack clock.Time // ReleaseSlack in the clock's (dilated) time
	// busy is the tail of the last frame booked: the wire is taken until
	// then.
	busy clock.Time
	// lastRel and lastTail are the arrival of the last frame booked, and
	// sentRel and sentTail of the last one handed on: no frame arrives
	// before them (a wire does not reorder).
	lastRel, lastTail clock.Time
	sentRel, sentTail clock.Time
	// Lossless: the wire never drops for lack of room (an IB link, whose
	// sender is bounded by the receiver's credits: the frames in flight
	// never exceed the receive buffer plus the small flow-control and
	// VL15 packets, however slow the wire).
	Lossless bool
}

// pending is a frame held on the wire: its arrival, and what booking it
// again after a change needs.
type pending struct {
	f             *frame.Frame
	release, tail clock.Time
	// start, head and wire are when it starts on the wire, when the
	// receiver's cut-through point (HeadBytes) and its tail leave; offered
	// and tailIn are Push's now and tailIn; free is when the wire was free
	// before it.
	start, head, wire, offered, tailIn, free clock.Time
}

// NewDelayLine makes a wire that hands each frame to sink when it is due:
// its head at release, its tail at tail.
func NewDelayLine(clk *Clock, cfg PacerConfig, sink func(f *frame.Frame, release, tail clock.Time)) *DelayLine {
	cfg.Burst = -1
	d := &DelayLine{clk: clk, cfg: cfg, sink: sink, slack: ReleaseSlack / clock.Time(max(clk.Dilation(), 1))}
	d.pacer = NewPacer(clk, cfg)
	d.timer = clk.NewTimer(d.fire)
	return d
}

// Config returns the wire's configuration.
func (d *DelayLine) Config() PacerConfig { return d.cfg }

// SetRate and SetDelay change the wire now, for the frames that start on
// it from now on (see the top of this file); the frames held that have
// not started are booked again.
//
// The frame on the wire sends the rest of its bits at the new rate, as the
// port feeding the wire does (switchcore's SetPortSpeed, nic's SetRate):
// the wire is then free when the port starts its next frame. Keeping the
// old rate's end would hold every later frame behind it (after 1 kb/s,
// a 4 KB frame 33 s, and MaxWireQueue would drop them all). If that frame
// was handed on already, its times stay; only the wire is free earlier
// or later.
func (d *DelayLine) SetRate(bps uint64) {
	if bps == 0 {
		return
	}
	old := d.cfg.Rate
	d.cfg.Rate = bps
	d.pacer.cfg.Rate = bps
	scale := 1.0
	if old > 0 {
		scale = float64(old) / float64(bps)
	}
	d.rebook(d.clk.Now(), scale)
}

func (d *DelayLine) SetDelay(t clock.Time) {
	d.cfg.Delay = t
	d.pacer.cfg.Delay = t
	d.rebook(d.clk.Now(), 1)
}

// rebook books again, with the wire's new configuration, the frames held
// that start after now, and after a rate change (by scale, the old rate
// over the new) sends the rest of the frame on the wire at the new rate.
// Starts are in FIFO order, so the frames not started are the tail of the
// queue; the wire is free for the first of them when it was booked (when
// the frame before it leaves, which is after now, or it would have
// started).
func (d *DelayLine) rebook(now clock.Time, scale float64) {
	later := func(t clock.Time) clock.Time { // the rest of a wire time at the new rate
		if t <= now {
			return t
		}
		return now + clock.Time(float64(t-now)*scale)
	}
	i := d.head
	for i < len(d.q) && d.q[i].start <= now {
		i++
	}
	free := d.pacer.free
	if i < len(d.q) {
		free = d.q[i].free
	}
	j := i // the first frame whose times change
	if scale != 1 {
		free = later(free)
		if i > d.head && d.q[i-1].wire > now {
			j = i - 1
		}
		if j == len(d.q) {
			d.busy = later(d.busy)
		}
	}
	d.pacer.free = free
	if j == len(d.q) {
		return
	}
	if j > d.head {
		d.lastRel, d.lastTail = d.q[j-1].release, d.q[j-1].tail
	} else {
		d.lastRel, d.lastTail = d.sentRel, d.sentTail
	}
	if scale != 1 {
		// tailIn is when the port feeding the wire has sent the
		// frame's last bit: a switch's engine serialized it at the old
		// rate and sends the rest at the new one too (SetPortSpeed).
		// Kept, it held the frame, and so the wire, to its old end:
		// after `rate 1` and back, a ping's tailIn hours away left
		// every later frame to MaxWireQueue's drop. (A cut-through
		// frame's tail may be the ingress port's instead: for the one
		// frame on the wire at a change, moved as well.)
		for k := j; k < len(d.q); k++ {
			d.q[k].tailIn = later(d.q[k].tailIn)
		}
	}
	if j < i {
		// The frame on the wire: its tail, and its head at the
		// receiver's cut-through point if not there yet, come the rest of
		// their bits at the new rate later.
		p := &d.q[j]
		p.wire = max(later(p.wire), p.tailIn)
		p.head = min(later(p.head), p.wire)
		d.busy = p.wire
		d.pacer.free = max(d.pacer.free, p.wire+clock.SerializationTime(d.cfg.Overhead, d.cfg.Rate))
		p.release, p.tail = d.arrive(p.head+d.cfg.Delay, p.wire+d.cfg.Delay)
	}
	for k := i; k < len(d.q); k++ {
		d.book(&d.q[k])
	}
	d.timer.Reset(d.q[d.head].release - d.slack)
}

// arrive puts an arrival in order after the frame before it: a frame
// arrives no earlier than that one, which only a shorter delay (SetDelay)
// could make it do; the frames in flight are ahead of it on the wire. The
// head of the frame before it comes no later than its tail, so release <=
// tail holds.
func (d *DelayLine) arrive(release, tail clock.Time) (clock.Time, clock.Time) {
	release, tail = max(release, d.lastRel), max(tail, d.lastTail)
	d.lastRel, d.lastTail = release, tail
	return release, tail
}

// book books p (its f, offered and tailIn) on the pacer: its times on the
// wire and its arrival (arrive).
func (d *DelayLine) book(p *pending) {
	p.free = d.pacer.free
	var rel clock.Time
	p.start, p.wire, rel = d.pacer.Book(p.offered, p.f.Len(), p.tailIn)
	p.head = rel - d.cfg.Delay
	d.busy = p.wire
	p.release, p.tail = d.arrive(rel, p.wire+d.cfg.Delay)
}

// Push books f, offered at now, whose tail arrives at tailIn (0: whole).
func (d *DelayLine) Push(now clock.Time, f *frame.Frame, tailIn clock.Time) {
	if d.busy-now > MaxWireQueue && !d.Lossless {
		d.drops++
		f.Put()
		return
	}
	// A wire holding DelayLineLimit frames takes no more; the frame is
	// dropped before it is booked, so it takes no wire time.
	if len(d.q)-d.head >= DelayLineLimit && !d.Lossless {
		d.drops++
		f.Put()
		return
	}
	p := pending{f: f, offered: now, tailIn: tailIn}
	d.book(&p)
	if d.head == len(d.q) && p.release <= now+d.slack {
		d.send(f, p.release, p.tail)
		return
	}
	if d.head > 0 && d.head == len(d.q) {
		d.q, d.head = d.q[:0], 0
	}
	d.q = append(d.q, p)
	if len(d.q)-d.head == 1 {
		d.timer.Reset(p.release - d.slack)
	}
}

// send hands a frame on.
func (d *DelayLine) send(f *frame.Frame, release, tail clock.Time) {
	d.sentRel, d.sentTail = release, tail
	d.sink(f, release, tail)
}

// fire releases what is due; it runs as the timer's callback, where Now
// is the due time (replayed if the wake-up was late).
func (d *DelayLine) fire() {
	now := d.clk.Now()
	for d.head < len(d.q) && d.q[d.head].release <= now+d.slack {
		p := d.q[d.head]
		d.q[d.head] = pending{}
		d.head++
		d.send(p.f, p.release, p.tail)
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
	d.timer.Reset(d.q[d.head].release - d.slack)
}

// Flush drops everything held and returns how many (link down).
func (d *DelayLine) Flush() int {
	n := 0
	for d.head < len(d.q) {
		d.q[d.head].f.Put()
		d.q[d.head] = pending{}
		d.head++
		n++
	}
	d.q, d.head = d.q[:0], 0
	d.timer.Stop()
	// Nothing is in flight behind the frames handed on.
	d.lastRel, d.lastTail = d.sentRel, d.sentTail
	return n
}

// Held is the number of frames on the wire.
func (d *DelayLine) Held() int { return len(d.q) - d.head }

// Drops is the number of frames dropped for lack of room on the wire
// (MaxWireQueue, DelayLineLimit): link_queue_drop.
func (d *DelayLine) Drops() uint64 { return d.drops }

// Corrupt damages f as a bit error on an emulated wire: one byte flipped
// where the simulator flips it (wire.BitErrorIndex), covered by the
// receiver's end-to-end check and in no header, so the frame still
// reaches the check it fails: a RoCE frame's ICRC (rx_icrc_errors), a
// host's TCP, UDP or ICMP checksum, an IB packet's ICRC and VCRC or a link
// packet's LPCRC. f.Corrupt marks it for a store-and-forward switch's FCS
// check (frames carry no FCS here).
//
// Loss, on an IB link, is the same event seen from the receiver: a packet
// damaged beyond recognition is gone. Both apply to every packet,
// flow-control packets included, because IBA's flow control is built to
// survive exactly that (7.9.4): a lost data packet's blocks come back when
// the receiver resynchronises its ABR to the sender's FCTBS carried in
// every flow-control packet, and a lost flow-control packet is superseded
// by the next one (sent when buffer is freed, and every credit period).
// Sparing link packets would emulate a wire that knows what it carries.
func Corrupt(f *frame.Frame, ib bool) {
	f.Corrupt = true
	if i := wire.BitErrorIndex(f.Data, ib); i >= 0 {
		f.Data[i] ^= 0xFF
	}
}
