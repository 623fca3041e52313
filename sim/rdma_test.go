package sim

import (
	"testing"

	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/switchcore"
)

func (n *net) nic(name string, prof *cc.DCQCN, ccName string) {
	n.t.Helper()
	n.must(n.s.AddNIC(NICConfig{Name: name, DCQCN: prof, CC: ccName}))
}

func (n *net) rdma(fc RDMAFlowConfig) {
	n.t.Helper()
	n.must(n.s.AddRDMAFlow(fc))
}

// Two NICs through one cut-through switch: WRITE, READ and SEND of 1 MiB
// complete, every byte is accounted, the link runs near line rate and no
// frame is left outside the pool.
func TestRDMAOpsThroughSwitch(t *testing.T) {
	for _, op := range []RDMAOp{OpWrite, OpRead, OpSend} {
		t.Run(op.String(), func(t *testing.T) {
			const rate = 100e9
			n := newNet(t, Options{Seed: 1, Duration: 2 * clock.Millisecond})
			n.sw("sw", 2, rate, nil)
			n.nic("a", nil, "")
			n.nic("b", nil, "")
			n.link("a", 0, "sw", 0, rate, clock.Microsecond)
			n.link("b", 0, "sw", 1, rate, clock.Microsecond)
			n.rdma(RDMAFlowConfig{Name: "f", Src: "a", Dst: "b", Op: op, Size: 1 << 20, Count: 8, QPs: 2, Depth: 4, DSCP: 26, Priority: -1})
			r := n.run()
			f := r.RDMAFlow("f")
			if f == nil || len(f.QPs) != 2 {
				t.Fatalf("flow result %+v", f)
			}
			t.Logf("%s: %d/%d messages, %.1f Gb/s, FCT %v, message FCT p50 %v p99 %v, retransmitted %d, CNPs %d/%d",
				op, f.Completed, f.Posted, f.Throughput/1e9, f.FCT, f.Msg.P50, f.Msg.P99, f.Retransmit, f.CNPsSent, f.CNPHandled)
			if f.Completed != 16 || f.Failed != 0 || f.Bytes != 16<<20 || f.FCT == 0 {
				t.Fatalf("completed %d failed %d bytes %d fct %v", f.Completed, f.Failed, f.Bytes, f.FCT)
			}
			if f.Throughput < 0.9*rate*4096/4156 {
				t.Fatalf("throughput %.1f Gb/s", f.Throughput/1e9)
			}
			if f.Retransmit != 0 {
				t.Fatalf("%d retransmissions on a lossless path", f.Retransmit)
			}
			if r.FramesOutstanding != 0 {
				t.Fatalf("%d frames not returned to the pool", r.FramesOutstanding)
			}
			if a := r.NIC("a"); a == nil || a.Counter("rdma_tx_packets") == 0 {
				t.Fatalf("nic counters %+v", a)
			}
		})
	}
}

// A lossy link: go-back-N recovers, every message completes and the
// retransmissions are reported per QP.
func TestRDMALossRecovered(t *testing.T) {
	const rate = 100e9
	n := newNet(t, Options{Seed: 3, Duration: 20 * clock.Millisecond})
	n.nic("a", nil, "")
	n.nic("b", nil, "")
	_, err := n.s.Connect(PortRef{"a", 0}, PortRef{"b", 0}, LinkConfig{Rate: rate, Delay: clock.Microsecond, MTU: 4200, Loss: 1.0 / 256})
	n.must(err)
	n.rdma(RDMAFlowConfig{Name: "f", Src: "a", Dst: "b", Size: 4 << 20, Count: 2, DSCP: 26, Priority: -1})
	r := n.run()
	f := r.RDMAFlow("f")
	t.Logf("1/256 loss: %d/%d messages, retransmitted %d packets, seq NAKs %d, timeouts %d, FCT %v",
		f.Completed, f.Posted, f.Retransmit, f.QPs[0].SeqNAKs, f.QPs[0].Timeouts, f.FCT)
	if f.Completed != 2 || f.Retransmit == 0 || f.QPs[0].SeqNAKs+f.QPs[0].Timeouts == 0 {
		t.Fatalf("completed %d, retransmitted %d", f.Completed, f.Retransmit)
	}
}

