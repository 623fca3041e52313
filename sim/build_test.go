package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/switchcore"
)

const incastLab = `
name: incast
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4200}
  nodes:
    sw1: {kind: switch, cut_through: true, ports: 5}
    h1: {kind: nic}
    h2: {kind: nic}
    h3: {kind: nic}
    h4: {kind: nic}
    h5: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["h2:eth0", "sw1:p2"]
    - endpoints: ["h3:eth0", "sw1:p3"]
    - endpoints: ["h4:eth0", "sw1:p4"]
    - endpoints: ["h5:eth0", "sw1:p5"]
qos:
  PORT_QOS_MAP: {pfc_enable: "3"}
  BUFFER_POOL:
    ingress_lossless_pool: {size: 4MiB, type: ingress, mode: dynamic}
  BUFFER_PROFILE:
    pg_lossless_100000_5m_profile:
      pool: ingress_lossless_pool
      size: 1248
      dynamic_th: -3
      xon: 18432
      xon_offset: 2496
      xoff: 40KiB
  BUFFER_PG:
    "3": pg_lossless_100000_5m_profile
traffic:
  - name: incast
    src: [h1, h2, h3, h4]
    dst: h5
    kind: rdma_write
    size: 64KiB
    priority: 3
    stop: 300us
sim:
  duration: 600us
  sample_interval: 10us
  seed: 1
`

