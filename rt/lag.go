package rt

import (
	"sync/atomic"

	"github.com/emufabric/emufabric/clock"
)

// Real-time lag. A Loop whose goroutine is descheduled, or busier than the
// machine lets it be, runs its timers late; the Clock replays them at
// their due times (see Clock), so rates hold, but what the engine did not
// see meanwhile it could not react to: a switch that runs 5 ms late sends
// its XOFF 5 ms late, and the frames its peers sent in that time land
// beyond the PG's headroom. The lateness is measured where the Clock
// replays: each pass over due timers notes how far the earliest of them
// is behind the wall clock. A lab whose daemons show milliseconds of lag
// is starved of CPU, not wrong, and its PFC and latency numbers say more
// about the machine than about the fabric.

// LagOver is the lateness from which a pass counts as late (Lag.Late):
// well above an idle machine's wake-up latency (tens of microseconds),
// and at 10 Gb/s already a megabyte of a link's traffic.
const LagOver = clock.Millisecond

// Lag is a Clock's real-time lag so far, in the clock's (virtual) time.
type Lag struct {
	// Max is the latest a timer ran behind its due time.
	Max clock.Time
	// Late counts replay passes whose earliest timer was LagOver or
	// more behind the wall clock.
	Late uint64
	// Dropped counts the passes more than MaxLag behind: the engine lost
	// the time beyond MaxLag (its timers ran at now-MaxLag).
	Dropped uint64
}

// lagStats is written by the loop goroutine and read by any.
type lagStats struct {
	max           atomic.Int64
	late, dropped atomic.Uint64
}

func (l *lagStats) note(late, maxLag clock.Time) {
	if int64(late) > l.max.Load() {
		l.max.Store(int64(late))
	}
	if late >= LagOver {
		l.late.Add(1)
	}
	if late > maxLag {
		l.dropped.Add(1)
	}
}

// Lag reports how late the clock's timers ran; safe from any goroutine.
func (c *Clock) Lag() Lag {
	return Lag{Max: clock.Time(c.lag.max.Load()), Late: c.lag.late.Load(), Dropped: c.lag.dropped.Load()}
}

// Metrics calls fn with the Prometheus families a daemon exports its
// loop's lag in, the same for emuswitch and emunic (the daemon's, with no
// port label): the counters' loop_lag_max_ns, loop_late and
// loop_lag_dropped in the project's naming (base units, counters ending in
// _total).
func (l Lag) Metrics(fn func(name, typ, help string, v float64)) {
	fn("emu_loop_lag_max_seconds", "gauge", "The latest the daemon's loop ran a timer behind its due time, in the lab's clock (loop_lag_max_ns): what it sent and reacted to was that late.", l.Max.Seconds())
	fn("emu_loop_late_total", "counter", "Times the daemon's loop ran its timers 1 ms or more late (loop_late): the machine was short of CPU for the lab, or the daemon was stopped.", float64(l.Late))
	fn("emu_loop_lag_dropped_total", "counter", "Times the daemon's loop ran later than its replay bound and lost the time beyond it (loop_lag_dropped).", float64(l.Dropped))
}
