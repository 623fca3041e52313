package lab

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// TestDefaultSampleInterval: the default holds ten of the largest frames
// of the lab's slowest link, so a flow's samples in flow_rates.csv read
// its rate. Before, examples/two-hosts.yaml (200 us, 100G, MTU 4200) got
// 200 ns, less than one 4 KiB frame (339 ns), and its flow read 0 or
// 163.84 Gb/s.
func TestDefaultSampleInterval(t *testing.T) {
	const us = clock.Microsecond
	for _, c := range []struct {
		name, defaults, sim string
		want                clock.Time
	}{
		{"two-hosts", "{rate: 100G, mtu: 4200}", "{duration: 200us}", 5 * us},         // 10 x 339.36 ns, rounded up
		{"long-run", "{rate: 100G, mtu: 4200}", "{duration: 100ms}", 100 * us},        // duration / 1000
		{"mtu-1500", "{rate: 100G, mtu: 1500}", "{duration: 200us}", 2 * us},          // 10 x 123.36 ns
		{"slow-link-short-run", "{rate: 1G, mtu: 9000}", "{duration: 1ms}", 100 * us}, // 10 x 72.3 us, but 10 samples
	} {
		t.Run(c.name, func(t *testing.T) {
			y := strings.Replace(strings.Replace(base, "{rate: 100G, delay: 1us, mtu: 4200}", c.defaults, 1), "sim: {duration: 1ms}", "sim: "+c.sim, 1)
			s, err := Parse("t.yaml", []byte(y))
			if err != nil {
				t.Fatal(err)
			}
			if s.Sim.SampleInterval != c.want {
				t.Errorf("sample interval %v, want %v", s.Sim.SampleInterval, c.want)
			}
			if len(s.Warnings) != 0 {
				t.Errorf("warnings %v", s.Warnings)
			}
		})
	}
}

// TestSampleIntervalWarning: a sample_interval shorter than one frame of a
// flow's link is legal (queue samples may want it) but its flow rates are
// not rates: the file, line and field are named.
func TestSampleIntervalWarning(t *testing.T) {
	y := replace("sim: {duration: 1ms}", "sim:\n  duration: 200us\n  sample_interval: 200ns\n")
	s, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	want := "t.yaml:23: sim.sample_interval: 200ns is shorter than one frame on the link h1:eth0 - sw1:p1 (4242 bytes on the wire at 100G: 339.36ns): " +
		"a flow's samples in flow_rates.csv would read 0 or a whole frame, not its rate; take 5us or more (10 frames), or leave it out for the default"
	if len(s.Warnings) != 1 || s.Warnings[0].Error() != want {
		t.Errorf("warnings %v\nwant %s", s.Warnings, want)
	}
	y = replace("sim: {duration: 1ms}", "sim:\n  duration: 200us\n  sample_interval: 400ns\n")
	if s, err = Parse("t.yaml", []byte(y)); err != nil || len(s.Warnings) != 0 {
		t.Errorf("400ns (more than a frame): %v %v", err, s.Warnings)
	}
}

func TestRoundStep(t *testing.T) {
	for in, want := range map[clock.Time]clock.Time{0: 1, 1: 1, 3: 5, 10: 10, 11: 20, 3393600: 5000000, 1233600: 2000000, 500: 500, 501: 1000} {
		if got := roundStep(in); got != want {
			t.Errorf("roundStep(%d) = %d, want %d", in, got, want)
		}
	}
}
