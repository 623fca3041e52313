package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/switchcore"
)

var update = flag.Bool("update", false, "rewrite golden files")

const smallLab = `name: small
topology:
  nodes:
    sw1: {kind: switch, ports: 2}
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: [h1:eth0, sw1:p1]
    - endpoints: [h2:eth0, sw1:p2]
traffic:
  - {name: f1, src: h1, dst: h2, size: 64KiB, count: 2}
sim: {duration: 100us, sample_interval: 10us}
`

// results are hand-made so the golden output depends on this package only.
func results() *sim.Results {
	r := &sim.Results{Seed: 1, End: 100 * clock.Microsecond, Events: 1234}
	r.Flows = []sim.FlowResult{{
		Name: "f1", Src: "h1", Dst: []string{"h2"}, Priority: 3, TxFrames: 32, TxBytes: 128 << 10, RxFrames: 32, RxBytes: 128 << 10,
		MessagesSent: 2, MessagesDone: 2, Start: 0, LastRx: 11 * clock.Microsecond, FCT: 11 * clock.Microsecond,
		Throughput: 95.3e9, Goodput: 10.48576e9, Msg: sim.FCTStats{Count: 2, Mean: 6 * clock.Microsecond, P50: 5500 * clock.Nanosecond, P99: 6500 * clock.Nanosecond, Max: 6500 * clock.Nanosecond},
	}}
	p0 := sim.PortResult{Switch: "sw1", Port: 0, Name: "p1", Peer: "h1:0", Speed: 100e9}
	p0.Prio[3].RxPackets = 32
	p0.Prio[3].TxPause = 4
	p0.Prio[3].TxPauseDurationPs = int64(7 * clock.Microsecond)
	p0.Prio[3].PGHeadroomWatermark = 9000
	p1 := sim.PortResult{Switch: "sw1", Port: 1, Name: "p2", Peer: "h2:0", Speed: 100e9}
	p1.Prio[3].TxPackets = 32
	p1.Prio[3].QueueWatermark = 300 << 10
	p1.Prio[3].ECNMarked = 5
	p1.Prio[0].Drops[switchcore.DropNoRoute] = 2
	p1.Drops[switchcore.DropNoRoute] = 2
	r.Ports = []sim.PortResult{p0, p1}
	r.Links = []sim.LinkResult{{A: sim.PortRef{Node: "h1"}, B: sim.PortRef{Node: "sw1", Port: 0}, Rate: 100e9,
		Dir: [2]sim.LinkStats{{DataFrames: 32, Busy: 11 * clock.Microsecond}, {}}}}
	h1 := sim.HostResult{Name: "h1"}
	h1.Stats.RxPFC[3], h1.Stats.RxXoff[3], h1.Stats.PausedTime[3] = 8, 4, 7*clock.Microsecond
	r.Hosts = []sim.HostResult{h1, {Name: "h2"}}
	r.Deadlock = &sim.Deadlock{Since: 50 * clock.Microsecond, DetectedAt: 80 * clock.Microsecond, Window: 30 * clock.Microsecond,
		Queues: []sim.StuckQueue{{Switch: "sw1", Port: 1, Prio: 3, Bytes: 4096, Paused: true}}}
	r.Series = &sim.Series{Interval: 10 * clock.Microsecond}
	for i := 1; i <= 10; i++ {
		r.Series.Times = append(r.Series.Times, clock.Time(i)*10*clock.Microsecond)
	}
	q := sim.QueueSeries{Switch: "sw1", Port: 1, Prio: 3}
	hp := sim.HostPauseSeries{Host: "h1", Prio: 3}
	fs := sim.FlowSeries{Flow: "f1"}
	for i := range r.Series.Times {
		q.Bytes = append(q.Bytes, []int{0, 4096, 8192, 4096, 0, 0, 0, 0, 0, 0}[i])
		q.Paused = append(q.Paused, i == 2)
		q.Xoff = append(q.Xoff, false)
		hp.Paused = append(hp.Paused, i == 1 || i == 2)
		fs.Bps = append(fs.Bps, []float64{0, 90e9, 95e9, 0, 0, 0, 0, 0, 0, 0}[i])
	}
	r.Series.Queues = []sim.QueueSeries{q}
	r.Series.Hosts = []sim.HostPauseSeries{hp}
	r.Series.Flows = []sim.FlowSeries{fs}
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, got)
	}
}

func TestSummaryGolden(t *testing.T) {
	spec, err := lab.Parse("small.yaml", []byte(smallLab))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Summary(&b, spec, results()); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.txt", b.Bytes())
	out := b.String()
	for _, want := range []string{"sw1:p1  h1:eth0", "no_route", "DEADLOCK", "sw1:p2  h2:eth0     3   4096  true"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

func TestWriteFilesGolden(t *testing.T) {
	spec, err := lab.Parse("small.yaml", []byte(smallLab))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := WriteFiles(dir, spec, results())
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 8 {
		t.Fatalf("wrote %v", paths)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Base(p), b)
	}
}

// TestFlowsCSVEmptyTimes: in flows.csv a time that has not happened is an
// empty field: fct_us of an unfinished flow was 0, as if it had finished
// at once; likewise the message FCTs before a message completes and the
// receive times of a flow that received nothing.
func TestFlowsCSVEmptyTimes(t *testing.T) {
	spec, err := lab.Parse("small.yaml", []byte(smallLab))
	if err != nil {
		t.Fatal(err)
	}
	r := results()
	r.Flows = append(r.Flows,
		sim.FlowResult{Name: "stuck", Src: "h1", Dst: []string{"h2"}, TxFrames: 4, TxBytes: 16 << 10, RxFrames: 2, RxBytes: 8 << 10,
			MessagesSent: 0, Start: 5 * clock.Microsecond, FirstRx: 7 * clock.Microsecond, LastRx: 8 * clock.Microsecond},
		sim.FlowResult{Name: "silent", Src: "h2", Dst: []string{"h1"}})
	b, err := flowsCSV(spec, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nstuck,h1,h2,0,0,0,4,16384,2,8192,0,5,7,8,,", // fct_us empty
		",,,,\n", // and the message FCTs
		"\nsilent,h2,h1,0,0,0,0,0,0,0,0,0,,,,0,0,,,,\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("flows.csv lacks %q:\n%s", want, b)
		}
	}
}
