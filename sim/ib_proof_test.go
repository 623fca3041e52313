package sim

import (
	"fmt"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/switchcore"
	"github.com/emufabric/emufabric/wire"
)

// Proofs for the native InfiniBand labs (docs/examples/ib-fat-tree.md,
// docs/ib-walkthrough.md): the SM's sweep and re-sweep on the lab file
// itself, a 16:1 incast's credits and bottleneck, and VL arbitration past
// a credit-starved VL. Figures are simulated time, so they are the same on
// every machine.

func us2(t clock.Time) float64 { return float64(t) / float64(clock.Microsecond) }

// leafSpread counts, for each leafN switch, the host LIDs it forwards out
// of its two uplinks (p5, p6: port indices 4 and 5).
func leafSpread(s *Sim) map[string][2]int {
	out := map[string][2]int{}
	for l := 1; l <= 4; l++ {
		name := fmt.Sprintf("leaf%d", l)
		sw := s.Switch(name)
		var c [2]int
		for _, h := range s.hosts {
			if p := sw.LFTEntry(h.SMA().LID()); p == 4 || p == 5 {
				c[p-4]++
			}
		}
		out[name] = c
	}
	return out
}

// TestIBProofFatTreeExample runs examples/ib-fat-tree.yaml as written:
// the SM on h1 sweeps the unconfigured fabric (unique LIDs, every host
// pair reachable over loop-free minimal LFT paths, each leaf's 12 remote
// hosts split 6/6 over its spines); at 600 µs the leaf1-spine1 link is
// cut, a light sweep notices, a heavy sweep reroutes, and every flow
// delivers again. The recovery time is measured per destination as the
// end of its longest delivery gap after the cut.
func TestIBProofFatTreeExample(t *testing.T) {
	spec, err := lab.Load("../examples/ib-fat-tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cutAt := spec.Links[16].Schedule[0].At
	if spec.Links[16].A.String() != "leaf1:p5" || cutAt != 600*clock.Microsecond {
		t.Fatalf("the example's cut moved: link %s at %v", spec.Links[16].A, cutAt)
	}
	s, err := Build(spec, spec.Sim.Seed)
	if err != nil {
		t.Fatal(err)
	}
	d := s.SubnetManager()
	if d == nil || d.Host().Name() != "h1" {
		t.Fatal("the lab's ib.sm did not start a subnet manager on h1")
	}

	// Data deliveries per destination host: the longest gap after the cut.
	last := map[string]clock.Time{}
	gap := map[string]clock.Time{}
	gapEnd := map[string]clock.Time{}
	s.SetTap(func(l *Link, dir int, f *frame.Frame) {
		h, ok := l.dir[dir].to.(*Host)
		if !ok || len(f.Data) == wire.IBLinkSize || wire.LRH(f.Data).VL() == 15 {
			return
		}
		name, now := h.Name(), s.Now()
		if prev, ok := last[name]; ok && prev >= cutAt-10*clock.Microsecond && now-prev > gap[name] {
			gap[name], gapEnd[name] = now-prev, now
		}
		last[name] = now
	})

	var first struct{ sweeps int }
	s.At(cutAt-clock.Nanosecond, func() {
		st := d.SM().Stats()
		first.sweeps = st.HeavySweeps
		t.Logf("first sweep: %d nodes (%d switches), %d SMPs, %.1f µs simulated, done at %.1f µs",
			st.Nodes, st.Switches, st.LastSweepSMPs, us2(st.LastSweepTime), us2(st.LastSweepEnd))
		if st.HeavySweeps != 1 || st.Nodes != 22 || st.Switches != 6 || st.Timeouts != 0 {
			t.Errorf("before the cut: %+v", st)
		}
		checkFabric(t, s, "before the cut")
		for leaf, c := range leafSpread(s) {
			if c != [2]int{6, 6} {
				t.Errorf("%s: remote hosts via spine1/spine2 %v, want 6/6", leaf, c)
			}
		}
	})
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := d.SM().Stats()
	resweepEnd := st.LastSweepEnd
	if st.HeavySweeps != first.sweeps+1 {
		t.Fatalf("heavy sweeps %d, want %d (the initial one and one after the cut)", st.HeavySweeps, first.sweeps+1)
	}
	t.Logf("re-sweep: %d SMPs, %.1f µs simulated, done %.1f µs after the cut; %d light sweeps in all",
		st.LastSweepSMPs, us2(st.LastSweepTime), us2(resweepEnd-cutAt), st.LightSweeps)
	checkFabric(t, s, "after the cut")
	if c := leafSpread(s)["leaf1"]; c != [2]int{0, 12} {
		t.Errorf("leaf1 routes %v over spine1/spine2 with its spine1 link down", c)
	}

	affected := 0
	var worst clock.Time
	for _, f := range r.Flows {
		dst := f.Dst[0]
		if last[dst] <= resweepEnd {
			t.Errorf("flow %s: no delivery to %s after the re-sweep (last at %.1f µs)", f.Name, dst, us2(last[dst]))
		}
		if gap[dst] > 20*clock.Microsecond {
			affected++
			rec := gapEnd[dst] - cutAt
			worst = max(worst, rec)
			t.Logf("flow %s: no data for %.1f µs; delivering again %.1f µs after the cut", f.Name, us2(gap[dst]), us2(rec))
			if gapEnd[dst] < cutAt || rec > resweepEnd-cutAt+20*clock.Microsecond {
				t.Errorf("flow %s: recovered %.1f µs after the cut, re-sweep done after %.1f µs", f.Name, us2(rec), us2(resweepEnd-cutAt))
			}
		}
	}
	// Both directions between leaf1 and leaf3 lose the routes that used
	// spine1 on the cut link: half of each direction's four flows.
	if affected != 4 {
		t.Errorf("%d flows interrupted by the cut, want 4", affected)
	}
	drops, by := r.SwitchDrops()
	if drops != by[switchcore.DropLinkDown] {
		t.Errorf("switch drops %v: only link_down expected", by)
	}
	t.Logf("cut -> recovery: %.1f µs (worst flow); %d frames dropped on the dead link meanwhile", us2(worst), drops)
}

// TestIBProofIncast16: sixteen hosts write 512 KiB each to h17 through one
// IB switch at line rate. Credits are sampled every 0.5 µs on every
// switch port and host: never negative. Nothing is dropped, h17 never
// receives beyond the credit it granted, and the switch port towards h17
// is busy at least 95 % of the time the incast lasts.
func TestIBProofIncast16(t *testing.T) {
	const rate = 100e9
	n := newNet(t, Options{Seed: 3, Duration: 1500 * clock.Microsecond})
	n.sw("sw1", 17, rate, func(c *switchcore.Config) {
		c.Fabric = switchcore.FabricIB
		for i := range c.Ports {
			c.Ports[i].MTU = 4096 + ibOverhead
		}
	})
	var srcs []string
	for h := 1; h <= 17; h++ {
		name := fmt.Sprintf("h%d", h)
		n.host(name, FabricIB)
		n.link(name, 0, "sw1", h-1, rate, 500*clock.Nanosecond)
		if h <= 16 {
			srcs = append(srcs, name)
		}
	}
	for _, fc := range Incast("incast", srcs, "h17", FlowConfig{Size: SizeDist{Kind: Fixed, Bytes: 256 << 10}, Count: 2, PMTU: 4096}) {
		n.flow(fc)
	}
	n.must(n.s.Start())
	sw := n.s.Switch("sw1")
	minCredit, samples := 1<<30, 0
	var sample func()
	sample = func() {
		for p := 0; p < 17; p++ {
			if c, ok := sw.Credits(p, 0); ok {
				minCredit = min(minCredit, c)
				samples++
			}
		}
		for _, h := range n.s.hosts {
			if h.fcclKnown[0] {
				c := (int(h.fccl[0]) - int(h.fctbs[0])) & 4095
				if c > 2048 {
					c -= 4096
				}
				minCredit = min(minCredit, c)
				samples++
			}
		}
		n.s.At(n.s.Now()+500*clock.Nanosecond, sample)
	}
	n.s.At(0, sample)
	r := n.run()
	if samples < 1000 || minCredit < 0 {
		t.Errorf("%d credit samples, smallest %d blocks", samples, minCredit)
	}
	drops, _ := r.SwitchDrops()
	var rx uint64
	for _, f := range r.Flows {
		rx += f.RxBytes
		if f.MessagesDone != 2 {
			t.Errorf("flow %s: %d of 2 messages", f.Name, f.MessagesDone)
		}
	}
	h17 := n.s.Host("h17")
	if drops != 0 || h17.Stats.CreditOverrun != 0 || rx != 16*512<<10 {
		t.Errorf("drops %d, credit overruns at h17 %d, delivered %d bytes", drops, h17.Stats.CreditOverrun, rx)
	}
	var busy float64
	for _, l := range n.s.links {
		if l.B.Node == "sw1" && l.A.Node == "h17" {
			st := l.Stats(1) // sw1 -> h17
			busy = float64(st.DataBusy) / float64(st.LastDataTail-st.FirstDataTx)
			t.Logf("sw1 -> h17: %d data frames, busy %.2f%% of %.1f µs", st.DataFrames, 100*busy, us2(st.LastDataTail-st.FirstDataTx))
		}
	}
	if busy < 0.95 {
		t.Errorf("bottleneck busy %.2f%%, want >= 95%%", 100*busy)
	}
	var stalls uint64
	for p := 0; p < 16; p++ {
		stalls += sw.Counters(p).Prio[0].CreditStalls
	}
	t.Logf("16:1 incast: %d credit samples, smallest credit %d blocks; %d host credit waits, %d switch credit stalls", samples, minCredit, sumCreditWaits(n.s), stalls)
}

func sumCreditWaits(s *Sim) uint64 {
	var w uint64
	for _, h := range s.hosts {
		w += h.Stats.CreditWaits
	}
	return w
}

// vlArbNet: h1 (SL 0 -> VL 0) and h2 (SL 1 -> VL 1) send through sw1 and
// one shared 100G link to sw2, which delivers VL 0 to h3 and VL 1 to h4.
// slowH4 puts h4 behind a 1 Gb/s link: it drains VL 1 a hundred times
// slower than it arrives, so sw2's VL 1 buffer fills, sw2 returns no VL 1
// credit to sw1, and VL 1 on the shared link is credit-starved.
func vlArbNet(t *testing.T, slowH4 bool) (*net, *Results) {
	const rate = 100e9
	n := newNet(t, Options{Seed: 4, Duration: 400 * clock.Microsecond})
	ib := func(c *switchcore.Config) {
		c.Fabric = switchcore.FabricIB
		for i := range c.Ports {
			c.Ports[i].MTU = 4096 + ibOverhead
		}
		// 64 KiB per VL, the lab default (vl_buffer): switchcore's own
		// default of 256 blocks (16 KiB) holds three 4 KiB packets, less
		// than one credit round trip at 100G over two 500 ns hops, so a
		// lone VL could not fill the link and VL 0 would wait for credit
		// for that reason alone.
		c.IB.BufferBlocks = 1024
		if slowH4 && c.Name == "sw2" {
			c.Ports[2].Speed = 1e9
		}
	}
	n.sw("sw1", 3, rate, ib)
	n.sw("sw2", 3, rate, ib)
	for _, h := range []string{"h1", "h2", "h3", "h4"} {
		n.must(n.s.AddHost(HostConfig{Name: h, Fabric: FabricIB, IBDataVLs: 2}))
	}
	n.link("h1", 0, "sw1", 0, rate, 500*clock.Nanosecond)
	n.link("h2", 0, "sw1", 1, rate, 500*clock.Nanosecond)
	n.link("sw1", 2, "sw2", 0, rate, 500*clock.Nanosecond)
	n.link("h3", 0, "sw2", 1, rate, 500*clock.Nanosecond)
	h4rate := uint64(rate)
	if slowH4 {
		h4rate = 1e9
	}
	n.link("h4", 0, "sw2", 2, h4rate, 500*clock.Nanosecond)
	for _, f := range []struct {
		name, src, dst string
		sl             uint8
	}{{"vl0", "h1", "h3", 0}, {"vl1", "h2", "h4", 1}} {
		n.flow(FlowConfig{Name: f.name, Src: f.src, Dst: []string{f.dst}, SL: f.sl, PMTU: 4096,
			Size: SizeDist{Kind: Fixed, Bytes: 64 << 10}, Stop: 300 * clock.Microsecond})
	}
	return n, n.run()
}

// TestIBProofVLArbitration: with VL 1 credit-starved on the shared link,
// VL 0 keeps the link: sw1's per-VL transmit counters show VL 0 carrying
// at least 95 % of the link's data while VL 1 sits waiting for credit
// (credit stalls and port_xmit_wait on VL 1, none on VL 0). The same
// fabric with a fast h4 splits the link evenly, so the difference is the
// starved VL being skipped by the arbiter, not a slower VL 0.
func TestIBProofVLArbitration(t *testing.T) {
	fair, fr := vlArbNet(t, false)
	starved, sr := vlArbNet(t, true)
	c0 := fair.s.Switch("sw1").Counters(2)
	c1 := starved.s.Switch("sw1").Counters(2)
	share := func(c *switchcore.PortCounters) float64 {
		return float64(c.Prio[0].TxBytes) / float64(c.Prio[0].TxBytes+c.Prio[1].TxBytes)
	}
	t.Logf("fast h4:  sw1:p3 tx VL0 %d B, VL1 %d B (VL0 %.1f%%), VL1 credit stalls %d",
		c0.Prio[0].TxBytes, c0.Prio[1].TxBytes, 100*share(c0), c0.Prio[1].CreditStalls)
	t.Logf("slow h4:  sw1:p3 tx VL0 %d B, VL1 %d B (VL0 %.1f%%), VL1 credit stalls %d, VL1 xmit wait %.1f µs, VL0 xmit wait %.1f µs",
		c1.Prio[0].TxBytes, c1.Prio[1].TxBytes, 100*share(c1), c1.Prio[1].CreditStalls,
		float64(c1.Prio[1].XmitWaitPs)/1e6, float64(c1.Prio[0].XmitWaitPs)/1e6)
	if s := share(c0); s < 0.45 || s > 0.55 {
		t.Errorf("fast h4: VL0 share %.1f%%, want about half", 100*s)
	}
	if s := share(c1); s < 0.95 {
		t.Errorf("slow h4: VL0 share %.1f%% of sw1:p3, want >= 95%%", 100*s)
	}
	if c1.Prio[1].CreditStalls == 0 || c1.Prio[1].XmitWaitPs == 0 || c1.Prio[0].XmitWaitPs != 0 {
		t.Errorf("slow h4: VL1 stalls %d wait %d ps, VL0 wait %d ps", c1.Prio[1].CreditStalls, c1.Prio[1].XmitWaitPs, c1.Prio[0].XmitWaitPs)
	}
	// VL 0's flow runs at nearly the link rate in both cases' VL0-only
	// share: compare its delivered bytes.
	var fair0, starved0 uint64
	for _, f := range fr.Flows {
		if f.Name == "vl0" {
			fair0 = f.RxBytes
		}
	}
	for _, f := range sr.Flows {
		if f.Name == "vl0" {
			starved0 = f.RxBytes
		}
	}
	if starved0 < fair0*18/10 {
		t.Errorf("VL0 delivered %d bytes beside a starved VL1, %d beside a flowing one: want nearly twice", starved0, fair0)
	}
	drops, _ := sr.SwitchDrops()
	if drops != 0 {
		t.Errorf("switch drops %d", drops)
	}
	t.Logf("VL0 flow delivered %d B beside a starved VL1, %d B beside a flowing VL1", starved0, fair0)
}
