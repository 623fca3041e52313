package lab

import (
	"fmt"

	"github.com/emufabric/emufabric/clock"
)

// ScheduleStep is one state change of a link's schedule as the daemons'
// link op carries it (LinkChange.Schedule): the lab file's
// `schedule: [{at, state}]` of a link, sent by `emulab up` to the daemon
// that owns the link once the lab is up, whose clock then counts After
// from the moment it took the schedule (in lab time: a lab with
// time_dilation N runs it N times slower, as its traffic).
type ScheduleStep struct {
	After string `json:"after"` // a time ParseTime reads
	State string `json:"state"` // "up" or "down"
}

// ScheduleSteps turns a link's schedule into the link op's steps.
func ScheduleSteps(evs []LinkEvent) []ScheduleStep {
	out := make([]ScheduleStep, 0, len(evs))
	for _, ev := range evs {
		st := "down"
		if ev.Up {
			st = "up"
		}
		out = append(out, ScheduleStep{After: FormatTime(ev.At), State: st})
	}
	return out
}

// ShiftSchedule is evs counted from by later: every step by earlier. The
// steps already due then collapse into their last one, at 0 (it says the
// state the link is in by now).
func ShiftSchedule(evs []LinkEvent, by clock.Time) []LinkEvent {
	out := make([]LinkEvent, 0, len(evs))
	for _, ev := range evs {
		ev.At -= by
		if ev.At <= 0 {
			ev.At = 0
			if len(out) > 0 {
				out = out[:0] // a later step already due supersedes it
			}
		}
		out = append(out, ev)
	}
	return out
}

// ParseSchedule checks a link op's schedule as the lab file's is checked:
// every time a valid, non-negative time later than the step before it,
// every state up or down. Errors name the step.
func ParseSchedule(steps []ScheduleStep) ([]LinkEvent, error) {
	out := make([]LinkEvent, 0, len(steps))
	for i, s := range steps {
		at, err := ParseTime(s.After)
		if err != nil {
			return nil, fmt.Errorf("schedule[%d].after: %w", i, err)
		}
		if at < 0 {
			return nil, fmt.Errorf("schedule[%d].after %q: must not be negative", i, s.After)
		}
		if i > 0 && at <= out[i-1].At {
			return nil, fmt.Errorf("schedule[%d].after %q: not after the step before it (%v)", i, s.After, out[i-1].At)
		}
		if s.State != "up" && s.State != "down" {
			return nil, fmt.Errorf("schedule[%d].state %q: up or down", i, s.State)
		}
		out = append(out, LinkEvent{At: at, Up: s.State == "up"})
	}
	return out, nil
}

// LinkSchedule arms a link schedule on a daemon's clock: apply runs on the
// clock's goroutine at each step's time from now. Stop cancels what has
// not run; a daemon holds one per port and stops it before arming a new
// one (a new schedule replaces the old).
type LinkSchedule struct {
	timers []clock.Timer
}

// ArmLinkSchedule arms evs on clk from now.
func ArmLinkSchedule(clk clock.Clock, evs []LinkEvent, apply func(up bool)) *LinkSchedule {
	s := &LinkSchedule{}
	now := clk.Now()
	for _, ev := range evs {
		up := ev.Up
		t := clk.NewTimer(func() { apply(up) })
		at := now + ev.At
		if at < now {
			at = clock.Never // beyond the clock's range: never
		}
		t.Reset(at)
		s.timers = append(s.timers, t)
	}
	return s
}

// Change applies a link op to a port's schedule s (nil: none) and returns
// the schedule the port keeps, with a note for the daemon's log ("" when
// nothing changed). A schedule in the op (evs non-nil, from ParseSchedule)
// replaces s, an empty one cancelling it; otherwise a state set by hand
// (byHand) takes the link over and cancels the steps s still has, since a
// later step would undo what was just asked for. Both daemons' link ops
// (emuswitch, emunic) go through it, so the policy is one. On the clock's
// goroutine.
func (s *LinkSchedule) Change(clk clock.Clock, evs []LinkEvent, byHand bool, apply func(up bool)) (*LinkSchedule, string) {
	switch {
	case evs != nil:
		s.Stop()
		if len(evs) == 0 {
			return nil, "schedule cancelled"
		}
		return ArmLinkSchedule(clk, evs, apply), fmt.Sprintf("schedule of %d step(s) armed", len(evs))
	case byHand && s.Pending() > 0:
		note := fmt.Sprintf("set by hand: cancels the schedule's %d pending step(s)", s.Pending())
		s.Stop()
		return nil, note
	}
	return s, ""
}

// StepNote is the log line's text for a step that ran: the state and
// the steps left.
func (s *LinkSchedule) StepNote(up bool) string {
	st := "down"
	if up {
		st = "up"
	}
	return fmt.Sprintf("%s (schedule; %d step(s) left)", st, s.Pending())
}

// Stop cancels the steps that have not run; nil is a no-op.
func (s *LinkSchedule) Stop() {
	if s == nil {
		return
	}
	for _, t := range s.timers {
		t.Stop()
	}
}

// Pending is the number of steps still to run.
func (s *LinkSchedule) Pending() int {
	if s == nil {
		return 0
	}
	n := 0
	for _, t := range s.timers {
		if _, armed := t.When(); armed {
			n++
		}
	}
	return n
}
