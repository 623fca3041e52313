package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
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
		MessagesSent: 2, MessagesDone: 2, LastRx: 11 * clock.Microsecond, FCT: 11 * clock.Microsecond, Throughput: 95.3e9, Goodput: 10.48576e9,
		IBCC: &sim.FlowIBCC{FECNRx: 12, BECNRx: 12, CCTI: 3, MaxCCTI: 9, Delay: 250 * clock.Nanosecond, Reacting: true},
	}}
	p0 := sim.PortResult{Switch: "sw1", Port: 0, Name: "p1", Peer: "h1:0", Speed: 100e9}
	p0.Prio[0].RxPackets, p0.Prio[0].FCTx, p0.Prio[0].FCRx = 32, 40, 3
	p1 := sim.PortResult{Switch: "sw1", Port: 1, Name: "p2", Peer: "h2:0", Speed: 100e9}
	p1.Prio[0].TxPackets, p1.Prio[0].CreditStalls, p1.Prio[0].XmitWaitPs = 32, 7, int64(3*clock.Microsecond)
	p1.Prio[0].FECNMarked, p1.Prio[0].QueueWatermark = 12, 64<<10
	r.Ports = []sim.PortResult{p0, p1}
	return r
}

// ibSeries adds a sampled VL queue that runs short of credit at 30 us.
func ibSeries(r *sim.Results) *sim.Results {
	r.Series = &sim.Series{Interval: 10 * clock.Microsecond}
	q := sim.QueueSeries{Switch: "sw1", Port: 1, Prio: 0}
	for i := 1; i <= 5; i++ {
		r.Series.Times = append(r.Series.Times, clock.Time(i)*10*clock.Microsecond)
		q.Bytes = append(q.Bytes, []int{0, 4096, 65536, 8192, 0}[i-1])
		q.Paused, q.Xoff = append(q.Paused, false), append(q.Xoff, false)
		q.Credits = append(q.Credits, []int{1024, 900, 3, 200, 1024}[i-1])
		q.Starved = append(q.Starved, i == 3)
	}
	r.Series.Queues = []sim.QueueSeries{q}
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

// TestIBWriteFiles: an IB run's ports.csv has the summary's per-VL columns
// (credit stalls, xmit wait, flow-control packets, FECN marks) instead of
// PFC and ECN columns, which were all zero beside a summary that showed
// 2560 FECN marks; flows.csv has the per-flow FECN, BECN and CCTI figures.
func TestIBWriteFiles(t *testing.T) {
	spec, err := lab.Parse("small-ib.yaml", []byte(ibLab))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := WriteFiles(dir, spec, ibResults()); err != nil {
		t.Fatal(err)
	}
	cell := func(file, key, col string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "ib_"+file, b)
		rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		c := -1
		for i, h := range rows[0] {
			if h == col {
				c = i
			}
			for _, bad := range []string{"pause", "ecn_marked", "pg_", "pfcwd_"} {
				if strings.HasPrefix(h, bad) || h == bad {
					t.Errorf("%s of an IB lab has column %s", file, h)
				}
			}
		}
		if c < 0 {
			t.Fatalf("%s has no column %s: %v", file, col, rows[0])
		}
		for _, r := range rows[1:] {
			if strings.Join(r[:len(strings.Split(key, ","))], ",") == key {
				return r[c]
			}
		}
		t.Fatalf("%s has no row %s", file, key)
		return ""
	}
	for _, c := range []struct{ file, key, col, want string }{
		{"ports.csv", "sw1,1,p2,h2:ib0,0", "fecn_marked", "12"},
		{"ports.csv", "sw1,1,p2,h2:ib0,0", "credit_stalls", "7"},
		{"ports.csv", "sw1,1,p2,h2:ib0,0", "port_xmit_wait_us", "3"},
		{"ports.csv", "sw1,0,p1,h1:ib0,0", "fc_tx", "40"},
		{"ports.csv", "sw1,0,p1,h1:ib0,0", "fc_rx", "3"},
		{"flows.csv", "f1", "fecn_rx", "12"},
		{"flows.csv", "f1", "becn_rx", "12"},
		{"flows.csv", "f1", "ccti_end", "3"},
		{"flows.csv", "f1", "ccti_max", "9"},
		{"flows.csv", "f1", "cc_delay_end_us", "0.25"},
	} {
		if got := cell(c.file, c.key, c.col); got != c.want {
			t.Errorf("%s %s %s = %q, want %q", c.file, c.key, c.col, got, c.want)
		}
	}
}

// TestIBSeriesFiles: an IB lab's queue series, chart and pause chart speak
// of VLs and credits: queues.csv has vl, credits and credit_starved (no
// PFC paused/xoff), queues.svg names its lines "VL", and pause.svg, titled
// "PFC pause state" with "prio" rows and always empty on IB, draws when a
// VL was short of credit.
func TestIBSeriesFiles(t *testing.T) {
	spec, err := lab.Parse("small-ib.yaml", []byte(ibLab))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := WriteFiles(dir, spec, ibSeries(ibResults())); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	q := read("queues.csv")
	golden(t, "ib_queues.csv", []byte(q))
	if !strings.HasPrefix(q, "time_us,switch,port,port_name,vl,queue_bytes,credits,credit_starved\n") || !strings.Contains(q, "\n30,sw1,1,p2,0,65536,3,1\n") {
		t.Errorf("queues.csv:\n%s", q)
	}
	_, texts := wellFormed(t, read("queues.svg"))
	if !slices.Contains(texts, "sw1:p2 VL 0") {
		t.Errorf("queues.svg labels %q", texts)
	}
	_, texts = wellFormed(t, read("pause.svg"))
	if !slices.Contains(texts, "IB VLs short of credit (sampled)") || !slices.Contains(texts, "sw1:p2 VL 0") {
		t.Errorf("pause.svg texts %q", texts)
	}
	for _, x := range texts {
		if strings.Contains(x, "PFC") || strings.Contains(x, "prio") {
			t.Errorf("pause.svg of an IB lab says %q", x)
		}
	}
}

// TestWriteFilesRemovesStale: a directory reused from an RDMA run loses
// that run's rdma_qps.csv and nic_counters.csv, which this run does not
// write and a reader would take for its own; a file of another name stays.
func TestWriteFilesRemovesStale(t *testing.T) {
	spec, err := lab.Parse("small-ib.yaml", []byte(ibLab))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"rdma_qps.csv", "nic_counters.csv", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := WriteFiles(dir, spec, ibResults()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rdma_qps.csv", "nic_counters.csv"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s of the earlier run is still there", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("notes.txt, not ours: %v", err)
	}
}
