package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/switchcore"
	"github.com/emufabric/emufabric/wire"
)

// IB congestion control proofs (IBA Annex A10) on examples/ib-cc.yaml:
// eight hot flows into hd (four across the sw1 -> sw2 link, four local to
// sw2) and a victim flow hv -> hr that shares the sw1 -> sw2 link.

// ibccRun is one run of the example and what the proofs read from it.
type ibccRun struct {
	s   *Sim
	r   *Results
	win clock.Time // measurement window: [warm, end]
	// Payload bits per second received in the window, by flow name.
	tput map[string]float64
	// Smallest credit balance any switch port VL had at any sample.
	minCredit int
}

const (
	ibccWarm = 1 * clock.Millisecond
	ibccEnd  = 3 * clock.Millisecond
)

func runIBCCExample(t testing.TB, withCC bool) *ibccRun {
	t.Helper()
	spec, err := lab.Load("../examples/ib-cc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if spec.IB.CC == nil {
		t.Fatal("the example has no ib cc section")
	}
	if !withCC {
		spec.IB.CC = nil
	}
	s, err := Build(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	run := &ibccRun{s: s, win: ibccEnd - ibccWarm, tput: map[string]float64{}, minCredit: math.MaxInt}
	// Credits are checked every microsecond on every switch port VL.
	var check *timer
	check = s.newTimer(func() {
		for _, w := range s.switches {
			for p := range w.ports {
				if c, ok := w.sw.Credits(p, 0); ok {
					run.minCredit = min(run.minCredit, c)
				}
			}
		}
		check.Reset(s.now + clock.Microsecond)
	})
	check.Reset(clock.Microsecond)
	if err := s.RunUntil(ibccWarm); err != nil {
		t.Fatal(err)
	}
	base := map[string]uint64{}
	for _, f := range s.flows {
		base[f.cfg.Name] = flowRxBytes(f)
	}
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	run.r = r
	for _, f := range s.flows {
		run.tput[f.cfg.Name] = float64(flowRxBytes(f)-base[f.cfg.Name]) * 8 / run.win.Seconds()
	}
	return run
}

func flowRxBytes(f *flow) uint64 {
	var n uint64
	for _, h := range f.dsts {
		if sk := h.sinks[f.id]; sk != nil {
			n += sk.rxB
		}
	}
	return n
}

// busy is the fraction of the window the link direction into node:port
// spent sending.
func (r *ibccRun) linkBusy(t testing.TB, from, to string) float64 {
	for _, l := range r.s.links {
		for d := range 2 {
			a, b := l.A, l.B
			if d == 1 {
				a, b = b, a
			}
			if a.Node == from && b.Node == to {
				return float64(l.Stats(d).Busy) / float64(r.r.End)
			}
		}
	}
	t.Fatalf("no link %s -> %s", from, to)
	return 0
}

func (r *ibccRun) report(t testing.TB, label string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: victim %.1f Gb/s, hd link busy %.1f%%, ISL busy %.1f%%, min credits %d\n", label,
		r.tput["victim"]/1e9, 100*r.linkBusy(t, "sw2", "hd"), 100*r.linkBusy(t, "sw1", "sw2"), r.minCredit)
	for _, f := range r.r.Flows {
		fmt.Fprintf(&b, "  %-8s %6.2f Gb/s", f.Name, r.tput[f.Name]/1e9)
		if c := f.IBCC; c != nil {
			fmt.Fprintf(&b, "  fecn %6d becn %6d ccti %3d max %3d delay %v", c.FECNRx, c.BECNRx, c.CCTI, c.MaxCCTI, c.Delay)
		}
		b.WriteByte('\n')
	}
	for _, p := range r.r.Ports {
		if p.Prio[0].FECNMarked > 0 {
			fmt.Fprintf(&b, "  %s:%s fecn_marked %d\n", p.Switch, p.Name, p.Prio[0].FECNMarked)
		}
	}
	t.Log(b.String())
}

