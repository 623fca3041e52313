package main

import (
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestLoopLagWarning: perf says once, after its table, that the daemons'
// lag touched its figures: time lost (loop_lag_dropped rose), or, in a
// latency test, a pass 1 ms late (loop_late rose); and how late.
func TestLoopLagWarning(t *testing.T) {
	const (
		lost = " more than 5 ms behind, time the lab lost): its rates read low and its ACK timers, XOFFs and CNPs ran that late; the machine is short of CPU for this lab (see time_dilation in docs/lab-file.md), or a daemon was stopped (kill -STOP, a debugger) for that long"
		lat  = " 1 ms or more): the latencies include that scheduling delay; the machine is short of CPU for this lab (see time_dilation in docs/lab-file.md), or a daemon was stopped (kill -STOP, a debugger) for that long"
	)
	s := func(node string, late, dropped, maxNs uint64) loopLagSample {
		return loopLagSample{node, late, dropped, maxNs}
	}
	for _, c := range []struct {
		name          string
		before, after []loopLagSample
		lat           bool
		want          string
	}{
		{"on time",
			[]loopLagSample{s("h1", 0, 0, 200e3), s("h2", 3, 0, 5e6), s("sw1", 0, 0, 0)},
			[]loopLagSample{s("h1", 0, 0, 900e3), s("h2", 3, 0, 5e6), s("sw1", 0, 0, 0)}, true, ""},
		{"late but caught up: a bandwidth test's rates hold",
			[]loopLagSample{s("h1", 0, 0, 0)},
			[]loopLagSample{s("h1", 200, 0, 2.4e6)}, false, ""},
		{"late: a latency test's samples take it",
			[]loopLagSample{s("h1", 0, 0, 0)},
			[]loopLagSample{s("h1", 2, 0, 1.54e6)}, true,
			"emulab perf: the lab's daemons ran up to 1.5 ms late during this run (h1: 2 times" + lat},
		{"time lost, the maximum this run's",
			[]loopLagSample{s("h1", 0, 0, 200e3), s("h2", 0, 0, 0), s("sw1", 2, 0, 4e6)},
			[]loopLagSample{s("h1", 1, 0, 1.5e6), s("h2", 0, 0, 0), s("sw1", 38, 7, 342.4e6)}, false,
			"emulab perf: the lab's daemons ran up to 342 ms late during this run (h1, sw1: 7 times" + lost},
		{"time lost once, short of an earlier maximum",
			[]loopLagSample{s("h1", 5, 1, 80e6)},
			[]loopLagSample{s("h1", 6, 2, 80e6)}, false,
			"emulab perf: the lab's daemons ran late during this run, at most 80 ms since they started (h1: once" + lost},
		{"restarted daemon counts from zero",
			[]loopLagSample{s("sw1", 9, 3, 50e6)},
			[]loopLagSample{s("sw1", 1, 1, 6e6)}, false,
			"emulab perf: the lab's daemons ran up to 6.0 ms late during this run (sw1: once" + lost},
		{"not read before: not judged",
			nil,
			[]loopLagSample{s("sw1", 4, 4, 30e6)}, false, ""},
	} {
		if got := loopLagWarning(c.before, c.after, c.lat); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestLoopLagOf: a switch reports its loop on every port, an emunic with
// its transport's counters (or, older, its port's).
func TestLoopLagOf(t *testing.T) {
	sw := &lab.DaemonCounters{Ports: []lab.PortCounterSet{{Port: "p1", Counters: map[string]uint64{"loop_late": 3, "loop_lag_max_ns": 7e6}}}}
	if got, ok := loopLagOf("sw1", lab.KindSwitch, sw); !ok || got != (loopLagSample{"sw1", 3, 0, 7e6}) {
		t.Errorf("switch: %+v %v", got, ok)
	}
	nic := &lab.DaemonCounters{Ports: []lab.PortCounterSet{{Port: "eth0", Counters: map[string]uint64{"loop_late": 1}}},
		Transport: map[string]uint64{"loop_late": 2, "loop_lag_max_ns": 4e6}}
	if got, ok := loopLagOf("h1", lab.KindNIC, nic); !ok || got != (loopLagSample{"h1", 2, 0, 4e6}) {
		t.Errorf("nic: %+v %v", got, ok)
	}
	if _, ok := loopLagOf("h1", lab.KindNIC, &lab.DaemonCounters{}); ok {
		t.Error("a daemon without loop counters read as on time")
	}
}
