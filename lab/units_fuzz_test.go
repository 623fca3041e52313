package lab

import (
	"strings"
	"testing"
)

// FuzzUnits feeds arbitrary text to the value parsers that also read what
// arrives over the daemons' control sockets and the command line (rates,
// sizes, times, link schedules), not only the lab file: no panic, and a
// value read back from its own formatting is the same value.
func FuzzUnits(f *testing.F) {
	for _, s := range []string{
		"100G", "25Gbps", "1.5M", "0", "-1G", "99999999999999999999T", "1e400G", "NaN", "+Inf", "0x10G",
		"64KiB", "1MB", "18446744073709551615", "18446744073709551616B",
		"1us", "2.5ms", "100ns", "1ps", "-1us", "9223372036854775807ps", "1h", "1e-30s",
		"1s,down;2s,up", "0,up", ";", ",,", "1s,sideways",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRate(s); err == nil && r > 0 {
			if back, err := ParseRate(FormatRate(r)); err != nil || back != r {
				t.Errorf("rate %q = %d, formatted %q, read back %d, %v", s, r, FormatRate(r), back, err)
			}
		}
		if n, err := ParseSize(s); err == nil {
			if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
				t.Errorf("size %q = %d, formatted %q, read back %d, %v", s, n, FormatSize(n), back, err)
			}
		}
		if d, err := ParseTime(s); err == nil {
			if d < 0 {
				t.Errorf("time %q = %d: negative", s, d)
			}
			if back, err := ParseTime(FormatTime(d)); err != nil || back != d {
				t.Errorf("time %q = %d, formatted %q, read back %d, %v", s, d, FormatTime(d), back, err)
			}
		}
		if p, err := ParseProbability(s); err == nil && !(p >= 0 && p <= 1) {
			t.Errorf("probability %q = %v", s, p)
		}
		// A schedule as the link op carries it: "after,state" steps.
		var steps []ScheduleStep
		for _, st := range strings.Split(s, ";") {
			after, state, _ := strings.Cut(st, ",")
			steps = append(steps, ScheduleStep{After: after, State: state})
		}
		if evs, err := ParseSchedule(steps); err == nil {
			for i := 1; i < len(evs); i++ {
				if evs[i].At <= evs[i-1].At {
					t.Errorf("schedule %q: step %d at %d is not after step %d at %d", s, i, evs[i].At, i-1, evs[i-1].At)
				}
			}
		}
	})
}
