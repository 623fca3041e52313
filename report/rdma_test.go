package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sim"
)

const rdmaLab = `name: small-rdma
topology:
  nodes:
    sw1: {kind: switch, ports: 2}
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: [h1:eth0, sw1:p1]
    - endpoints: [h2:eth0, sw1:p2]
traffic:
  - {name: w, op: write, src: h1, dst: h2, size: 1MiB, count: 2, qps: 2}
  - {name: r, op: read, src: h2, dst: h1, size: 64KiB, count: 1}
sim: {duration: 100us, sample_interval: 10us}
`

// rdmaResults are hand-made so the golden output depends on this package
// only: a two-QP WRITE flow with CNPs and retransmissions, a one-QP READ
// flow that failed, and the two NICs' counters.
func rdmaResults() *sim.Results {
	r := &sim.Results{Seed: 1, End: 100 * clock.Microsecond, Events: 4321}
	fct := sim.FCTStats{Count: 2, Mean: 40 * clock.Microsecond, P50: 39 * clock.Microsecond, P99: 41 * clock.Microsecond, Max: 41 * clock.Microsecond}
	q1 := sim.QPResult{SrcQPN: 2, DstQPN: 2, Posted: 2, Completed: 2, Bytes: 2 << 20, FirstPost: 0, LastCompletion: 81 * clock.Microsecond,
		Throughput: 207.1e9 / 2, FCT: 81 * clock.Microsecond, Msg: fct, CNPsSent: 3, CNPHandled: 3, Retransmitted: 12, SeqNAKs: 1, FinalRate: 50e9}
	q2 := q1
	q2.SrcQPN, q2.DstQPN, q2.CNPsSent, q2.CNPHandled, q2.Retransmitted, q2.SeqNAKs, q2.FinalRate = 3, 3, 2, 2, 0, 0, 75e9
	q2.ReverseCNPs = 2 // h1's NP, for h2's CE-marked ACKs
	r.RDMA = []sim.RDMAFlowResult{
		{Name: "w", Src: "h1", Dst: "h2", Op: "write", Priority: 3, Size: 1 << 20, QPs: []sim.QPResult{q1, q2},
			Posted: 4, Completed: 4, Bytes: 4 << 20, Throughput: 207.1e9, FCT: 81 * clock.Microsecond, Msg: fct,
			CNPsSent: 5, CNPHandled: 5, ReverseCNPs: 2, Retransmit: 12},
		{Name: "r", Src: "h2", Dst: "h1", Op: "read", Priority: 3, Size: 64 << 10,
			QPs:    []sim.QPResult{{SrcQPN: 4, DstQPN: 4, Posted: 1, Failed: 1, FirstError: "IBV_WC_RETRY_EXC_ERR", Timeouts: 7, CNPIgnored: 1, FinalRate: 100e9}},
			Posted: 1, Failed: 1},
	}
	h1 := sim.NICResult{Name: "h1", Counters: []sim.NamedCounter{{Name: "np_cnp_sent", Value: 2}, {Name: "rp_cnp_handled", Value: 5}, {Name: "roce_adp_retrans", Value: 12}}}
	h1.Prio[3].RxPause, h1.PauseDuration[3] = 2, 3*clock.Microsecond
	h2 := sim.NICResult{Name: "h2", Counters: []sim.NamedCounter{{Name: "np_cnp_sent", Value: 5}, {Name: "np_ecn_marked_roce_packets", Value: 40}, {Name: "local_ack_timeout_err", Value: 7}}}
	r.NICs = []sim.NICResult{h1, h2}
	return r
}

func TestRDMASummaryGolden(t *testing.T) {
	spec, err := lab.Parse("small-rdma.yaml", []byte(rdmaLab))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Summary(&b, spec, rdmaResults()); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary_rdma.txt", b.Bytes())
	out := b.String()
	for _, want := range []string{"RDMA flows", "  w", "0x3", "IBV_WC_RETRY_EXC_ERR", "NICs (mlx5 hw_counters", "np_cnp_sent", "2 CNPs for CE-marked ACKs"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

func TestRDMAFilesGolden(t *testing.T) {
	spec, err := lab.Parse("small-rdma.yaml", []byte(rdmaLab))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := WriteFiles(dir, spec, rdmaResults())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, p := range paths {
		base := filepath.Base(p)
		if base != "rdma_qps.csv" && base != "nic_counters.csv" {
			continue
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, base, b)
	}
	if n != 2 {
		t.Fatalf("wrote %v", paths)
	}
}
