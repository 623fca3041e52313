package rt

import (
	"testing"
	"time"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// TestDelayLineDilated: a delay counts in the lab's time, and the early
// release a timer's coarseness asks for is the wall clock's, not the
// lab's. With time dilation 10, 200 us of lab delay is 2 ms of wall time,
// and a frame may go at most ReleaseSlack (wall) before that. Before, the
// slack was taken in the lab's time, ten times as long on the wall: the
// frame went after about 1.5 ms.
func TestDelayLineDilated(t *testing.T) {
	clk := NewClock(10)
	l := NewLoop(clk)
	go l.Run()
	defer l.Close()
	const delay = 200 * clock.Microsecond
	got := make(chan time.Time, 1)
	var start time.Time
	pool := frame.NewPool()
	l.Post(func() {
		d := NewDelayLine(clk, PacerConfig{Rate: Unpaced, Delay: delay}, func(f *frame.Frame, _, _ clock.Time) {
			f.Put()
			got <- time.Now()
		})
		start = time.Now()
		d.Push(clk.Now(), pool.Get(64), 0)
	})
	var at time.Time
	select {
	case at = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the frame never left the wire")
	}
	wall := 10 * delay.Duration()
	if el := at.Sub(start); el < wall-ReleaseSlack.Duration() {
		t.Errorf("200 us of lab delay at dilation 10 took %v of wall time, want at least %v", el, wall-ReleaseSlack.Duration())
	}
}
