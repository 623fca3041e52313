package rt

import (
	"fmt"
	"time"

	"github.com/emufabric/emufabric/clock"
)

// Clock is a clock.Clock over the wall clock (the monotonic reading of
// time.Now), optionally dilated.
//
// Time dilation. With a dilation factor N >= 1 the emulated fabric runs N
// times slower than the wall clock: Now advances by 1 ps for every N ps of
// wall time, and a Timer armed for virtual time t fires when the wall
// clock reaches epoch + N*t. Everything the engines compute in virtual time
// (serialization at the configured link rate, PFC pause quanta, DCQCN
// timers, retransmission timeouts) therefore takes N times longer on the
// wall. A lab file's `time_dilation: N` lets a machine whose real
// throughput is R emulate links up to about N*R: the built-in RDMA engine's
// 400 Gb/s link, dilated by 10, moves 40 Gb/s of real bytes while every
// rate, counter and timestamp the engine reports reads 400 Gb/s.
// Kernel traffic (ping, TCP through a TAP) lives in the wall-clock world and
// is not dilated: through a dilated link it sees rate R/N and delays N
// times longer, which is why the issue limits dilation to the built-in
// engine's traffic. N = 1 (or 0) is real time.
//
// The clock's timers are driven by the Loop that owns it: one heap of
// Timers and one wall-clock alarm armed for the earliest of them. Timers are
// not safe for concurrent use; they are armed and stopped only on the
// Loop's goroutine (from engine code or functions passed to Loop.Post),
// which is also where their callbacks run.
//
// Catching up. The alarm behind the timers (an Alarm: a timerfd on Linux,
// as a runtime timer fires a millisecond late) still wakes the loop tens
// of microseconds late on an idle machine and more on a loaded one, while an engine's timers are a frame
// time apart (1.2 us for 1500 bytes at 10 Gb/s). If a timer callback saw
// the wall clock, every late wake-up would be lost to the link: a switch
// port that starts its next frame at Now would run at a fraction of its
// rate. So inside a timer callback Now is the timer's due time, and timers
// that became due together run one after the other in due-time order, each
// seeing its own time: the engine replays the lag like a discrete-event
// simulator and the long-run rate is exact. The replay is bounded by
// MaxLag: a timer more than MaxLag overdue sees now-MaxLag, so a machine
// that cannot keep up loses time instead of falling ever further behind.
// Outside callbacks Now reads the wall clock, once per loop event (see
// Now). Now never goes backwards.
//
// Now is for the engine, on the Loop's goroutine; other goroutines (port
// writers, pacers) read WallNow.
type Clock struct {
	epoch    time.Time
	dilation int64

	heap   timerHeap
	wake   *Alarm     // the wall-clock alarm, while the Loop runs (start, stop)
	wakeAt clock.Time // virtual time the alarm is armed for; Never if stopped
	// fired is set while the alarm's arming was consumed by a fire,
	// so arm must arm it again even for an unchanged earliest time.
	fired bool
	// dirty is set when a Timer was armed or stopped since the runtime
	// timer was last pointed at the earliest one (see settle).
	dirty bool
	// inEvent is set while the loop handles an event; evAt is Now's
	// reading for it once evValid (see Now).
	inEvent, evValid bool
	evAt             clock.Time

	maxLag clock.Time
	lag    lagStats
	last   clock.Time // the latest time Now returned
	inCB   bool       // a timer callback is running
	cbAt   clock.Time // its due time (after the MaxLag bound)
}

// DefaultMaxLag bounds how far timer callbacks replay behind the wall
// clock; see Clock.
const DefaultMaxLag = 5 * clock.Millisecond

var _ clock.Clock = (*Clock)(nil)

// NewClock returns a clock whose epoch (time 0) is now. dilation <= 1 is
// real time.
func NewClock(dilation int) *Clock {
	if dilation < 1 {
		dilation = 1
	}
	return &Clock{epoch: time.Now(), dilation: int64(dilation), wakeAt: clock.Never, maxLag: DefaultMaxLag}
}

// Dilation is the factor N: wall time per unit of virtual time.
func (c *Clock) Dilation() int { return int(c.dilation) }

// SetMaxLag sets how far behind the wall clock timer callbacks may replay
// (virtual time). Call it before the Loop runs.
func (c *Clock) SetMaxLag(d clock.Time) { c.maxLag = max(d, 0) }

