package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestIBBackToBackFlap: two HCAs cabled to each other, no switch, the SM
// on h1. The link goes down and comes back; the ports come back as Init.
// With no switch to report the change (PortStateChange) the SM's light
// sweep reads the CA ports, finds them not Active and sweeps again, and an
// RDMA flow started after the flap completes. Before, the link stayed
// unusable for good (every light sweep read nothing).
func TestIBBackToBackFlap(t *testing.T) {
	spec := ibB2B(t, "[{at: 200us, state: down}, {at: 400us, state: up}]", "3ms")
	s, r := buildAndRun(t, spec)
	st := s.SubnetManager().SM().Stats()
	if st.HeavySweeps < 2 {
		t.Errorf("%d heavy sweeps: the SM did not sweep again after the flap (%d light sweeps)", st.HeavySweeps, st.LightSweeps)
	}
	if fl := r.RDMAFlow("w"); fl.Completed != 8 || fl.Failed != 0 {
		t.Errorf("flow after the flap: %d/%d completed, %d failed", fl.Completed, fl.Posted, fl.Failed)
	}
}

// TestIBBackToBackDown: the same link down for good. The SM sweeps again
// once for the change, then leaves the port as it found it: not a heavy
// sweep on every light sweep for as long as the link is down.
func TestIBBackToBackDown(t *testing.T) {
	spec := ibB2B(t, "[{at: 200us, state: down}]", "20ms")
	s, _ := buildAndRun(t, spec)
	if st := s.SubnetManager().SM().Stats(); st.HeavySweeps > 3 || st.LightSweeps < 100 {
		t.Errorf("%d heavy sweeps in %d light sweeps with the link down for good, want at most 3", st.HeavySweeps, st.LightSweeps)
	}
}

// ibB2B is two HCAs cabled to each other, the SM on h1 sweeping every
// 50 us, the link's schedule as given, an RDMA flow from 1 ms.
func ibB2B(t *testing.T, schedule, duration string) *lab.Spec {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ibb2b.yaml")
	if err := os.WriteFile(f, []byte(`name: ibb2b
fabric: ib
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4096}
  nodes:
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:ib0", "h2:ib0"]
      schedule: `+schedule+`
ib:
  sm: {host: h1, sweep_interval: 50us}
traffic:
  - {name: w, op: write, src: h1, dst: h2, size: 64KiB, count: 8, depth: 4, start: 1ms}
sim:
  duration: `+duration+`
`), 0o600); err != nil {
		t.Fatal(err)
	}
	spec, err := lab.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
