package lab

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestFloodBlocked checks the spanning tree `up` computes over the
// switches: which ports each emuswitch leaves out of flooding.
func TestFloodBlocked(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // an example, or "" for src
		src  string
		want map[string][]string
	}{
		{
			// BFS from sa: sa-sb (sa:p2-sb:p3) and sc-sa (sc:p2-sa:p3) are
			// sa's links; sb-sc closes the ring and is blocked.
			name: "ring", file: "../examples/deadlock-ring.yaml",
			want: map[string][]string{"sb": {"p2"}, "sc": {"p3"}},
		},
		{
			// BFS from leaf1 reaches both spines; spine1 (first in queue)
			// takes leaf2..4; spine2's links to them are blocked.
			name: "leaf-spine", file: "../examples/leaf-spine.yaml",
			want: map[string][]string{"spine2": {"p2", "p3", "p4"}, "leaf2": {"p6"}, "leaf3": {"p6"}, "leaf4": {"p6"}},
		},
		{
			// Two parallel links: the second one in link order is blocked.
			name: "parallel", src: `name: x
topology:
  nodes:
    sw2: {kind: switch}
    sw1: {kind: switch}
    h1: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["sw2:p9", "sw1:p9"]
    - endpoints: ["sw1:p10", "sw2:p10"]
`,
			want: map[string][]string{"sw1": {"p10"}, "sw2": {"p10"}},
		},
		{
			// The root is the smallest name, not the first node or link:
			// a's links in link order are a-c, a-b, so c and b hang off a
			// and b-c, the first link of the file, is blocked.
			name: "triangle root by name", src: `name: x
topology:
  nodes:
    c: {kind: switch}
    b: {kind: switch}
    a: {kind: switch}
  links:
    - endpoints: ["b:p1", "c:p1"]
    - endpoints: ["a:p1", "c:p2"]
    - endpoints: ["a:p2", "b:p2"]
`,
			want: map[string][]string{"b": {"p1"}, "c": {"p1"}},
		},
		{
			// A line has no cycle: nothing blocked.
			name: "line", src: `name: x
topology:
  nodes:
    s1: {kind: switch}
    s2: {kind: switch}
    s3: {kind: switch}
  links:
    - endpoints: ["s1:p1", "s2:p1"]
    - endpoints: ["s2:p2", "s3:p1"]
`,
			want: map[string][]string{},
		},
		{
			// Two separate pairs of parallel links: a tree each.
			name: "two components", src: `name: x
topology:
  nodes:
    y1: {kind: switch}
    y2: {kind: switch}
    x1: {kind: switch}
    x2: {kind: switch}
  links:
    - endpoints: ["y1:p1", "y2:p1"]
    - endpoints: ["y2:p2", "y1:p2"]
    - endpoints: ["x2:p1", "x1:p1"]
    - endpoints: ["x1:p2", "x2:p2"]
`,
			want: map[string][]string{"y1": {"p2"}, "y2": {"p2"}, "x1": {"p2"}, "x2": {"p2"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec *Spec
			if tc.file != "" {
				var err error
				if spec, err = Load(tc.file); err != nil {
					t.Fatal(err)
				}
			} else {
				spec = upParse(t, tc.src)
			}
			got := map[string][]string{}
			for n, ports := range floodBlocked(spec) {
				got[n.Name] = ports
			}
			if !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("blocked ports %v, want %v", got, tc.want)
			}
			checkSpanningForest(t, spec, got)
		})
	}
}

// checkSpanningForest checks, independently of the search, that the
// switch-to-switch links left unblocked form a forest (no cycle: a flood
// cannot come back) that connects every group of switches the lab
// connects (a flood reaches every switch), and that a link is blocked at
// both ends or neither.
func checkSpanningForest(t *testing.T, spec *Spec, blocked map[string][]string) {
	t.Helper()
	isBlocked := func(p *Port) bool { return slices.Contains(blocked[p.Node.Name], p.Name) }
	all, tree := newUnionFind(), newUnionFind()
	for _, l := range spec.Links {
		if l.A.Node.Kind != KindSwitch || l.B.Node.Kind != KindSwitch {
			if isBlocked(l.A) || isBlocked(l.B) {
				t.Errorf("link %s-%s to a NIC is blocked", l.A, l.B)
			}
			continue
		}
		all.union(l.A.Node.Name, l.B.Node.Name)
		if isBlocked(l.A) != isBlocked(l.B) {
			t.Errorf("link %s-%s blocked at one end only", l.A, l.B)
		}
		if isBlocked(l.A) {
			continue
		}
		if !tree.union(l.A.Node.Name, l.B.Node.Name) {
			t.Errorf("link %s-%s closes a cycle of unblocked links", l.A, l.B)
		}
	}
	for _, a := range spec.Switches() {
		for _, b := range spec.Switches() {
			if all.find(a.Name) == all.find(b.Name) && tree.find(a.Name) != tree.find(b.Name) {
				t.Errorf("%s and %s are linked but not through unblocked links", a.Name, b.Name)
			}
		}
	}
}

type unionFind map[string]string

func newUnionFind() unionFind { return unionFind{} }

func (u unionFind) find(x string) string {
	for {
		p, ok := u[x]
		if !ok || p == x {
			return x
		}
		x = p
	}
}

// union joins a and b; false when they were already joined.
func (u unionFind) union(a, b string) bool {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return false
	}
	u[ra] = rb
	return true
}

// TestUpPlanNoFlood: the plan marks the ports outside the spanning tree,
// for the table up prints, and passes no --no-flood: each emuswitch
// computes the tree itself, and again when links go down or come back
// (swd/linkstate.go), which a flag fixed at up could not follow.
func TestUpPlanNoFlood(t *testing.T) {
	var socks []string
	spec, err := Load("../examples/deadlock-ring.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := makePlan(spec, HostsTAP, "/abs/lab.yaml", upTestSock(&socks))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"sa": "", "sb": "p2", "sc": "p3"}
	for _, pn := range p.daemons() {
		args := strings.Join(pn.daemon.args, " ")
		w, ok := want[pn.node.Name]
		if !ok {
			t.Errorf("unexpected daemon %s", pn.node.Name)
			continue
		}
		if strings.Contains(args, "--no-flood") {
			t.Errorf("%s args %q: the daemon computes its tree", pn.node.Name, args)
		}
		for _, pp := range pn.ports {
			if blocked := w == pp.name; pp.noFlood != blocked {
				t.Errorf("%s:%s noFlood %v, want %v", pn.node.Name, pp.name, pp.noFlood, blocked)
			}
		}
	}
	var b strings.Builder
	li := &LabInfo{Lab: spec.Name, Nodes: []NodeInfo{{Name: "sb", Kind: KindSwitch,
		Ports: []PortInfo{{Name: "p2", Peer: "sc:p3", Transport: "seqpacket-listen:/s/x.sock", NoFlood: true}}}}}
	if err := li.WriteTable(&b); err != nil || !strings.Contains(b.String(), "(no flooding: outside the spanning tree)") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}
