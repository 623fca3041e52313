package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

func pfcFrame(pool *frame.Pool, enable uint8, times [8]uint16) *frame.Frame {
	f := pool.Get(wire.MACControlFrameSize)
	wire.EncodePFC(f.Data, macB, enable, &times)
	return f
}

// TestPFCQuantaExpiry: a received PFC pauses the priority for quanta * 512
// bit times at the port speed, then the queue resumes by itself.
func TestPFCQuantaExpiry(t *testing.T) {
	for _, tc := range []struct {
		speed uint64
		pause clock.Time // 1000 quanta
	}{
		{25e9, 20480 * clock.Nanosecond},
		{100e9, 5120 * clock.Nanosecond},
		{400e9, 1280 * clock.Nanosecond},
	} {
		s, clk, pool := newTestSwitch(t, testConfig(2, tc.speed))
		out := &sink{clk: clk}
		s.Attach(0, &sink{clk: clk})
		s.Attach(1, out)
		clk.now = 10 * clock.Microsecond
		t0 := clk.now
		deliver(s, clk, 1, pfcFrame(pool, 1<<3, [8]uint16{3: 1000}))
		deliver(s, clk, 0, roce(26).build(pool))
		deliver(s, clk, 0, roce(0).build(pool)) // priority 0 is not paused
		if !s.Paused(1, 3) || s.Paused(1, 0) {
			t.Fatalf("%d: paused(3)=%v paused(0)=%v", tc.speed, s.Paused(1, 3), s.Paused(1, 0))
		}
		clk.runUntil(t0 + tc.pause - 1)
		if n := out.count(func(x *sent) bool { return x.prio == 3 }); n != 0 {
			t.Fatalf("%d bps: priority 3 sent while paused", tc.speed)
		}
		if n := out.count(func(x *sent) bool { return x.prio == 0 }); n != 1 {
			t.Fatalf("%d bps: priority 0 held by a priority 3 pause", tc.speed)
		}
		clk.runUntil(t0 + tc.pause)
		var start clock.Time = -1
		for _, x := range out.frames {
			if x.prio == 3 {
				start = x.start
			}
		}
		if start != t0+tc.pause {
			t.Errorf("%d bps: priority 3 resumed at %v, want %v", tc.speed, start-t0, tc.pause)
		}
		c := s.Counters(1)
		if c.Prio[3].RxPause != 1 || c.RxPauseCtrlPhy != 1 || c.Prio[3].RxPauseDurationPs != int64(tc.pause) {
			t.Errorf("%d bps: rx_prio3_pause %d, pause ctrl %d, duration %d ps", tc.speed, c.Prio[3].RxPause,
				c.RxPauseCtrlPhy, c.Prio[3].RxPauseDurationPs)
		}
	}
}

// TestPFCXonResumesImmediately: XON (time 0) ends the pause at once.
func TestPFCXonResumesImmediately(t *testing.T) {
	s, clk, pool := newTestSwitch(t, testConfig(2, 100e9))
	out := &sink{clk: clk}
	s.Attach(0, &sink{clk: clk})
	s.Attach(1, out)
	deliver(s, clk, 1, pfcFrame(pool, 1<<3, [8]uint16{3: 0xFFFF}))
	deliver(s, clk, 0, roce(26).build(pool))
	clk.runUntil(3 * clock.Microsecond)
	if len(out.frames) != 0 {
		t.Fatal("sent while paused")
	}
	deliver(s, clk, 1, pfcFrame(pool, 1<<3, [8]uint16{}))
	if len(out.frames) != 1 || out.frames[0].start != 3*clock.Microsecond {
		t.Fatalf("XON did not resume at once: %+v", out.frames)
	}
	if c := s.Counters(1); c.Prio[3].RxPauseTransition != 1 || c.Prio[3].RxPauseDurationPs != int64(3*clock.Microsecond) {
		t.Errorf("transition %d duration %d", c.Prio[3].RxPauseTransition, c.Prio[3].RxPauseDurationPs)
	}
}

