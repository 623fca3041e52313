package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sim"
)

const ibLab = `name: small-ib
fabric: ib
topology:
  nodes:
    sw1: {kind: switch, ports: 2}
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: [h1:ib0, sw1:p1]
    - endpoints: [h2:ib0, sw1:p2]
traffic:
  - {name: f1, src: h1, dst: h2, size: 64KiB, count: 2}
sim: {duration: 100us}
`

// ibResults are hand-made so the golden output depends on this package only.
func ibResults() *sim.Results {
	r := &sim.Results{Seed: 1, End: 100 * clock.Microsecond, Events: 999}
	r.Flows = []sim.FlowResult{{
		Name: "f1", Src: "h1", Dst: []string{"h2"}, TxFrames: 32, TxBytes: 128 << 10, RxFrames: 32, RxBytes: 128 << 10,
		MessagesSent: 2, MessagesDone: 2, LastRx: 11 * clock.Microsecond, FCT: 11 * clock.Microsecond, Throughput: 95.3e9,
		IBCC: &sim.FlowIBCC{FECNRx: 12, BECNRx: 12, CCTI: 3, MaxCCTI: 9, Delay: 250 * clock.Nanosecond},
	}}
	p0 := sim.PortResult{Switch: "sw1", Port: 0, Name: "p1", Peer: "h1:0", Speed: 100e9}
	p0.Prio[0].RxPackets, p0.Prio[0].FCTx, p0.Prio[0].FCRx = 32, 40, 3
	p1 := sim.PortResult{Switch: "sw1", Port: 1, Name: "p2", Peer: "h2:0", Speed: 100e9}
	p1.Prio[0].TxPackets, p1.Prio[0].CreditStalls, p1.Prio[0].XmitWaitPs = 32, 7, int64(3*clock.Microsecond)
	p1.Prio[0].FECNMarked, p1.Prio[0].QueueWatermark = 12, 64<<10
	r.Ports = []sim.PortResult{p0, p1}
	return r
}

// TestIBSummaryGolden: an IB run's summary shows the switch ports per VL
// with credits and FECN marks, not PFC pauses (an IB link has none), and
// congestion control per flow.
func TestIBSummaryGolden(t *testing.T) {
	spec, err := lab.Parse("small-ib.yaml", []byte(ibLab))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Summary(&b, spec, ibResults()); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary_ib.txt", b.Bytes())
	out := b.String()
	for _, want := range []string{"Switch ports per VL", "credit stalls", "FECN marked", "IB congestion control per flow", "CCTI max"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	for _, bad := range []string{"pause rx", "PG headroom"} {
		if strings.Contains(out, bad) {
			t.Errorf("an IB summary shows %q", bad)
		}
	}
}
