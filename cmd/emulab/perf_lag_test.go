package main

import (
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestLoopLagWarning: perf says once, after its table, that the daemons on
// the way ran late during the run (loop_late rose), and how late.
func TestLoopLagWarning(t *testing.T) {
	const tail = "; the machine is overloaded): rates and latencies are skewed; see time_dilation in docs/lab-file.md"
	s := func(node string, late, maxNs uint64) loopLagSample { return loopLagSample{node, late, maxNs} }
	for _, c := range []struct {
		name          string
		before, after []loopLagSample
		want          string
	}{
		{"on time",
			[]loopLagSample{s("h1", 0, 200e3), s("h2", 3, 5e6), s("sw1", 0, 0)},
			[]loopLagSample{s("h1", 0, 900e3), s("h2", 3, 5e6), s("sw1", 0, 0)}, ""},
		{"late, the maximum this run's",
			[]loopLagSample{s("h1", 0, 200e3), s("h2", 0, 0), s("sw1", 2, 4e6)},
			[]loopLagSample{s("h1", 1, 1.5e6), s("h2", 0, 0), s("sw1", 38, 342.4e6)},
			"emulab perf: the lab's daemons ran up to 342 ms late during this run (h1, sw1: 37 times 1 ms or more" + tail},
		{"late once, short of an earlier maximum",
			[]loopLagSample{s("h1", 5, 80e6)},
			[]loopLagSample{s("h1", 6, 80e6)},
			"emulab perf: the lab's daemons ran 1 ms or more late during this run (h1: once, at most 80 ms since they started" + tail},
		{"small maximum",
			[]loopLagSample{s("h1", 0, 0)},
			[]loopLagSample{s("h1", 2, 1.54e6)},
			"emulab perf: the lab's daemons ran up to 1.5 ms late during this run (h1: 2 times 1 ms or more" + tail},
		{"restarted daemon counts from zero",
			[]loopLagSample{s("sw1", 9, 50e6)},
			[]loopLagSample{s("sw1", 1, 3e6)},
			"emulab perf: the lab's daemons ran up to 3.0 ms late during this run (sw1: once 1 ms or more" + tail},
		{"not read before: not judged",
			nil,
			[]loopLagSample{s("sw1", 4, 30e6)}, ""},
	} {
		if got := loopLagWarning(c.before, c.after); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestLoopLagOf: a switch reports its loop on every port, an emunic with
// its transport's counters (or, older, its port's).
func TestLoopLagOf(t *testing.T) {
	sw := &lab.DaemonCounters{Ports: []lab.PortCounterSet{{Port: "p1", Counters: map[string]uint64{"loop_late": 3, "loop_lag_max_ns": 7e6}}}}
	if got, ok := loopLagOf("sw1", lab.KindSwitch, sw); !ok || got != (loopLagSample{"sw1", 3, 7e6}) {
		t.Errorf("switch: %+v %v", got, ok)
	}
	nic := &lab.DaemonCounters{Ports: []lab.PortCounterSet{{Port: "eth0", Counters: map[string]uint64{"loop_late": 1}}},
		Transport: map[string]uint64{"loop_late": 2, "loop_lag_max_ns": 4e6}}
	if got, ok := loopLagOf("h1", lab.KindNIC, nic); !ok || got != (loopLagSample{"h1", 2, 4e6}) {
		t.Errorf("nic: %+v %v", got, ok)
	}
	if _, ok := loopLagOf("h1", lab.KindNIC, &lab.DaemonCounters{}); ok {
		t.Error("a daemon without loop counters read as on time")
	}
}
