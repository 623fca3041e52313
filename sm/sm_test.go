package sm_test

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/sm"
)

// harness cables mad.Agents together and carries the SM's SMPs through
// them synchronously; drop lets a test lose SMPs.
type harness struct {
	t      *testing.T
	m      *sm.SM
	now    clock.Time
	origin string
	nodes  map[string]*mad.Agent
	cable  map[end]end
	drop   func(smp mad.SMP, at string) bool
	sets   map[uint16]int // Set SMPs sent, by attribute
}

type end struct {
	node string
	port int
}

func newHarness(t *testing.T, cfg sm.Config) *harness {
	return &harness{t: t, m: sm.New(cfg), nodes: map[string]*mad.Agent{}, cable: map[end]end{}, sets: map[uint16]int{}}
}

func (h *harness) add(name string, typ uint8, ports int) *mad.Agent {
	a := mad.NewAgent(mad.AgentConfig{NodeType: typ, NumPorts: ports, NodeGUID: uint64(len(h.nodes)+1) << 8, Description: name})
	h.nodes[name] = a
	return a
}

func (h *harness) connect(a string, ap int, b string, bp int) {
	h.cable[end{a, ap}] = end{b, bp}
	h.cable[end{b, bp}] = end{a, ap}
	h.nodes[a].SetLinkUp(ap, true)
	h.nodes[b].SetLinkUp(bp, true)
}

func (h *harness) cut(a string, ap int) {
	b := h.cable[end{a, ap}]
	delete(h.cable, end{a, ap})
	delete(h.cable, b)
	h.nodes[a].SetLinkUp(ap, false)
	h.nodes[b.node].SetLinkUp(b.port, false)
}

// deliver carries smp out of node at's port until an agent hands it to
// the SM (then the SM gets it) or it is dropped.
func (h *harness) deliver(at end, smp mad.SMP) {
	for range 200 {
		peer, ok := h.cable[at]
		if !ok || (h.drop != nil && h.drop(smp, peer.node)) {
			return
		}
		act := h.nodes[peer.node].Handle(peer.port, smp, false)
		switch act.Verdict {
		case mad.SendPort:
			at = end{peer.node, act.Port}
		case mad.DeliverSM:
			if peer.node == h.origin {
				h.m.Receive(h.now, smp)
			}
			return
		default:
			return
		}
	}
	h.t.Fatal("SMP circulates")
}

func (h *harness) pump() {
	for {
		buf := make(mad.SMP, mad.Size)
		port, ok := h.m.Poll(h.now, buf)
		if !ok {
			return
		}
		if buf.MAD().Method() == mad.MethodSet {
			h.sets[buf.MAD().AttributeID()]++
		}
		if port == 0 {
			if act := h.nodes[h.origin].Handle(1, buf, false); act.Verdict == mad.DeliverSM {
				h.m.Receive(h.now, buf)
			}
			continue
		}
		h.deliver(end{h.origin, port}, buf)
	}
}

// sweep runs the SM from now until it is idle.
func (h *harness) sweep() {
	h.m.Start(h.now)
	h.settle()
}

func (h *harness) settle() {
	h.pump()
	for range 10000 {
		if h.m.Idle() {
			return
		}
		d := h.m.Deadline()
		if d == clock.Never {
			h.t.Fatal("SM stuck: busy with nothing due")
		}
		h.now = max(h.now, d)
		h.m.Tick(h.now)
		h.pump()
	}
	h.t.Fatal("SM never idle")
}

// twoTier: sm and a on sw1; b and c on sw2; sw1 and sw2 joined by two
// parallel links (ports 3-3 and 4-4).
func twoTier(t *testing.T, cfg sm.Config) *harness {
	h := newHarness(t, cfg)
	h.origin = "sm"
	h.add("sm", mad.NodeTypeCA, 1)
	h.add("a", mad.NodeTypeCA, 1)
	h.add("b", mad.NodeTypeCA, 1)
	h.add("c", mad.NodeTypeCA, 1)
	h.add("sw1", mad.NodeTypeSwitch, 4)
	h.add("sw2", mad.NodeTypeSwitch, 4)
	h.connect("sm", 1, "sw1", 1)
	h.connect("a", 1, "sw1", 2)
	h.connect("b", 1, "sw2", 1)
	h.connect("c", 1, "sw2", 2)
	h.connect("sw1", 3, "sw2", 3)
	h.connect("sw1", 4, "sw2", 4)
	return h
}

