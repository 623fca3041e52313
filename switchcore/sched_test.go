package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// backlog queues n frames of each DSCP towards port 1 while it is
// unattached, then attaches a sink and lets it send `send` frames.
func backlog(t *testing.T, c *Config, dscps []uint8, n, send int) *sink {
	t.Helper()
	s, clk, pool := newTestSwitch(t, c)
	s.Attach(0, &sink{clk: clk})
	for range n {
		for _, d := range dscps {
			deliver(s, clk, 0, roce(d).build(pool))
		}
	}
	if got := s.Counters(0).TotalDrops(); got != 0 {
		t.Fatalf("backlog dropped %d", got)
	}
	out := &sink{clk: clk}
	s.Attach(1, out)
	clk.runUntil(clk.now + clock.SerializationTime(frameLen+wire.EthernetOverhead, 100e9)*clock.Time(send) - 1)
	if len(out.frames) != send {
		t.Fatalf("sent %d frames, want %d", len(out.frames), send)
	}
	return out
}

// TestDWRRWeights: two backlogged DWRR queues share the port in the ratio
// of their SCHEDULER weights.
func TestDWRRWeights(t *testing.T) {
	for _, w := range [][2]int{{1, 3}, {14, 15}, {1, 1}, {2, 5}} {
		c := testConfig(2, 100e9)
		c.Schedulers["a"] = &Scheduler{Type: SchedDWRR, Weight: w[0]}
		c.Schedulers["b"] = &Scheduler{Type: SchedDWRR, Weight: w[1]}
		c.Ports[1].Scheduler[1], c.Ports[1].Scheduler[2] = "a", "b"
		c.BufferPools[IngressLossyPool].Size = 64 << 20
		c.BufferPools[EgressLossyPool].Size = 64 << 20
		// Enough frames for ~30 DWRR rounds so the partial last round
		// weighs little.
		out := backlog(t, c, []uint8{8, 16}, 2000, 1500) // DSCP 8 -> TC 1, 16 -> TC 2
		q1 := out.count(func(x *sent) bool { return x.class == 1 })
		q2 := out.count(func(x *sent) bool { return x.class == 2 })
		want := float64(w[1]) / float64(w[0])
		got := float64(q2) / float64(q1)
		if got < want*0.95 || got > want*1.05 {
			t.Errorf("weights %v: sent %d:%d (ratio %.3f), want ratio %.3f", w, q1, q2, got, want)
		}
	}
}

// TestStrictPriority: a STRICT queue is always served before DWRR queues,
// higher strict queues before lower ones.
func TestStrictPriority(t *testing.T) {
	c := testConfig(2, 100e9)
	c.Schedulers["strict"] = &Scheduler{Type: SchedStrict}
	c.Ports[1].Scheduler[5] = "strict" // DSCP 40 -> TC 5
	c.Ports[1].Scheduler[6] = "strict" // DSCP 48 -> TC 6
	out := backlog(t, c, []uint8{8, 40, 48}, 50, 120)
	for i, x := range out.frames {
		want := uint8(1)
		switch {
		case i < 50:
			want = 6
		case i < 100:
			want = 5
		}
		if x.class != want {
			t.Fatalf("frame %d from queue %d, want %d", i, x.class, want)
		}
	}
}

// TestControlFirst: a PFC frame generated while data is queued leaves before
// the queued data.
func TestControlFirst(t *testing.T) {
	s, clk, pool := newTestSwitch(t, bufferConfig(100_000, -3, 1<<20))
	// Port 0 both receives the lossless burst and transmits data from port 1.
	up := &sink{clk: clk, keep: true}
	s.Attach(0, up)
	s.Attach(1, &sink{clk: clk})
	for range 5 {
		f := roce(0).build(pool)
		f.Data[0:6][5] = 0xA // to macA: port 0
		copy(f.Data[0:6], macA[:])
		copy(f.Data[6:12], macB[:])
		deliver(s, clk, 1, f)
	}
	for !s.XoffSent(0, 3) {
		deliver(s, clk, 0, roce(26).build(pool))
	}
	clk.runUntil(clk.now + clock.Microsecond)
	// Frame 0 started at once; the PFC must be the next one.
	if len(up.frames) < 2 || !isPFC(&up.frames[1]) {
		t.Fatalf("PFC did not overtake queued data")
	}
}
