package rt

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/emufabric/emufabric/clock"
)

// TestTimerHeapOrder arms, re-arms and stops timers in random order and
// checks the heap pops them by (time, arming order).
const hour = 3600 * clock.Second

func TestTimerHeapOrder(t *testing.T) {
	c := NewClock(1)
	defer c.stop()
	rng := rand.New(rand.NewPCG(1, 2))
	timers := make([]*Timer, 200)
	for i := range timers {
		timers[i] = c.NewTimer(func() {}).(*Timer)
	}
	for range 2000 {
		tm := timers[rng.IntN(len(timers))]
		switch rng.IntN(3) {
		case 0, 1:
			tm.Reset(clock.Time(rng.IntN(50)) * hour)
		case 2:
			tm.Stop()
		}
	}
	type key struct {
		at  clock.Time
		seq uint64
	}
	var want []key
	for _, tm := range timers {
		if at, ok := tm.When(); ok {
			want = append(want, key{at, tm.seq})
		}
	}
	slices.SortFunc(want, func(a, b key) int {
		if a.at != b.at {
			return int((a.at - b.at) / hour)
		}
		return int(a.seq) - int(b.seq)
	})
	if len(want) != c.pending() {
		t.Fatalf("%d armed timers, heap holds %d", len(want), c.pending())
	}
	for i, w := range want {
		top := c.heap.t[0]
		if top.at != w.at || top.seq != w.seq {
			t.Fatalf("pop %d: got (%v, %d), want (%v, %d)", i, top.at, top.seq, w.at, w.seq)
		}
		c.heap.remove(0)
		if top.idx != -1 {
			t.Fatal("removed timer still has an index")
		}
	}
}

func TestDilationArithmetic(t *testing.T) {
	for _, n := range []int{0, 1, 10, 1000} {
		c := NewClock(n)
		c.stop()
		d := max(n, 1)
		if c.Dilation() != d {
			t.Fatalf("dilation %d: got %d", n, c.Dilation())
		}
		if got := c.fromWall(time.Millisecond); got != clock.Millisecond/clock.Time(d) {
			t.Errorf("N=%d: 1ms wall = %v virtual, want %v", n, got, clock.Millisecond/clock.Time(d))
		}
		if got := c.Wall(clock.Microsecond); got != time.Duration(d)*time.Microsecond {
			t.Errorf("N=%d: 1us virtual = %v wall", n, got)
		}
		// A time far in the past is due now; Never is never.
		if c.WallUntil(-clock.Second) != 0 {
			t.Errorf("N=%d: past time not due", n)
		}
		if c.WallUntil(clock.Never) < 100*365*24*time.Hour {
			t.Errorf("N=%d: Never is due", n)
		}
	}
}

// runLoop starts a loop and stops it at cleanup.
func runLoop(t *testing.T, dilation int) *Loop {
	t.Helper()
	l := NewLoop(NewClock(dilation))
	go l.Run()
	t.Cleanup(l.Close)
	return l
}

// TestLoopTimers: callbacks run on the loop goroutine in time order, a
// re-armed timer fires once at its new time, a stopped one never.
func TestLoopTimers(t *testing.T) {
	for _, n := range []int{1, 7} {
		l := runLoop(t, n)
		clk := l.Clock()
		var order []int
		done := make(chan struct{})
		var stopped, rearmed clock.Timer
		var firedAt clock.Time
		l.Post(func() {
			now := clk.Now()
			base := now + 200*clock.Microsecond
			for i := 4; i >= 0; i-- {
				i := i
				clk.NewTimer(func() { order = append(order, i) }).Reset(base + clock.Time(i)*100*clock.Microsecond)
			}
			stopped = clk.NewTimer(func() { t.Error("stopped timer fired") })
			stopped.Reset(base + 50*clock.Microsecond)
			rearmed = clk.NewTimer(func() {
				order = append(order, 99)
				firedAt = clk.Now()
				close(done)
			})
			rearmed.Reset(base) // moved later below: must fire once, last
			rearmed.Reset(base + clock.Millisecond)
			if !stopped.Stop() || stopped.Stop() {
				t.Error("Stop reports wrong armed state")
			}
		})
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("timers did not fire")
		}
		ok := make(chan bool)
		l.Post(func() {
			at, armed := rearmed.When()
			ok <- !armed && at == 0
		})
		if !<-ok {
			t.Error("fired timer still armed")
		}
		if want := []int{0, 1, 2, 3, 4, 99}; !slices.Equal(order, want) {
			t.Errorf("N=%d: order %v, want %v", n, order, want)
		}
		if firedAt == 0 {
			t.Error("no fire time")
		}
	}
}

