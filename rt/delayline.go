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
// catch-up mechanism instead of two that would fight, and lets `link rate`
// replace the Pacer at run time (its configuration is fixed).
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
	// Lossless: the wire never drops for lack of room (an IB link, whose
	// sender is bounded by the receiver's credits: the frames in flight
	// never exceed the receive buffer plus the small flow-control and
	// VL15 packets, however slow the wire).
	Lossless bool
}

type pending struct {
	f             *frame.Frame
	release, tail clock.Time
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

// SetRate and SetDelay change the wire; frames already booked keep their
// times.
func (d *DelayLine) SetRate(bps uint64) {
	// The wire is taken until the frame on it has sent the rest of its
	// bits at the new rate; frames held keep their release times.
	if now := d.clk.Now(); d.busy > now && d.cfg.Rate > 0 && bps > 0 {
		d.busy = now + clock.Time(float64(d.busy-now)*float64(d.cfg.Rate)/float64(bps))
	}
	d.cfg.Rate = bps
	d.pacer = NewPacer(d.clk, d.cfg)
}

func (d *DelayLine) SetDelay(t clock.Time) {
	d.cfg.Delay = t
	d.pacer = NewPacer(d.clk, d.cfg)
}

// Push books f, offered at now, whose tail arrives at tailIn (0: whole).
func (d *DelayLine) Push(now clock.Time, f *frame.Frame, tailIn clock.Time) {
	if d.busy-now > MaxWireQueue && !d.Lossless {
		d.drops++
		f.Put()
		return
	}
	_, tail, rel := d.pacer.Book(now, f.Len(), tailIn)
	d.busy = tail
	tail += d.cfg.Delay
	if d.head == len(d.q) && rel <= now+d.slack {
		d.sink(f, rel, tail)
		return
	}
	if len(d.q)-d.head >= DelayLineLimit && !d.Lossless {
		d.drops++
		f.Put()
		return
	}
	if d.head > 0 && d.head == len(d.q) {
		d.q, d.head = d.q[:0], 0
	}
	d.q = append(d.q, pending{f, rel, tail})
	if len(d.q)-d.head == 1 {
		d.timer.Reset(rel - d.slack)
	}
}

// fire releases what is due; it runs as the timer's callback, where Now
// is the due time (replayed if the wake-up was late).
func (d *DelayLine) fire() {
	now := d.clk.Now()
	for d.head < len(d.q) && d.q[d.head].release <= now+d.slack {
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
