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

// TestClockTimersBeforeEvent: a timer the wall clock has passed runs
// before the next received batch or posted function, at its own due time,
// however the loop picks between the alarm and the event: handled first,
// the event would move Now to the wall clock and the timer would run late
// in virtual time (a serialization timer would lose the difference).
func TestClockTimersBeforeEvent(t *testing.T) {
	clk := NewClock(1)
	clk.SetMaxLag(clock.Never / 4) // a stalled machine must not shorten the replay
	l := NewLoop(clk)
	go l.Run()
	defer l.Close()
	for round := range 20 {
		type seen struct{ due, ran, event clock.Time }
		res := make(chan seen, 1)
		var s seen
		tm := clk.NewTimer(func() { s.ran = clk.Now() })
		l.Post(func() {
			// Armed for 100 us from now; the loop stays in this event for
			// 2 ms, so the timer is overdue when the next event is ready.
			s.due = clk.Now() + 100*clock.Microsecond
			tm.Reset(s.due)
			time.Sleep(2 * time.Millisecond)
		})
		l.Post(func() {
			s.event = clk.Now()
			res <- s
		})
		r := <-res
		if r.ran != r.due {
			t.Fatalf("round %d: the overdue timer ran at %v, want its due time %v (the event after it is at %v)", round, r.ran, r.due, r.event)
		}
		if r.event < r.due {
			t.Fatalf("round %d: the event at %v is before the timer's %v", round, r.event, r.due)
		}
	}
}