func TestSweep(t *testing.T) {
	h := twoTier(t, sm.Config{})
	h.sweep()
	st := h.m.Stats()
	if st.HeavySweeps != 1 || st.Nodes != 6 || st.Switches != 2 || st.Timeouts != 0 || st.ErrorStatus != 0 {
		t.Fatalf("stats %+v errors %v", st, h.m.Errors())
	}
	seen := map[uint16]string{}
	for name, a := range h.nodes {
		lid := a.LID()
		if lid == 0 || seen[lid] != "" {
			t.Fatalf("%s LID %d (also %q)", name, lid, seen[lid])
		}
		seen[lid] = name
		first := 1
		if strings.HasPrefix(name, "sw") {
			first = 0
		}
		for p := first; p <= a.NumPorts(); p++ {
			if a.PortState(p) != mad.PortStateActive {
				t.Errorf("%s port %d: %s", name, p, mad.PortStateName(a.PortState(p)))
			}
		}
		if a.SMLID() != h.nodes["sm"].LID() {
			t.Errorf("%s SM LID %d", name, a.SMLID())
		}
	}
	// sw1 reaches b and c over both parallel links, one each.
	sw1, sw2 := h.nodes["sw1"], h.nodes["sw2"]
	pb, pc := sw1.LFTPort(h.nodes["b"].LID()), sw1.LFTPort(h.nodes["c"].LID())
	if pb == pc || (pb != 3 && pb != 4) || (pc != 3 && pc != 4) {
		t.Fatalf("sw1 routes b via %d and c via %d", pb, pc)
	}
	if sw1.LFTPort(sw1.LID()) != 0 || sw1.LFTPort(h.nodes["a"].LID()) != 2 || sw2.LFTPort(h.nodes["c"].LID()) != 2 {
		t.Fatal("local routes")
	}
	topo := h.m.Topology()
	for _, s := range topo.Switches() {
		for _, e := range topo.LIDs() {
			if hops, ok := topo.Route(s, e.LID); !ok || len(hops) > 2 {
				t.Errorf("%s -> LID %d: %d hops, ok %v", s.Desc, e.LID, len(hops), ok)
			}
		}
	}
	var nd, is, rt strings.Builder
	if topo.WriteIBNetDiscover(&nd) != nil || topo.WriteIBStat(&is) != nil || topo.WriteRoutes(&rt) != nil {
		t.Fatal("write failed")
	}
	for _, want := range []string{
		"\nSwitch\t4 \"S-0000000000000500\"\t\t# \"sw1\" base port 0 lid",
		"\n[3]\t\"S-0000000000000600\"[3]\t\t# \"sw2\" lid",
		"\nCa\t1 \"H-0000000000000100\"\t\t# \"sm\"\n[1](101) \t\"S-0000000000000500\"[1]\t\t# lid 1 lmc 0 \"sw1\" lid",
		"caguid=0x200\n",
	} {
		if !strings.Contains(nd.String(), want) {
			t.Errorf("ibnetdiscover output lacks %q:\n%s", want, nd.String())
		}
	}
	for _, want := range []string{"CA 'a'\n\tCA type: emulated\n\tNumber of ports: 1\n", "\tNode GUID: 0x0000000000000200\n",
		"\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 40\n", "\t\tPort GUID: 0x0000000000000201\n\t\tLink layer: InfiniBand\n"} {
		if !strings.Contains(is.String(), want) {
			t.Errorf("ibstat output lacks %q:\n%s", want, is.String())
		}
	}
	if c := strings.Count(is.String(), "CA '"); c != 4 {
		t.Errorf("ibstat lists %d CAs", c)
	}
	if !strings.Contains(rt.String(), "6 valid lids dumped \n") || !strings.Contains(rt.String(), " : (Channel Adapter portguid 0x0000000000000301: 'b')") {
		t.Errorf("routes:\n%s", rt.String())
	}
	t.Logf("%d SMPs for 6 nodes\n%s", st.LastSweepSMPs, nd.String())
}