// TestLoopTimerRearmFromCallback: a periodic timer re-arming itself in its
// callback (the PFC refresh, the DCQCN rate timer pattern) keeps firing.
func TestLoopTimerRearmFromCallback(t *testing.T) {
	l := runLoop(t, 1)
	clk := l.Clock()
	done := make(chan int)
	l.Post(func() {
		n := 0
		var tm clock.Timer
		tm = clk.NewTimer(func() {
			n++
			if n == 20 {
				done <- n
				return
			}
			tm.Reset(clk.Now() + 10*clock.Microsecond)
		})
		tm.Reset(0) // in the past: fires at once
	})
	select {
	case n := <-done:
		if n != 20 {
			t.Fatal(n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("periodic timer stalled")
	}
}

func TestLoopCloseBeforeRun(t *testing.T) {
	l := NewLoop(NewClock(1))
	l.Close() // must not wait for a Run that never started
	if l.Post(func() {}) {
		t.Fatal("Post accepted after Close")
	}
	l.Run() // returns at once
}

func BenchmarkTimerReset(b *testing.B) {
	c := NewClock(1)
	defer c.stop()
	ts := make([]clock.Timer, 64)
	for i := range ts {
		ts[i] = c.NewTimer(func() {})
		ts[i].Reset(clock.Time(i+1) * clock.Second)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ts[i%64].Reset(clock.Time(i%1000+100) * clock.Second)
		i++
	}
}

// TestClockCatchUp: a chain of timers each armed 10 us after the previous
// one's Now sees exactly its due time, however late the runtime wakes the
// loop (the replay bound is set out of reach), so 200 steps end exactly
// 2 ms after the start.
func TestClockCatchUp(t *testing.T) {
	c := NewClock(1)
	c.SetMaxLag(clock.Never / 4)
	l := NewLoop(c)
	go l.Run()
	defer l.Close()
	type result struct {
		start, end clock.Time
		bad        int
	}
	done := make(chan result, 1)
	l.Post(func() {
		var r result
		r.start = c.Now()
		n := 0
		var tm clock.Timer
		want := r.start + 10*clock.Microsecond
		tm = c.NewTimer(func() {
			if now := c.Now(); now != want {
				r.bad++
			}
			n++
			if n == 200 {
				r.end = c.Now()
				done <- r
				return
			}
			want = c.Now() + 10*clock.Microsecond
			tm.Reset(want)
		})
		tm.Reset(want)
	})
	select {
	case r := <-done:
		if r.bad != 0 {
			t.Errorf("%d callbacks saw a time other than their due time", r.bad)
		}
		if r.end-r.start != 2*clock.Millisecond {
			t.Errorf("200 steps of 10us took %v of virtual time", r.end-r.start)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("timer chain stalled")
	}
}

// TestClockMaxLag: with no replay allowed, a callback sees the wall clock
// (at least its due time), and Now never goes backwards.
func TestClockMaxLag(t *testing.T) {
	c := NewClock(1)
	c.SetMaxLag(0)
	l := NewLoop(c)
	go l.Run()
	defer l.Close()
	got := make(chan [2]clock.Time, 1)
	l.Post(func() {
		due := c.Now() - clock.Second // long overdue
		c.NewTimer(func() { got <- [2]clock.Time{due, c.Now()} }).Reset(due)
	})
	r := <-got
	if r[1] < r[0]+clock.Second {
		t.Fatalf("callback saw %v, due %v: replayed despite MaxLag 0", r[1], r[0])
	}
}
