package sim

import (
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// The simulator's switches reroute over the simulator's graph
// (routesAvoiding), emuswitch over the lab file's (lab.NextHopsAvoiding,
// swd/linkstate.go): one lab must get the same routes from both, or a
// scenario studied in the simulator behaves differently in real time.
// Every RoCE example with switches linked to one another, with each
// link down in turn and with each pair of switch-to-switch links down.
func TestRerouteAgreesWithLab(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	tried := 0
	for _, file := range append(files, "") {
		var spec *lab.Spec
		if file == "" {
			spec, err = lab.Parse("reroute.yaml", []byte(rerouteLab))
		} else {
			spec, err = lab.Load(file)
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if spec.Fabric == lab.FabricIB || len(spec.Switches()) < 2 {
			continue
		}
		var fabric []*lab.Link
		for _, l := range spec.Links {
			if l.A.Node.Kind == lab.KindSwitch && l.B.Node.Kind == lab.KindSwitch {
				fabric = append(fabric, l)
			}
		}
		cuts := [][]*lab.Link{}
		for i, a := range spec.Links {
			cuts = append(cuts, []*lab.Link{a})
			if a.A.Node.Kind != lab.KindSwitch || a.B.Node.Kind != lab.KindSwitch {
				continue
			}
			for _, b := range fabric {
				if b != a && slices.Index(spec.Links, b) > i {
					cuts = append(cuts, []*lab.Link{a, b})
				}
			}
		}
		s, err := Build(spec, 1)
		if err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		s.installRoutes() // as Run's startSwitches does: the file's own routes kept
		for _, cut := range cuts {
			// Advertised by the switch at one end (the A end when it
			// is a switch), as a port set down there would be.
			db := map[string][]string{}
			for _, l := range cut {
				end := l.A
				if end.Node.Kind != lab.KindSwitch {
					end = l.B
				}
				db[end.Node.Name] = append(db[end.Node.Name], end.Name)
			}
			down := func(l *lab.Link) bool {
				return l != nil && (slices.Contains(db[l.A.Node.Name], l.A.Name) || slices.Contains(db[l.B.Node.Name], l.B.Name))
			}
			got := s.routesAvoiding(db)
			for _, w := range s.switches {
				sw := spec.Node(w.name)
				for _, nic := range spec.NICs() {
					a := netip.AddrFrom4(nic.IPv4)
					if w.covered(nic.IPv4) {
						continue // the lab file's own route, kept by both
					}
					want := spec.NextHopsAvoiding(sw, nic, down)
					if len(want) == 0 {
						want = spec.NextHops(sw, nic)
					}
					var have []int
					for _, r := range got[w] {
						if r.Prefix == netip.PrefixFrom(a, 32) {
							have = r.Ports
						}
					}
					tried++
					if !slices.Equal(slices.Sorted(slices.Values(have)), slices.Sorted(slices.Values(want))) {
						t.Errorf("%s, %v down: %s to %s: simulator via ports %v, emuswitch via %v", spec.Name, db, w.name, nic.Name, have, want)
					}
				}
			}
		}
	}
	if tried == 0 {
		t.Fatal("no RoCE example with linked switches")
	}
	t.Logf("%d (switch, host, cut) routes agree", tried)
}