// TestBuildFromLab: a lab file becomes switches, hosts, links and flows; the
// QoS tables reach switchcore; the run is lossless and repeatable.
func TestBuildFromLab(t *testing.T) {
	spec, err := lab.Parse("incast.yaml", []byte(incastLab))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := SwitchConfig(spec, spec.Node("sw1"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.BufferProfiles["pg_lossless_100000_5m_profile"]; p == nil || p.DynamicTh != -3 || p.Xoff != 40<<10 || p.Xon != 18432 {
		t.Fatalf("profile not converted: %+v", p)
	}
	if !cfg.DecrementTTL {
		t.Error("a RoCE switch routes without decrementing the TTL: a loop while routes converge would never end")
	}
	if cfg.Ports[0].PFCEnable != 1<<3 || cfg.Ports[4].BufferPG[3] != "pg_lossless_100000_5m_profile" || !cfg.CutThrough {
		t.Fatalf("port config not converted: %+v", cfg.Ports[0])
	}
	if cfg.BufferPools["ingress_lossless_pool"].Size != 4<<20 || cfg.Ports[2].Speed != 100e9 {
		t.Fatal("pool or speed not converted")
	}
	run := func() *Results {
		s, err := Build(spec, spec.Sim.Seed)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := run()
	drops, _ := r.SwitchDrops()
	var xoff uint64
	for _, p := range r.Ports {
		xoff += p.Prio[3].TxPause
	}
	var rx uint64
	for _, f := range r.Flows {
		rx += f.RxBytes
		if f.MessagesDone != f.MessagesSent || f.PSNGaps != 0 {
			t.Fatalf("%s: %d/%d messages, %d gaps", f.Name, f.MessagesDone, f.MessagesSent, f.PSNGaps)
		}
	}
	t.Logf("incast.yaml 4:1: %d flows, %d B delivered, %d XOFF, %d drops, %d samples, deadlock %v",
		len(r.Flows), rx, xoff, drops, len(r.Series.Times), r.Deadlock != nil)
	if len(r.Flows) != 4 || drops != 0 || xoff == 0 || r.Deadlock != nil || r.End != 600*clock.Microsecond {
		t.Fatalf("unexpected run: flows %d drops %d xoff %d", len(r.Flows), drops, xoff)
	}
	if len(r.Series.Times) != 60 || len(r.Series.Flows) != 4 {
		t.Fatalf("series: %d samples, %d flows", len(r.Series.Times), len(r.Series.Flows))
	}
	if !equalResults(r, run()) {
		t.Fatal("two runs of one lab and seed differ")
	}
}

const ibLab = `
name: ibincast
fabric: ib
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4096}
  nodes:
    sw1: {kind: switch}
    h1: {kind: nic}
    h2: {kind: nic}
    h3: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["h2:eth0", "sw1:p2"]
    - endpoints: ["h3:eth0", "sw1:p3"]
ib:
  max_vls: 2
  vl_buffer: 64KiB
traffic:
  - name: in
    src: [h1, h2]
    dst: h3
    kind: rdma_write
    size: 128KiB
    count: 4
    pmtu: 4096
sim:
  duration: 500us
`

func TestBuildFromIBLab(t *testing.T) {
	spec, err := lab.Parse("ib.yaml", []byte(ibLab))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(spec, 3)
	if err != nil {
		t.Fatal(err)
	}
	if sw := s.nodes["sw1"].(*simSwitch); sw.cfg.Fabric != switchcore.FabricIB || sw.cfg.IB.DataVLs != 2 || sw.cfg.IB.BufferBlocks != 1024 {
		t.Fatalf("IB config not converted: %+v", sw.cfg.IB)
	}
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	drops, by := r.SwitchDrops()
	var rx uint64
	for _, f := range r.Flows {
		rx += f.RxBytes
	}
	t.Logf("ib.yaml 2:1: %d B delivered, drops %d, host3 credit overruns %d", rx, drops, r.Host("h3").Stats.CreditOverrun)
	if drops != 0 || rx != 2*4*128<<10 || r.Host("h3").Stats.CreditOverrun != 0 {
		t.Fatalf("drops %d %v, rx %d", drops, by, rx)
	}
}

// TestBuiltinHeadroomFollowsTheLink: a switch whose lossless PGs use the
// built-in profile gets, per port, a headroom for that port's speed and
// link delay (SONiC's per-speed, per-cable profiles): the built-in one
// is sized for 300 m of cable, and a 10 us link (2 km) overflowed it.
func TestBuiltinHeadroomFollowsTheLink(t *testing.T) {
	spec, err := lab.Parse("t.yaml", []byte(`
name: t
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4200}
  nodes:
    sw1: {kind: switch, ports: 2}
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["h2:eth0", "sw1:p2"]
      delay: 10us
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := SwitchConfig(spec, spec.Node("sw1"), 1)
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := cfg.Ports[0], cfg.Ports[1]
	if p1.BufferPG[3] != switchcore.LosslessPGProfile {
		t.Errorf("p1 (1 us, within 300 m): PG 3 bound to %q, want the built-in", p1.BufferPG[3])
	}
	name := "pg_lossless_100000_2000m_profile"
	if p2.BufferPG[3] != name || p2.BufferPG[4] != name {
		t.Fatalf("p2 (10 us): PGs 3, 4 bound to %q, %q, want %s", p2.BufferPG[3], p2.BufferPG[4], name)
	}
	if got, need := cfg.BufferProfiles[name].Xoff, switchcore.HeadroomForDelay(100e9, 10*clock.Microsecond, 4218); got < need {
		t.Errorf("%s: xoff %d, below the %d bytes a 10 us link has in flight", name, got, need)
	}
}

// TestIBSeriesVLs: an IB lab's queue series sample the VLs the flows take
// at the switches, with the credits and credit starvation of each. They
// sampled the flows' SLs as queues: with SL 1 on one data VL that was an
// always-empty queue 1, and VL 0, which carried everything, was not
// sampled at all.
func TestIBSeriesVLs(t *testing.T) {
	const y = `name: vls
fabric: ib
topology:
  nodes:
    sw1: {kind: switch}
    sw2: {kind: switch}
    h1: {kind: nic}
    h2: {kind: nic}
    h3: {kind: nic}
    h4: {kind: nic}
  links:
    - endpoints: [h1:ib0, sw1:p1]
    - endpoints: [h2:ib0, sw1:p2]
    - endpoints: [sw1:p3, sw2:p3]
    - endpoints: [h3:ib0, sw2:p1]
    - endpoints: [h4:ib0, sw2:p2]
traffic:
  - {name: f, src: [h1, h2, h4], dst: h3, size: 64KiB, sl: 1}
sim: {duration: 200us, sample_interval: 5us}
`
	spec, err := lab.Parse("vls.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	_, r := buildAndRun(t, spec)
	starved := 0
	for _, q := range r.Series.Queues {
		if q.Prio != 0 {
			t.Errorf("sampled %s port %d queue %d: the flows' SL, not a VL", q.Switch, q.Port, q.Prio)
		}
		if len(q.Credits) != len(r.Series.Times) || len(q.Starved) != len(r.Series.Times) {
			t.Fatalf("%s port %d: %d credit samples, %d starved, %d times", q.Switch, q.Port, len(q.Credits), len(q.Starved), len(r.Series.Times))
		}
		for _, b := range q.Starved {
			if b {
				starved++
			}
		}
	}
	// 3:1 into h3, two of them across sw1 -> sw2: sw2's buffer for that
	// link fills with packets for h3 and sw1:p3 waits for its credits.
	if len(r.Series.Queues) != 6 || starved == 0 {
		t.Errorf("%d queues sampled, %d starved samples", len(r.Series.Queues), starved)
	}
}
