package rt

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// TestClockLag: each replay pass notes how far its earliest due timer is
// behind the wall clock; LagOver or more counts as late, beyond MaxLag as
// time the engine lost. runUntil takes the wall clock's reading, so the
// test needs no real clock.
func TestClockLag(t *testing.T) {
	c := NewClock(1)
	ran := 0
	arm := func(at clock.Time) { c.NewTimer(func() { ran++ }).Reset(at) }

	arm(10 * clock.Millisecond)
	arm(10*clock.Millisecond + 300*clock.Microsecond)
	c.runUntil(10*clock.Millisecond+500*clock.Microsecond, 10*clock.Millisecond+500*clock.Microsecond)
	if l := c.Lag(); l.Max != 500*clock.Microsecond || l.Late != 0 || l.Dropped != 0 || ran != 2 {
		t.Fatalf("500 us late: %+v, %d ran; want Max 500 us, nothing late or dropped, 2 ran", l, ran)
	}

	arm(20 * clock.Millisecond)
	c.runUntil(23*clock.Millisecond, 23*clock.Millisecond)
	if l := c.Lag(); l.Max != 3*clock.Millisecond || l.Late != 1 || l.Dropped != 0 {
		t.Fatalf("3 ms late: %+v; want Max 3 ms, 1 late, none dropped", l)
	}

	arm(30 * clock.Millisecond)
	c.runUntil(30*clock.Millisecond+DefaultMaxLag+clock.Millisecond, 30*clock.Millisecond+DefaultMaxLag+clock.Millisecond)
	if l := c.Lag(); l.Max != DefaultMaxLag+clock.Millisecond || l.Late != 2 || l.Dropped != 1 {
		t.Fatalf("MaxLag + 1 ms late: %+v; want Max 6 ms, 2 late, 1 dropped", l)
	}

	// A timer run early (earlyRun) is not late.
	arm(50 * clock.Millisecond)
	c.runUntil(50*clock.Millisecond-clock.Microsecond, 50*clock.Millisecond)
	if l := c.Lag(); l.Late != 2 || l.Max != DefaultMaxLag+clock.Millisecond {
		t.Fatalf("early run counted: %+v", l)
	}
}
