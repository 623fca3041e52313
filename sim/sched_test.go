package sim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

func TestSchedulerOrder(t *testing.T) {
	s := &sched{}
	var got []int
	mk := func(id int) *timer { return s.newTimer(func() { got = append(got, id) }) }
	a, b, c, d := mk(1), mk(2), mk(3), mk(4)
	a.Reset(30)
	b.Reset(10)
	c.Reset(10) // same time as b, armed later: fires after b
	d.Reset(5)
	d.Reset(40) // re-armed later
	if !c.Stop() || c.Stop() {
		t.Fatal("Stop must report armed once")
	}
	c.Reset(10) // re-armed: now after b (later sequence)
	if at, ok := a.When(); !ok || at != 30 {
		t.Fatalf("When = %v, %v", at, ok)
	}
	if err := s.runUntil(35, 1<<40); err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 3, 1}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if s.Now() != 35 {
		t.Fatalf("now %v, want 35", s.Now())
	}
	if _, ok := a.When(); ok {
		t.Fatal("fired timer still armed")
	}
	// A timer in the past fires now, after what is already due now.
	e := mk(5)
	e.Reset(0)
	if at, _ := e.When(); at != 35 {
		t.Fatalf("past reset armed at %v", at)
	}
	if err := s.runUntil(100, 1<<40); err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 3, 1, 5, 4}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// TestSchedulerHeap drives random arm/re-arm/stop sequences and checks that
// events fire in (time, arming) order against a sorted reference.
func TestSchedulerHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := &sched{}
	type fired struct {
		at  clock.Time
		seq uint64
	}
	var log []fired
	var ts []*timer
	for i := 0; i < 500; i++ {
		var tm *timer
		tm = s.newTimer(func() { log = append(log, fired{s.now, tm.seq}) })
		ts = append(ts, tm)
	}
	for i := 0; i < 5000; i++ {
		tm := ts[r.IntN(len(ts))]
		if r.IntN(4) == 0 {
			tm.Stop()
		} else {
			tm.Reset(clock.Time(r.IntN(1000)))
		}
	}
	if err := s.runUntil(clock.Never-1, 1<<40); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(log); i++ {
		if log[i].at < log[i-1].at || (log[i].at == log[i-1].at && log[i].seq < log[i-1].seq) {
			t.Fatalf("event %d (%v, %d) before (%v, %d)", i, log[i].at, log[i].seq, log[i-1].at, log[i-1].seq)
		}
	}
	if len(s.heap) != 0 {
		t.Fatalf("%d timers left", len(s.heap))
	}
}

func TestSchedulerBudget(t *testing.T) {
	s := &sched{}
	var tm *timer
	n := 0
	tm = s.newTimer(func() { n++; tm.Reset(s.now) }) // livelock at one instant
	tm.Reset(0)
	if err := s.runUntil(clock.Second, 1000); err != ErrEventBudget {
		t.Fatalf("err %v, want budget exhausted", err)
	}
	if n != 1000 {
		t.Fatalf("fired %d, want 1000", n)
	}
}

func TestSchedulerZeroAlloc(t *testing.T) {
	s := &sched{}
	var tm *timer
	tm = s.newTimer(func() { tm.Reset(s.now + 10) })
	others := make([]*timer, 64)
	for i := range others {
		others[i] = s.newTimer(func() {})
		others[i].Reset(clock.Time(1000 + i))
	}
	tm.Reset(0)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range others {
			others[i].Reset(s.now + clock.Time(5000+i))
		}
		_ = s.runUntil(s.now+1000, 1<<40)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run, want 0", allocs)
	}
}

func BenchmarkEvents(b *testing.B) {
	s := &sched{}
	const n = 1024 // live timers, like a mid-size fabric
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < n; i++ {
		var tm *timer
		tm = s.newTimer(func() { tm.Reset(s.now + clock.Time(1+r.IntN(10000))) })
		tm.Reset(clock.Time(r.IntN(10000)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := s.events
	for s.events-start < uint64(b.N) {
		_ = s.runUntil(s.now+10000, start+uint64(b.N))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
