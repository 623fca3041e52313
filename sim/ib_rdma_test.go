package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
)

// RDMA over native InfiniBand, examples/ib-rdma.yaml as written: the nic
// engine (the same RC transport as RoCE) across two IB switches forwarding
// by LFT with per-VL credits.
func TestIBRDMAAcrossSwitches(t *testing.T) {
	spec, err := lab.Load("../examples/ib-rdma.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, r := buildAndRun(t, spec)
	for _, c := range []struct {
		name  string
		count int
		bytes uint64
	}{{"w", 8, 8 << 18}, {"r", 8, 8 << 18}, {"s", 16, 16 << 16}} {
		f := r.RDMAFlow(c.name)
		if f == nil {
			t.Fatalf("no result for flow %s", c.name)
		}
		t.Logf("%s: %d/%d messages, %.1f Gb/s, FCT %v, retransmitted %d", c.name, f.Completed, f.Posted, f.Throughput/1e9, f.FCT, f.Retransmit)
		if f.Completed != c.count || f.Failed != 0 || f.Bytes != c.bytes || f.Retransmit != 0 {
			t.Errorf("flow %s: completed %d failed %d bytes %d retransmitted %d", c.name, f.Completed, f.Failed, f.Bytes, f.Retransmit)
		}
	}
	if drops, by := r.SwitchDrops(); drops != 0 {
		t.Errorf("switch drops %d %v on a credit-controlled fabric", drops, by)
	}
	for _, h := range []string{"h1", "h2", "h3", "h4", "h5"} {
		n := r.NIC(h)
		if n == nil {
			t.Fatalf("no NIC result for %s", h)
		}
		for _, c := range []string{"ib_credit_overrun", "ib_vcrc_errors", "rx_icrc_errors", "ib_wrong_lid", "rx_malformed_roce"} {
			if v := n.Counter(c); v != 0 {
				t.Errorf("%s: %s %d", h, c, v)
			}
		}
		if n.Counter("ib_fc_rx") == 0 || n.Counter("ib_fc_tx") == 0 {
			t.Errorf("%s: no flow-control packets (rx %d, tx %d)", h, n.Counter("ib_fc_rx"), n.Counter("ib_fc_tx"))
		}
	}
	// The READ flow runs on SL1 -> VL1 (sl2vl default), the others on VL0.
	if n := r.NIC("h5"); n.Prio[1].TxPackets == 0 || n.Prio[0].TxPackets != 0 {
		t.Errorf("h5's READ responses: VL0 %d, VL1 %d packets; want VL1 only", n.Prio[0].TxPackets, n.Prio[1].TxPackets)
	}
	if r.FramesOutstanding != 0 {
		t.Errorf("%d frames not returned to the pool", r.FramesOutstanding)
	}
}

// 4:1 incast of RDMA WRITEs over IB: credits, not drops, hold the senders
// back; the bottleneck stays busy.
const ibRDMAIncast = `
name: ib-rdma-incast
fabric: ib
topology:
  defaults: {rate: 100G, delay: 500ns, mtu: 4096}
  nodes:
    sw1: {kind: switch, cut_through: true}
    h1: {kind: nic}
    h2: {kind: nic}
    h3: {kind: nic}
    h4: {kind: nic}
    sink: {kind: nic}
  links:
    - endpoints: ["h1:ib0", "sw1:p1"]
    - endpoints: ["h2:ib0", "sw1:p2"]
    - endpoints: ["h3:ib0", "sw1:p3"]
    - endpoints: ["h4:ib0", "sw1:p4"]
    - endpoints: ["sink:ib0", "sw1:p5"]
traffic:
  - {name: i1, src: h1, dst: sink, op: write, size: 1MiB, count: 4}
  - {name: i2, src: h2, dst: sink, op: write, size: 1MiB, count: 4}
  - {name: i3, src: h3, dst: sink, op: write, size: 1MiB, count: 4}
  - {name: i4, src: h4, dst: sink, op: write, size: 1MiB, count: 4}
sim:
  duration: 3ms
`

func TestIBRDMAIncast(t *testing.T) {
	spec, err := lab.Parse("ib-rdma-incast.yaml", []byte(ibRDMAIncast))
	if err != nil {
		t.Fatal(err)
	}
	_, r := buildAndRun(t, spec)
	var last, waits uint64
	for _, name := range []string{"i1", "i2", "i3", "i4"} {
		f := r.RDMAFlow(name)
		if f.Completed != 4 || f.Retransmit != 0 {
			t.Errorf("flow %s: completed %d, retransmitted %d", name, f.Completed, f.Retransmit)
		}
		last = max(last, uint64(f.FCT))
	}
	for _, h := range []string{"h1", "h2", "h3", "h4"} {
		waits += r.NIC(h).Counter("ib_credit_waits")
	}
	if drops, by := r.SwitchDrops(); drops != 0 {
		t.Errorf("switch drops %d %v", drops, by)
	}
	// 16 MiB of payload through one 100G port: the ideal is 16 MiB at
	// 100G times the IB overhead (a middle packet is LRH 8 + BTH 12 +
	// 4096 + ICRC 4 + VCRC 2 bytes).
	ideal := float64(16<<20) * 8 / 100e9 * 4122 / 4096 * 1e12
	eff := ideal / float64(last)
	t.Logf("4:1 IB RDMA incast: last message done at %.1f us, %.1f%% of line rate, sender credit waits %d", float64(last)/1e6, 100*eff, waits)
	if eff < 0.90 {
		t.Errorf("bottleneck efficiency %.1f%%, want >= 90%%", 100*eff)
	}
	if waits == 0 {
		t.Error("the senders never waited for credit: the incast did not congest")
	}
}

// The same RDMA lab managed by a subnet manager running on h1's HCA (the
// nic engine's SMA on QP0): the fabric starts with no LIDs and empty
// forwarding tables; the QPs connect once the SM made both ports Active,
// addressed by the LIDs it assigned, and every message completes.
func TestIBRDMAManagedBySM(t *testing.T) {
	spec, err := lab.Load("../examples/ib-rdma.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.IB.SM = &lab.IBSubnetManager{Host: "h1", SweepInterval: 50 * clock.Microsecond}
	s, r := buildAndRun(t, spec)
	d := s.SubnetManager()
	if d == nil || d.Host() != nil {
		t.Fatalf("subnet manager %+v: want one on the NIC host h1", d)
	}
	st := d.SM().Stats()
	top := d.SM().Topology()
	if top == nil {
		t.Fatalf("no sweep finished: %+v %v", st, d.SM().Errors())
	}
	lids := map[uint16]string{}
	for _, n := range top.Nodes {
		if n.LID == 0 {
			t.Errorf("node %q has no LID", n.Desc)
		}
		if o, dup := lids[n.LID]; dup {
			t.Errorf("LID %d given to %q and %q", n.LID, o, n.Desc)
		}
		lids[n.LID] = n.Desc
	}
	t.Logf("SM on h1's HCA: %d nodes, %d SMPs, %d heavy sweeps", len(top.Nodes), st.SMPsSent, st.HeavySweeps)
	if len(top.Nodes) != 7 {
		t.Errorf("%d nodes discovered, want 7 (2 switches, 5 HCAs)", len(top.Nodes))
	}
	for _, name := range []string{"w", "r", "s"} {
		f := r.RDMAFlow(name)
		if f.Completed != f.Posted || f.Completed == 0 || f.Failed != 0 {
			t.Errorf("flow %s: %d/%d completed, %d failed", name, f.Completed, f.Posted, f.Failed)
		}
	}
	for _, h := range []string{"h1", "h4"} {
		if n := r.NIC(h); n.Counter("smp_rx") == 0 || n.Counter("smp_tx") == 0 {
			t.Errorf("%s: smp_rx %d smp_tx %d", h, n.Counter("smp_rx"), n.Counter("smp_tx"))
		}
	}
	if drops, by := r.SwitchDrops(); drops != 0 {
		t.Errorf("switch drops %d %v", drops, by)
	}
}

// buildAndRun builds spec with seed 1 and runs it to its end.
func buildAndRun(t *testing.T, spec *lab.Spec) (*Sim, *Results) {
	t.Helper()
	s, err := Build(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// TestIBManagedLongLinks: a subnet manager across long cables. An SMP's
// round trip over two 100 µs links is 400 µs, longer than the SM's own
// default wait (100 µs): the simulator waits as long as the lab's links
// can take, the fabric comes up, and the flows complete. Before, every
// SMP timed out, the fabric never came up and nothing said so.
func TestIBManagedLongLinks(t *testing.T) {
	spec, err := lab.Load("../examples/ib-rdma.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range spec.Links {
		l.Delay = 100 * clock.Microsecond
	}
	spec.IB.SM = &lab.IBSubnetManager{Host: "h1", SweepInterval: 0}
	spec.Sim.Duration = 50 * clock.Millisecond
	s, r := buildAndRun(t, spec)
	d := s.SubnetManager()
	if top := d.SM().Topology(); top == nil || len(top.Nodes) != 7 {
		t.Fatalf("the SM across 100 µs links: %+v, errors %v", d.SM().Stats(), d.SM().Errors())
	}
	if errs := d.SM().Errors(); len(errs) != 0 {
		t.Errorf("SM errors: %v", errs)
	}
	for _, name := range []string{"w", "r", "s"} {
		if f := r.RDMAFlow(name); f.Completed != f.Posted || f.Completed == 0 || f.Failed != 0 {
			t.Errorf("flow %s: %d/%d completed, %d failed", name, f.Completed, f.Posted, f.Failed)
		}
	}
}
