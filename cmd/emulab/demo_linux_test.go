package main

import (
	"strings"
	"testing"
)

// TestDemo runs `emulab demo` as the README's quick start does: the lab
// comes up, every step runs and checks what it moved, and the lab is gone
// afterwards.
func TestDemo(t *testing.T) {
	e := newUpEnv(t)
	needTool(t, "ping")
	needTool(t, "iperf3")
	l := e.lab(t, "testdata/up/two-hosts.yaml")
	out, stderr, code := e.run(t, "demo", "--bin-dir", e.bin, "-n", "200", "--iperf-time", "1s", l.file)
	if code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"== 1. up ", "lab " + l.name + " is up",
		" 3 received", // ping -c 3 -w 10: a late reply may cost a 4th request
		"RDMA_Write BW Test", "RDMA_Read BW Test", "RDMA_Write Latency Test",
		"data check: the destination memory",
		"receiver", // iperf3's summary line
		"emulab stats sw1",
		"lab " + l.name + " is down",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "data check: the destination memory"); n != 3 {
		t.Errorf("%d data checks, want 3 (write_bw, read_bw, write_lat)", n)
	}
	e.checkGone(t, l, nil)

	// --keep leaves it up for exploring, and says how to take it down.
	out, stderr, code = e.run(t, "demo", "--bin-dir", e.bin, "-n", "50", "--iperf-time", "0", "--keep", l.file)
	if code != 0 || !strings.Contains(out, "the lab is still up (--keep)") || !strings.Contains(out, "emulab down --state-dir") {
		t.Fatalf("demo --keep exited %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	st := e.mustRun(t, "status", l.name)
	if !strings.Contains(st, l.name) {
		t.Errorf("status after --keep:\n%s", st)
	}
	e.down(t, l, nil)

	// Ctrl-C after demo has run perf takes the lab down: perf's own
	// handler (which ends `emulab perf` at once) is not demo's.
	seen, errOut, werr := e.interruptAt(t, "RDMA_Write Latency Test", "demo", "--bin-dir", e.bin, "-n", "50", "--iperf-time", "30s", l.file)
	if werr == nil || !strings.Contains(seen, "lab "+l.name+" is down") || strings.Contains(errOut, "emulab perf: interrupted") {
		t.Errorf("demo interrupted after perf: %v\nstdout:\n%s\nstderr:\n%s", werr, seen, errOut)
	}
	e.checkGone(t, l, nil)

	// An InfiniBand lab: the subnet manager activates the ports, ping
	// goes over IPoIB, RDMA over native IB, and the lab is gone after.
	ib := e.lab(t, "../../examples/ib-two-hosts.yaml")
	out, stderr, code = e.run(t, "demo", "--bin-dir", e.bin, "-n", "100", "--iperf-time", "1s", ib.file)
	for _, want := range []string{"over IPoIB", " 3 received", "native IB packets addressed by LID",
		" Link type       : IB", "data check: the destination memory", "is down"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo of an IB lab lacks %q: exit %d\nstdout:\n%s\nstderr:\n%s", want, code, out, stderr)
			break
		}
	}
	if code != 0 {
		t.Errorf("demo of an IB lab exited %d\n%s", code, stderr)
	}
	e.checkGone(t, ib, nil)
}
