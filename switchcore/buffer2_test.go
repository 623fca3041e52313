package switchcore

import (
	"testing"
)

// TestTwoCongestedPGs: two congested lossless PGs (on two ports) sharing
// one dynamic pool each settle at S*a/(1+2a): the threshold follows the
// free pool, which both consume.
func TestTwoCongestedPGs(t *testing.T) {
	const S = 900_000
	c := bufferConfig(S, 0, 1<<20) // a = 1: each gets S/3
	c.Ports = append(c.Ports, c.Ports[1])
	c.Ports[2].Name = "p3"
	s, clk, pool := newTestSwitch(t, c)
	s.Attach(0, &sink{clk: clk})
	s.Attach(2, &sink{clk: clk})
	for !s.XoffSent(0, 3) || !s.XoffSent(2, 3) {
		if !s.XoffSent(0, 3) {
			deliver(s, clk, 0, roce(26).build(pool))
		}
		if !s.XoffSent(2, 3) {
			deliver(s, clk, 2, roce(26).build(pool))
		}
	}
	for _, p := range []int{0, 2} {
		sh, _ := s.PGOccupancy(p, 3)
		if d := sh - S/3; d < -1500 || d > 1500 {
			t.Errorf("port %d PG 3 holds %d at XOFF, want S/3 = %d within one MTU", p, sh, S/3)
		}
	}
}

// TestReservedSize: a PG's reserved size is used before the shared pool and
// does not count against the dynamic threshold.
func TestReservedSize(t *testing.T) {
	const S, R = 900_000, 20_000
	c := bufferConfig(S, 0, 1<<20)
	c.BufferProfiles[LosslessPGProfile].Size = R
	s, clk, pool := newTestSwitch(t, c)
	s.Attach(0, &sink{clk: clk})
	for !s.XoffSent(0, 3) {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	used, _ := s.PGOccupancy(0, 3)
	if d := used - (R + S/2); d < -1500 || d > 1500 {
		t.Errorf("PG holds %d at XOFF, want size + S/2 = %d", used, R+S/2)
	}
}

// TestSharedHeadroomPool: with a BUFFER_POOL xoff (shared headroom), the
// pool's headroom bound applies on top of each PG's xoff.
func TestSharedHeadroomPool(t *testing.T) {
	c := bufferConfig(100_000, -3, 50_000)
	c.BufferPools[IngressLosslessPool].Xoff = 10_000
	s, clk, pool := newTestSwitch(t, c)
	s.Attach(0, &sink{clk: clk})
	for !s.XoffSent(0, 3) {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	for range 11 {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	cnt := s.Counters(0)
	// 12 frames in headroom (the one that tripped XOFF plus 11): the 11th
	// and 12th exceed the 10 000-byte shared headroom pool.
	if cnt.Prio[3].HeadroomOverflow != 2 || cnt.TotalDrops() != 0 {
		t.Errorf("headroom overflow %d, drops %d", cnt.Prio[3].HeadroomOverflow, cnt.TotalDrops())
	}
}

// TestEgressThresholdLossy: a lossy queue is bounded by its BUFFER_QUEUE
// profile; a lossless queue is not.
func TestEgressThresholdLossy(t *testing.T) {
	c := testConfig(2, 100e9)
	c.BufferPools[EgressLossyPool].Size = 100_000
	c.BufferProfiles[EgressLossyProfile].Size = 0
	c.BufferProfiles[EgressLossyProfile].DynamicTh = 0 // S/2
	s, clk, pool := newTestSwitch(t, c)
	for range 200 {
		deliver(s, clk, 0, roce(0).build(pool))
		deliver(s, clk, 0, roce(26).build(pool))
	}
	if d := s.QueueDepth(1, 0); d != 50_000 {
		t.Errorf("lossy queue depth %d, want 50000", d)
	}
	if d := s.QueueDepth(1, 3); d != 200*frameLen {
		t.Errorf("lossless queue depth %d, want all", d)
	}
	if n := s.Counters(1).Drops[DropEgressThreshold]; n != 150 {
		t.Errorf("egress_threshold drops %d, want 150", n)
	}
	if sh, _ := s.PGOccupancy(0, 0); sh != 50_000 {
		t.Errorf("ingress PG 0 not released for egress drops: %d", sh)
	}
}