// MaxLag is the replay bound.
func (c *Clock) MaxLag() clock.Time { return c.maxLag }

// Now implements clock.Clock for the engine: loop goroutine only. Inside
// a timer callback it is the timer's due time (see Clock). Within a loop
// event otherwise it is the wall clock as first read during that event:
// the frames of one received batch arrived together, and handling them
// takes no emulated time (an engine spaces them at its link rate with
// its own timers, which the loop runs right after the event, each at its
// due time); it also spares a clock read per engine step, several per
// frame. Outside events (before Run) it is the wall clock. It never
// returns less than it returned before.
func (c *Clock) Now() clock.Time {
	t := c.cbAt
	switch {
	case c.inCB:
	case c.inEvent:
		if !c.evValid {
			c.evAt, c.evValid = c.WallNow(), true
		}
		t = c.evAt
	default:
		t = c.WallNow()
	}
	if t < c.last {
		t = c.last
	}
	c.last = t
	return t
}

// WallNow is the (dilated) wall clock in virtual time, safe from any
// goroutine.
func (c *Clock) WallNow() clock.Time {
	return c.fromWall(time.Since(c.epoch))
}

// fromWall converts a wall duration since the epoch to virtual time.
func (c *Clock) fromWall(d time.Duration) clock.Time {
	return clock.Time(int64(d) * int64(clock.Nanosecond) / c.dilation)
}

// WallUntil is how long the wall clock takes to reach virtual time t, zero
// if t has passed. Rounded up to the nanosecond so a timer never fires
// before its time.
func (c *Clock) WallUntil(t clock.Time) time.Duration {
	if t == clock.Never {
		return time.Duration(1<<63 - 1)
	}
	wallPS := int64(t) * c.dilation
	if c.dilation != 0 && wallPS/c.dilation != int64(t) {
		return time.Duration(1<<63 - 1) // beyond 292 years of wall time
	}
	at := time.Duration((wallPS + int64(clock.Nanosecond) - 1) / int64(clock.Nanosecond))
	d := at - time.Since(c.epoch)
	if d < 0 {
		return 0
	}
	return d
}

// Wall converts a virtual duration to wall time.
func (c *Clock) Wall(d clock.Time) time.Duration {
	return time.Duration(int64(d) * c.dilation / int64(clock.Nanosecond))
}

// NewTimer implements clock.Clock. The callback runs on the Loop's
// goroutine.
func (c *Clock) NewTimer(f func()) clock.Timer {
	if f == nil {
		panic("rt: NewTimer with nil callback")
	}
	return &Timer{c: c, f: f, idx: -1}
}

// Timer is a re-armable one-shot timer of a Clock.
type Timer struct {
	c   *Clock
	f   func()
	at  clock.Time
	idx int // position in the heap, -1 when not armed
	seq uint64
}

var _ clock.Timer = (*Timer)(nil)

// Reset implements clock.Timer.
func (t *Timer) Reset(at clock.Time) {
	c := t.c
	c.heap.seq++
	t.seq = c.heap.seq
	t.at = at
	if t.idx >= 0 {
		c.heap.fix(t.idx)
	} else {
		c.heap.push(t)
	}
	c.rearm()
}

// Stop implements clock.Timer.
func (t *Timer) Stop() bool {
	if t.idx < 0 {
		return false
	}
	t.c.heap.remove(t.idx)
	t.c.rearm()
	return true
}

// When implements clock.Timer.
func (t *Timer) When() (clock.Time, bool) {
	if t.idx < 0 {
		return 0, false
	}
	return t.at, true
}

func (t *Timer) String() string {
	if at, ok := t.When(); ok {
		return fmt.Sprintf("timer(at %v)", at)
	}
	return "timer(stopped)"
}

// rearm records that the earliest Timer may have changed. The runtime
// timer is re-pointed once per loop event, by settle, not per Reset: an
// engine re-arms a timer for every frame it sends (a port's serialization
// timer, due a frame time later), and by the end of the event that time
// has usually passed, so the timer runs there and the alarm is
// never touched (no alarm operation, no extra loop wake-up per
// frame).
func (c *Clock) rearm() { c.dirty = true }

