package lab_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/nicd"
)

// TestStartRDMA is the RDMA example of docs/testing.md, run: a test
// drives the emulated RNICs of a lab from Go (nicd, over the emunics'
// control sockets) and with `emulab perf --state-dir`.
func TestStartRDMA(t *testing.T) {
	spec := lab.LoadUnique(t, "../examples/two-hosts.yaml")
	l := lab.Start(t, spec)

	a, err := nicd.Dial(l.Info.Node("h1").Control)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := nicd.Dial(l.Info.Node("h2").Control)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := nicd.NewPair(a, b, nicd.PairConfig{BufSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	bw, err := p.Run(nic.IBV_WR_RDMA_WRITE, 64<<10, 200)
	if err != nil {
		t.Fatal(err)
	}
	if bw.Messages != 200 || bw.Bytes != 200*64<<10 {
		t.Errorf("write_bw: %d messages, %d bytes", bw.Messages, bw.Bytes)
	}
	t.Logf("RDMA WRITE 64 KiB: %d messages in %v, %.2f Gb/s", bw.Messages, bw.Elapsed, bw.Gbps())

	lat, err := p.Latency(nic.IBV_WR_RDMA_WRITE, 2, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(lat.Samples) != 100 {
		t.Errorf("write_lat: %d samples", len(lat.Samples))
	}
	t.Logf("RDMA WRITE 2 B one way: median %v, 99%% %v", lat.Percentile(50), lat.Percentile(99))

	// The same with emulab's perftest look-alike, run on the lab's state
	// root.
	emulab := filepath.Join(lab.BuildDaemons(t), "emulab")
	out, err := exec.Command(emulab, "perf", "--state-dir", l.State.Root,
		"write_bw", spec.Name+"/h1", spec.Name+"/h2", "-s", "65536", "-n", "200", "--report_gbits").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "#bytes") {
		t.Fatalf("emulab perf: %v\n%s", err, out)
	}
	t.Logf("emulab perf:\n%s", out)
}
