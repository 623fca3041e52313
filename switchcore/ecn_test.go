package switchcore

import (
	"math"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

func wredSwitch(t *testing.T, w *WREDProfile, seed uint64) (*Switch, *manualClock) {
	c := testConfig(2, 100e9)
	c.Seed = seed
	c.WREDProfiles["w"] = w
	for q := range 8 {
		c.Ports[1].WRED[q] = "w"
	}
	s, clk, _ := newTestSwitch(t, c)
	return s, clk
}

// TestWREDMarkingProbability: between min and max the marking probability
// is prob% * (depth-min)/(max-min), drawn from the seeded generator; only
// ECT packets are marked; at or above max every ECT packet is marked.
func TestWREDMarkingProbability(t *testing.T) {
	w := &WREDProfile{ECN: ECNAll, GreenMinThreshold: 10_000, GreenMaxThreshold: 30_000, GreenDropProbability: 20}
	s, _ := wredSwitch(t, w, 7)
	p := &s.ports[1]
	pool := s.pool
	for _, tc := range []struct {
		depth int
		want  float64
	}{{5_000, 0}, {10_000, 0}, {15_000, 0.05}, {20_000, 0.10}, {29_000, 0.19}, {30_000, 1}, {1 << 20, 1}} {
		const n = 20000
		marked := 0
		for range n {
			f := roce(26).build(pool)
			if s.applyWRED(p, 3, f, tc.depth) {
				t.Fatal("ECT packet dropped")
			}
			ip := wire.IPv4(f.Data[14:])
			if ip.ECN() == wire.ECNCE {
				marked++
				if !ip.IsChecksumValid() {
					t.Fatal("IPv4 checksum wrong after CE marking")
				}
			}
			f.Put()
		}
		got := float64(marked) / n
		sigma := math.Sqrt(tc.want*(1-tc.want)/n) + 1e-9
		if math.Abs(got-tc.want) > 4*sigma {
			t.Errorf("depth %d: marked %.4f, want %.4f (4 sigma %.4f)", tc.depth, got, tc.want, 4*sigma)
		}
	}
	// Same seed, same decisions.
	a, _ := wredSwitch(t, w, 99)
	b, _ := wredSwitch(t, w, 99)
	for i := range 1000 {
		fa, fb := roce(26).build(pool), roce(26).build(pool)
		a.applyWRED(&a.ports[1], 3, fa, 20_000)
		b.applyWRED(&b.ports[1], 3, fb, 20_000)
		if wire.IPv4(fa.Data[14:]).ECN() != wire.IPv4(fb.Data[14:]).ECN() {
			t.Fatalf("decision %d differs with the same seed", i)
		}
		fa.Put()
		fb.Put()
	}
}

// TestWREDNonECT: non-ECT packets are never marked; lossless ones are never
// dropped; lossy ones are dropped only with wred_green_enable.
func TestWREDNonECT(t *testing.T) {
	for _, enable := range []bool{false, true} {
		w := &WREDProfile{ECN: ECNAll, WREDGreenEnable: enable, GreenMinThreshold: 0, GreenMaxThreshold: 1, GreenDropProbability: 100}
		s, _ := wredSwitch(t, w, 1)
		p := &s.ports[1]
		for _, dscp := range []uint8{26, 0} { // lossless TC 3, lossy TC 0
			r := roce(dscp)
			r.ecn = wire.ECNNotECT
			f := r.build(s.pool)
			f.InPort, f.PG = 0, s.cfg.TCToPG[s.cfg.DSCPToTC[dscp]]
			drop := s.applyWRED(p, 0, f, 100_000)
			if wire.IPv4(f.Data[14:]).ECN() != wire.ECNNotECT {
				t.Fatal("non-ECT packet marked")
			}
			if want := enable && dscp == 0; drop != want {
				t.Errorf("wred_green_enable=%v dscp %d: drop=%v", enable, dscp, drop)
			}
			f.Put()
		}
	}
}

// TestECNMarkAtDequeueAndEnqueue: end to end, queued ECT frames come out
// CE-marked with a valid IPv4 checksum and are counted.
func TestECNMarkAtDequeueAndEnqueue(t *testing.T) {
	for _, at := range []ECNMarkPoint{MarkAtDequeue, MarkAtEnqueue} {
		c := testConfig(2, 100e9)
		c.ECNMarkAt = at
		c.WREDProfiles["w"] = &WREDProfile{ECN: ECNAll, GreenMinThreshold: 2000, GreenMaxThreshold: 2000, GreenDropProbability: 100}
		c.Ports[1].WRED[3] = "w"
		s, clk, pool := newTestSwitch(t, c)
		s.Attach(0, &sink{clk: clk})
		for range 10 {
			deliver(s, clk, 0, roce(26).build(pool))
		}
		out := &sink{clk: clk, keep: true}
		s.Attach(1, out)
		clk.runUntil(clk.now + 10*clock.Microsecond)
		marked := 0
		for i, x := range out.frames {
			ip := wire.IPv4(x.data[14:])
			if !ip.IsChecksumValid() {
				t.Fatalf("frame %d: bad checksum", i)
			}
			if ip.ECN() == wire.ECNCE {
				marked++
			}
		}
		// Depth excluding the frame: at enqueue frames 3..10 saw >= 2000;
		// at dequeue frames 1..8 still had >= 2000 behind them.
		if marked != 8 || s.Counters(1).Prio[3].ECNMarked != 8 {
			t.Errorf("mark point %d: %d marked, counter %d, want 8", at, marked, s.Counters(1).Prio[3].ECNMarked)
		}
	}
}
