package lab

import (
	"strconv"
	"strings"
	"testing"
)

// The predefined shapes make the labs mininet's --topo makes, and every
// one is a valid lab file.
func TestParseTopo(t *testing.T) {
	for _, c := range []struct {
		spec                    string
		hosts, switches, links  int
		firstLink, lastLinkEnds string
	}{
		{"single,3", 3, 1, 3, "h1:eth0 s1:p1", "h3:eth0 s1:p3"},
		{"linear,3", 3, 3, 5, "h1:eth0 s1:p1", "s2:p3 s3:p2"},
		{"linear,k=2,n=2", 4, 2, 5, "h1:eth0 s1:p1", "s1:p3 s2:p3"},
		{"tree,depth=2,fanout=2", 4, 3, 6, "h1:eth0 s2:p1", "s3:p3 s1:p2"},
		{"tree", 2, 1, 2, "h1:eth0 s1:p1", "h2:eth0 s1:p2"},
		{"leafspine,2,2", 4, 4, 8, "h1:eth0 leaf1:p1", "leaf2:p4 spine2:p2"},
		{"leafspine,leaves=4,spines=2,hosts=4", 16, 6, 24, "h1:eth0 leaf1:p1", "leaf4:p6 spine2:p4"},
	} {
		tp, err := ParseTopo("gen", c.spec)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		s, err := tp.Spec()
		if err != nil {
			t.Errorf("%s: the generated file does not parse: %v\n%s", c.spec, err, tp.YAML())
			continue
		}
		if len(s.NICs()) != c.hosts || len(s.Switches()) != c.switches || len(s.Links) != c.links {
			t.Errorf("%s: %d hosts, %d switches, %d links; want %d, %d, %d", c.spec, len(s.NICs()), len(s.Switches()), len(s.Links), c.hosts, c.switches, c.links)
			continue
		}
		ends := func(l *Link) string { return l.A.String() + " " + l.B.String() }
		if got := ends(s.Links[0]); got != c.firstLink {
			t.Errorf("%s: first link %s, want %s", c.spec, got, c.firstLink)
		}
		if got := ends(s.Links[len(s.Links)-1]); got != c.lastLinkEnds {
			t.Errorf("%s: last link %s, want %s", c.spec, got, c.lastLinkEnds)
		}
		if s.Links[0].Rate != 100e9 || s.Links[0].MTU != 4200 {
			t.Errorf("%s: link rate %d MTU %d, want the defaults 100G and 4200", c.spec, s.Links[0].Rate, s.Links[0].MTU)
		}
		// Every host reaches every other.
		for _, a := range s.NICs() {
			for _, b := range s.NICs() {
				if a != b {
					if _, err := s.Path(a, b); err != nil {
						t.Errorf("%s: %s to %s: %v", c.spec, a.Name, b.Name, err)
					}
				}
			}
		}
	}
	for spec, want := range map[string]string{
		"ring,3":                `unknown shape "ring"`,
		"single":                "n is missing",
		"single,0":              "a whole number from 1 to 256",
		"single,x":              "a whole number from 1 to 256",
		"linear,3,depth=2":      `unknown argument "depth"`,
		"tree,depth=9,fanout=4": "at most 256",
		"leafspine,2":           "spines is missing",
		// Every shape's hosts are bounded, not the tree's alone:
		// checking linear,256,256 took all the machine's memory.
		"linear,256,256":        "65536 hosts; at most 256",
		"linear,k=17,n=16":      "272 hosts; at most 256",
		"leafspine,256,256,256": "65536 hosts; at most 256",
		// Nor the hosts alone: 256 hosts each, and 65,792 links (a
		// 244 MB file, 5 s to write), 16,640, 4,352.
		"leafspine,256,256,1": "512 switches; at most 256",
		"leafspine,128,128,2": "16640 links; at most 1024",
		"leafspine,64,64,4":   "4352 links; at most 1024",
		"leafspine,2,255,1":   "257 switches; at most 256",
		// A left-over or repeated argument was dropped without a word.
		"single,4,8":           `argument "8" is one too many`,
		"leafspine,2,2,2,2":    `argument "2" is one too many`,
		"single,2,n=3":         "n is given twice",
		"tree,depth=2,depth=3": "depth is given twice",
	} {
		if _, err := ParseTopo("gen", spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", spec, err, want)
		}
	}
}

// The builder: mininet's verbs, per-link options, lossless priorities,
// and a mistake reported as a lab file's error.
func TestTopoBuilder(t *testing.T) {
	tp := NewTopo("built")
	tp.Lossless = []int{3}
	s1 := tp.AddSwitch("s1")
	tp.AddLink(tp.AddHost("h1"), s1, LinkOpts{Rate: "25G", Delay: "5us"})
	tp.AddLink(tp.AddHost("h2"), s1, LinkOpts{Loss: 0.01})
	s, err := tp.Spec()
	if err != nil {
		t.Fatalf("%v\n%s", err, tp.YAML())
	}
	if l := s.Links[0]; l.Rate != 25e9 || l.Delay != 5*1000*1000 {
		t.Errorf("h1's link: rate %d delay %v, want 25G 5us", l.Rate, l.Delay)
	}
	if l := s.Links[1]; l.Loss != 0.01 || l.Rate != 100e9 {
		t.Errorf("h2's link: loss %v rate %d, want 0.01 at the default 100G", l.Loss, l.Rate)
	}
	if !strings.Contains(string(tp.YAML()), `pfc_enable: "3"`) {
		t.Errorf("lossless priority 3 not in the file:\n%s", tp.YAML())
	}
	bad := NewTopo("bad")
	bad.AddLink(bad.AddHost("h1"), "nosuch", LinkOpts{})
	if _, err := bad.Spec(); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("a link to a node never added: %v, want an error naming it", err)
	}
}

