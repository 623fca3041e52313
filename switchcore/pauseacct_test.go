package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// TestRxPauseDurationCountsOnlyPausedTime: rx_prioN_pause_duration and
// rx_global_pause_duration grow only while the peer's pause holds the
// queue, whatever ends the pause (its expiry, an XON, the link going
// down) and however often the counters are read in between. Regression:
// a link going down (or an XON) after a pause had expired moved the pause
// end forward to now without the accounting mark, so the next read counted
// the unpaused gap, and a daemon whose ports start down reported the time
// since start as paused.
func TestRxPauseDurationCountsOnlyPausedTime(t *testing.T) {
	const speed = 100e9
	q1000 := wire.QuantaToTime(1000, speed) // 5.12 µs
	q100 := wire.QuantaToTime(100, speed)   // 512 ns
	pfc := func(quanta uint16) func(*Switch, *manualClock, *frame.Pool) {
		return func(s *Switch, clk *manualClock, pool *frame.Pool) {
			deliver(s, clk, 1, pfcFrame(pool, 1<<3, [8]uint16{3: quanta}))
		}
	}
	pause := func(quanta uint16) func(*Switch, *manualClock, *frame.Pool) {
		return func(s *Switch, clk *manualClock, pool *frame.Pool) {
			f := pool.Get(wire.MACControlFrameSize)
			wire.EncodePause(f.Data, macB, quanta)
			deliver(s, clk, 1, f)
		}
	}
	at := func(t clock.Time) func(*Switch, *manualClock, *frame.Pool) {
		return func(_ *Switch, clk *manualClock, _ *frame.Pool) { clk.runUntil(t) }
	}
	link := func(up bool) func(*Switch, *manualClock, *frame.Pool) {
		return func(s *Switch, _ *manualClock, _ *frame.Pool) { s.SetPortUp(1, up) }
	}
	us := clock.Microsecond
	for _, tc := range []struct {
		name         string
		steps        []func(*Switch, *manualClock, *frame.Pool)
		prio3, globl clock.Time
	}{
		{"link flap without pause", []func(*Switch, *manualClock, *frame.Pool){
			at(1000 * us), link(false), at(2000 * us), link(true), at(3000 * us)}, 0, 0},
		{"down from the start", []func(*Switch, *manualClock, *frame.Pool){
			at(1000 * us), link(false), at(2000 * us)}, 0, 0},
		{"pfc expired then link down", []func(*Switch, *manualClock, *frame.Pool){
			pfc(1000), at(100 * us), link(false), at(150 * us), link(true), at(200 * us)}, q1000, 0},
		{"link down mid pfc", []func(*Switch, *manualClock, *frame.Pool){
			pfc(0xFFFF), at(10 * us), link(false), at(1000 * us), link(true), at(2000 * us)}, 10 * us, 0},
		{"xon after pfc expired", []func(*Switch, *manualClock, *frame.Pool){
			pfc(1000), at(100 * us), pfc(0), at(200 * us)}, q1000, 0},
		{"xon mid pfc", []func(*Switch, *manualClock, *frame.Pool){
			pfc(0xFFFF), at(7 * us), pfc(0), at(200 * us)}, 7 * us, 0},
		{"two pfc pauses with a gap", []func(*Switch, *manualClock, *frame.Pool){
			pfc(1000), at(100 * us), pfc(0), at(150 * us), pfc(1000), at(300 * us)}, 2 * q1000, 0},
		{"pause 0 after pause expired", []func(*Switch, *manualClock, *frame.Pool){
			pause(100), at(100 * us), pause(0), at(200 * us)}, q100, q100},
		{"pause expired then link down", []func(*Switch, *manualClock, *frame.Pool){
			pause(100), at(100 * us), link(false), at(150 * us), link(true), at(200 * us)}, q100, q100},
		{"link down mid pause", []func(*Switch, *manualClock, *frame.Pool){
			pause(0xFFFF), at(10 * us), link(false), at(1000 * us)}, 10 * us, 10 * us},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk, pool := newTestSwitch(t, testConfig(2, speed))
			s.Attach(0, &sink{clk: clk})
			s.Attach(1, &sink{clk: clk})
			var last3, lastG int64
			for i, step := range tc.steps {
				step(s, clk, pool)
				// A scrape between steps must not change what is counted.
				c := s.Counters(1)
				if c.Prio[3].RxPauseDurationPs < last3 || c.RxGlobalPauseDurationPs < lastG {
					t.Fatalf("step %d: durations went back: prio3 %d < %d or global %d < %d",
						i, c.Prio[3].RxPauseDurationPs, last3, c.RxGlobalPauseDurationPs, lastG)
				}
				last3, lastG = c.Prio[3].RxPauseDurationPs, c.RxGlobalPauseDurationPs
			}
			if last3 != int64(tc.prio3) || lastG != int64(tc.globl) {
				t.Errorf("rx_prio3_pause_duration %v, rx_global_pause_duration %v; want %v, %v",
					clock.Time(last3), clock.Time(lastG), tc.prio3, tc.globl)
			}
			// Priorities never paused stay at zero (a PAUSE stops them all).
			if c := s.Counters(1); tc.globl == 0 && c.Prio[0].RxPauseDurationPs != 0 {
				t.Errorf("rx_prio0_pause_duration %d ps without a pause", c.Prio[0].RxPauseDurationPs)
			}
		})
	}
}

