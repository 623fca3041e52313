package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// every runs fn at start, start+period, ... while < end, on one re-armed
// timer.
func every(clk *manualClock, start, period, end clock.Time, fn func()) {
	var tm clock.Timer
	tm = clk.NewTimer(func() {
		fn()
		if next := clk.now + period; next < end {
			tm.Reset(next)
		}
	})
	tm.Reset(start)
}

// TestPFCWatchdog: a peer storms XOFF on port 1 (priority 3) from 1 ms to
// 40 ms. The watchdog detects within detection_time + POLL_INTERVAL,
// discards the stormed queue's traffic (tx) and the priority's arrivals on
// that port (rx), leaves the bystander path 2 -> 0 lossless and untouched,
// and restores after restoration_time without pauses (issue 3 check c).
func TestPFCWatchdog(t *testing.T) {
	const (
		det, rest, poll = 10 * clock.Millisecond, 10 * clock.Millisecond, 5 * clock.Millisecond
		stormStart      = 1 * clock.Millisecond
		stormEnd        = 40 * clock.Millisecond
	)
	for _, action := range []PFCWDAction{PFCWDDrop, PFCWDForward, PFCWDAlert} {
		c := testConfig(3, 100e9)
		c.PFCWD = PFCWatchdog{Enabled: true, DetectionTime: det, RestorationTime: rest, PollInterval: poll, Action: action}
		s, clk, pool := newTestSwitch(t, c)
		outs := make([]*sink, 3)
		for i := range outs {
			outs[i] = &sink{clk: clk}
			s.Attach(i, outs[i])
		}
		var detected, restored clock.Time = -1, -1
		s.SetTrace(func(ev TraceEvent) {
			switch {
			case ev.Kind == TracePFCWDStorm && ev.Port == 1 && ev.Prio == 3:
				detected = ev.At
			case ev.Kind == TracePFCWDRestore && ev.Port == 1 && ev.Prio == 3:
				restored = ev.At
			case ev.Kind == TracePFCWDStorm:
				t.Errorf("storm declared on port %d prio %d", ev.Port, ev.Prio)
			}
		})
		every(clk, stormStart, 100*clock.Microsecond, stormEnd, func() {
			deliver(s, clk, 1, pfcFrame(pool, 1<<3, [8]uint16{3: 0xFFFF}))
		})
		var afterRestore int
		every(clk, 0, 10*clock.Microsecond, 80*clock.Millisecond, func() {
			deliver(s, clk, 0, roce(26).build(pool)) // victim path 0 -> 1
			b := roce(26)
			b.dst, b.src = macA, macC
			deliver(s, clk, 2, b.build(pool)) // bystander 2 -> 0
			r := roce(26)
			r.dst, r.src = macA, macB
			deliver(s, clk, 1, r.build(pool)) // arrivals on the stormed port
		})
		clk.runUntil(100 * clock.Millisecond)
		if detected < stormStart+det || detected > stormStart+det+poll {
			t.Fatalf("action %d: storm detected at %v, want within [%v, %v]", action, detected, stormStart+det, stormStart+det+poll)
		}
		if restored < stormEnd+rest-100*clock.Microsecond || restored > stormEnd+rest+poll {
			t.Fatalf("action %d: restored at %v, want within [%v, %v]", action, restored, stormEnd+rest, stormEnd+rest+poll)
		}
		for _, x := range outs[1].frames {
			if x.start > restored {
				afterRestore++
			}
		}
		c1, c2 := s.Counters(1), s.Counters(2)
		pc := &c1.Prio[3]
		if pc.PFCWDStormDetected != 1 || pc.PFCWDStormRestored != 1 {
			t.Errorf("storm detected/restored %d/%d", pc.PFCWDStormDetected, pc.PFCWDStormRestored)
		}
		switch action {
		case PFCWDDrop:
			if pc.PFCWDTxDrop == 0 || pc.PFCWDRxDrop == 0 || c1.Drops[DropPFCWD] == 0 {
				t.Errorf("drop action: tx_drop %d rx_drop %d", pc.PFCWDTxDrop, pc.PFCWDRxDrop)
			}
			// Only storm-time traffic is lost: detection..restoration.
			stormFrames := uint64((restored - detected) / (10 * clock.Microsecond))
			if pc.PFCWDRxDrop < stormFrames-2 || pc.PFCWDRxDrop > stormFrames+2 {
				t.Errorf("rx_drop %d, want about %d", pc.PFCWDRxDrop, stormFrames)
			}
		case PFCWDAlert:
			// Alert only: pauses still honoured, nothing dropped.
			if c1.Drops[DropPFCWD] != 0 || pc.PFCWDRxOK == 0 {
				t.Errorf("alert action: pfcwd drops %d rx_ok %d", c1.Drops[DropPFCWD], pc.PFCWDRxOK)
			}
			for _, x := range outs[1].frames {
				if x.prio == 3 && x.start > detected && x.start < stormEnd {
					t.Fatal("alert action transmitted a paused queue")
				}
			}
		case PFCWDForward:
			if pc.PFCWDTxOK == 0 || pc.PFCWDRxOK == 0 || c1.TotalDrops() != 0 {
				t.Errorf("forward action: tx_ok %d rx_ok %d drops %d", pc.PFCWDTxOK, pc.PFCWDRxOK, c1.TotalDrops())
			}
		}
		// The bystander path never loses anything and goes at line pace.
		if d := c2.TotalDrops() + s.Counters(0).TotalDrops(); d != 0 {
			t.Errorf("action %d: bystander drops %d", action, d)
		}
		if afterRestore == 0 {
			t.Errorf("action %d: no traffic on the stormed queue after restoration", action)
		}
	}
}
