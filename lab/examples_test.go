package lab

import (
	"path/filepath"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// TestExamplesLoad: every example validates without warnings, and has the
// shape its docs page describes.
func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) < 7 {
		t.Fatalf("examples: %v %v", files, err)
	}
	type shape struct {
		fabric         Fabric
		switches, nics int
		links, flows   int
		duration       clock.Time
	}
	want := map[string]shape{
		"incast.yaml":            {FabricRoCE, 1, 9, 9, 8, 1500 * clock.Microsecond},
		"parking-lot.yaml":       {FabricRoCE, 2, 4, 5, 3, 3 * clock.Millisecond},
		"pfc-storm.yaml":         {FabricRoCE, 1, 3, 3, 4, 12 * clock.Millisecond},
		"victim-flow.yaml":       {FabricRoCE, 2, 5, 6, 3, 2 * clock.Millisecond},
		"deadlock-ring.yaml":     {FabricRoCE, 3, 3, 6, 3, 4 * clock.Millisecond},
		"ib-incast.yaml":         {FabricIB, 1, 9, 9, 8, 2 * clock.Millisecond},
		"ib-cc.yaml":             {FabricIB, 2, 11, 12, 9, 3 * clock.Millisecond},
		"leaf-spine.yaml":        {FabricRoCE, 6, 16, 24, 16, clock.Millisecond},
		"dcqcn-parking-lot.yaml": {FabricRoCE, 2, 4, 5, 3, 100 * clock.Millisecond},
		"dcqcn-incast.yaml":      {FabricRoCE, 1, 9, 9, 8, 60 * clock.Millisecond},
		"two-hosts.yaml":         {FabricRoCE, 1, 2, 2, 1, 200 * clock.Microsecond},
		"ib-two-hosts.yaml":      {FabricIB, 1, 2, 2, 2, 200 * clock.Microsecond},
		"ib-fat-tree.yaml":       {FabricIB, 6, 16, 24, 8, 1500 * clock.Microsecond},
		"ib-rdma.yaml":           {FabricIB, 2, 5, 6, 3, 2 * clock.Millisecond},
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			s, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range s.Warnings {
				t.Errorf("warning: %v", w)
			}
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectations for %s", name)
			}
			got := shape{s.Fabric, len(s.Switches()), len(s.NICs()), len(s.Links), len(s.Traffic), s.Sim.Duration}
			if got != w {
				t.Errorf("got %+v, want %+v", got, w)
			}
			// Every flow's destination is reachable along a concrete path.
			for _, fl := range s.Traffic {
				for _, d := range fl.Dst {
					if _, err := s.Path(fl.Src, d); err != nil {
						t.Errorf("%s -> %s: %v", fl.Name, d.Name, err)
					}
				}
			}
		})
	}
}

// TestExampleDetails pins values the docs pages quote.
func TestExampleDetails(t *testing.T) {
	s, err := Load("../examples/deadlock-ring.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The explicit route sends ha's traffic to hc the long way round.
	path, err := s.Path(s.Node("ha"), s.Node("hc"))
	if err != nil {
		t.Fatal(err)
	}
	var hops []string
	for _, p := range path {
		hops = append(hops, p.String())
	}
	if len(hops) != 4 || hops[1] != "sa:p2" || hops[2] != "sb:p2" || hops[3] != "sc:p1" {
		t.Errorf("ha -> hc path %v", hops)
	}

	s, err = Load("../examples/ib-incast.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.IB.MaxVLs != 2 || s.IB.SL2VL[1] != 1 || len(s.IB.VLArbHigh) != 1 || s.IB.VLArbHigh[0] != (VLArbEntry{1, 4}) ||
		s.IB.VLBuffer != 64<<10 || s.IB.CreditUpdate != clock.Microsecond || s.IB.HighLimit != 255 {
		t.Errorf("ib %+v", s.IB)
	}
	lft := s.LFTOf(s.Node("sw1"))
	if len(lft) != 9 || lft[s.Node("h9").LID] != 8 {
		t.Errorf("LFT %v", lft)
	}

	s, err = Load("../examples/leaf-spine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Between leaves, both spines are equal-cost next hops.
	if nh := s.NextHops(s.Node("leaf1"), s.Node("h16")); len(nh) != 2 {
		t.Errorf("leaf1 -> h16 next hops %v", nh)
	}
	if f := s.Traffic[0]; f.Pattern != PatternRandom || len(f.Dst) != 15 || f.Arrival != ArrivalPoisson || f.Load != 0.5 || f.Size.Dist != DistCDF {
		t.Errorf("flow %+v", f)
	}

	// The DCQCN examples: real NICs with the paper's profile, the paper's
	// marking curve scaled to 100G, RDMA WRITE streams until the end.
	for _, name := range []string{"dcqcn-parking-lot.yaml", "dcqcn-incast.yaml"} {
		s, err = Load("../examples/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if s.DCQCN == nil || s.DCQCN.RPAIRate != 40 || s.DCQCN.NPMinTimeBetweenCNPs != 50 {
			t.Errorf("%s: dcqcn %+v", name, s.DCQCN)
		}
		if w := s.Switches()[0].QoS.WREDProfiles["AZURE_LOSSLESS"]; w == nil || w.Green.MinThreshold != 12500 || w.Green.MaxThreshold != 500000 || w.Green.DropProbability != 1 {
			t.Errorf("%s: WRED %+v", name, w)
		}
		for _, n := range s.NICs() {
			if !n.RDMA {
				t.Errorf("%s: %s is not an RDMA NIC", name, n.Name)
			}
		}
		for _, f := range s.Traffic {
			if f.Op != OpWrite || f.Depth != 4 || f.QPs != 1 || f.CC != CCDCQCN || f.Stop != 0 || f.PMTU != 4096 {
				t.Errorf("%s: flow %+v", name, f)
			}
		}
	}

	s, err = Load("../examples/pfc-storm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wd := s.Node("sw1").QoS.PFCWD
	if wd.PollInterval != clock.Millisecond || wd.DetectionTime != 2*clock.Millisecond || wd.Action != PFCWDDrop {
		t.Errorf("PFC_WD %+v", wd)
	}
	if st := s.Node("h3").Storm; st == nil || st.Start != clock.Millisecond || st.Stop != 6*clock.Millisecond || st.Priority != 3 {
		t.Errorf("storm %+v", st)
	}
}