// arm points the alarm at the earliest Timer. Re-pointing a timerfd is a
// system call, and the earliest time mostly moves later (a port's
// serialization timer, pushed a frame time further for every frame): an
// alarm armed for an earlier time is left alone, its early wake-up finds
// nothing due and arms it then. So the alarm is only moved earlier, or
// armed after it fired; it is never stopped (a wake-up with nothing due
// is harmless).
func (c *Clock) arm() {
	c.dirty = false
	if c.fired {
		c.wakeAt, c.fired = clock.Never, false // a timerfd is one-shot
	}
	next := clock.Never
	if len(c.heap.t) > 0 {
		next = c.heap.t[0].at
	}
	if next >= c.wakeAt {
		return
	}
	c.wakeAt = next
	c.wake.Reset(c.WallUntil(next))
}

// beginEvent and endEvent bracket a loop event (see Now).
func (c *Clock) beginEvent() { c.inEvent, c.evValid = true, false }
func (c *Clock) endEvent()   { c.inEvent = false }

// settle runs after every loop event (and before the first): if timers
// were armed or stopped, it runs those already due, as the alarm
// would have a moment later, and points the alarm at the next.
func (c *Clock) settle() {
	if !c.dirty {
		return
	}
	c.runDue()
	c.arm()
}

// maxFiresPerPass bounds the callbacks one expire call runs, so a timer
// that keeps re-arming itself in the past cannot starve frame arrivals.
const maxFiresPerPass = 4096

// expire runs the callbacks of every timer due by now, earliest first
// (ties in arming order), then re-arms the alarm. Called by the
// Loop when the alarm fired.
func (c *Clock) expire() {
	// The alarm fired: whatever it was armed for is consumed, so
	// arm must arm it again even for the same time.
	c.fired = true
	c.runDue()
	c.arm()
}

// earlyRun: timers due within it of the wall clock run now, at their own
// due time (Now inside the callback), instead of arming the alarm. An
// alarm cannot wake the loop sooner than some 30 us, so running a
// callback this little early is closer to its time than waiting; and the
// timer an engine arms for the end of the frame it just started (a few
// hundred nanoseconds away) costs neither a system call nor a wake-up.
// Now never goes backwards, so an event that arrives before the wall clock
// reaches such a timer's time is seen at that time.
const earlyRun = 10 * time.Microsecond

// runDue runs the callbacks of every timer due by now, earliest first
// (ties in arming order), at most maxFiresPerPass of them.
func (c *Clock) runDue() {
	now := c.WallNow()
	c.runUntil(now, now+c.fromWall(earlyRun))
}

// catchUp runs, before the loop handles a received batch or a posted
// function, the timers the wall clock has already passed, each at its due
// time, as a discrete-event simulator orders events: the alarm that would
// have run them woke the loop together with the event, or the loop was busy
// or descheduled. Handled first, the event would set Now to the wall clock,
// and since Now never goes backwards every overdue timer would then run at
// the event's time, not its own: a port's serialization timer late by 300
// us would lose 300 us of the link, and the frames it sends would carry
// the event's time.
func (c *Clock) catchUp() {
	if len(c.heap.t) == 0 {
		return
	}
	now := c.WallNow()
	if c.heap.t[0].at > now {
		return
	}
	c.runUntil(now, now)
	c.dirty = true // settle points the alarm at what is left
}

// runUntil runs the callbacks of the timers due by due, at most
// maxFiresPerPass of them; now bounds the replay (MaxLag).
func (c *Clock) runUntil(now, due clock.Time) {
	floor := now - c.maxLag
	if len(c.heap.t) > 0 && c.heap.t[0].at < now {
		c.lag.note(now-c.heap.t[0].at, c.maxLag)
	}
	for i := 0; i < maxFiresPerPass && len(c.heap.t) > 0 && c.heap.t[0].at <= due; i++ {
		t := c.heap.t[0]
		c.heap.remove(0)
		c.inCB, c.cbAt = true, max(t.at, floor)
		t.f() // may Reset t or others; the heap is consistent here
		c.inCB = false
	}
}

// pending is the number of armed timers.
func (c *Clock) pending() int { return len(c.heap.t) }

// start makes the alarm; the Loop calls it when Run begins, so a Clock
// that never runs holds no descriptor or goroutine.
func (c *Clock) start() {
	if c.wake == nil {
		c.wake = NewAlarm()
	}
}

// stop releases the alarm when Run ends.
func (c *Clock) stop() {
	if c.wake != nil {
		c.wake.Close()
		c.wake = nil
	}
}
