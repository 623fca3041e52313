package lab

import (
	"fmt"
	"time"

	"github.com/emufabric/emufabric/clock"
)

// scheduleTimeout bounds one daemon's answer to a schedule.
const scheduleTimeout = 5 * time.Second

// armSchedules (UpOptions.Schedules) hands every link's schedule (the lab
// file's `schedule:`) to the daemon that owns the link's switch side, or its first end's when
// neither end is a switch, so the steps count from the moment the lab is
// up: in the simulator they count from time 0, and a real lab's time 0 is
// when up has brought every link up. The daemon runs it on its own clock
// (time_dilation included) after emulab has exited.
func (l *Lab) armSchedules(plan *upPlan, say func(string, ...any)) error {
	daemons := make(map[*Node]*planDaemon, len(plan.nodes))
	for _, pn := range plan.nodes {
		daemons[pn.node] = pn.daemon
	}
	// Every link's steps count from one moment, t0, although each daemon
	// takes its schedule a request later than the one before: each link's
	// steps are sent shifted by the time elapsed since t0 (in the lab's
	// time), so cuts on different links keep their order and spacing.
	t0 := time.Now()
	dilation := clock.Time(l.Spec.Dilation(0))
	for _, lk := range l.Spec.Links {
		if len(lk.Schedule) == 0 {
			continue
		}
		elapsed := clock.Time(time.Since(t0).Nanoseconds()) * clock.Nanosecond / dilation
		end := lk.A
		if end.Node.Kind != KindSwitch && lk.B.Node.Kind == KindSwitch {
			end = lk.B
		}
		d := daemons[end.Node]
		if d == nil {
			// Only a NIC without a daemon (--hosts tap) lacks one, and its
			// link's other end is then a switch.
			return fmt.Errorf("%s: line %d: link %s-%s: schedule: no daemon owns %s", l.Spec.File, lk.Line, lk.A, lk.B, end)
		}
		if _, err := SetLink(d.control, LinkChange{Port: end.Name, Schedule: ScheduleSteps(ShiftSchedule(lk.Schedule, elapsed))}, scheduleTimeout); err != nil {
			return fmt.Errorf("%s: line %d: link %s-%s: schedule: %w", l.Spec.File, lk.Line, lk.A, lk.B, err)
		}
		say("link %s-%s: schedule of %d change(s) armed on %s", lk.A, lk.B, len(lk.Schedule), end)
	}
	return nil
}
