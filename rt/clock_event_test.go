package rt

import (
	"testing"
	"time"

	"github.com/emufabric/emufabric/clock"
)

// TestClockEventTime: within one loop event Now does not advance, however
// long the event takes; the next event reads the wall clock again.
func TestClockEventTime(t *testing.T) {
	l := runLoop(t, 1)
	clk := l.Clock()
	res := make(chan [2]clock.Time, 1)
	l.Post(func() {
		a := clk.Now()
		time.Sleep(2 * time.Millisecond)
		res <- [2]clock.Time{a, clk.Now()}
	})
	r := <-res
	if r[0] != r[1] {
		t.Fatalf("Now moved within an event: %v then %v", r[0], r[1])
	}
	next := make(chan clock.Time, 1)
	l.Post(func() { next <- clk.Now() })
	if n := <-next; n < r[0]+2*clock.Millisecond {
		t.Fatalf("next event's Now %v, want >= %v (the first event slept 2 ms)", n, r[0]+2*clock.Millisecond)
	}
}

// TestClockSettle: a timer armed during an event and due by its end runs
// right after that event, before the next one, at its due time, without
// the alarm (which stays unarmed).
func TestClockSettle(t *testing.T) {
	l := runLoop(t, 1)
	clk := l.Clock()
	var ran bool
	var ranAt, due clock.Time
	tm := clk.NewTimer(func() { ran, ranAt = true, clk.Now() })
	l.Post(func() {
		due = clk.Now()
		tm.Reset(due)
		if ran {
			t.Error("timer ran inside the event that armed it")
		}
	})
	check := make(chan string, 1)
	l.Post(func() {
		switch {
		case !ran:
			check <- "timer due at the end of the previous event has not run"
		case ranAt != due:
			check <- "callback's Now is not the due time"
		case clk.wakeAt != clock.Never:
			check <- "alarm armed for a timer that already ran"
		default:
			check <- ""
		}
	})
	if msg := <-check; msg != "" {
		t.Fatal(msg)
	}
}
