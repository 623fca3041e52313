package lab

import (
	"fmt"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// manualClock is a clock whose time moves only by advance, running the
// timers that fall due in time order.
type manualClock struct {
	now    clock.Time
	timers []*manualTimer
}

type manualTimer struct {
	c     *manualClock
	f     func()
	at    clock.Time
	armed bool
}

func (c *manualClock) Now() clock.Time { return c.now }
func (c *manualClock) NewTimer(f func()) clock.Timer {
	t := &manualTimer{c: c, f: f}
	c.timers = append(c.timers, t)
	return t
}
func (t *manualTimer) Reset(at clock.Time) { t.at, t.armed = at, true }
func (t *manualTimer) Stop() bool {
	was := t.armed
	t.armed = false
	return was
}
func (t *manualTimer) When() (clock.Time, bool) { return t.at, t.armed }

func (c *manualClock) advance(to clock.Time) {
	for {
		var next *manualTimer
		for _, t := range c.timers {
			if t.armed && t.at <= to && (next == nil || t.at < next.at) {
				next = t
			}
		}
		if next == nil {
			c.now = to
			return
		}
		c.now, next.armed = next.at, false
		next.f()
	}
}

// TestScheduleRoundTrip: a lab file's schedule survives the link op's
// form exactly, and armed on a clock it changes the state at each step's
// time counted from when it was armed.
func TestScheduleRoundTrip(t *testing.T) {
	evs := []LinkEvent{{At: 0, Up: false}, {At: 1500 * clock.Microsecond, Up: true}, {At: 2*clock.Millisecond + 3, Up: false}}
	got, err := ParseSchedule(ScheduleSteps(evs))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("%d steps back, want %d", len(got), len(evs))
	}
	for i := range evs {
		if got[i] != evs[i] {
			t.Errorf("step %d: %+v, want %+v", i, got[i], evs[i])
		}
	}

	c := &manualClock{now: 7 * clock.Millisecond} // armed at 7 ms: steps count from there
	var seen []string
	s := ArmLinkSchedule(c, evs, func(up bool) { seen = append(seen, c.now.String()+map[bool]string{true: " up", false: " down"}[up]) })
	if s.Pending() != 3 {
		t.Fatalf("pending %d, want 3", s.Pending())
	}
	c.advance(8600 * clock.Microsecond)
	if s.Pending() != 1 {
		t.Errorf("pending %d after two steps, want 1", s.Pending())
	}
	s.Stop() // a new schedule replaces this one: the third step never runs
	c.advance(20 * clock.Millisecond)
	want := []string{(7 * clock.Millisecond).String() + " down", (8500 * clock.Microsecond).String() + " up"}
	if strings.Join(seen, ", ") != strings.Join(want, ", ") {
		t.Errorf("changes %q, want %q", seen, want)
	}
	var none *LinkSchedule
	none.Stop()
	if none.Pending() != 0 {
		t.Error("a nil schedule has steps pending")
	}
}

// TestParseScheduleErrors: each bad step is refused with its index and
// field.
func TestParseScheduleErrors(t *testing.T) {
	for _, c := range []struct {
		steps []ScheduleStep
		want  string
	}{
		{[]ScheduleStep{{"1ms", "down"}, {"1ms", "up"}}, "schedule[1].after \"1ms\": not after"},
		{[]ScheduleStep{{"2ms", "down"}, {"1ms", "up"}}, "schedule[1].after \"1ms\": not after"},
		{[]ScheduleStep{{"-1ms", "down"}}, "schedule[0].after"},
		{[]ScheduleStep{{"10", "down"}}, "schedule[0].after: time \"10\": needs a unit"},
		{[]ScheduleStep{{"1ms", "sideways"}}, "schedule[0].state \"sideways\": up or down"},
		{[]ScheduleStep{{"", "up"}}, "schedule[0].after"},
	} {
		_, err := ParseSchedule(c.steps)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.steps, err, c.want)
		}
	}
}

