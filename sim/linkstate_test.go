package sim

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/switchcore"
)

// A leaf-spine fabric whose leaf1-spine1 link goes down at 100 us and
// comes back at 300 us, with traffic between every pair of leaves' hosts.
const rerouteLab = `
name: reroute
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4200}
  nodes:
    spine1: {kind: switch}
    spine2: {kind: switch}
    leaf1: {kind: switch}
    leaf2: {kind: switch}
    h1: {kind: nic}
    h2: {kind: nic}
    h3: {kind: nic}
    h4: {kind: nic}
  links:
    - endpoints: ["leaf1:p3", "spine1:p1"]
      schedule: [{at: 100us, state: down}, {at: 300us, state: up}]
    - endpoints: ["leaf1:p4", "spine2:p1"]
    - endpoints: ["leaf2:p3", "spine1:p2"]
    - endpoints: ["leaf2:p4", "spine2:p2"]
    - endpoints: ["h1:eth0", "leaf1:p1"]
    - endpoints: ["h2:eth0", "leaf1:p2"]
    - endpoints: ["h3:eth0", "leaf2:p1"]
    - endpoints: ["h4:eth0", "leaf2:p2"]
traffic:
  - {name: f13, src: h1, dst: h3, rate: 20G, size: 64KiB, priority: 3}
  - {name: f14, src: h1, dst: h4, rate: 20G, size: 64KiB, priority: 3}
  - {name: f23, src: h2, dst: h3, rate: 20G, size: 64KiB, priority: 3}
  - {name: f24, src: h2, dst: h4, rate: 20G, size: 64KiB, priority: 3}
  - {name: f31, src: h3, dst: h1, rate: 20G, size: 64KiB, priority: 3}
  - {name: f41, src: h4, dst: h1, rate: 20G, size: 64KiB, priority: 3}
  - {name: f32, src: h3, dst: h2, rate: 20G, size: 64KiB, priority: 3}
  - {name: f42, src: h4, dst: h2, rate: 20G, size: 64KiB, priority: 3}
sim: {duration: 500us, sample_interval: 10us}
`

// TestLinkStateReroutes: when a leaf-spine link goes down, the other
// switches learn it from the switches at its ends (link-state
// advertisements, in flight like any frame) and route around it: spine1,
// which can no longer reach leaf1's hosts, is taken out of leaf2's paths
// to them, so nothing is black-holed once the advertisements have
// arrived. Back up, every switch routes over both spines again. (Before,
// routes were computed once: leaf2 kept sending half of its flows to
// leaf1's hosts into spine1, which dropped them as link_down until the
// link came back.)
func TestLinkStateReroutes(t *testing.T) {
	spec, err := lab.Parse("reroute.yaml", []byte(rerouteLab))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	h1 := netip.AddrFrom4(spec.Node("h1").IPv4)
	ports := func(sw string) []string {
		w := s.Switch(sw)
		_, via, ok := w.Lookup(h1)
		if !ok {
			return nil
		}
		var out []string
		for _, i := range via {
			out = append(out, spec.Node(sw).Ports[i].Name)
		}
		slices.Sort(out)
		return out
	}
	var during, after []string
	var dbDuring map[string][]string
	s.At(200*clock.Microsecond, func() {
		during, dbDuring = ports("leaf2"), s.Switch("spine2").LinkStateDB()
	})
	s.At(400*clock.Microsecond, func() { after = ports("leaf2") })
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(during, []string{"p4"}) {
		t.Errorf("leaf2's route to h1 with leaf1-spine1 down: %v, want [p4] (spine2 only)", during)
	}
	if !slices.Equal(after, []string{"p3", "p4"}) {
		t.Errorf("leaf2's route to h1 after the link came back: %v, want [p3 p4]", after)
	}
	if !slices.Contains(dbDuring["spine1"], "p1") || !slices.Contains(dbDuring["leaf1"], "p3") {
		t.Errorf("spine2's link-state database while the link was down: %v", dbDuring)
	}
	_, by := r.SwitchDrops()
	// Only frames already on their way when the link went down, or sent
	// before the advertisement arrived (a few microseconds), may be lost.
	if by[switchcore.DropLinkDown] > 50 {
		t.Errorf("%d frames dropped as link_down: traffic was black-holed", by[switchcore.DropLinkDown])
	}
	for _, f := range r.Flows {
		if f.RxBytes == 0 {
			t.Errorf("flow %s received nothing", f.Name)
		}
	}
	t.Logf("link_down drops %d; leaf2 to h1 via %v while down, %v after", by[switchcore.DropLinkDown], during, after)
}
