package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/switchcore"
)

func TestSizeDist(t *testing.T) {
	cdf := []CDFPoint{{1000, 0.5}, {10000, 0.9}, {100000, 1}}
	tests := []struct {
		name     string
		d        SizeDist
		mean     float64 // expected sample mean
		min, max int
	}{
		{"fixed", SizeDist{Kind: Fixed, Bytes: 4096}, 4096, 4096, 4096},
		{"uniform", SizeDist{Kind: Uniform, Min: 100, Max: 300}, 200, 100, 300},
		{"exponential", SizeDist{Kind: Exponential, Bytes: 5000}, 5000, 1, math.MaxInt},
		{"exponential clamped", SizeDist{Kind: Exponential, Bytes: 5000, Min: 1000, Max: 8000}, -1, 1000, 8000},
		{"empirical", SizeDist{Kind: Empirical, CDF: cdf}, 0.5*500 + 0.4*5500 + 0.1*55000, 1, 100000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkDist(&tc.d); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			const n = 200000
			sum := 0.0
			for i := 0; i < n; i++ {
				v := tc.d.sample(r)
				if v < tc.min || v > tc.max {
					t.Fatalf("sample %d outside [%d, %d]", v, tc.min, tc.max)
				}
				sum += float64(v)
			}
			got := sum / n
			if tc.mean > 0 && math.Abs(got-tc.mean)/tc.mean > 0.02 {
				t.Fatalf("mean %.0f, want %.0f +- 2%%", got, tc.mean)
			}
			if tc.mean > 0 && math.Abs(tc.d.mean()-tc.mean)/tc.mean > 0.01 {
				t.Fatalf("analytic mean %.0f, want %.0f", tc.d.mean(), tc.mean)
			}
		})
	}
	for _, bad := range []SizeDist{
		{Kind: Fixed}, {Kind: Uniform, Min: 5, Max: 4}, {Kind: Exponential},
		{Kind: Empirical, CDF: []CDFPoint{{10, 0.5}}}, {Kind: Empirical, CDF: []CDFPoint{{10, 0.5}, {5, 1}}},
	} {
		if checkDist(&bad) == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestTrafficPatterns: constant rate, on/off duty cycle, Poisson load and
// UD messages give the throughput their parameters imply.
func TestTrafficPatterns(t *testing.T) {
	const rate = 100e9
	const dur = 2 * clock.Millisecond
	lc := LinkConfig{Rate: rate, Delay: clock.Microsecond}
	fixed := SizeDist{Kind: Fixed, Bytes: 64 << 10}
	tests := []struct {
		name string
		fc   FlowConfig
		want float64 // wire bits per second (Poisson: payload, as Load is defined)
	}{
		{"constant 40G", FlowConfig{Rate: 40e9, Size: fixed}, 40e9},
		{"on/off 100us/50us", FlowConfig{Pattern: OnOff, On: 100 * clock.Microsecond, Off: 50 * clock.Microsecond, Size: fixed}, rate * 2 / 3},
		{"poisson 30%", FlowConfig{Pattern: Poisson, Load: 0.3, Size: SizeDist{Kind: Exponential, Bytes: 16 << 10}}, 0.3 * rate},
		{"ud send 10G", FlowConfig{Kind: UDSend, Rate: 10e9, Size: SizeDist{Kind: Fixed, Bytes: 3000}, PMTU: 1024}, 10e9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := tc.fc
			fc.Name, fc.Src, fc.Dst, fc.Priority = "f", "h1", []string{"h2"}, 3
			d := dur
			if fc.Pattern == Poisson {
				d = 20 * dur // a random process: average longer
			}
			s := pair(t, Options{Seed: 5, Duration: d}, lc, FabricRoCE, fc)
			r, err := s.Run(nil)
			if err != nil {
				t.Fatal(err)
			}
			f := r.Flow("f")
			got := float64(f.RxWireBytes) * 8 / d.Seconds()
			if fc.Pattern == Poisson {
				got = float64(f.RxBytes) * 8 / d.Seconds()
			}
			t.Logf("%s: %.2f Gb/s (want %.2f), %d messages, mean FCT %v", tc.name, got/1e9, tc.want/1e9, f.MessagesDone, f.Msg.Mean)
			tol := 0.03
			if fc.Pattern == Poisson {
				tol = 0.05
			}
			if math.Abs(got-tc.want)/tc.want > tol {
				t.Fatalf("%.2f Gb/s, want %.2f", got/1e9, tc.want/1e9)
			}
			if f.PSNGaps != 0 || f.MessagesDone == 0 {
				t.Fatalf("gaps %d, messages %d", f.PSNGaps, f.MessagesDone)
			}
		})
	}
}

// TestEventBudget: a run that would exceed its budget stops with
// ErrEventBudget and partial results instead of running on.
func TestEventBudget(t *testing.T) {
	s := pair(t, Options{Seed: 1, Duration: clock.Second, EventBudget: 5000}, LinkConfig{Rate: 100e9}, FabricRoCE,
		FlowConfig{Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 1 << 20}, Priority: 3})
	r, err := s.Run(nil)
	if err != ErrEventBudget || r == nil || !r.Truncated || r.Events != 5000 || r.End >= clock.Second {
		t.Fatalf("err %v, results %+v", err, r)
	}
}