// TestIBCCTreeSaturation is the proof (IBA Annex A10 on the example):
//
// Without congestion control the hot spot's link is full but the tree
// saturates: sw2's receive buffer for the inter-switch link is full of
// packets waiting for hd, the link runs on the credits that trickle back
// and the victim, which never goes to hd, gets about what one hot flow
// behind the link gets (~5 Gb/s of its 40). The hot flows are unfair too:
// the four behind the link share one input's turn at hd.
//
// With it, sw2 marks FECN towards hd, hd answers with CN packets, every hot
// source raises its CCTI and paces itself near its fair share (hd's link
// / 8), hd's link stays >= 90 % busy, and the victim gets its 40 Gb/s.
// Both runs are lossless: no drops, no credit ever overrun or negative.
func TestIBCCTreeSaturation(t *testing.T) {
	off := runIBCCExample(t, false)
	off.report(t, "cc off")
	on := runIBCCExample(t, true)
	on.report(t, "cc on")

	for _, run := range []*ibccRun{off, on} {
		if d, _ := run.r.SwitchDrops(); d != 0 {
			t.Errorf("%d drops in a lossless IB fabric", d)
		}
		if run.minCredit < 0 {
			t.Errorf("a switch port went %d credits below zero", run.minCredit)
		}
		for _, h := range run.r.Hosts {
			st := h.Stats
			if st.CreditOverrun != 0 || st.ICRCErrors != 0 || st.VCRCErrors != 0 || st.Malformed != 0 || st.UnknownFlow != 0 || st.OutOfOrder != 0 {
				t.Errorf("host %s: %+v", h.Name, st)
			}
		}
		for _, p := range run.r.Ports {
			if p.Prio[0].HeadroomOverflow != 0 {
				t.Errorf("%s:%s received beyond the credit it granted", p.Switch, p.Name)
			}
		}
		if b := run.linkBusy(t, "sw2", "hd"); b < 0.90 {
			t.Errorf("hot spot link busy %.1f%%, want >= 90%%", 100*b)
		}
	}

	// Off: no marks, a saturated tree and a starved victim.
	for _, p := range off.r.Ports {
		if p.Prio[0].FECNMarked != 0 {
			t.Errorf("cc off: %s:%s marked %d", p.Switch, p.Name, p.Prio[0].FECNMarked)
		}
	}
	if v := off.tput["victim"]; v > 10e9 {
		t.Errorf("cc off: victim %.1f Gb/s; tree saturation should hold it near 5", v/1e9)
	}

	// On: marks at the hot spot, BECNs back at every hot source, CCTIs up.
	var marked uint64
	for _, p := range on.r.Ports {
		if p.Switch == "sw2" && p.Name == "p5" {
			marked = p.Prio[0].FECNMarked
		}
	}
	if marked == 0 {
		t.Fatal("cc on: sw2 marked nothing towards hd")
	}
	var hd *HostResult
	for i := range on.r.Hosts {
		if on.r.Hosts[i].Name == "hd" {
			hd = &on.r.Hosts[i]
		}
	}
	if hd == nil || hd.Stats.IBCC.FECNRx == 0 || hd.Stats.IBCC.CNPTx != hd.Stats.IBCC.FECNRx {
		t.Fatalf("hd must answer every FECN with a CN packet: %+v", hd)
	}
	fair := on.linkBusy(t, "sw2", "hd") * 100e9 / 8 // hd's busy link shared eight ways (wire rate: 1 % above payload)
	var hotSum float64
	for _, f := range on.r.Flows {
		if !strings.HasPrefix(f.Name, "hot/") {
			continue
		}
		c := f.IBCC
		if c == nil || c.FECNRx == 0 || c.BECNRx == 0 || c.MaxCCTI == 0 {
			t.Errorf("%s: FECN/BECN/CCTI %+v", f.Name, c)
			continue
		}
		// A CN packet can be in flight at the end of the run.
		if c.BECNRx+2 < c.FECNRx || c.BECNRx > c.FECNRx {
			t.Errorf("%s: %d FECNs answered but %d BECNs reached the source", f.Name, c.FECNRx, c.BECNRx)
		}
		got := on.tput[f.Name]
		hotSum += got
		if math.Abs(got-fair)/fair > 0.15 {
			t.Errorf("%s: %.2f Gb/s, not within 15%% of its fair share %.2f", f.Name, got/1e9, fair/1e9)
		}
	}
	if v := on.tput["victim"]; v < 0.95*40e9 {
		t.Errorf("cc on: victim %.1f Gb/s, want its 40 Gb/s", v/1e9)
	}
	if on.tput["victim"] < 5*off.tput["victim"] {
		t.Errorf("victim %.1f -> %.1f Gb/s: congestion control should relieve it", off.tput["victim"]/1e9, on.tput["victim"]/1e9)
	}
	t.Logf("victim %.1f Gb/s without CC, %.1f Gb/s with; hot flows %.1f Gb/s in all (fair share %.2f each); %d FECN marks at sw2:p5",
		off.tput["victim"]/1e9, on.tput["victim"]/1e9, hotSum/1e9, fair/1e9, marked)
}