// TestPFCOnlyEnabledPriorities: PFC for a priority not in pfc_enable is
// ignored.
func TestPFCOnlyEnabledPriorities(t *testing.T) {
	s, clk, pool := newTestSwitch(t, testConfig(2, 100e9))
	out := &sink{clk: clk}
	s.Attach(0, &sink{clk: clk})
	s.Attach(1, out)
	deliver(s, clk, 1, pfcFrame(pool, 0xFF, [8]uint16{0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF}))
	for p := range 8 {
		if want := p == 3 || p == 4; s.Paused(1, p) != want {
			t.Errorf("priority %d paused %v, want %v (pfc_enable 3,4)", p, s.Paused(1, p), want)
		}
	}
	deliver(s, clk, 0, roce(0).build(pool))
	if len(out.frames) != 1 {
		t.Error("priority 0 held by a PFC frame although PFC is off for it")
	}
	if c := s.Counters(1); c.Prio[0].RxPause != 0 || c.Prio[3].RxPause != 1 || c.RxPauseCtrlPhy != 1 {
		t.Errorf("rx pause counters: prio0 %d prio3 %d ctrl %d", c.Prio[0].RxPause, c.Prio[3].RxPause, c.RxPauseCtrlPhy)
	}
}

// TestPauseAllPriorities: an 802.3x PAUSE stops every queue.
func TestPauseAllPriorities(t *testing.T) {
	s, clk, pool := newTestSwitch(t, testConfig(2, 100e9))
	out := &sink{clk: clk}
	s.Attach(0, &sink{clk: clk})
	s.Attach(1, out)
	f := pool.Get(wire.MACControlFrameSize)
	wire.EncodePause(f.Data, macB, 100)
	deliver(s, clk, 1, f)
	for _, d := range []uint8{0, 26, 48} {
		deliver(s, clk, 0, roce(d).build(pool))
	}
	clk.runUntil(512*clock.Nanosecond - 1) // 100 quanta at 100G = 512 ns
	if len(out.frames) != 0 {
		t.Fatal("sent during PAUSE")
	}
	clk.runUntil(10 * clock.Microsecond)
	if len(out.frames) != 3 || out.frames[0].start != 512*clock.Nanosecond {
		t.Fatalf("after PAUSE: %d frames, first at %v", len(out.frames), out.frames[0].start)
	}
	if c := s.Counters(1); c.RxGlobalPause != 1 || c.RxGlobalPauseDurationPs != int64(512*clock.Nanosecond) {
		t.Errorf("rx_global_pause %d, duration %d ps", c.RxGlobalPause, c.RxGlobalPauseDurationPs)
	}
}

// TestPFCRefresh: an asserted XOFF is re-sent every half quanta time at the
// port speed, so the peer never resumes while the PG is congested; the tx
// pause duration covers the whole XOFF.
func TestPFCRefresh(t *testing.T) {
	for _, speed := range []uint64{25e9, 100e9, 400e9} {
		s, clk, pool := newTestSwitch(t, bufferConfig(100_000, -3, 1<<20))
		for i := range s.cfg.Ports {
			s.ports[i].speed = speed
		}
		up := &sink{clk: clk, keep: true}
		s.Attach(0, up)
		for !s.XoffSent(0, 3) {
			deliver(s, clk, 0, roce(26).build(pool))
		}
		quanta := clock.Time(0xFFFF * 512 * 1_000_000 / (speed / 1_000_000))
		end := clk.now + 2*quanta + 1
		clk.runUntil(end)
		pfc := up.frames
		if len(pfc) != 5 {
			t.Fatalf("%d bps: %d PFC frames in 2 quanta times, want 5 (one every half)", speed, len(pfc))
		}
		for i := 1; i < len(pfc); i++ {
			gap := pfc[i].start - pfc[i-1].start
			if gap >= quanta || gap < quanta/2-1 || gap > quanta/2+1 {
				t.Errorf("%d bps: refresh gap %v, quanta %v", speed, gap, quanta)
			}
		}
		if got := s.Counters(0).Prio[3].TxPause; got != 5 {
			t.Errorf("tx_prio3_pause %d", got)
		}
	}
}