// TestSwitchLinkDownUp: the switch's egress link goes down and comes back;
// the switch counts link_down drops, the receiver sees the gap, traffic
// resumes after the link is up.
func TestSwitchLinkDownUp(t *testing.T) {
	n := newNet(t, Options{Seed: 1, Duration: clock.Millisecond, SampleInterval: 50 * clock.Microsecond})
	n.sw("sw", 2, 100e9, nil)
	n.host("a", FabricRoCE)
	n.host("b", FabricRoCE)
	n.link("a", 0, "sw", 0, 100e9, clock.Microsecond)
	_, err := n.s.Connect(PortRef{"sw", 1}, PortRef{"b", 0}, LinkConfig{Rate: 100e9, Delay: clock.Microsecond,
		Events: []LinkEvent{{At: 300 * clock.Microsecond}, {At: 500 * clock.Microsecond, Up: true}}})
	n.must(err)
	n.flow(FlowConfig{Name: "f", Src: "a", Dst: []string{"b"}, Rate: 50e9, Size: SizeDist{Kind: Fixed, Bytes: 64 << 10}, Priority: 3, DSCP: 26})
	r := n.run()
	c := r.Port("sw", 1)
	_, by := r.SwitchDrops()
	f := r.Flow("f")
	var during, after float64
	for i, at := range r.Series.Times {
		if at > 350*clock.Microsecond && at <= 500*clock.Microsecond {
			during += r.Series.Flows[0].Bps[i]
		}
		if at > 600*clock.Microsecond {
			after += r.Series.Flows[0].Bps[i]
		}
	}
	t.Logf("link down 300-500us: switch link_down drops %d, link_down events %d, PSN gaps %d, rate during %.1f, after %.1f Gb/s",
		by[switchcore.DropLinkDown], c.LinkDownEvents, f.PSNGaps, during/3/1e9, after/8/1e9)
	if by[switchcore.DropLinkDown] == 0 || f.PSNGaps == 0 || during != 0 || after == 0 {
		t.Fatalf("link down/up not visible: drops %d gaps %d during %v after %v", by[switchcore.DropLinkDown], f.PSNGaps, during, after)
	}
}

// TestConfigErrors: bad topology and flow settings are errors, not panics.
func TestConfigErrors(t *testing.T) {
	s := New(Options{})
	for _, n := range []string{"a", "b"} {
		if err := s.AddHost(HostConfig{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	if s.AddHost(HostConfig{Name: "a"}) == nil {
		t.Error("duplicate host accepted")
	}
	if s.AddHost(HostConfig{Name: "c", IBBlocksPerVL: 4096}) == nil {
		t.Error("IB buffer beyond the credit window accepted")
	}
	for _, lc := range []LinkConfig{{}, {Rate: 1e9, Delay: -1}, {Rate: 1e9, Loss: 2}, {Rate: 1e9, Corrupt: -0.1}} {
		if _, err := s.Connect(PortRef{"a", 0}, PortRef{"b", 0}, lc); err == nil {
			t.Errorf("link %+v accepted", lc)
		}
	}
	if _, err := s.Connect(PortRef{"a", 0}, PortRef{"x", 0}, LinkConfig{Rate: 1e9}); err == nil {
		t.Error("unknown node accepted")
	}
	if _, err := s.Connect(PortRef{"a", 1}, PortRef{"b", 0}, LinkConfig{Rate: 1e9}); err == nil {
		t.Error("host port 1 accepted")
	}
	if _, err := s.Connect(PortRef{"a", 0}, PortRef{"b", 0}, LinkConfig{Rate: 1e9}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Connect(PortRef{"a", 0}, PortRef{"b", 0}, LinkConfig{Rate: 1e9}); err == nil {
		t.Error("port connected twice")
	}
	ok := FlowConfig{Name: "f", Src: "a", Dst: []string{"b"}, Size: SizeDist{Kind: Fixed, Bytes: 1}}
	for name, mod := range map[string]func(*FlowConfig){
		"no dst":   func(f *FlowConfig) { f.Dst = nil },
		"self":     func(f *FlowConfig) { f.Dst = []string{"a"} },
		"unknown":  func(f *FlowConfig) { f.Src = "zz" },
		"dscp":     func(f *FlowConfig) { f.DSCP = 64 },
		"priority": func(f *FlowConfig) { f.Priority = 8 },
		"pmtu":     func(f *FlowConfig) { f.PMTU = 1001 },
		"size":     func(f *FlowConfig) { f.Size = SizeDist{} },
		"load":     func(f *FlowConfig) { f.Pattern = Poisson },
		"onoff":    func(f *FlowConfig) { f.Pattern = OnOff },
		"count":    func(f *FlowConfig) { f.Count = -1 },
	} {
		fc := ok
		mod(&fc)
		if s.AddFlow(fc) == nil {
			t.Errorf("%s: flow %+v accepted", name, fc)
		}
	}
	if err := s.AddFlow(ok); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(nil); err != nil {
		t.Fatal(err)
	}
	if s.AddHost(HostConfig{Name: "late"}) == nil || s.AddFlow(ok) == nil {
		t.Error("topology changed after start")
	}
}
