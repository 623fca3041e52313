package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/clock"

	"github.com/emufabric/emufabric/wire"
)

// bufferConfig: 2 ports at 100G; ingress lossless pool of poolSize bytes,
// the lossless PG profile with size 0 and the given dynamic_th; port 1 is
// left unattached so nothing drains until the test attaches it.
func bufferConfig(poolSize, dynTh, xoff int) *Config {
	c := testConfig(2, 100e9)
	c.BufferPools[IngressLosslessPool].Size = poolSize
	c.BufferPools[IngressLossyPool].Size = poolSize
	c.BufferProfiles[LosslessPGProfile].DynamicTh = dynTh
	c.BufferProfiles[LosslessPGProfile].Xoff = xoff
	c.BufferProfiles[IngressLossyProfile].DynamicTh = dynTh
	return c
}

const frameLen = 1000

func roce(dscp uint8) rocev4 {
	return rocev4{dst: macB, src: macA, dscp: dscp, ecn: wire.ECNECT0, ipSrc: [4]byte{10, 0, 0, 1},
		ipDst: [4]byte{10, 0, 0, 2}, size: frameLen}
}

// TestDynamicThresholdFixedPoint: one congested lossless PG sends XOFF at a
// shared occupancy of S*a/(1+a), a = 2^dynamic_th, within one MTU
// (issue 3 check b; cc-anchors §4).
func TestDynamicThresholdFixedPoint(t *testing.T) {
	const S = 4 << 20
	for _, tc := range []struct {
		th   int
		want int
	}{
		{-3, S / 9},    // a = 1/8: S*(1/8)/(9/8)
		{0, S / 2},     // a = 1
		{1, S * 2 / 3}, // a = 2
		{-1, S / 3},    // a = 1/2
	} {
		s, clk, pool := newTestSwitch(t, bufferConfig(S, tc.th, 1<<20))
		up := &sink{clk: clk, keep: true}
		s.Attach(0, up)
		xoffAt := -1
		s.SetTrace(func(ev TraceEvent) {
			if ev.Kind == TraceXoff && xoffAt < 0 {
				xoffAt = ev.Bytes
			}
		})
		for i := 0; i < 2*S/frameLen && !s.XoffSent(0, 3); i++ {
			deliver(s, clk, 0, roce(26).build(pool))
		}
		if xoffAt < 0 {
			t.Fatalf("dynamic_th %d: no XOFF", tc.th)
		}
		if d := xoffAt - tc.want; d < -1500 || d > 1500 {
			t.Errorf("dynamic_th %d: XOFF at %d bytes, want %d (S*a/(1+a)) within one MTU", tc.th, xoffAt, tc.want)
		}
		if c := s.Counters(0); c.TotalDrops() != 0 || c.Prio[3].TxPause != 1 {
			t.Errorf("dynamic_th %d: drops %d, tx_prio3_pause %d", tc.th, c.TotalDrops(), c.Prio[3].TxPause)
		}
		// The XOFF frame is a real PFC frame for priority 3 with 0xFFFF quanta.
		var mc wire.MACControl
		if len(up.frames) != 1 || wire.DecodeMACControl(up.frames[0].data, &mc) != nil ||
			mc.Enable != 1<<3 || mc.Time[3] != 0xFFFF {
			t.Fatalf("dynamic_th %d: want one PFC XOFF frame, got %d frames %+v", tc.th, len(up.frames), mc)
		}
	}
}

