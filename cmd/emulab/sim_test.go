package main

import (
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/switchcore"
)

// runSimCmd runs `emulab sim args...` with the sim flags reset first and
// returns its standard output followed by its standard error.
func runSimCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := runSubcommand(t, "sim", args...)
	return out + errOut, err
}

func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 7 {
		t.Fatalf("examples: %v %v", files, err)
	}
	return files
}

// TestSimCommandExamples runs every example for a short time through the
// command and checks the summary and every output file.
func TestSimCommandExamples(t *testing.T) {
	for _, file := range examples(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			dir := t.TempDir()
			out, err := runSimCmd(t, file, "--duration", "200us", "-o", dir, "--seed", "3")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			// The dcqcn-* and ib-rdma examples run RDMA flows on real NICs only: their
			// flows are in the RDMA table and rdma_qps.csv, flows.csv (raw
			// flows) has a header only; host_pause.csv has the RoCE NICs'
			// rows, an IB lab's a header only.
			rdmaOnly := strings.Contains(file, "dcqcn-") || strings.Contains(file, "ib-rdma")
			table := "\nFlows\n"
			if rdmaOnly {
				table = "\nRDMA flows"
			}
			if !strings.Contains(out, "200us simulated, seed 3") || !strings.Contains(out, table) {
				t.Errorf("summary:\n%s", out)
			}
			headers := map[string]string{
				"flows.csv":      "flow,src,dst,priority",
				"ports.csv":      "switch,port,port_name,peer,priority",
				"queues.csv":     "time_us,switch,port,port_name,priority,queue_bytes,paused,xoff",
				"flow_rates.csv": "time_us,flow,gbps",
				"host_pause.csv": "time_us,host,priority,paused",
				"queues.svg":     "<svg ",
				"throughput.svg": "<svg ",
				"pause.svg":      "<svg ",
			}
			if strings.Contains(file, "ib-") {
				// Per VL, with credits and FECN marks instead of PFC and ECN.
				headers["ports.csv"] = "switch,port,port_name,peer,vl,rx_packets,rx_bytes,tx_packets,tx_bytes,credit_stalls,port_xmit_wait_us,fc_tx,fc_rx,fecn_marked,"
				headers["queues.csv"] = "time_us,switch,port,port_name,vl,queue_bytes,credits,credit_starved"
			}
			for name, header := range headers {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(string(b), header) {
					t.Errorf("%s starts %.80q", name, b)
				}
				if strings.HasSuffix(name, ".csv") {
					rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
					// IB hosts are never paused: no PFC series.
					minRows := 2
					if name == "host_pause.csv" && strings.Contains(file, "ib-") || rdmaOnly && (name == "host_pause.csv" || name == "flows.csv") {
						minRows = 1
					}
					if err != nil || len(rows) < minRows {
						t.Errorf("%s: %d rows, %v", name, len(rows), err)
					}
				}
			}
		})
	}
}

// TestSimCommandDeterministic: the same file and seed print the same summary.
func TestSimCommandDeterministic(t *testing.T) {
	a, err := runSimCmd(t, "../../examples/parking-lot.yaml", "--duration", "300us")
	if err != nil {
		t.Fatal(err)
	}
	b, err := runSimCmd(t, "../../examples/parking-lot.yaml", "--duration", "300us")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("two runs differ:\n%s\n---\n%s", a, b)
	}
}

// TestSimCommandBadFile: an invalid lab file is reported line by line with
// file, line and field, exits with status 2 and runs nothing.
func TestSimCommandBadFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`name: bad
topology:
  nodes:
    h1: {kind: nic}
    sw1: {kind: switch, ports: 2}
  links:
    - endpoints: ["h1:eth0", "sw1:p9"]
    - {endpoints: ["h1:eth0", "sw1:p1"], delya: 1us}
`), 0o644)
	out, err := runSimCmd(t, bad)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitBadLabFile {
		t.Fatalf("err %v (%T)", err, err)
	}
	for _, want := range []string{
		bad + `:7: topology.links[0].endpoints[1]: unknown port "sw1:p9" (sw1 declares p1, p2)`,
		bad + `:8: topology.links[1].delya: unknown key "delya" (did you mean "delay"?)`,
		bad + `:8: topology.links[1].endpoints[0]: duplicate endpoint "h1:eth0" (already used at line 7, topology.links[0].endpoints[0])`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Flows") {
		t.Errorf("something ran:\n%s", out)
	}
	if _, err := runSimCmd(t, filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := runSimCmd(t, "../../examples/incast.yaml", "--duration", "10"); err == nil || !strings.Contains(err.Error(), "--duration") {
		t.Errorf("bad duration: %v", err)
	}
}

