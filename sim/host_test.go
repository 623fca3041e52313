package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// pair builds two hosts joined by one link.
func pair(t testing.TB, opt Options, lc LinkConfig, fabric Fabric, flows ...FlowConfig) *Sim {
	t.Helper()
	s := New(opt)
	for _, n := range []string{"h1", "h2"} {
		if err := s.AddHost(HostConfig{Name: n, Fabric: fabric}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Connect(PortRef{"h1", 0}, PortRef{"h2", 0}, lc); err != nil {
		t.Fatal(err)
	}
	for _, f := range flows {
		if err := s.AddFlow(f); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestHostPairTiming: one 64 KiB RDMA WRITE over one link completes at
// exactly the sum of the packets' serialization times and wire overheads
// (but the last one's) plus the delay.
func TestHostPairTiming(t *testing.T) {
	for _, fab := range []Fabric{FabricRoCE, FabricIB} {
		const msg = 64 << 10
		lc := LinkConfig{Rate: 100e9, Delay: clock.Microsecond, MTU: 4200}
		s := pair(t, Options{Seed: 1, Duration: clock.Millisecond}, lc, fab, FlowConfig{
			Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: msg},
			Count: 1, DSCP: 26, Priority: -1, PMTU: 4096, ECT: true,
		})
		r, err := s.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		f := r.Flow("f")
		if f.RxBytes != msg || f.MessagesDone != 1 || f.RxFrames != 16 {
			t.Fatalf("%v: rx %d bytes %d frames %d messages", fab, f.RxBytes, f.RxFrames, f.MessagesDone)
		}
		// 16 packets of 4096 B payload: RoCE first has RETH.
		var hdr, first int
		if fab == FabricRoCE {
			hdr, first = 14+20+8+12+4, 16
		} else {
			hdr, first = 8+12+4+2, 16
		}
		// Each packet but the last also holds the link for its wire
		// overhead (preamble, FCS and gap on Ethernet) before the next.
		ovh := wire.Overhead(fab == FabricIB)
		want := clock.SerializationTime(4096+hdr+first+ovh, 100e9) + 14*clock.SerializationTime(4096+hdr+ovh, 100e9) +
			clock.SerializationTime(4096+hdr, 100e9) + clock.Microsecond
		if f.FCT != want {
			t.Errorf("%v: FCT %v, want %v", fab, f.FCT, want)
		}
		start := clock.Time(0)
		if fab == FabricIB {
			// The sender first waits for the receiver's credit grant, a
			// 6-byte link packet sent at time 0.
			start = clock.SerializationTime(6, 100e9) + clock.Microsecond
		}
		if f.Start != start || f.LastRx != start+want {
			t.Errorf("%v: first byte at %v, last at %v, want %v and %v", fab, f.Start, f.LastRx, start, start+want)
		}
		h2 := r.Host("h2")
		if h2.Stats.ICRCErrors != 0 || h2.Stats.Malformed != 0 || h2.Stats.OutOfOrder != 0 || h2.Stats.CreditOverrun != 0 {
			t.Fatalf("%v: receiver errors %+v", fab, h2.Stats)
		}
		t.Logf("%v: 64 KiB at 100G over 1 us: FCT %v", fab, f.FCT)
	}
}

// TestLinkImpairments: loss, corruption (caught by the real ICRC/VCRC
// check), MTU and down/up are counted; the counts come from the seed.
func TestLinkImpairments(t *testing.T) {
	for _, fab := range []Fabric{FabricRoCE, FabricIB} {
		lc := LinkConfig{Rate: 10e9, Delay: clock.Microsecond, MTU: 1500, Loss: 0.01, Corrupt: 0.02,
			Events: []LinkEvent{{At: 400 * clock.Microsecond, Up: false}, {At: 500 * clock.Microsecond, Up: true}}}
		flows := []FlowConfig{
			{Name: "ok", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 1 << 20}, Priority: 3, PMTU: 1024},
			{Name: "big", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 4096}, Count: 3, Priority: 3, PMTU: 4096},
		}
		s := pair(t, Options{Seed: 7, Duration: clock.Millisecond}, lc, fab, flows...)
		r, err := s.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		d := r.Links[0].Dir[0]
		h2 := r.Host("h2").Stats
		bad := h2.ICRCErrors + h2.VCRCErrors + h2.Malformed // IB: a corrupted link packet fails its LPCRC
		if d.Drops[DropLoss] == 0 || d.Corrupted == 0 || d.Drops[DropMTU] != 3 || d.Drops[DropLinkDown] == 0 {
			t.Fatalf("%v: link stats %+v", fab, d)
		}
		if bad != d.Corrupted {
			t.Fatalf("%v: %d corrupted frames, receiver caught %d", fab, d.Corrupted, bad)
		}
		if h2.OutOfOrder == 0 {
			t.Fatalf("%v: losses must show as PSN gaps", fab)
		}
		t.Logf("%v: tx %d lost %d corrupted %d (caught %d) mtu %d down %d", fab, d.TxFrames, d.Drops[DropLoss], d.Corrupted, bad, d.Drops[DropMTU], d.Drops[DropLinkDown])
	}
}

// TestDeterminism: two runs with one seed give identical results, another
// seed differs.
func TestDeterminism(t *testing.T) {
	run := func(seed uint64) *Results {
		lc := LinkConfig{Rate: 25e9, Delay: 500 * clock.Nanosecond, Loss: 0.001, Corrupt: 0.001}
		s := pair(t, Options{Seed: seed, Duration: 2 * clock.Millisecond, SampleInterval: 50 * clock.Microsecond}, lc, FabricRoCE,
			FlowConfig{Name: "p", Src: "h1", Dst: []string{"h2"}, Pattern: Poisson, Load: 0.7, Priority: 3,
				Size: SizeDist{Kind: Empirical, CDF: []CDFPoint{{1000, 0.5}, {10000, 0.9}, {100000, 1}}}},
			FlowConfig{Name: "o", Src: "h2", Dst: []string{"h1"}, Pattern: OnOff, On: 100 * clock.Microsecond, Off: 50 * clock.Microsecond,
				Priority: 3, Size: SizeDist{Kind: Exponential, Bytes: 5000}})
		r, err := s.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b, c := run(11), run(11), run(12)
	if !equalResults(a, b) {
		t.Fatal("same seed, different results")
	}
	if equalResults(a, c) {
		t.Fatal("different seeds, identical results")
	}
	t.Logf("seed 11: %d events, poisson flow %d messages, p99 FCT %v", a.Events, a.Flows[0].Msg.Count, a.Flows[0].Msg.P99)
}

// TestStormDefaultInterval: a storming host without an interval re-sends
// its XOFF every half of the pause (wire.XoffRefresh), so its peer stays
// paused without a gap from the first XOFF's arrival to the storm's end
// plus one pause, and sends about two XOFFs per pause time.
func TestStormDefaultInterval(t *testing.T) {
	const rate = 100e9
	delay := clock.Microsecond
	start, stop := 10*clock.Microsecond, 2*clock.Millisecond
	s := New(Options{Seed: 1, Duration: 3 * clock.Millisecond})
	for _, hc := range []HostConfig{{Name: "h1", Storm: &PFCStorm{Priority: 3, Start: start, Stop: stop}}, {Name: "h2"}} {
		if err := s.AddHost(hc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Connect(PortRef{"h1", 0}, PortRef{"h2", 0}, LinkConfig{Rate: rate, Delay: delay, MTU: 4200}); err != nil {
		t.Fatal(err)
	}
	pause := wire.QuantaToTime(0xFFFF, rate)
	gaps := 0
	for at := start + delay + clock.Microsecond; at < stop; at += clock.Microsecond {
		s.At(at, func() {
			if !s.Host("h2").Paused(3) {
				gaps++
			}
		})
	}
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if gaps > 0 {
		t.Errorf("h2 unpaused at %d of the storm's microseconds", gaps)
	}
	sent := r.Host("h1").Stats.TxPFC
	if want := uint64((stop-start)/(pause/2)) + 1; sent != want {
		t.Errorf("%d storm XOFFs in %v, want %d (one every %v)", sent, stop-start, want, pause/2)
	}
}
