package sim

import (
	"runtime"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/switchcore"
)

// BenchmarkIncast2to1_40G runs the ns3-rdma reference scenario once per
// iteration: two senders to one receiver through one switch at 40 Gb/s,
// lossless with PFC, 1 s of simulated time. Reported: simulated seconds per
// wall second and events per wall second.
func BenchmarkIncast2to1_40G(b *testing.B) {
	b.ReportAllocs()
	var events uint64
	for i := 0; i < b.N; i++ {
		n := incast(b, 2, 40e9, 0, 1<<20, true, clock.Second)
		n.s.opt.SampleInterval = 0
		r := n.run()
		events += r.Events
		if drops, _ := r.SwitchDrops(); drops != 0 {
			b.Fatalf("%d drops", drops)
		}
		if u := busy(dirStats(r, "sw", "h0")); u < 0.95 {
			b.Fatalf("bottleneck busy %.2f", u)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sim-s/wall-s")
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// leafSpine builds a two-tier fabric: leaves of hostsPerLeaf hosts each,
// every leaf connected to every spine, all links at rate; every host sends
// Poisson messages (web-search-like CDF) to random other hosts at load.
func leafSpine(t testing.TB, leaves, spines, hostsPerLeaf int, rate uint64, load float64, dur clock.Time) *net {
	n := newNet(t, Options{Seed: 1, Duration: dur})
	for l := 0; l < leaves; l++ {
		n.sw("leaf"+itoa(l), hostsPerLeaf+spines, rate, nil)
	}
	for s := 0; s < spines; s++ {
		n.sw("spine"+itoa(s), leaves, rate, nil)
	}
	var hosts []string
	for l := 0; l < leaves; l++ {
		for h := 0; h < hostsPerLeaf; h++ {
			name := "h" + itoa(l*hostsPerLeaf+h)
			hosts = append(hosts, name)
			n.host(name, FabricRoCE)
			n.link(name, 0, "leaf"+itoa(l), h, rate, clock.Microsecond)
		}
		for s := 0; s < spines; s++ {
			n.link("leaf"+itoa(l), hostsPerLeaf+s, "spine"+itoa(s), l, rate, clock.Microsecond)
		}
	}
	cdf := []CDFPoint{{6000, 0.15}, {13000, 0.2}, {19000, 0.3}, {33000, 0.4}, {53000, 0.53}, {133000, 0.6},
		{667000, 0.7}, {1333000, 0.8}, {3333000, 0.9}, {6667000, 0.97}, {20000000, 1}}
	for i, h := range hosts {
		var dsts []string
		for j, d := range hosts {
			if j != i {
				dsts = append(dsts, d)
			}
		}
		n.flow(FlowConfig{Name: h, Src: h, Dst: dsts, Pattern: Poisson, Load: load,
			Size: SizeDist{Kind: Empirical, CDF: cdf}, DSCP: 26, Priority: -1, PMTU: 4096, ECT: true})
	}
	return n
}

// BenchmarkLeafSpine128: 128 hosts, 8 leaves x 16 hosts, 8 spines, all at
// 100 Gb/s, 50% Poisson load of web-search-sized messages, 10 ms simulated.
func BenchmarkLeafSpine128(b *testing.B) {
	b.ReportAllocs()
	var events, rx, tx uint64
	var msgs int
	for i := 0; i < b.N; i++ {
		n := leafSpine(b, 8, 8, 16, 100e9, 0.5, 10*clock.Millisecond)
		r := n.run()
		events += r.Events
		for _, f := range r.Flows {
			msgs += f.MessagesDone
			rx += f.RxWireBytes
			tx += f.TxWireBytes
		}
		if drops, _ := r.SwitchDrops(); drops != 0 {
			b.Fatalf("%d drops in a lossless fabric", drops)
		}
	}
	capacity := float64(b.N) * 128 * 100e9 * 0.01 / 8 // bytes the host links could carry
	b.ReportMetric(float64(tx)/capacity, "sent-load")
	b.ReportMetric(float64(rx)/capacity, "delivered-load")
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(msgs)/float64(b.N), "messages/run")
	b.ReportMetric(0.01*float64(b.N)/b.Elapsed().Seconds(), "sim-s/wall-s")
}

// BenchmarkMemoryPerPort reports heap bytes per simulated switch port of
// the 128-host leaf-spine fabric: "idle" right after Start (switch state,
// timers, hosts, links), "loaded" after 200 us at 50% load (frames queued
// and in flight, rings and pool warmed up).
func BenchmarkMemoryPerPort(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var before, idle, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		n := leafSpine(b, 8, 8, 16, 100e9, 0.5, 200*clock.Microsecond)
		n.must(n.s.Start())
		runtime.GC()
		runtime.ReadMemStats(&idle)
		n.run()
		runtime.GC()
		runtime.ReadMemStats(&after)
		ports := 0
		for _, w := range n.s.switches {
			ports += len(w.ports)
		}
		b.ReportMetric(float64(idle.HeapAlloc-before.HeapAlloc)/float64(ports), "B/port-idle")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(ports), "B/port-loaded")
		b.ReportMetric(float64(ports), "ports")
		runtime.KeepAlive(n)
	}
}

// TestSteadyStateZeroAlloc: once warmed up, a lossless incast runs without
// allocating per frame (pooled frames, re-armed timers, rings).
func TestSteadyStateZeroAlloc(t *testing.T) {
	n := incast(t, 2, 40e9, 0, 1<<20, true, clock.Second)
	n.s.opt.SampleInterval = 0
	n.must(n.s.RunUntil(2 * clock.Millisecond))
	start := n.s.events
	allocs := testing.AllocsPerRun(10, func() {
		n.must(n.s.RunUntil(n.s.now + 100*clock.Microsecond))
	})
	ev := (n.s.events - start) / 11
	t.Logf("steady state: %.1f allocations per 100 us of 2:1 incast at 40G (%d events)", allocs, ev)
	if allocs > 0 {
		t.Fatalf("%.1f allocations per %d events", allocs, ev)
	}
	_ = switchcore.NumPriorities
}