// runExample loads and runs an example in full.
func runExample(t *testing.T, name string, edit func(*lab.Spec)) (*lab.Spec, *sim.Results) {
	t.Helper()
	spec, err := lab.Load("../../examples/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(spec)
	}
	s, err := sim.Build(spec, spec.Sim.Seed)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	return spec, r
}

// linkDir returns the statistics of the link direction from -> to.
func linkDir(t *testing.T, r *sim.Results, from, to string) *sim.LinkStats {
	t.Helper()
	for i := range r.Links {
		l := &r.Links[i]
		if l.A.Node == from && l.B.Node == to {
			return &l.Dir[0]
		}
		if l.B.Node == from && l.A.Node == to {
			return &l.Dir[1]
		}
	}
	t.Fatalf("no link %s -> %s", from, to)
	return nil
}

// activeBusy is the share of the direction's data period spent sending.
func activeBusy(d *sim.LinkStats) float64 {
	if d.LastDataTail <= d.FirstDataTx {
		return 0
	}
	return float64(d.DataBusy) / float64(d.LastDataTail-d.FirstDataTx)
}

// The example tests check what each example's docs page says to look at.

func TestExampleIncast(t *testing.T) {
	_, r := runExample(t, "incast.yaml", nil)
	drops, _ := r.SwitchDrops()
	p := r.Port("sw1", 0)
	busy := activeBusy(linkDir(t, r, "sw1", "h9"))
	t.Logf("incast: drops %d, sw1:p1 XOFF sent %d, bottleneck busy %.1f%%", drops, p.Prio[3].TxPause, 100*busy)
	if drops != 0 || p.Prio[3].TxPause == 0 || busy < 0.95 {
		t.Errorf("drops %d, pauses %d, busy %.3f", drops, p.Prio[3].TxPause, busy)
	}
	// The same incast with PFC off drops at the lossy threshold.
	_, r = runExample(t, "incast.yaml", func(s *lab.Spec) {
		s.Node("sw1").QoS.PortQoSMap = &lab.PortQoSMap{PFCEnableSet: true}
	})
	drops, by := r.SwitchDrops()
	t.Logf("incast without PFC: drops %d (lossy_threshold %d)", drops, by[switchcore.DropLossyThreshold])
	if drops == 0 || r.Port("sw1", 0).Prio[3].TxPause != 0 {
		t.Errorf("PFC off: drops %d, pauses %d", drops, r.Port("sw1", 0).Prio[3].TxPause)
	}
}

func TestExampleParkingLot(t *testing.T) {
	_, r := runExample(t, "parking-lot.yaml", nil)
	var tot float64
	for _, f := range r.Flows {
		tot += float64(f.RxBytes)
	}
	share := func(name string) float64 { return 100 * float64(r.Flow(name).RxBytes) / tot }
	t.Logf("parking lot: h1 %.1f%%, h2 %.1f%%, h3 %.1f%%", share("lot/h1"), share("lot/h2"), share("lot/h3"))
	for name, want := range map[string]float64{"lot/h1": 25, "lot/h2": 25, "lot/h3": 50} {
		if d := share(name) - want; d > 5 || d < -5 {
			t.Errorf("%s: %.1f%%, want %v%% ± 5", name, share(name), want)
		}
	}
	if drops, _ := r.SwitchDrops(); drops != 0 {
		t.Errorf("%d drops", drops)
	}
}

