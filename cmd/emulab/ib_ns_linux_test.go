package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nicd"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// A native InfiniBand lab in namespaces (examples/ib-rdma.yaml: five
// emunic HCAs on two emuswitches, static LIDs): the links carry LRH-framed
// packets and 6-byte credit packets, never Ethernet. The hosts' kernels
// talk IPoIB (ping, iperf3); the built-in engine's RDMA WRITE, READ and
// SEND cross the fabric with the destination memory verified; a capture of
// the inter-switch link is ERF that decodes with valid CRCs and that
// tshark reads as InfiniBand; nothing is dropped; down leaves nothing.
func TestIBNamespaceLab(t *testing.T) {
	e := newUpEnv(t)
	l := e.lab(t, "../../examples/ib-rdma.yaml")
	socks := e.up(t, l, "nic")

	file := filepath.Join(t.TempDir(), "sw1-p4.pcapng")
	cp := e.startCapture(t, nil, "sw1:p4", "-w", file)
	e.ping(t, l, "h1", "h2") // same switch
	e.ping(t, l, "h1", "h5") // across the inter-switch link
	// The switch streams its capture to emulab asynchronously: the last
	// reply may still be on its way when ping returns (seen under load).
	waitIBCapture(file, 6, 10*time.Second)
	cp.cmd.Process.Signal(os.Interrupt)
	if err := cp.wait(); err != nil {
		t.Fatalf("capture: %v\n%s", err, cp.msgs)
	}
	data, link := readIBCapture(t, file)
	t.Logf("sw1:p4 capture: %d IB data packets, %d link packets", data, link)
	// h1 -> h5 crosses sw1:p4: 3 requests and 3 replies (IPoIB).
	if data < 6 || link == 0 {
		t.Errorf("capture of sw1:p4: %d data packets (want >= 6: the h1 -> h5 echoes), %d link packets", data, link)
	}
	if _, err := exec.LookPath("tshark"); err == nil || os.Getenv("CI") == "true" {
		needTool(t, "tshark")
		out, err := exec.Command("tshark", "-r", file, "-Y", "infiniband.bth.opcode == 100", "-T", "fields", "-e", "infiniband.lrh.dlid").Output()
		if err != nil || len(regexp.MustCompile(`(?m)^\d+$`).FindAllString(string(out), -1)) < 6 {
			t.Errorf("tshark does not see the UD SENDs (IPoIB) of the capture: %v\n%s", err, out)
		}
	}

	for _, c := range []struct{ test, src, dst, want string }{
		{"write_bw", "h1", "h4", "RDMA_Write BW Test"},
		{"read_bw", "h2", "h5", "RDMA_Read BW Test"},
		{"send_bw", "h3", "h4", "Send BW Test"},
	} {
		out := e.mustRun(t, "perf", c.test, l.node(c.src), l.node(c.dst), "-s", "65536", "-n", "100", "--report_gbits")
		if !strings.Contains(out, c.want) || !strings.Contains(out, "data check: the destination memory") ||
			!strings.Contains(out, " Link type       : IB") {
			t.Errorf("%s %s -> %s:\n%s", c.test, c.src, c.dst, out)
		}
		// perftest prints the ports' LIDs on IB (%#04x): index + 1 in the
		// lab.
		if !regexp.MustCompile(`(?m)^ local address: LID 0x0[1-9a-f] QPN`).MatchString(out) {
			t.Errorf("%s: no LID in the address lines:\n%s", c.test, out)
		}
		f := perfRow(t, out, perfHeadBWGbits)
		t.Logf("%s %s -> %s over IB, 64 KiB x 100: average %s Gb/s", c.test, c.src, c.dst, f[3])
	}

	// h4's port counters, read over the fabric from another HCA's QP1
	// (PerfMgt), count the RDMA it received.
	pq := e.mustRun(t, "ib", "counters", l.name, "--node", "h4")
	m := regexp.MustCompile(`(?m)^PortRcvPkts:\.+(\d+)$`).FindStringSubmatch(pq)
	if !strings.HasPrefix(pq, "# Port counters: Lid ") || m == nil || len(m[1]) < 3 {
		t.Errorf("emulab ib counters --node h4 (want >= 100 packets received):\n%s", pq)
	}

	// An IB switch's summary is per VL, with the flow control it counted.
	sw := e.mustRun(t, "stats", l.name+"/sw1")
	if !regexp.MustCompile(`PORT\s+VL\s+FC_RX\s+FC_TX\s+CREDIT_STALLS`).MatchString(sw) || strings.Contains(sw, "PAUSE") {
		t.Errorf("emulab stats sw1 of an IB lab:\n%s", sw)
	}

	needTool(t, "iperf3")
	gbps := e.iperf(t, l, "h1", "h4")
	t.Logf("iperf3 TCP over IPoIB h1 -> h4: %.2f Gb/s", gbps)
	if gbps <= 0 {
		t.Errorf("iperf3 over IPoIB moved nothing")
	}

	st, err := lab.ReadStatus(e.state, l.name)
	if err != nil || st.Info == nil {
		t.Fatalf("status: %v", err)
	}
	for _, n := range st.Info.Nodes {
		switch n.Name {
		case "sw1", "sw2":
			for port, c := range switchCounters(t, n.Control) {
				for k, v := range c {
					if v != 0 && strings.HasPrefix(k, "drop_") {
						t.Errorf("%s:%s %s = %d", n.Name, port, k, v)
					}
				}
			}
		default:
			c := nicCounters(t, n.Control)
			for _, k := range []string{"hw.ib_credit_overrun", "hw.ib_vcrc_errors", "hw.rx_icrc_errors", "hw.ib_wrong_lid", "hw.roce_adp_retrans"} {
				if c[k] != 0 {
					t.Errorf("%s: %s = %d", n.Name, k, c[k])
				}
			}
			if c["hw.ib_fc_rx"] == 0 {
				t.Errorf("%s: no flow-control packet received", n.Name)
			}
		}
	}
	e.down(t, l, socks)
}

