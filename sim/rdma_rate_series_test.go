package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// An RDMA flow's rate series counts payload, as a raw flow's does
// (FlowSeries, flow_rates.csv): over a run in which every message
// completes and nothing is lost, the rate integrated over the samples is
// the flow's completed bytes exactly, not its frame bytes.
func TestRDMARateSeriesIsPayload(t *testing.T) {
	for _, op := range []RDMAOp{OpWrite, OpRead, OpSend} {
		t.Run(op.String(), func(t *testing.T) {
			const rate = 100e9
			n := newNet(t, Options{Seed: 1, Duration: 2 * clock.Millisecond, SampleInterval: 10 * clock.Microsecond})
			n.sw("sw", 2, rate, nil)
			n.nic("a", nil, "")
			n.nic("b", nil, "")
			n.link("a", 0, "sw", 0, rate, clock.Microsecond)
			n.link("b", 0, "sw", 1, rate, clock.Microsecond)
			n.rdma(RDMAFlowConfig{Name: "f", Src: "a", Dst: "b", Op: op, Size: 1 << 20, Count: 4, Depth: 4, DSCP: 26, Priority: -1})
			r := n.run()
			f := r.RDMAFlow("f")
			if f == nil || f.Completed != 4 || f.Retransmit != 0 {
				t.Fatalf("flow result %+v", f)
			}
			var bits float64
			for _, s := range r.Series.Flows {
				if s.Flow == "f" {
					for _, bps := range s.Bps {
						bits += bps * r.Series.Interval.Seconds()
					}
				}
			}
			if got := uint64(bits/8 + 0.5); got != f.Bytes {
				t.Errorf("rate series integrates to %d bytes, the flow completed %d", got, f.Bytes)
			}
		})
	}
}