// TestXonHysteresis: after XOFF the PG drains; XON is sent at the first
// release where headroom is empty and shared usage <= max(xon, limit -
// xon_offset).
func TestXonHysteresis(t *testing.T) {
	const S = 1_000_000
	c := bufferConfig(S, -3, 1<<20)
	prof := c.BufferProfiles[LosslessPGProfile]
	prof.Xon, prof.XonOffset = 18432, 2496
	s, clk, pool := newTestSwitch(t, c)
	up := &sink{clk: clk, keep: true}
	s.Attach(0, up)
	xon := -1
	var xoffT, xonT clock.Time
	s.SetTrace(func(ev TraceEvent) {
		switch ev.Kind {
		case TraceXon:
			xon, xonT = ev.Bytes, ev.At
		case TraceXoff:
			xoffT = ev.At
		}
	})
	for !s.XoffSent(0, 3) {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	// In flight after the XOFF: 20 more frames land in headroom.
	for range 20 {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	if _, h := s.PGOccupancy(0, 3); h != 20*frameLen+frameLen {
		t.Fatalf("headroom %d, want %d", h, 21*frameLen)
	}
	s.Attach(1, &sink{clk: clk})
	clk.runUntil(clk.now + 100*clock1us)
	if xon < 0 {
		t.Fatal("no XON after draining")
	}
	// Bound: u <= max(xon, (S-u)/8 - xon_offset)  <=>  u <= (S - 8*2496)/9.
	bound := max(18432, (S-8*2496)/9)
	if xon > bound || xon+frameLen <= bound {
		t.Errorf("XON at %d bytes, want the first multiple of %d at or below %d", xon, frameLen, bound)
	}
	if s.XoffSent(0, 3) {
		t.Error("still asserting XOFF")
	}
	if d := s.Counters(0).Prio[3].TxPauseDurationPs; d != int64(xonT-xoffT) || d <= 0 {
		t.Errorf("tx_prio3_pause_duration %d ps, want %d", d, xonT-xoffT)
	}
	var mc wire.MACControl
	last := up.frames[len(up.frames)-1]
	if wire.DecodeMACControl(last.data, &mc) != nil || mc.Enable != 1<<3 || mc.Time[3] != 0 {
		t.Errorf("last frame is not an XON for priority 3: %+v", mc)
	}
}

// TestLosslessNeverDrops: headroom far too small is a configuration error,
// counted and reported, but no lossless frame is dropped.
func TestLosslessNeverDrops(t *testing.T) {
	s, clk, pool := newTestSwitch(t, bufferConfig(200_000, -3, 3000))
	s.Attach(0, &sink{clk: clk})
	reported := 0
	s.SetTrace(func(ev TraceEvent) {
		if ev.Kind == TraceHeadroomOverflow {
			reported++
		}
	})
	const n = 400
	for range n {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	c := s.Counters(0)
	if c.TotalDrops() != 0 {
		t.Fatalf("lossless PG dropped %d frames", c.TotalDrops())
	}
	if c.Prio[3].HeadroomOverflow == 0 || reported == 0 || c.Drops[DropHeadroomOverflow] == 0 {
		t.Fatal("headroom overflow not counted/reported")
	}
	out := &sink{clk: clk}
	s.Attach(1, out)
	clk.runUntil(clk.now + 1000*clock1us)
	if got := out.count(func(*sent) bool { return true }); got != n {
		t.Fatalf("delivered %d of %d", got, n)
	}
	if sh, h := s.PGOccupancy(0, 3); sh != 0 || h != 0 || pool.Outstanding != 0 {
		t.Fatalf("after drain: shared %d headroom %d outstanding frames %d", sh, h, pool.Outstanding)
	}
}

// TestLossyDropsAtThreshold: a lossy PG admits up to its dynamic threshold
// fixed point and counts the rest as lossy_threshold drops; it never sends
// PFC.
func TestLossyDropsAtThreshold(t *testing.T) {
	const S = 1_000_000
	s, clk, pool := newTestSwitch(t, bufferConfig(S, 0, 1<<20))
	up := &sink{clk: clk}
	s.Attach(0, up)
	const n = 1000
	for range n {
		deliver(s, clk, 0, roce(0).build(pool)) // DSCP 0 -> TC 0 -> lossy PG 0
	}
	sh, _ := s.PGOccupancy(0, 0)
	if d := sh - S/2; d < -frameLen || d > frameLen {
		t.Errorf("lossy PG holds %d, want %d within one frame", sh, S/2)
	}
	c := s.Counters(0)
	if want := uint64(n - sh/frameLen); c.Drops[DropLossyThreshold] != want || c.Prio[0].Drops[DropLossyThreshold] != want {
		t.Errorf("lossy drops %d (prio0 %d), want %d", c.Drops[DropLossyThreshold], c.Prio[0].Drops[DropLossyThreshold], want)
	}
	if len(up.frames) != 0 || c.TxPauseCtrlPhy != 0 {
		t.Error("lossy PG sent PFC")
	}
}

// TestStaticThreshold: a static pool limits the PG to static_th bytes.
func TestStaticThreshold(t *testing.T) {
	c := bufferConfig(1_000_000, 0, 1<<20)
	c.BufferPools[IngressLossyPool].Mode = PoolStatic
	c.BufferProfiles[IngressLossyProfile].StaticTh = 50_000
	s, clk, pool := newTestSwitch(t, c)
	for range 100 {
		deliver(s, clk, 0, roce(0).build(pool))
	}
	if sh, _ := s.PGOccupancy(0, 0); sh != 50_000 {
		t.Errorf("static_th 50000: PG holds %d", sh)
	}
}

// TestXoffRefreshTraced: while a PG stays above XON the switch re-sends
// its XOFF, and each refresh is a trace event carrying the PFC frame, so a
// capture can say why the frame went (it was told by no event before, and
// the daemon guessed a refresh from a frame without a note).
func TestXoffRefreshTraced(t *testing.T) {
	s, clk, pool := newTestSwitch(t, bufferConfig(4<<20, 0, 1<<20))
	up := &sink{clk: clk, keep: true}
	s.Attach(0, up)
	var refreshes [][]byte // each event's PFC frame, copied (the frame goes on)
	s.SetTrace(func(ev TraceEvent) {
		if ev.Kind == TraceXoffRefresh && ev.Frame != nil {
			refreshes = append(refreshes, append([]byte(nil), ev.Frame.Data...))
		}
	})
	for i := 0; i < 8<<20/frameLen && !s.XoffSent(0, 3); i++ {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	if !s.XoffSent(0, 3) {
		t.Fatal("no XOFF")
	}
	clk.runUntil(clk.now + s.refreshPeriod(&s.ports[0]) + clock.Microsecond)
	if len(refreshes) == 0 {
		t.Fatal("no refresh traced with its frame")
	}
	var mc wire.MACControl
	if err := wire.DecodeMACControl(refreshes[0], &mc); err != nil || !mc.Paused(3) {
		t.Errorf("the refresh event's frame: %v %+v, want an XOFF for priority 3", err, mc)
	}
}