// Configuration errors name the flow and the problem.
func TestRDMAConfigErrors(t *testing.T) {
	n := newNet(t, Options{Seed: 1})
	n.nic("a", nil, "")
	n.nic("b", nil, "")
	n.host("h", FabricRoCE)
	for _, fc := range []RDMAFlowConfig{
		{Name: "x", Src: "h", Dst: "b", Size: 1, Count: 1},
		{Name: "x", Src: "a", Dst: "a", Size: 1, Count: 1},
		{Name: "x", Src: "a", Dst: "b", Size: 0, Count: 1},
		{Name: "x", Src: "a", Dst: "b", Size: 1},
		{Name: "x", Src: "a", Dst: "b", Size: 1, Count: 1, MTU: 1000},
		{Name: "x", Src: "a", Dst: "b", Size: 1, Count: 1, DSCP: 26, Priority: 5},
	} {
		if err := n.s.AddRDMAFlow(fc); err == nil {
			t.Errorf("%+v: no error", fc)
		} else {
			t.Log(err)
		}
	}
	if err := n.s.AddNIC(NICConfig{Name: "c", CC: "timely"}); err == nil {
		t.Error("cc timely accepted")
	}
	_ = switchcore.NumPriorities
}

const mixedLab = `
name: mixed
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4200}
  nodes:
    s1: {kind: switch}
    s2: {kind: switch}
    a: {kind: nic}
    b: {kind: nic, dcqcn: {profile: paper, rp_ai_rate: 100}}
    c: {kind: nic}
    d: {kind: nic}
  links:
    - endpoints: ["a:eth0", "s1:p1"]
    - endpoints: ["c:eth0", "s1:p2"]
    - endpoints: ["s1:p3", "s2:p1"]
    - endpoints: ["b:eth0", "s2:p2"]
    - endpoints: ["d:eth0", "s2:p3"]
traffic:
  - {name: rd, op: read, src: a, dst: b, size: 256KiB, count: 8, qps: 2, depth: 2}
  - {name: raw, src: c, dst: d, size: 64KiB, count: 4}
sim: {duration: 1ms, sample_interval: 10us}
`

// TestBuildRDMALab: a lab with an RDMA flow and a raw flow builds NIC hosts
// for the RDMA ends and synthetic hosts for the others, routes both across
// two switches, runs both to completion, and is repeatable.
func TestBuildRDMALab(t *testing.T) {
	spec, err := lab.Parse("mixed.yaml", []byte(mixedLab))
	if err != nil {
		t.Fatal(err)
	}
	run := func() *Results {
		s, err := Build(spec, 7)
		if err != nil {
			t.Fatal(err)
		}
		if s.nicHost("a") == nil || s.nicHost("b") == nil || s.Host("c") == nil || s.Host("d") == nil {
			t.Fatal("wrong host kinds")
		}
		if d := s.nicHost("b").cfg.DCQCN; d == nil || d.RPAIRate != 100 || d.RPTimeReset != 55 {
			t.Fatalf("b's dcqcn %+v", d)
		}
		r, err := s.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := run()
	rd, raw := r.RDMAFlow("rd"), r.Flow("raw")
	t.Logf("read: %d/%d messages on %d QPs, %.1f Gb/s, FCT %v; raw: %d/%d messages, FCT %v",
		rd.Completed, rd.Posted, len(rd.QPs), rd.Throughput/1e9, rd.FCT, raw.MessagesDone, raw.MessagesSent, raw.FCT)
	if rd.Completed != 16 || rd.FCT == 0 || len(rd.QPs) != 2 || raw.MessagesDone != 4 {
		t.Fatalf("read %+v raw %+v", rd, raw)
	}
	if len(r.NICs) != 2 || r.NIC("b").Counter("rx_read_requests") == 0 {
		t.Fatalf("NIC results %+v", r.NICs)
	}
	if r.Deadlock != nil || r.FramesOutstanding != 0 {
		t.Fatalf("deadlock %+v, %d frames outstanding", r.Deadlock, r.FramesOutstanding)
	}
	if len(r.Series.Flows) != 2 || r.Series.Flows[1].Flow != "rd" {
		t.Fatalf("flow series %+v", r.Series.Flows)
	}
	if !equalResults(r, run()) {
		t.Fatal("two runs with one seed differ")
	}
}