// TestScheduleBeyondTheClock: a step later than the clock can count
// (ParseTime reads up to clock.Never) never runs; the sum of the arming
// time and the step must not wrap to a time in the past.
func TestScheduleBeyondTheClock(t *testing.T) {
	evs, err := ParseSchedule([]ScheduleStep{{After: "9223372s", State: "down"}})
	if err != nil {
		t.Fatal(err)
	}
	c := &manualClock{now: 60 * clock.Millisecond}
	ran := false
	s := ArmLinkSchedule(c, evs, func(bool) { ran = true })
	c.advance(c.now + clock.Second)
	if ran || s.Pending() != 1 {
		t.Errorf("a step beyond the clock's range ran (%v) or is not pending (%d)", ran, s.Pending())
	}
	if at, _ := c.timers[0].When(); at != clock.Never {
		t.Errorf("armed for %v, want never", at)
	}
}

// TestShiftSchedule: a schedule armed later than its time 0 keeps its
// steps' times from time 0; those already due collapse into the last.
func TestShiftSchedule(t *testing.T) {
	ms := clock.Millisecond
	evs := []LinkEvent{{At: 1 * ms, Up: false}, {At: 2 * ms, Up: true}, {At: 5 * ms, Up: false}}
	for _, c := range []struct {
		by   clock.Time
		want []LinkEvent
	}{
		{0, evs},
		{500 * clock.Microsecond, []LinkEvent{{At: 500 * clock.Microsecond}, {At: 1500 * clock.Microsecond, Up: true}, {At: 4500 * clock.Microsecond}}},
		{1 * ms, []LinkEvent{{At: 0}, {At: 1 * ms, Up: true}, {At: 4 * ms}}},
		{3 * ms, []LinkEvent{{At: 0, Up: true}, {At: 2 * ms}}},
		{9 * ms, []LinkEvent{{At: 0}}},
	} {
		got := ShiftSchedule(evs, c.by)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("shift by %v: %v, want %v", c.by, got, c.want)
		}
		if _, err := ParseSchedule(ScheduleSteps(got)); err != nil {
			t.Errorf("shift by %v: %v", c.by, err)
		}
	}
	if evs[0].At != ms {
		t.Error("ShiftSchedule changed its input")
	}
}

// TestScheduleChange: the link op's policy over a port's schedule, one
// for both daemons: a schedule replaces, an empty one cancels, a state set
// by hand cancels what is pending, and anything else leaves it.
func TestScheduleChange(t *testing.T) {
	c := &manualClock{}
	var states []bool
	apply := func(up bool) { states = append(states, up) }
	two := []LinkEvent{{At: clock.Millisecond}, {At: 2 * clock.Millisecond, Up: true}}

	s, note := (*LinkSchedule)(nil).Change(c, two, false, apply)
	if s.Pending() != 2 || note != "schedule of 2 step(s) armed" {
		t.Fatalf("armed: %d pending, %q", s.Pending(), note)
	}
	if s2, note := s.Change(c, nil, false, apply); s2 != s || note != "" {
		t.Errorf("a rate change touched the schedule: %q", note)
	}
	s, note = s.Change(c, nil, true, apply)
	if s != nil || note != "set by hand: cancels the schedule's 2 pending step(s)" {
		t.Errorf("by hand: %v, %q", s, note)
	}
	if s2, note := s.Change(c, nil, true, apply); s2 != nil || note != "" {
		t.Errorf("by hand with nothing pending: %q", note)
	}
	s, _ = s.Change(c, two, false, apply)
	s, note = s.Change(c, []LinkEvent{}, false, apply)
	if s != nil || note != "schedule cancelled" {
		t.Errorf("cancel: %v, %q", s, note)
	}
	c.advance(10 * clock.Millisecond)
	if len(states) != 0 {
		t.Errorf("stopped steps ran: %v", states)
	}
}
