package rt

import "time"

// Alarm is a re-armable one-shot wall-clock alarm that signals on C, as a
// time.Timer does, for the goroutines that time emulated links: the
// Loop's clock and a paced port's writer.
//
// Why not time.Timer. On Linux the Go runtime sleeps in epoll_pwait,
// whose timeout is in milliseconds: when the process is idle, a runtime
// timer due in 2 or 20 us fires a millisecond late (measured on the
// project's machine: p50 1.09 ms for a 20 us timer). An emulated link
// delay of 1 us then costs a millisecond per hop, and a ping across a
// lab takes milliseconds. The Linux Alarm is a timerfd (a kernel
// high-resolution timer) read through the runtime's netpoller: the
// timerfd becomes readable at its time and wakes epoll_pwait at once
// (p50 28 us late for a 2 us alarm, 51 us for 20 us, including the
// goroutine wake-up). Elsewhere, or if a timerfd cannot be made, Alarm
// falls back to a time.Timer.
//
// C may hold a stale signal after Reset or Stop (an expiry that raced
// them); its users treat a signal as "look at the clock", never as "the
// time has come".
type Alarm struct {
	C    <-chan struct{}
	c    chan struct{}
	impl alarmImpl
}

type alarmImpl interface {
	reset(d time.Duration)
	stop()
	close()
}

// NewAlarm returns a stopped alarm. Close releases it.
func NewAlarm() *Alarm {
	a := &Alarm{c: make(chan struct{}, 1)}
	a.C = a.c
	if impl, err := newTimerfdAlarm(a.signal); err == nil {
		a.impl = impl
	} else {
		a.impl = newTimeAlarm(a.signal)
	}
	return a
}

func (a *Alarm) signal() {
	select {
	case a.c <- struct{}{}:
	default:
	}
}

// Reset arms the alarm to signal after d (at once for d <= 0), replacing
// any earlier arming.
func (a *Alarm) Reset(d time.Duration) { a.impl.reset(d) }

// Stop disarms the alarm.
func (a *Alarm) Stop() { a.impl.stop() }

// Close disarms the alarm and releases what it holds (a file descriptor
// and a goroutine on Linux).
func (a *Alarm) Close() { a.impl.close() }

// timeAlarm is the portable fallback.
type timeAlarm struct{ t *time.Timer }

func newTimeAlarm(signal func()) *timeAlarm {
	t := time.AfterFunc(time.Hour, signal)
	t.Stop()
	return &timeAlarm{t: t}
}

func (a *timeAlarm) reset(d time.Duration) { a.t.Reset(max(d, 0)) }
func (a *timeAlarm) stop()                 { a.t.Stop() }
func (a *timeAlarm) close()                { a.t.Stop() }
