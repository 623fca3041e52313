package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// writePair is the engine benchmark's scenario: two NICs through one
// cut-through switch at 100 Gb/s, a 4 KiB-MTU RDMA WRITE stream of 1 MiB
// messages from a to b with four in flight, no congestion control events
// (nothing is marked below the default WRED thresholds).
func writePair(t testing.TB, backToBack bool) *net {
	const rate = 100e9
	n := newNet(t, Options{Seed: 1, Duration: clock.Never})
	n.nic("a", nil, "")
	n.nic("b", nil, "")
	if backToBack {
		n.link("a", 0, "b", 0, rate, clock.Microsecond)
	} else {
		n.sw("sw", 2, rate, nil)
		n.link("a", 0, "sw", 0, rate, clock.Microsecond)
		n.link("b", 0, "sw", 1, rate, clock.Microsecond)
	}
	n.rdma(RDMAFlowConfig{Name: "w", Src: "a", Dst: "b", Op: OpWrite, Size: 1 << 20, Stop: clock.Never, Depth: 4, DSCP: 26, Priority: -1, MTU: 4096})
	return n
}

// runFrames advances the simulation until NIC a has sent k more frames; a
// stalled stream fails instead of looping.
func runFrames(n *net, k uint64) {
	n.must(n.s.Start())
	a := n.s.NIC("a")
	target := a.Port().TxPacketsPhy + k
	for a.Port().TxPacketsPhy < target {
		before := a.Port().TxPacketsPhy
		n.must(n.s.RunUntil(n.s.now + 10*clock.Microsecond))
		if a.Port().TxPacketsPhy == before {
			n.t.Fatalf("no frame sent in 10 us at %v", n.s.now)
		}
	}
}

// BenchmarkEngineWrite4K measures the whole engine in the simulator (issue
// 4 performance): one op is one data frame of a 4 KiB-MTU RDMA WRITE and
// everything it causes — the requester building it with its ICRC, the
// links, the switch (cut-through, buffer accounting, WRED), the responder
// verifying the ICRC and placing the payload, coalesced ACKs back through
// the switch, the completer and the stream reposting. frames/s is per wall
// second on one core (the simulator is single-goroutine).
func BenchmarkEngineWrite4K(b *testing.B) {
	for _, c := range []struct {
		name string
		b2b  bool
	}{{"switch", false}, {"back-to-back", true}} {
		b.Run(c.name, func(b *testing.B) {
			n := writePair(b, c.b2b)
			runFrames(n, 4096) // warm up pools, rings and the heap
			ev0 := n.s.events
			b.ReportAllocs()
			b.ResetTimer()
			runFrames(n, uint64(b.N))
			b.StopTimer()
			if sec := b.Elapsed().Seconds(); sec > 0 {
				b.ReportMetric(float64(b.N)/sec, "frames/s")
			}
			b.ReportMetric(float64(n.s.events-ev0)/float64(b.N), "events/frame")
		})
	}
}

// TestRDMASteadyStateZeroAlloc: once warmed up, the NIC-switch-NIC WRITE
// path allocates nothing per frame.
func TestRDMASteadyStateZeroAlloc(t *testing.T) {
	n := writePair(t, false)
	runFrames(n, 4096) // warm up pools, rings and the heap
	a := n.s.NIC("a")
	before := a.Port().TxPacketsPhy
	allocs := testing.AllocsPerRun(10, func() { runFrames(n, 256) })
	frames := a.Port().TxPacketsPhy - before
	t.Logf("steady state: %.2f allocations per 256 frames of a 4 KiB WRITE stream (%d frames measured)", allocs, frames)
	if allocs > 0 {
		t.Fatalf("%.2f allocations per 256 frames", allocs)
	}
}