// TestIBCCDeterministic: the same file and seed give the same run.
func TestIBCCDeterministic(t *testing.T) {
	a, b := runIBCCExample(t, true), runIBCCExample(t, true)
	if a.r.Events != b.r.Events || a.tput["victim"] != b.tput["victim"] || a.minCredit != b.minCredit {
		t.Fatalf("runs differ: %d/%d events, victim %v/%v", a.r.Events, b.r.Events, a.tput["victim"], b.tput["victim"])
	}
	for i := range a.r.Flows {
		x, y := a.r.Flows[i].IBCC, b.r.Flows[i].IBCC
		if *x != *y {
			t.Fatalf("flow %s: %+v vs %+v", a.r.Flows[i].Name, x, y)
		}
	}
}

// BenchmarkIBCCExample runs examples/ib-cc.yaml (13 hosts, 2 switches,
// 100G, 3 ms) with congestion control on, once per iteration, and reports
// the figures the proof checks alongside the simulator's speed.
func BenchmarkIBCCExample(b *testing.B) {
	b.ReportAllocs()
	var events uint64
	var last *ibccRun
	for i := 0; i < b.N; i++ {
		last = runIBCCExample(b, true)
		events += last.r.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(ibccEnd.Seconds()*float64(b.N)/b.Elapsed().Seconds(), "sim-s/wall-s")
	b.ReportMetric(last.tput["victim"]/1e9, "victim-Gb/s")
	b.ReportMetric(100*last.linkBusy(b, "sw2", "hd"), "hotspot-busy-%")
}

// TestIBCNPEncoding: the CN packet a host returns for a FECN is the
// 26-byte packet hfi1's return_cnp builds: LRH (VL, SL, LNH 2, DLID = the
// source, PktLen 6 words), BTH opcode 0x80 with BECN, P_Key 0xFFFF,
// DestQP = the source QP, PSN 0, then a valid ICRC and VCRC.
func TestIBCNPEncoding(t *testing.T) {
	b := make([]byte, ibCNPLen)
	encodeIBCNP(b, 1, 3, 0x0007, 0x0002, 0x010005)
	want := []byte{
		0x10, 0x32, 0x00, 0x07, 0x00, 0x06, 0x00, 0x02, // LRH: VL 1, SL 3, LNH 2, DLID 7, PktLen 6, SLID 2
		0x80, 0x00, 0xFF, 0xFF, 0x40, 0x01, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, // BTH
	}
	if got := b[:len(want)]; string(got) != string(want) {
		t.Fatalf("headers\n got % x\nwant % x", got, want)
	}
	crc, _ := bth.ICRCIBLocal(b[:wire.LRHSize+bth.BTHSize])
	if bth.WireICRC(b[wire.LRHSize+bth.BTHSize:]) != crc || wire.CheckVCRC(b, 0) != nil {
		t.Fatal("ICRC or VCRC wrong")
	}
	if wire.LRH(b).FrameLen() != len(b) || wire.CreditBlocks(len(b)) != 1 {
		t.Fatal("length")
	}
}

// TestIBCCPortControl: port_control qp gives each flow its own CCTI;
// sl shares one per SL of the host.
func TestIBCCPortControl(t *testing.T) {
	for _, pc := range []cc.PortControl{cc.PortControlQP, cc.PortControlSL} {
		n := newNet(t, Options{Seed: 1, Duration: 10 * clock.Microsecond})
		n.sw("sw", 2, 100e9, func(c *switchcore.Config) {
			c.Fabric = switchcore.FabricIB
			c.IB.LFT = []int{-1, 0, 1}
		})
		cfg := cc.DefaultIBCC()
		cfg.PortControl = pc
		for _, h := range []string{"h1", "h2"} {
			n.must(n.s.AddHost(HostConfig{Name: h, Fabric: FabricIB, IBCC: &cfg}))
		}
		n.link("h1", 0, "sw", 0, 100e9, clock.Microsecond)
		n.link("h2", 0, "sw", 1, 100e9, clock.Microsecond)
		for i, sl := range []uint8{0, 0, 1} {
			n.flow(FlowConfig{Name: itoa(i), Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 4096}, Count: 1, SL: sl})
		}
		n.must(n.s.Start())
		h := n.s.Host("h1")
		a, b, c := h.ccRP(h.flows[0]), h.ccRP(h.flows[1]), h.ccRP(h.flows[2])
		if shared := a == b; shared != (pc == cc.PortControlSL) || a == c {
			t.Errorf("%v: flows on one SL share a CCTI: %v; across SLs: %v", pc, a == b, a == c)
		}
		// A BECN for flow 0 raises its CCTI (and flow 1's only when shared).
		h.ccBECN(srcQPBase + uint32(h.flows[0].id))
		if a.CCTI() != 1 || (b.CCTI() == 1) != (pc == cc.PortControlSL) || c.CCTI() != 0 {
			t.Errorf("%v: CCTIs after one BECN: %d %d %d", pc, a.CCTI(), b.CCTI(), c.CCTI())
		}
		h.ccBECN(0x123) // no such QP
		if h.Stats.IBCC.UnknownCNP != 1 || h.Stats.IBCC.BECNRx != 1 {
			t.Errorf("%v: stats %+v", pc, h.Stats.IBCC)
		}
	}
	if err := New(Options{}).AddHost(HostConfig{Name: "x", IBCC: &cc.IBCC{}}); err == nil {
		t.Error("IB CC accepted on a RoCE host")
	}
	bad := cc.DefaultIBCC()
	bad.CCTIIncrease = 0
	if err := New(Options{}).AddHost(HostConfig{Name: "x", Fabric: FabricIB, IBCC: &bad}); err == nil {
		t.Error("invalid IB CC accepted")
	}
}

// TestIBCCSteadyStateZeroAlloc: with congestion control on, marking,
// CN packets and pacing allocate nothing per frame once warmed up.
func TestIBCCSteadyStateZeroAlloc(t *testing.T) {
	spec, err := lab.Load("../examples/ib-cc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.Sim.SampleInterval = 0
	s, err := Build(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RunUntil(ibccWarm); err != nil {
		t.Fatal(err)
	}
	start := s.events
	allocs := testing.AllocsPerRun(5, func() {
		if err := s.RunUntil(s.now + 100*clock.Microsecond); err != nil {
			t.Fatal(err)
		}
	})
	ev := (s.events - start) / 6
	t.Logf("%.1f allocations per 100 us of the IB CC example (%d events)", allocs, ev)
	// The only allocations left are the amortised growth of the per-flow
	// lists of message completion times (a 1 MiB message completes every
	// few tens of microseconds per flow), not anything per frame.
	if allocs*1000 > float64(ev) {
		t.Fatalf("%.1f allocations per %d events", allocs, ev)
	}
}
