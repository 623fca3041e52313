package sim

import (
	"errors"

	"github.com/emufabric/emufabric/clock"
)

// ErrEventBudget ends a run that fired more events than Options.EventBudget.
var ErrEventBudget = errors.New("sim: event budget exhausted")

// timer is one re-armable event. It sits in the scheduler's heap at index
// idx while armed (idx == -1 otherwise), so Reset and Stop are O(log n) and
// allocate nothing.
type timer struct {
	s   *sched
	at  clock.Time
	seq uint64 // arming order: ties at the same picosecond fire FIFO
	idx int
	f   func()
}

// sched is the event queue: a binary min-heap of armed timers ordered by
// (at, seq). The sequence number makes the order total, so a run never
// depends on heap internals.
type sched struct {
	now    clock.Time
	seq    uint64
	heap   []*timer
	events uint64
	// err, set by fail, stops the run: an event found the model
	// unable to go on (say, a flow that could not connect).
	err error
}

// fail stops the run with err after the current event.
func (s *sched) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

var _ clock.Clock = (*sched)(nil)
var _ clock.Timer = (*timer)(nil)

func (s *sched) Now() clock.Time { return s.now }

// NewTimer returns a stopped timer calling f when it fires.
func (s *sched) NewTimer(f func()) clock.Timer { return s.newTimer(f) }

func (s *sched) newTimer(f func()) *timer { return &timer{s: s, idx: -1, f: f} }

// Reset arms t at the absolute time at; a time in the past fires at the
// current time (after the events already due now).
func (t *timer) Reset(at clock.Time) {
	s := t.s
	if at < s.now {
		at = s.now
	}
	t.at = at
	s.seq++
	t.seq = s.seq
	if t.idx >= 0 {
		// Re-arming: the key moved either way.
		if !s.up(t.idx) {
			s.down(t.idx)
		}
		return
	}
	t.idx = len(s.heap)
	s.heap = append(s.heap, t)
	s.up(t.idx)
}

// Stop disarms t and reports whether it was armed.
func (t *timer) Stop() bool {
	if t.idx < 0 {
		return false
	}
	t.s.remove(t.idx)
	return true
}

// When reports the arming time.
func (t *timer) When() (clock.Time, bool) {
	if t.idx < 0 {
		return 0, false
	}
	return t.at, true
}

func less(a, b *timer) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (s *sched) swap(i, j int) {
	h := s.heap
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}

// up moves element i towards the root; it reports whether it moved.
func (s *sched) up(i int) bool {
	moved := false
	h := s.heap
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			break
		}
		s.swap(i, p)
		i = p
		moved = true
	}
	return moved
}

func (s *sched) down(i int) {
	h := s.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		s.swap(i, m)
		i = m
	}
}

func (s *sched) remove(i int) {
	h := s.heap
	last := len(h) - 1
	t := h[i]
	if i != last {
		s.swap(i, last)
	}
	h[last] = nil
	s.heap = h[:last]
	t.idx = -1
	if i != last {
		if !s.up(i) {
			s.down(i)
		}
	}
}

// runUntil fires every event due at or before until, in (time, arming)
// order, then sets the clock to until. It stops early with ErrEventBudget
// once the scheduler has fired budget events in total.
func (s *sched) runUntil(until clock.Time, budget uint64) error {
	for len(s.heap) > 0 {
		t := s.heap[0]
		if t.at > until {
			break
		}
		if s.events >= budget {
			return ErrEventBudget
		}
		s.remove(0)
		s.now = t.at
		s.events++
		t.f()
		if s.err != nil {
			return s.err
		}
	}
	if until > s.now {
		s.now = until
	}
	return nil
}