// TestTxPauseDurationLive: tx_prioN_pause_duration grows while XOFF is
// asserted, read at any time (it used to move only at the XON, so a
// long pause read 0 all along and then jumped), and not while the port's
// link is down, when no pause is sent.
func TestTxPauseDurationLive(t *testing.T) {
	s, clk, pool := newTestSwitch(t, bufferConfig(1_000_000, -3, 1<<20))
	s.Attach(0, &sink{clk: clk})
	var xonT clock.Time
	s.SetTrace(func(ev TraceEvent) {
		if ev.Kind == TraceXon {
			xonT = ev.At
		}
	})
	for !s.XoffSent(0, 3) {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	us := clock.Microsecond
	start := clk.now
	dur := func() clock.Time { return clock.Time(s.Counters(0).Prio[3].TxPauseDurationPs) }
	for _, step := range []struct {
		at   clock.Time
		link int // 1 up, -1 down, 0 unchanged, before the check
		want clock.Time
	}{
		{100 * us, 0, 100 * us},
		{150 * us, 0, 150 * us},
		{150 * us, -1, 150 * us},
		{400 * us, 0, 150 * us}, // down: no pause on the wire
		{400 * us, 1, 150 * us},
		{450 * us, 0, 200 * us},
	} {
		clk.runUntil(start + step.at)
		if step.link != 0 {
			s.SetPortUp(0, step.link > 0)
		}
		if got := dur(); got != step.want {
			t.Errorf("at %v (link step %d): tx_prio3_pause_duration %v, want %v", step.at, step.link, got, step.want)
		}
	}
	s.Attach(1, &sink{clk: clk})
	clk.runUntil(clk.now + 100*us)
	if s.XoffSent(0, 3) || xonT == 0 {
		t.Fatal("no XON after draining")
	}
	if got, want := dur(), 200*us+xonT-(start+450*us); got != want {
		t.Errorf("after XON: tx_prio3_pause_duration %v, want %v", got, want)
	}
	clk.runUntil(clk.now + 100*us)
	if got, want := dur(), 200*us+xonT-(start+450*us); got != want {
		t.Errorf("after XON, later: tx_prio3_pause_duration %v, want %v", got, want)
	}
}

// TestPFCRefreshShorterThanAFrame: a refresh period below one PFC frame's
// wire time queues no more than one refresh at a time (it queued one per
// period, faster than the port sent them: a simulation with pfc_refresh
// 1ns ran out of memory).
func TestPFCRefreshShorterThanAFrame(t *testing.T) {
	c := bufferConfig(1_000_000, -3, 1<<20)
	c.PFCRefresh = clock.Picosecond
	s, clk, pool := newTestSwitch(t, c)
	up := &sink{clk: clk}
	s.Attach(0, up)
	for !s.XoffSent(0, 3) {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	const span = 10 * clock.Microsecond
	clk.runUntil(clk.now + span)
	if n := s.ports[0].pfcq.len(); n > 1 {
		t.Errorf("%d PFC frames queued", n)
	}
	// At most one per PFC frame time on the wire (4.8 ns at 100G).
	if max := uint64(span/clock.SerializationTime(wire.MACControlFrameSize, 100e9)) + 2; s.Counters(0).Prio[3].TxPause > max {
		t.Errorf("%d XOFF frames in %v, more than the wire carries (%d)", s.Counters(0).Prio[3].TxPause, span, max)
	}
}

// TestPFCRefreshNotSkippedForOtherControlFrames: a refresh is skipped only
// while XOFFs for every asserted priority wait to be sent; an XON for
// another PG or a link-state advertisement waiting in the control queue
// does not pause the peer, and skipping for it let the pause run out (a
// review).
func TestPFCRefreshNotSkippedForOtherControlFrames(t *testing.T) {
	s, clk, pool := newTestSwitch(t, bufferConfig(1_000_000, -3, 1<<20))
	s.Attach(0, &sink{clk: clk})
	p := &s.ports[0]
	p.xoffPrios = 1 << 3
	other := pool.Get(wire.MACControlFrameSize)
	wire.EncodePFC(other.Data, p.mac, 1<<4, &[8]uint16{}) // an XON for priority 4
	p.pfcq.push(other)
	before := s.Counters(0).Prio[3].TxPause
	s.refreshXoff(p)
	if got := s.Counters(0).Prio[3].TxPause; got != before+1 {
		t.Fatalf("refresh with only an XON queued: %d XOFFs sent, want one", got-before)
	}
	// Now an XOFF for 3 is queued (or sent): a second refresh before it
	// leaves is skipped only while it waits.
	queued := p.xoffQueued&(1<<3) != 0
	s.refreshXoff(p)
	if got := s.Counters(0).Prio[3].TxPause; queued && got != before+1 || !queued && got != before+2 {
		t.Errorf("second refresh: %d XOFFs (one queued: %v)", got-before, queued)
	}
}
