package rt

import (
	"fmt"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// TestDelayLineChange: `link set ... rate|delay` at run time. A change
// applies to the frames that start after it; the frame on the wire sends
// the rest of its bits at the new rate (as the engine feeding the wire
// does), and the next frame waits for it. A frame handed on already
// keeps its times. And a wire never reorders: a frame arrives no earlier
// than the one before it, however much shorter the delay became. Before,
// each change built a fresh Pacer whose wire was free at time 0: a frame
// offered after the change started at once, on top of the frames still on
// the wire, frames held kept the old rate, and a delay decrease made a
// frame arrive before the ones ahead of it.
//
// The clock is put inside a timer callback (Now is then exactly the due
// time) so the arithmetic is exact; nothing runs the loop. Its dilation
// makes ReleaseSlack nothing, so frames wait on the wire until fire, as
// frames due beyond ReleaseSlack do; with dilation 1 they are handed on
// at once, and keep the times they were handed on with.
func TestDelayLineChange(t *testing.T) {
	const us = clock.Microsecond
	type step struct {
		at    clock.Time
		op    string // "push" (n bytes), "rate" (bps), "delay" (ps)
		value uint64
	}
	type arrival struct{ release, tail clock.Time }
	cases := []struct {
		name     string
		dilation int // 0: 1e9
		cfg      PacerConfig
		steps    []step
		want     []arrival
	}{
		{"handed-on-early-keep-their-times", 1, PacerConfig{Rate: 1e9}, []step{
			{0, "push", 1250},      // 0-10 us, handed on at once (ReleaseSlack)
			{0, "push", 1250},      // 10-20 us, handed on at once
			{5 * us, "rate", 10e9}, // too late for both: the wire is free at 6.5 us
			{5 * us, "push", 1250}, // 6.5-7.5 us, but not before the second
		}, []arrival{{10 * us, 10 * us}, {20 * us, 20 * us}, {20 * us, 20 * us}}},
		{"rate-up-waits-for-the-wire", 0, PacerConfig{Rate: 1e9}, []step{
			{0, "push", 1250},      // 0-10 us at 1 Gb/s
			{0, "push", 1250},      // queued behind it: 10-20 us
			{5 * us, "rate", 10e9}, // the first sends its last 5 us of bits in 0.5 us
			{5 * us, "push", 1250}, // after the second
		}, []arrival{{5*us + us/2, 5*us + us/2}, {6*us + us/2, 6*us + us/2}, {7*us + us/2, 7*us + us/2}}},
		{"rate-down", 0, PacerConfig{Rate: 10e9}, []step{
			{0, "push", 1250},      // 0-1 us
			{0, "push", 1250},      // 1-2 us, not started at the change
			{us / 2, "rate", 1e9},  // the first's last half: 0.5-5.5 us; the second 5.5-15.5 us
			{us / 2, "push", 1250}, // 15.5-25.5 us
		}, []arrival{{5*us + us/2, 5*us + us/2}, {15*us + us/2, 15*us + us/2}, {25*us + us/2, 25*us + us/2}}},
		{"delay-down-does-not-reorder", 0, PacerConfig{Rate: 10e9, Delay: 100 * us}, []step{
			{0, "push", 1250}, // 0-1 us, arrives at 101 us
			{2 * us, "delay", uint64(10 * us)},
			{2 * us, "push", 1250},   // 2-3 us: due at 13 us, after the first
			{200 * us, "push", 1250}, // the new delay alone
		}, []arrival{{101 * us, 101 * us}, {101 * us, 101 * us}, {211 * us, 211 * us}}},
		{"delay-up-applies-to-frames-not-started", 0, PacerConfig{Rate: 1e9, Delay: 10 * us}, []step{
			{0, "push", 1250}, // 0-10 us, arrives at 20 us
			{0, "push", 1250}, // 10-20 us
			{5 * us, "delay", uint64(50 * us)},
		}, []arrival{{20 * us, 20 * us}, {70 * us, 70 * us}}},
		{"cut-through-head", 0, PacerConfig{Rate: 1e9, HeadBytes: 125}, []step{
			{0, "push", 1250},      // head at 1 us, tail at 10 us
			{0, "push", 1250},      // 10-20 us
			{5 * us, "rate", 10e9}, // the head has arrived; the tail at 5.5 us; then 5.5-6.5 us
		}, []arrival{{1 * us, 5*us + us/2}, {5*us + us/2 + us/10, 6*us + us/2}}},
		{"two-changes-in-one-frame", 0, PacerConfig{Rate: 1e9, HeadBytes: 1000}, []step{
			{0, "push", 1250},     // head at 8 us, tail at 10 us
			{2 * us, "rate", 2e9}, // head at 5 us, tail at 6 us
			{3 * us, "rate", 1e9}, // head at 7 us, tail at 9 us
		}, []arrival{{7 * us, 9 * us}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.dilation == 0 {
				c.dilation = 1_000_000_000
			}
			clk := NewClock(c.dilation)
			clk.inCB = true
			var got []arrival
			d := NewDelayLine(clk, c.cfg, func(f *frame.Frame, release, tail clock.Time) {
				f.Put()
				got = append(got, arrival{release, tail})
			})
			pool := frame.NewPool()
			for _, s := range c.steps {
				clk.cbAt = s.at
				switch s.op {
				case "push":
					d.Push(s.at, pool.Get(int(s.value)), 0)
				case "rate":
					d.SetRate(s.value)
				case "delay":
					d.SetDelay(clock.Time(s.value))
				}
			}
			clk.cbAt = clock.Second
			d.fire()
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("arrivals (release tail) %v, want %v", got, c.want)
			}
		})
	}
}