// readIBCapture reads an IB capture and checks every record: ERF data
// packets decode with good ICRC and VCRC, link packets have a good LPCRC.
// waitIBCapture waits until file holds at least want IB data packets, or
// timeout. The file is being written: a record cut short ends the count.
func waitIBCapture(file string, want int, timeout time.Duration) {
	count := func() int {
		f, err := os.Open(file)
		if err != nil {
			return 0
		}
		defer f.Close()
		rd, err := capture.Open(bufio.NewReader(f))
		if err != nil {
			return 0
		}
		var rec capture.Record
		n := 0
		for rd.Next(&rec) == nil {
			if rec.LinkType == capture.LinkTypeERF && rec.ERF.Type == capture.ERFTypeInfiniBand {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(timeout); count() < want && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

func readIBCapture(t *testing.T, file string) (data, link int) {
	t.Helper()
	var p bth.IBPacket
	eachRecord(t, file, func(rec *capture.Record) {
		if rec.LinkType != capture.LinkTypeERF {
			return // an idle interface the client declared
		}
		switch rec.ERF.Type {
		case capture.ERFTypeInfiniBandLink:
			if err := wire.IBLink(rec.Data).Validate(0); err != nil {
				t.Errorf("link packet % x: %v", rec.Data, err)
			}
			link++
		case capture.ERFTypeInfiniBand:
			if err := p.Decode(rec.Data, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
				t.Errorf("data packet: %v", err)
			}
			data++
		default:
			t.Errorf("ERF type %d", rec.ERF.Type)
		}
	})
	return data, link
}

// The fat tree of examples/ib-fat-tree.yaml in namespaces, managed by the
// subnet manager in h1's emunic: its heavy sweep finds the 22 nodes and
// gives them unique LIDs (the lab's, which every node reports and the SM
// keeps); hosts reach each other across both spines over IPoIB and RDMA;
// a cut leaf-spine link is noticed by a light sweep, the SM re-sweeps and
// reroutes, and every host is reachable again.
func TestIBNamespaceSM(t *testing.T) {
	e := newUpEnv(t)
	l := e.lab(t, "../../examples/ib-fat-tree.yaml")
	socks := e.up(t, l, "nic")
	st, err := lab.ReadStatus(e.state, l.name)
	if err != nil || st.Info == nil {
		t.Fatalf("status: %v", err)
	}
	var smCtl string
	for _, n := range st.Info.Nodes {
		if n.Name == "h1" {
			smCtl = n.Control
		}
	}
	sweeps := func() *nicd.SMStatus {
		var r nicd.Response
		if err := lab.ControlRequest(smCtl, map[string]string{"op": "status"}, &r, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if r.Status == nil || r.Status.SM == nil {
			t.Fatalf("h1's status has no subnet manager: %+v", r.Status)
		}
		return r.Status.SM
	}
	// waitSweep waits for a heavy sweep after the first after and, when
	// nodes > 0, one that found that many nodes: the first sweep starts
	// when h1's link is up and may miss a host whose link comes up while
	// it runs; the switch's PortStateChange brings the light sweep to
	// sweep again.
	waitSweep := func(after, nodes int) *nicd.SMStatus {
		deadline := time.Now().Add(20 * time.Second)
		for {
			s := sweeps()
			if s.HeavySweeps > after && (nodes == 0 || s.Nodes == nodes) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("no heavy sweep after %d finding %d nodes in 20 s: %+v", after, nodes, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s := waitSweep(0, 22)
	t.Logf("SM in h1's emunic: heavy sweep %d of %d nodes, %d SMPs in %.1f ms", s.HeavySweeps, s.Nodes, s.LastSweepSMPs, s.LastSweepUs/1000)
	lids := map[uint16]string{}
	for _, x := range s.LIDs {
		if o, dup := lids[x.LID]; dup || x.LID == 0 {
			t.Errorf("LID %d: %q and %q", x.LID, o, x.Node)
		}
		lids[x.LID] = x.Node
	}
	if s.Nodes != 22 || len(lids) != 22 || len(s.Errors) > 0 {
		t.Fatalf("sweep: %d nodes, %d LIDs, errors %v", s.Nodes, len(lids), s.Errors)
	}
	e.ping(t, l, "h1", "h16")
	e.ping(t, l, "h5", "h12")
	out := e.mustRun(t, "perf", "write_bw", l.node("h1"), l.node("h16"), "-s", "65536", "-n", "50")
	if !strings.Contains(out, "data check: the destination memory") {
		t.Errorf("write_bw h1 -> h16 on the SM's fabric:\n%s", out)
	}

	// Cut leaf2 - spine1: the routes from leaf2 through spine1 break
	// until the SM reroutes them through spine2.
	// emulab ib on the running lab shows the SM's fabric.
	list := e.mustRun(t, "ib", "nodes", "-l", l.name)
	if strings.Count(list, "Switch\t :") != 6 || strings.Count(list, "Ca\t :") != 16 {
		t.Errorf("emulab ib nodes -l %s:\n%s", l.name, list)
	}
	before := e.mustRun(t, "ib", "routes", l.name, "--node", "leaf2")
	cut := time.Now()
	e.mustRun(t, "link", "set", l.node("leaf2")+":p5", "down")
	// Wait until the SM's routes of leaf2 leave port 5 (to spine1) for
	// port 6: a sweep that began after the cut. (A sweep already under
	// way when the link went down may finish with the old routes; the
	// cut's PortStateChange brings the next one.)
	var after string
	for deadline := time.Now().Add(20 * time.Second); ; {
		after = e.mustRun(t, "ib", "routes", l.name, "--node", "leaf2")
		if !strings.Contains(after, " 005 : ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the cut leaf2 still routes through port 5:\n%s", after)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s = sweeps()
	t.Logf("after the cut: rerouted %.0f ms after it (heavy sweep %d, %d SMPs)", time.Since(cut).Seconds()*1000, s.HeavySweeps, s.LastSweepSMPs)
	if !strings.Contains(before, " 005 : ") {
		t.Errorf("before the cut leaf2 routed nothing through spine1 (port 5):\n%s", before)
	}
	for _, dst := range []string{"h9", "h10", "h11", "h12", "h13", "h14", "h15", "h16"} {
		e.ping(t, l, "h5", dst)
	}

	// Disable h16's switch port: h16 hears no flow-control packet any
	// more and takes its port Down (link_downed); enabled again, the
	// port comes back, the SM sweeps it, and h16 is Active and reachable.
	var h16Ctl string
	for _, n := range st.Info.Nodes {
		if n.Name == "h16" {
			h16Ctl = n.Control
		}
	}
	waitState := func(want string) {
		t.Helper()
		var r nicd.Response
		for deadline := time.Now().Add(10 * time.Second); ; {
			if err := lab.ControlRequest(h16Ctl, map[string]string{"op": "status"}, &r, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if r.Status.IBState == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("h16's port %s, want %s", r.Status.IBState, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	e.mustRun(t, "link", "set", l.node("leaf4")+":p4", "down")
	waitState("Down")
	e.mustRun(t, "link", "set", l.node("leaf4")+":p4", "up")
	waitState("Active")
	if c := nicCounters(t, h16Ctl); c["hw.link_downed"] != 1 {
		t.Errorf("h16 link_downed %d, want 1", c["hw.link_downed"])
	}
	e.ping(t, l, "h1", "h16")

	// The SM's host dies: the fabric keeps what it set (h5 reaches h12),
	// `ib` says where the SM ran, and `ib counters` asks from another HCA.
	var h1Pid int
	for _, n := range st.Info.Nodes {
		if n.Name == "h1" {
			h1Pid = n.Pid
		}
	}
	kill9(t, h1Pid)
	_, errOut, code := e.run(t, "ib", "ports", l.name)
	if code == 0 || !strings.Contains(errOut, "the subnet manager runs in h1's emunic, which does not answer") {
		t.Errorf("ib ports with the SM's host dead: exit %d, %s", code, errOut)
	}
	// h2's emunic, the next to ask from, hangs (SIGSTOP): passed over
	// after its timeout.
	var h2Pid int
	for _, n := range st.Info.Nodes {
		if n.Name == "h2" {
			h2Pid = n.Pid
		}
	}
	syscall.Kill(h2Pid, syscall.SIGSTOP)
	out, errOut, code = e.run(t, "ib", "counters", l.name, "--node", "h12")
	syscall.Kill(h2Pid, syscall.SIGCONT)
	if code != 0 || !strings.Contains(out, "PortXmitData") {
		t.Errorf("ib counters with h1 dead and h2 stopped: exit %d\n%s\n%s", code, out, errOut)
	}
	e.ping(t, l, "h5", "h12")
	e.down(t, l, socks)
}