// Traffic over every host, in each pattern, parses into the flows the
// pattern makes.
func TestTopoTraffic(t *testing.T) {
	for pattern, flows := range map[string]int{"incast": 3, "pairs": 2, "all_to_all": 12, "random": 4} {
		tp, err := ParseTopo("tr", "single,4")
		if err != nil {
			t.Fatal(err)
		}
		tp.Traffic = TopoTraffic{Pattern: pattern, Size: "4KiB", Load: 0.5}
		s, err := tp.Spec()
		if err != nil {
			t.Errorf("%s: %v\n%s", pattern, err, tp.YAML())
			continue
		}
		if len(s.Traffic) != flows {
			t.Errorf("%s: %d flows, want %d\n%s", pattern, len(s.Traffic), flows, tp.YAML())
		}
	}
	tp, _ := ParseTopo("tr", "single,2")
	tp.Traffic = TopoTraffic{Pattern: "bogus"}
	if _, err := tp.Spec(); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("an unknown pattern: %v, want an error naming it", err)
	}
}

// Priority 0 is a priority, not "the default": nil leaves the lab file's
// default (3), and every value given, 0 included, is the flows'.
func TestTopoTrafficPriority(t *testing.T) {
	for _, c := range []struct {
		prio *int
		want uint8
	}{{nil, 3}, {new(int), 0}, {func() *int { p := 5; return &p }(), 5}} {
		tp, err := ParseTopo("tr", "single,2")
		if err != nil {
			t.Fatal(err)
		}
		tp.Traffic = TopoTraffic{Pattern: "incast", Priority: c.prio}
		s, err := tp.Spec()
		if err != nil {
			t.Fatalf("%v\n%s", err, tp.YAML())
		}
		if len(s.Traffic) != 1 || s.Traffic[0].Priority != c.want {
			t.Errorf("priority %v: flows %+v, want one on priority %d\n%s", c.prio, s.Traffic, c.want, tp.YAML())
		}
	}
}

// Traffic needs two hosts: one host's incast would be an empty sender
// list, refused by the lab file's checks without saying why.
func TestTopoTrafficOneHost(t *testing.T) {
	tp, err := ParseTopo("one", "single,1")
	if err != nil {
		t.Fatal(err)
	}
	tp.Traffic = TopoTraffic{Pattern: "incast"}
	if _, err := tp.Spec(); err == nil || !strings.Contains(err.Error(), "needs at least two hosts") {
		t.Errorf("incast over one host: %v", err)
	}
}

// --load is per sender: all_to_all, whose senders have one flow per other
// host, shares it out over those flows (each flow was given the whole
// load, so 0.3 over 16 hosts offered 4.5 times the link rate and the run
// matched back-to-back sending). The other patterns have one flow per
// sender, which takes the load as it is.
func TestTopoTrafficLoadPerSender(t *testing.T) {
	for pattern, want := range map[string]float64{"all_to_all": 0.6, "incast": 0.6, "pairs": 0.6, "random": 0.6} {
		tp, err := ParseTopo("tr", "single,4")
		if err != nil {
			t.Fatal(err)
		}
		tp.Traffic = TopoTraffic{Pattern: pattern, Load: 0.6}
		s, err := tp.Spec()
		if err != nil {
			t.Fatalf("%s: %v\n%s", pattern, err, tp.YAML())
		}
		per := map[string]float64{}
		for _, f := range s.Traffic {
			per[f.Src.Name] += f.Load
		}
		for src, l := range per {
			if l < want-1e-6 || l > want+1e-6 {
				t.Errorf("%s: %s offers %g of its link rate over its flows, want %g\n%s", pattern, src, l, want, tp.YAML())
			}
		}
	}
}

// A load out of (0, 1] is refused: a negative one was left out of the
// file, so the run sent back to back without a word.
func TestTopoTrafficLoadRange(t *testing.T) {
	for _, l := range []float64{-1, -0.3, 1.5} {
		tp, err := ParseTopo("tr", "single,2")
		if err != nil {
			t.Fatal(err)
		}
		tp.Traffic = TopoTraffic{Pattern: "pairs", Load: l}
		if _, err := tp.Spec(); err == nil || !strings.Contains(err.Error(), "at most 1") {
			t.Errorf("load %g: error %v, want one saying the range\n%s", l, err, tp.YAML())
		}
	}
}

// topoSize, which bounds a shape before it is built, counts what the
// shape builds, up to the bounds themselves.
func TestTopoSize(t *testing.T) {
	for _, spec := range []string{"single,1", "single,256", "linear,256", "linear,16,16", "linear,256,1",
		"tree,depth=1,fanout=2", "tree,depth=8,fanout=2", "tree,depth=4,fanout=4", "tree,depth=256,fanout=1",
		"leafspine,1,1,1", "leafspine,32,24,8", "leafspine,4,2,4"} {
		tp, err := ParseTopo("size", spec)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		s, err := Parse("size.yaml", tp.YAML())
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		kind, _, _ := strings.Cut(spec, ",")
		var p [3]int
		for i, v := range strings.Split(spec, ",")[1:] {
			if _, val, ok := strings.Cut(v, "="); ok {
				v = val
			}
			p[i], _ = strconv.Atoi(v)
		}
		for i, d := range topoDefaults[kind] {
			if p[i] == 0 {
				p[i] = d
			}
		}
		h, sw, l := topoSize(kind, p)
		if h != len(s.NICs()) || sw != len(s.Switches()) || l != len(s.Links) {
			t.Errorf("%s: topoSize %d hosts, %d switches, %d links; built %d, %d, %d", spec, h, sw, l, len(s.NICs()), len(s.Switches()), len(s.Links))
		}
	}
}
