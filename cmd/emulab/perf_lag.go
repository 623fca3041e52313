package main

import (
	"fmt"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/rt"
)

// A perf run on a machine short of CPU measures the machine: the daemons'
// loops run their timers late (rt.Lag). Up to rt.DefaultMaxLag (5 ms)
// the Clock replays what was due at its due time, so a bandwidth test's
// rates hold; beyond it the daemon loses the time (loop_lag_dropped), and
// rates read low while ACK timers, XOFFs and CNPs ran that late. A latency
// sample takes any lag in full. perf reads the loop counters of the daemons
// on the way (SRC's and DST's emunics, the lab's switches) before and
// after the run, and after its table says so when the lag touched the
// figures: time lost, or, for a latency test, any pass 1 ms late. A
// bandwidth run that only ran late is not flagged: emulab stats shows it.

// loopLagSample is one daemon's loop counters (loop_late,
// loop_lag_dropped, loop_lag_max_ns).
type loopLagSample struct {
	Node                 string
	Late, Dropped, MaxNs uint64
}

// loopLagOf reads a daemon's loop counters from its counters answer (a
// switch reports them on every port, an emunic with its transport's); ok
// is false for a daemon that does not report them.
func loopLagOf(node string, kind lab.NodeKind, c *lab.DaemonCounters) (loopLagSample, bool) {
	var m map[string]uint64
	switch {
	case kind != lab.KindSwitch:
		m = nicLoopCounters(c)
	case len(c.Ports) > 0:
		m = c.Ports[0].Counters
	}
	late, ok := m["loop_late"]
	if !ok {
		return loopLagSample{}, false
	}
	return loopLagSample{Node: node, Late: late, Dropped: m["loop_lag_dropped"], MaxNs: m["loop_lag_max_ns"]}, true
}

// loopLagWarning is the line perf prints after its table when the
// daemons' lag during the run touched its figures ("" otherwise): any
// daemon lost time (loop_lag_dropped rose), or, for a latency test (lat),
// ran 1 ms or more late (loop_late rose). How late: the maximum if it rose
// during the run (it is then this run's), else the daemons' maximum since
// they started, said as such. A daemon missing from before is not judged;
// one whose counters went down restarted, and counts from zero.
func loopLagWarning(before, after []loopLagSample, lat bool) string {
	prev := map[string]loopLagSample{}
	for _, s := range before {
		prev[s.Node] = s
	}
	var nodes []string
	var late, dropped, runMax, everMax uint64
	for _, s := range after {
		b, ok := prev[s.Node]
		if !ok {
			continue
		}
		if s.Late < b.Late || s.Dropped < b.Dropped {
			b = loopLagSample{}
		}
		if s.Late == b.Late && s.Dropped == b.Dropped {
			continue
		}
		nodes = append(nodes, s.Node)
		late += s.Late - b.Late
		dropped += s.Dropped - b.Dropped
		if s.MaxNs > b.MaxNs {
			runMax = max(runMax, s.MaxNs)
		}
		everMax = max(everMax, s.MaxNs)
	}
	if dropped == 0 && (!lat || late == 0) {
		return ""
	}
	how := "up to " + lagMs(runMax) + " late during this run"
	if runMax == 0 {
		how = "late during this run, at most " + lagMs(everMax) + " since they started"
	}
	who := strings.Join(nodes, ", ")
	if dropped > 0 {
		return fmt.Sprintf("emulab perf: the lab's daemons ran %s (%s: %s more than %s behind, time the lab lost): "+
			"its rates read low and its ACK timers, XOFFs and CNPs ran that late; "+lagCause,
			how, who, times(dropped), fmt.Sprintf("%g ms", float64(rt.DefaultMaxLag)/float64(clock.Millisecond)))
	}
	return fmt.Sprintf("emulab perf: the lab's daemons ran %s (%s: %s 1 ms or more): the latencies include that scheduling delay; "+
		lagCause, how, who, times(late))
}

// lagCause ends the warning with the two causes a loop's lag has: a
// machine short of CPU, which time_dilation answers, and a daemon that
// was stopped during the run (kill -STOP, Ctrl-Z, a debugger) and
// continued before perf read its state, which no dilation answers: its
// loop counts the stop as lag too (emulab stats names both alike).
const lagCause = "the machine is short of CPU for this lab (see time_dilation in docs/lab-file.md), " +
	"or a daemon was stopped (kill -STOP, a debugger) for that long"

// nicLoopCounters is where an emunic's answer has its loop's lag: the
// transport's counters (ethtool's port counters too).
func nicLoopCounters(c *lab.DaemonCounters) map[string]uint64 {
	if _, ok := c.Transport["loop_late"]; ok || len(c.Ports) == 0 {
		return c.Transport
	}
	return c.Ports[0].Counters
}

// lagMs renders a lag in nanoseconds as milliseconds: "342 ms", "1.5 ms".
func lagMs(ns uint64) string {
	ms := float64(ns) / 1e6
	if ms >= 10 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f ms", ms)
}

func times(n uint64) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