func TestExamplePFCStorm(t *testing.T) {
	_, r := runExample(t, "pfc-storm.yaml", nil)
	p3 := r.Port("sw1", 2).Prio[3]
	_, by := r.SwitchDrops()
	t.Logf("pfc storm: storms detected %d restored %d, pfcwd drops %d, h1<->h2 PSN gaps %d/%d",
		p3.PFCWDStormDetected, p3.PFCWDStormRestored, by[switchcore.DropPFCWD], r.Flow("h1-h2").PSNGaps, r.Flow("h2-h1").PSNGaps)
	if p3.PFCWDStormDetected == 0 || p3.PFCWDStormRestored == 0 || by[switchcore.DropPFCWD] == 0 {
		t.Errorf("watchdog: %+v", p3)
	}
	if r.Flow("h1-h2").PSNGaps != 0 || r.Flow("h2-h1").PSNGaps != 0 {
		t.Errorf("bystander flows lost packets")
	}
	for k, v := range by {
		if v != 0 && switchcore.DropReason(k) != switchcore.DropPFCWD {
			t.Errorf("%d drops by %v", v, switchcore.DropReason(k))
		}
	}
}

func TestExampleVictimFlow(t *testing.T) {
	_, r := runExample(t, "victim-flow.yaml", nil)
	var fs *sim.FlowSeries
	for i := range r.Series.Flows {
		if r.Series.Flows[i].Flow == "victim" {
			fs = &r.Series.Flows[i]
		}
	}
	mean := func(from, to clock.Time) float64 {
		var sum float64
		var n int
		for i, at := range r.Series.Times {
			if at > from && at <= to {
				sum += fs.Bps[i]
				n++
			}
		}
		return sum / float64(n)
	}
	alone, withHot := mean(200*clock.Microsecond, clock.Millisecond), mean(1200*clock.Microsecond, 2*clock.Millisecond)
	vPause := r.Port("s1", 2).Prio[3].TxPause
	t.Logf("victim: %.1f Gb/s alone, %.1f Gb/s with the incast; s1 -> v XOFF %d", alone/1e9, withHot/1e9, vPause)
	if alone < 90e9 || withHot > 0.8*alone || vPause == 0 {
		t.Errorf("alone %.1f, with hot %.1f Gb/s, XOFF to v %d", alone/1e9, withHot/1e9, vPause)
	}
}

