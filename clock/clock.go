// Package clock is the time source injected into the I/O-free packages
// (switchcore, nic, cc). The simulator implements it in virtual time; the
// real-time daemons implement it over the wall clock. Nothing in those
// packages may call time.Now or sleep: they ask a Clock.
//
// Resolution is one picosecond. Nanoseconds are too coarse for the links we
// model: one byte takes 80 ps at 100 Gb/s and 20 ps at 400 Gb/s, and one PFC
// quantum is 1.28 ns at 400 Gb/s. An int64 of picoseconds spans 106 days.
package clock

import (
	"fmt"
	"math/bits"
	"time"
)

// Time is a point in time, in picoseconds since the clock's epoch. It is also
// used for durations, as time.Duration is for time.Time.
type Time int64

const (
	Picosecond  Time = 1
	Nanosecond       = 1000 * Picosecond
	Microsecond      = 1000 * Nanosecond
	Millisecond      = 1000 * Microsecond
	Second           = 1000 * Millisecond

	// Never is later than any time a run reaches.
	Never Time = 1<<63 - 1
)

// FromDuration converts a time.Duration (ns) to picoseconds.
func FromDuration(d time.Duration) Time { return Time(d) * Nanosecond }

// Duration converts to a time.Duration, truncating below one nanosecond.
func (t Time) Duration() time.Duration { return time.Duration(t / Nanosecond) }

// Seconds returns t as floating-point seconds.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

func (t Time) String() string {
	switch {
	case t == Never:
		return "never"
	case t%Second == 0 && t != 0:
		return fmt.Sprintf("%ds", t/Second)
	case t >= Millisecond || t <= -Millisecond:
		return fmt.Sprintf("%.6gms", float64(t)/float64(Millisecond))
	case t >= Microsecond || t <= -Microsecond:
		return fmt.Sprintf("%.6gus", float64(t)/float64(Microsecond))
	case t >= Nanosecond || t <= -Nanosecond:
		return fmt.Sprintf("%.6gns", float64(t)/float64(Nanosecond))
	}
	return fmt.Sprintf("%dps", int64(t))
}

// SerializationTime is how long n bytes take on a link of bitsPerSecond,
// rounded up to the next picosecond so back-to-back frames never overlap.
func SerializationTime(n int, bitsPerSecond uint64) Time {
	if bitsPerSecond == 0 {
		return Never
	}
	// bits * 1e12 overflows 64 bits from 2.3 MB on: in 128.
	hi, lo := bits.Mul64(uint64(n)*8, uint64(Second))
	lo, carry := bits.Add64(lo, bitsPerSecond-1, 0)
	hi += carry
	if hi >= bitsPerSecond {
		return Never
	}
	ps, _ := bits.Div64(hi, lo, bitsPerSecond)
	return Time(min(ps, uint64(Never)))
}

// BytesIn is how many bytes a link of bitsPerSecond carries in d (rounded
// down): the data in flight over a propagation delay, a headroom. Exact
// for any d and rate (rate x time in picoseconds overflows 64 bits from
// 1.8e19: 100G over 184 ms).
func BytesIn(d Time, bitsPerSecond uint64) uint64 {
	if d <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(d), bitsPerSecond)
	const div = 8 * uint64(Second)
	if hi >= div {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, div)
	return q
}

// Clock gives the current time and timers. Implementations are not required
// to be safe for concurrent use: each engine (a switch, a NIC) is driven by
// one goroutine or one simulator at a time.
type Clock interface {
	Now() Time
	// NewTimer returns a stopped timer that calls f when it fires. Timers
	// are allocated once and re-armed with Reset, so the per-frame path
	// allocates nothing.
	NewTimer(f func()) Timer
}

// Timer is a re-armable one-shot timer.
type Timer interface {
	// Reset arms the timer to fire at the absolute time at, replacing any
	// earlier arming. A time in the past fires as soon as possible.
	Reset(at Time)
	// Stop disarms the timer; it reports whether it was armed.
	Stop() bool
	// Armed reports whether the timer will fire, and when.
	When() (at Time, armed bool)
}