// TestDelayLineRateBackFromTiny: a switch port's frames come with the
// time the engine sends their last bit (tailIn), at the port's speed,
// which a rate change moves as it moves the wire's. `link set sw1:p2
// rate 1` and then `rate 100G` left the ping on the wire with its tail
// hours away: the wire stayed busy to then and dropped every later frame
// (link_queue_drop), so the link carried nothing after the change back.
func TestDelayLineRateBackFromTiny(t *testing.T) {
	const us = clock.Microsecond
	clk := NewClock(1_000_000_000)
	clk.inCB = true
	var got []clock.Time
	d := NewDelayLine(clk, PacerConfig{Rate: 100e9, Delay: us, Overhead: 24}, func(f *frame.Frame, release, _ clock.Time) {
		f.Put()
		got = append(got, release)
	})
	pool := frame.NewPool()
	push := func(at clock.Time, rate uint64) {
		clk.cbAt = at
		// The engine serialized it at the same rate, starting now.
		d.Push(at, pool.Get(98), at+clock.SerializationTime(98, rate))
	}
	clk.cbAt = 0
	d.SetRate(1)
	push(us, 1) // 784 s on the wire at 1 b/s
	clk.cbAt = clock.Second
	d.SetRate(100e9)
	push(clock.Second+us, 100e9)
	if d.Drops() != 0 {
		t.Fatalf("%d frame(s) dropped after the rate came back: the wire is still busy until %v", d.Drops(), d.busy)
	}
	clk.cbAt = 2 * clock.Second
	d.fire()
	if len(got) != 2 || got[1] > clock.Second+10*us {
		t.Errorf("arrivals %v: want both, the second within microseconds of 1 s", got)
	}
}

// TestDelayLineLimitDropBooksNoWire: a frame dropped because the wire
// already holds DelayLineLimit frames never goes on it, so it must not
// take wire time: before, it was booked first and the frames after it
// arrived a frame time later for each such drop.
func TestDelayLineLimitDropBooksNoWire(t *testing.T) {
	clk := NewClock(1)
	clk.inCB = true
	d := NewDelayLine(clk, PacerConfig{Rate: 100e9, Delay: 10 * clock.Millisecond, Overhead: 24}, func(f *frame.Frame, _, _ clock.Time) { f.Put() })
	pool := frame.NewPool()
	for range DelayLineLimit {
		d.Push(0, pool.Get(64), 0)
	}
	busy := d.busy
	d.Push(0, pool.Get(64), 0)
	if d.Drops() != 1 {
		t.Fatalf("%d drops with the wire holding %d frames and one more offered, want 1", d.Drops(), DelayLineLimit)
	}
	if d.busy != busy {
		t.Errorf("the dropped frame took wire time: busy until %v, was %v", d.busy, busy)
	}
}
