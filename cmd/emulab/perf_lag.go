package main

import (
	"fmt"
	"strings"

	"github.com/emufabric/emufabric/lab"
)

// A perf run on a machine short of CPU measures the machine: the daemons'
// loops run their timers late (rt.Lag), the Clock replays them so rates
// hold on average, but a switch's XOFF, a NIC's ACKs and CNPs go that
// late, and bandwidth, latency and their spread say more about the
// scheduler than about the fabric. perf reads the loop counters of the
// daemons on the way (SRC's and DST's emunics, the lab's switches) before
// and after the run and says so after its table when they ran late.

// loopLagSample is one daemon's loop counters (loop_late, loop_lag_max_ns).
type loopLagSample struct {
	Node        string
	Late, MaxNs uint64
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
	return loopLagSample{Node: node, Late: late, MaxNs: m["loop_lag_max_ns"]}, true
}

// loopLagWarning is the line perf prints after its table when a daemon's
// loop_late rose during the run ("" when none did), with how late: the
// maximum if it rose during the run (it is then this run's); else the
// run's passes were 1 ms or more late and no later than the daemon's
// maximum since it started, and the line says that. A daemon missing from
// before is not judged; one whose counters went down restarted, and
// counts from zero.
func loopLagWarning(before, after []loopLagSample) string {
	prev := map[string]loopLagSample{}
	for _, s := range before {
		prev[s.Node] = s
	}
	var nodes []string
	var late, runMax, everMax uint64
	for _, s := range after {
		b, ok := prev[s.Node]
		if !ok {
			continue
		}
		if s.Late < b.Late {
			b = loopLagSample{}
		}
		if s.Late == b.Late {
			continue
		}
		nodes = append(nodes, s.Node)
		late += s.Late - b.Late
		if s.MaxNs > b.MaxNs {
			runMax = max(runMax, s.MaxNs)
		}
		everMax = max(everMax, s.MaxNs)
	}
	if late == 0 {
		return ""
	}
	how := fmt.Sprintf("up to %s late during this run (%s: %s 1 ms or more", lagMs(runMax), strings.Join(nodes, ", "), times(late))
	if runMax == 0 {
		how = fmt.Sprintf("1 ms or more late during this run (%s: %s, at most %s since they started", strings.Join(nodes, ", "), times(late), lagMs(everMax))
	}
	return "emulab perf: the lab's daemons ran " + how + "; the machine is overloaded): rates and latencies are skewed; see time_dilation in docs/lab-file.md"
}

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
