package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/switchcore"
)

// TestLinkBusyCutAtEnd: a saturated link is at most 100 % busy. A frame
// handed to the link just before the end of the run counts only the part
// of its serialization before the end: the whole frame made two-hosts'
// h1 -> sw1 100.1 % busy.
func TestLinkBusyCutAtEnd(t *testing.T) {
	const rate = 100e9
	// A 4 KiB payload packet takes a little over 330 ns at 100G; 1 ms and
	// 100 ns end the run in the middle of one.
	end := clock.Millisecond + 100*clock.Nanosecond
	s := pair(t, Options{Seed: 1, Duration: end}, LinkConfig{Rate: rate, Delay: clock.Microsecond, MTU: 4200}, FabricRoCE,
		FlowConfig{Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 1 << 20}, Priority: 3, PMTU: 4096})
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := dirStats(r, "h1", "h2")
	frame := clock.SerializationTime(4096+100, rate)
	t.Logf("end %v, busy %v (data %v), %.3f%%", r.End, st.Busy, st.DataBusy, 100*float64(st.Busy)/float64(r.End))
	if st.Busy > r.End || st.DataBusy > st.Busy {
		t.Fatalf("busy %v, data busy %v in a run of %v", st.Busy, st.DataBusy, r.End)
	}
	// Back to back from time 0: busy all along but for the first packet's
	// start.
	if st.Busy < r.End-frame {
		t.Fatalf("busy %v in a run of %v: the cut took too much", st.Busy, r.End)
	}
	if l := s.Links()[0]; l.Stats(0).Busy != st.Busy {
		t.Fatalf("Link.Stats %v, results %v", l.Stats(0).Busy, st.Busy)
	}
}

// TestLinkWireOverhead: a saturated link carries rate/((len+overhead)*8)
// frames a second, not rate/(len*8). On Ethernet every frame also spends
// preamble and SFD, FCS and the minimum inter-frame gap on the wire, 24
// byte times (wire.EthernetOverhead); native IB counts packet bytes only.
// Every sender times it: a synthetic host, a switch egress (cut-through
// and store-and-forward) and an RDMA NIC. Consecutive tails of a
// back-to-back stream are exactly ser(len+24) apart, and the link is 100 %
// busy over the stream.
func TestLinkWireOverhead(t *testing.T) {
	const rate = 100e9
	cases := []struct {
		name  string
		fab   Fabric
		build func(n *net)
		from  string // the link checked: from -> to
		to    string
		ovh   int
	}{
		{"host-roce", FabricRoCE, func(n *net) {
			n.host("h1", FabricRoCE)
			n.host("h2", FabricRoCE)
			n.link("h1", 0, "h2", 0, rate, clock.Microsecond)
			n.flow(FlowConfig{Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 64}, Priority: 3, PMTU: 1024})
		}, "h1", "h2", 24},
		{"host-ib", FabricIB, func(n *net) {
			n.host("h1", FabricIB)
			n.host("h2", FabricIB)
			n.link("h1", 0, "h2", 0, rate, clock.Microsecond)
			n.flow(FlowConfig{Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 64}, Priority: 0, PMTU: 1024})
		}, "h1", "h2", 0},
		{"switch-cut-through", FabricRoCE, func(n *net) {
			n.sw("sw", 2, rate, nil)
			n.host("h1", FabricRoCE)
			n.host("h2", FabricRoCE)
			n.link("h1", 0, "sw", 0, rate, clock.Microsecond)
			n.link("h2", 0, "sw", 1, rate, clock.Microsecond)
			n.flow(FlowConfig{Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 64}, Priority: 3, PMTU: 1024})
		}, "sw", "h2", 24},
		{"switch-store-and-forward", FabricRoCE, func(n *net) {
			n.sw("sw", 2, rate, func(c *switchcore.Config) { c.CutThrough = false })
			n.host("h1", FabricRoCE)
			n.host("h2", FabricRoCE)
			n.link("h1", 0, "sw", 0, rate, clock.Microsecond)
			n.link("h2", 0, "sw", 1, rate, clock.Microsecond)
			n.flow(FlowConfig{Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 64}, Priority: 3, PMTU: 1024})
		}, "sw", "h2", 24},
		{"rdma-nic", FabricRoCE, func(n *net) {
			n.nic("a", nil, "none")
			n.nic("b", nil, "none")
			n.link("a", 0, "b", 0, rate, clock.Microsecond)
			n.rdma(RDMAFlowConfig{Name: "f", Src: "a", Dst: "b", Op: OpWrite, Size: 64, Count: 4000, QPs: 4, Depth: 64, DSCP: 26, Priority: -1})
		}, "a", "b", 24},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newNet(t, Options{Seed: 1, Duration: 20 * clock.Microsecond})
			c.build(n)
			var tails []clock.Time
			var size int
			n.s.SetTap(func(l *Link, dir int, f *frame.Frame) {
				from := l.A.Node
				if dir == 1 {
					from = l.B.Node
				}
				if from != c.from || isControl(f.Data, c.fab == FabricIB) {
					return
				}
				if size == 0 {
					size = len(f.Data)
				}
				if len(f.Data) == size {
					tails = append(tails, f.TailAt)
				}
			})
			r := n.run()
			if len(tails) < 100 {
				t.Fatalf("%d frames of %d bytes from %s", len(tails), size, c.from)
			}
			want := clock.SerializationTime(size+c.ovh, rate)
			// The stream's middle: back to back, whatever its start.
			gaps := map[clock.Time]int{}
			mid := tails[len(tails)/4 : 3*len(tails)/4]
			for i := 1; i < len(mid); i++ {
				gaps[mid[i]-mid[i-1]]++
			}
			if len(gaps) != 1 || gaps[want] == 0 {
				t.Fatalf("%d-byte frames: tail spacings %v, want all %v (%.2f Mpps)", size, gaps, want, rate/float64((size+c.ovh)*8)/1e6)
			}
			st := dirStats(r, c.from, c.to)
			span := mid[len(mid)-1] - mid[0]
			t.Logf("%d-byte frames every %v: %.2f Mpps; %s -> %s busy %.4f", size, want, float64(len(mid)-1)/span.Seconds()/1e6, c.from, c.to, busy(st))
			if u := busy(st); u < 0.99 || u > 1.0001 {
				t.Fatalf("utilisation %.4f of a saturated link", u)
			}
		})
	}
}