func TestExampleDeadlockRing(t *testing.T) {
	_, r := runExample(t, "deadlock-ring.yaml", nil)
	if r.Deadlock == nil || r.Deadlock.ResolvedAt != 0 {
		t.Fatalf("deadlock %+v", r.Deadlock)
	}
	t.Logf("ring: deadlock detected at %v, %d queues stuck", r.Deadlock.DetectedAt, len(r.Deadlock.Queues))
	// With the commented-out watchdog block enabled, the deadlock breaks.
	b, err := os.ReadFile("../../examples/deadlock-ring.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("# qos:", "qos:", "#   PFC_WD:", "  PFC_WD:", "#     GLOBAL", "    GLOBAL", "#     ports", "    ports").Replace(string(b))
	spec, err := lab.Parse("deadlock-ring-wd.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.Build(spec, spec.Sim.Seed)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	var storms uint64
	for _, p := range rw.Ports {
		storms += p.Prio[3].PFCWDStormDetected
	}
	t.Logf("ring with the watchdog: storms %d, deadlock %+v", storms, rw.Deadlock)
	if storms == 0 || (rw.Deadlock != nil && rw.Deadlock.ResolvedAt == 0) {
		t.Errorf("watchdog did not break the deadlock: storms %d", storms)
	}
}

func TestExampleIBIncast(t *testing.T) {
	_, r := runExample(t, "ib-incast.yaml", nil)
	drops, _ := r.SwitchDrops()
	busy := activeBusy(linkDir(t, r, "sw1", "h9"))
	var overrun uint64
	for _, h := range r.Hosts {
		overrun += h.Stats.CreditOverrun
	}
	t.Logf("ib incast: drops %d, credit overrun %d, bottleneck busy %.1f%%", drops, overrun, 100*busy)
	if drops != 0 || overrun != 0 || busy < 0.95 {
		t.Errorf("drops %d overrun %d busy %.3f", drops, overrun, busy)
	}
	for _, f := range r.Flows {
		if f.MessagesDone != 4 {
			t.Errorf("%s: %d of 4 messages", f.Name, f.MessagesDone)
		}
	}
}

func TestExampleLeafSpine(t *testing.T) {
	spec, r := runExample(t, "leaf-spine.yaml", nil)
	if drops, _ := r.SwitchDrops(); drops != 0 {
		t.Errorf("%d drops on a lossless priority", drops)
	}
	// ECMP: both spines carry traffic from every leaf.
	for _, leaf := range []string{"leaf1", "leaf2", "leaf3", "leaf4"} {
		for _, spine := range []string{"spine1", "spine2"} {
			if linkDir(t, r, leaf, spine).DataFrames == 0 {
				t.Errorf("%s -> %s carried nothing", leaf, spine)
			}
		}
	}
	if len(r.Flows) != len(spec.NICs()) {
		t.Errorf("%d flows", len(r.Flows))
	}
	for _, f := range r.Flows {
		if f.RxBytes == 0 {
			t.Errorf("%s received nothing", f.Name)
		}
	}
}

func TestProgressBar(t *testing.T) {
	var b strings.Builder
	p := &progressBar{w: &b, label: "incast"}
	p.update(250*clock.Microsecond, clock.Millisecond)
	if got := b.String(); !strings.HasPrefix(got, "\rincast [#######.......................]  25%  250us/1ms  ") {
		t.Errorf("got %q", got)
	}
	b.Reset()
	p.finish()
	if got := b.String(); got != "\r"+strings.Repeat(" ", 80)+"\r" {
		t.Errorf("finish wrote %q", got)
	}
	if isTerminal(&b) {
		t.Error("a strings.Builder is not a terminal")
	}
}

// TestExampleDCQCNParkingLot checks what docs/examples/dcqcn-parking-lot.md
// says: over the second half of the run each sender has 33% +-5 of R's
// link, the switches send no PFC, and CNPs flow; with cc none the split is
// PFC's 50/25/25.
func TestExampleDCQCNParkingLot(t *testing.T) {
	shares := func(r *sim.Results, from clock.Time) map[string]float64 {
		got := map[string]float64{}
		var tot float64
		for _, fs := range r.Series.Flows {
			for i, tm := range r.Series.Times {
				if tm > from {
					got[fs.Flow] += fs.Bps[i]
					tot += fs.Bps[i]
				}
			}
		}
		for k := range got {
			got[k] = 100 * got[k] / tot
		}
		return got
	}
	spec, r := runExample(t, "dcqcn-parking-lot.yaml", nil)
	sh := shares(r, spec.Sim.Duration/2)
	var xoff, cnps uint64
	for _, p := range r.Ports {
		xoff += p.Prio[3].TxPause
	}
	for _, f := range r.RDMA {
		cnps += f.CNPHandled
	}
	t.Logf("dcqcn parking lot, second half: h1 %.1f%%, h2 %.1f%%, h3 %.1f%%; XOFF sent %d; CNPs handled %d",
		sh["lot/h1"], sh["lot/h2"], sh["lot/h3"], xoff, cnps)
	for _, h := range []string{"lot/h1", "lot/h2", "lot/h3"} {
		if d := sh[h] - 100.0/3; d > 5 || d < -5 {
			t.Errorf("%s share %.1f%%", h, sh[h])
		}
	}
	if xoff != 0 || cnps == 0 {
		t.Errorf("XOFF %d, CNPs %d", xoff, cnps)
	}
	_, r = runExample(t, "dcqcn-parking-lot.yaml", func(s *lab.Spec) {
		s.Sim.Duration = 4 * clock.Millisecond
		for _, n := range s.NICs() {
			n.CC = lab.CCNone
		}
	})
	sh = shares(r, clock.Millisecond)
	t.Logf("same lab, cc none: h1 %.1f%%, h2 %.1f%%, h3 %.1f%%", sh["lot/h1"], sh["lot/h2"], sh["lot/h3"])
	if sh["lot/h3"] < 45 || sh["lot/h1"] > 30 || sh["lot/h2"] > 30 {
		t.Errorf("cc none: %v", sh)
	}
}

// TestExampleDCQCNIncast checks docs/examples/dcqcn-incast.md: after 20 ms
// at least 90% of sw1:p9's queue samples are within [12.5 KB, 500 KB],
// and the switch sends fewer XOFF than the same incast with cc none.
func TestExampleDCQCNIncast(t *testing.T) {
	band := func(r *sim.Results) (float64, uint64) {
		var in, n int
		for _, q := range r.Series.Queues {
			if q.Switch != "sw1" || q.Port != 8 || q.Prio != 3 {
				continue
			}
			for i, tm := range r.Series.Times {
				if tm >= 20*clock.Millisecond {
					n++
					if q.Bytes[i] >= 12500 && q.Bytes[i] <= 500000 {
						in++
					}
				}
			}
		}
		var xoff uint64
		for _, p := range r.Ports {
			xoff += p.Prio[3].TxPause
		}
		return float64(in) / float64(max(n, 1)), xoff
	}
	_, r := runExample(t, "dcqcn-incast.yaml", nil)
	in, xoff := band(r)
	_, r0 := runExample(t, "dcqcn-incast.yaml", func(s *lab.Spec) {
		for _, n := range s.NICs() {
			n.CC = lab.CCNone
		}
	})
	in0, xoff0 := band(r0)
	t.Logf("dcqcn incast: %.1f%% of queue samples after 20ms within [12.5 KB, 500 KB], XOFF %d; cc none: %.1f%%, XOFF %d", 100*in, xoff, 100*in0, xoff0)
	if in < 0.9 || xoff >= xoff0 {
		t.Errorf("in band %.3f, XOFF %d vs %d", in, xoff, xoff0)
	}
}

// TestSimDurationSampleDefault: --duration makes sample_interval's default
// again for the new duration when the file leaves it out (two-hosts: 200us
// samples every 5us, 10 frames; run for 10ms, d/1000 = 10us), and keeps
// an interval the file gives (incast: 5us).
func TestSimDurationSampleDefault(t *testing.T) {
	for _, c := range []struct {
		file, duration, first string
	}{
		{"../../examples/two-hosts.yaml", "10ms", "10"},
		{"../../examples/incast.yaml", "3ms", "5"},
	} {
		dir := t.TempDir()
		if out, err := runSimCmd(t, c.file, "--duration", c.duration, "-o", dir, "-q"); err != nil {
			t.Fatalf("%s: %v\n%s", c.file, err, out)
		}
		f, err := os.Open(filepath.Join(dir, "flow_rates.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) < 2 {
			t.Fatalf("%s: flow_rates.csv: %v, %d rows", c.file, err, len(rows))
		}
		if rows[1][0] != c.first {
			t.Errorf("%s --duration %s: first sample at %s us, want %s", c.file, c.duration, rows[1][0], c.first)
		}
	}
}

// TestSimPadLinksNeedsIBCapture: --capture-pad-links without --capture, or
// on a RoCE lab (no link packets), is refused before anything runs, as
// emulab capture --pad-links is on a RoCE lab, instead of being dropped.
func TestSimPadLinksNeedsIBCapture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"../../examples/ib-two-hosts.yaml", "--capture-pad-links"}, "--capture-pad-links pads the link packets of a capture: give --capture DIR too"},
		{[]string{"../../examples/two-hosts.yaml", "--capture", dir, "--capture-pad-links"}, "--capture-pad-links: fabric roce has no link packets to pad"},
	} {
		_, err := runSimCmd(t, c.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitBadLabFile || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want exit %d with %q", c.args, err, exitBadLabFile, c.want)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("%s was made for a refused run", dir)
	}
}

// An -o DIR that cannot be a directory is refused before the run, not
// after it with the results lost.
func TestSimOutDirIsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "results")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runSimCmd(t, "../../examples/two-hosts.yaml", "-o", file)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitRunFailed || !strings.Contains(err.Error(), "-o: mkdir "+file) || !strings.Contains(err.Error(), "nothing was run") {
		t.Errorf("err %v, want exit %d naming -o and %s", err, exitRunFailed, file)
	}
	if strings.Contains(out, "Flows") {
		t.Errorf("the run went ahead:\n%s", out)
	}
}