// A re-sweep keeps every LID and sends no LFT block that did not change;
// an SM taking over keeps LIDs already configured when they are free.
func TestResweepStable(t *testing.T) {
	h := twoTier(t, sm.Config{})
	// b already has LID 40 (an SM ran before).
	pi := make(mad.PortInfo, mad.PortInfoSize)
	pi.Encode(&mad.PortInfoFields{LID: 40})
	var f mad.SMPFields
	f.Method, f.AttributeID, f.AttrModifier = mad.MethodSet, mad.AttrPortInfo, 1
	mad.DRPath(&f, nil)
	copy(f.Data[:], pi)
	s := make(mad.SMP, mad.Size)
	s.Encode(&f)
	h.nodes["b"].Handle(1, s, false)
	h.sweep()
	if h.nodes["b"].LID() != 40 {
		t.Fatalf("b's LID 40 became %d", h.nodes["b"].LID())
	}
	before := map[string]uint16{}
	for n, a := range h.nodes {
		before[n] = a.LID()
	}
	lftSets := h.sets[mad.AttrLinearFwdTable]
	if lftSets != 2 {
		t.Fatalf("first sweep set %d LFT blocks, want one per switch", lftSets)
	}
	first := h.m.Stats().LastSweepSMPs
	h.sweep()
	for n, a := range h.nodes {
		if a.LID() != before[n] {
			t.Errorf("%s: LID %d -> %d", n, before[n], a.LID())
		}
	}
	if h.sets[mad.AttrLinearFwdTable] != lftSets || h.m.Stats().LastSweepSMPs >= first {
		t.Errorf("re-sweep sent %d LFT blocks and %d SMPs (first sweep %d)", h.sets[mad.AttrLinearFwdTable]-lftSets, h.m.Stats().LastSweepSMPs, first)
	}
}

// Lost SMPs are resent; an SMP that never gets an answer is given up after
// Retries and the sweep still completes.
func TestSweepLoss(t *testing.T) {
	h := twoTier(t, sm.Config{Timeout: 10 * clock.Microsecond, Retries: 2})
	lost := 0
	h.drop = func(smp mad.SMP, at string) bool {
		// The first NodeInfo reaching sw2 and every SMP reaching c are lost.
		if at == "sw2" && smp.MAD().AttributeID() == mad.AttrNodeInfo && !smp.Direction() && lost == 0 && int(smp.HopPointer()) == int(smp.HopCount()) {
			lost++
			return true
		}
		return at == "c"
	}
	h.sweep()
	st := h.m.Stats()
	if st.HeavySweeps != 1 || st.Retries != 1+2 || st.Timeouts != 1 || st.Nodes != 5 {
		t.Fatalf("stats %+v, errors %v", st, h.m.Errors())
	}
	if h.now < 10*clock.Microsecond || len(h.m.Errors()) != 1 || !strings.Contains(h.m.Errors()[0], "no response after 3 tries") {
		t.Fatalf("now %v errors %v", h.now, h.m.Errors())
	}
}

// The light sweep notices a port going down through
// SwitchInfo.PortStateChange and re-routes around it.
func TestLightSweep(t *testing.T) {
	h := twoTier(t, sm.Config{LightSweep: 100 * clock.Microsecond, Timeout: 10 * clock.Microsecond})
	h.sweep()
	if d := h.m.Deadline(); d != h.now+100*clock.Microsecond {
		t.Fatalf("next light sweep at %v, now %v", d, h.now)
	}
	// A quiet light sweep.
	h.now = h.m.Deadline()
	h.m.Tick(h.now)
	h.settle()
	if st := h.m.Stats(); st.LightSweeps != 1 || st.HeavySweeps != 1 {
		t.Fatalf("after a quiet light sweep: %+v", st)
	}
	h.cut("sw1", 3)
	h.now = h.m.Deadline()
	h.m.Tick(h.now)
	h.settle()
	st := h.m.Stats()
	if st.LightSweeps != 2 || st.HeavySweeps != 2 {
		t.Fatalf("after the cut: %+v", st)
	}
	sw1 := h.nodes["sw1"]
	if sw1.LFTPort(h.nodes["b"].LID()) != 4 || sw1.LFTPort(h.nodes["c"].LID()) != 4 {
		t.Fatalf("sw1 still routes over the cut port: b %d c %d", sw1.LFTPort(h.nodes["b"].LID()), sw1.LFTPort(h.nodes["c"].LID()))
	}
}
