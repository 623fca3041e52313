package mad_test

import (
	"testing"

	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

// fabric is an in-memory cabling of agents for directed-route tests.
type fabric struct {
	t     *testing.T
	nodes map[string]*mad.Agent
	cable map[end]end
	hops  []string // nodes an SMP visited
}

type end struct {
	node string
	port int
}

func newFabric(t *testing.T) *fabric {
	return &fabric{t: t, nodes: map[string]*mad.Agent{}, cable: map[end]end{}}
}

func (f *fabric) add(name string, typ uint8, ports int, guid uint64) *mad.Agent {
	a := mad.NewAgent(mad.AgentConfig{NodeType: typ, NumPorts: ports, NodeGUID: guid, Description: name})
	f.nodes[name] = a
	return a
}

func (f *fabric) connect(a string, ap int, b string, bp int) {
	f.cable[end{a, ap}] = end{b, bp}
	f.cable[end{b, bp}] = end{a, ap}
	f.nodes[a].SetLinkUp(ap, true)
	f.nodes[b].SetLinkUp(bp, true)
}

// send moves smp out of node from's port until some agent delivers it to
// an SM or drops it; it returns where it ended and the last verdict.
func (f *fabric) send(from string, port int, smp mad.SMP) (string, mad.Verdict) {
	f.hops = f.hops[:0]
	at := end{from, port}
	for range 130 {
		peer, ok := f.cable[at]
		if !ok {
			f.t.Fatalf("no cable at %v", at)
		}
		f.hops = append(f.hops, peer.node)
		act := f.nodes[peer.node].Handle(peer.port, smp, false)
		switch act.Verdict {
		case mad.SendPort:
			at = end{peer.node, act.Port}
		default:
			return peer.node, act.Verdict
		}
	}
	f.t.Fatal("SMP never settled")
	return "", 0
}

func chain(t *testing.T) *fabric {
	f := newFabric(t)
	f.add("sm", mad.NodeTypeCA, 1, 0x100)
	f.add("swA", mad.NodeTypeSwitch, 8, 0x200)
	f.add("swB", mad.NodeTypeSwitch, 8, 0x300)
	f.add("dst", mad.NodeTypeCA, 1, 0x400)
	f.connect("sm", 1, "swA", 2)
	f.connect("swA", 4, "swB", 1)
	f.connect("swB", 3, "dst", 1)
	return f
}

func getSMP(attr uint16, am uint32, path ...uint8) mad.SMP {
	var f mad.SMPFields
	f.Method, f.AttributeID, f.AttrModifier, f.TransactionID = mad.MethodGet, attr, am, 77
	mad.DRPath(&f, path)
	b := make(mad.SMP, mad.Size)
	b.Encode(&f)
	return b
}

// IBA 14.2.2: out along InitialPath, each hop recording its arrival port
// in ReturnPath, the D bit flipped at the end, back along ReturnPath.
func TestDirectedRouteWalk(t *testing.T) {
	f := chain(t)
	smp := getSMP(mad.AttrNodeInfo, 0, 1, 4, 3)
	ended, v := f.send("sm", 1, smp)
	if ended != "sm" || v != mad.DeliverSM {
		t.Fatalf("ended at %s with verdict %d (hops %v)", ended, v, f.hops)
	}
	if want := []string{"swA", "swB", "dst", "swB", "swA", "sm"}; len(f.hops) != len(want) {
		t.Fatalf("hops %v, want %v", f.hops, want)
	} else {
		for i := range want {
			if f.hops[i] != want[i] {
				t.Fatalf("hops %v, want %v", f.hops, want)
			}
		}
	}
	rp := smp.ReturnPath()
	if rp[1] != 2 || rp[2] != 1 || rp[3] != 1 {
		t.Fatalf("ReturnPath %v", rp[:4])
	}
	ni := mad.NodeInfo(smp.Data())
	if !smp.Direction() || smp.HopPointer() != 0 || smp.MAD().Method() != mad.MethodGetResp || smp.Status() != 0 ||
		ni.NodeGUID() != 0x400 || ni.NodeType() != mad.NodeTypeCA || ni.LocalPortNum() != 1 || ni.PortGUID() != 0x401 {
		t.Fatalf("response D %v hp %d method 0x%x status 0x%x, NodeInfo %+v", smp.Direction(), smp.HopPointer(),
			smp.MAD().Method(), smp.Status(), ni.Fields())
	}
	// A switch reports the port the SMP arrived on as LocalPortNum.
	smp = getSMP(mad.AttrNodeInfo, 0, 1, 4)
	f.send("sm", 1, smp)
	if ni := mad.NodeInfo(smp.Data()); ni.NodeGUID() != 0x300 || ni.LocalPortNum() != 1 || ni.NumPorts() != 8 || ni.PortGUID() != 0x300 {
		t.Fatalf("switch NodeInfo %+v", ni.Fields())
	}
	if st := f.nodes["swA"].Stats; st.Forwarded != 4 || st.Answered != 0 {
		t.Fatalf("swA stats %+v", st)
	}
}

func TestDirectedRouteDiscards(t *testing.T) {
	f := chain(t)
	// A path through a CA: CAs are never intermediate hops (C14-9:2).
	f.connect("dst", 1, "swB", 3)
	smp := getSMP(mad.AttrNodeInfo, 0, 1, 4, 3, 1)
	if ended, v := f.send("sm", 1, smp); ended != "dst" || v != mad.Drop {
		t.Fatalf("through a CA: ended at %s verdict %d", ended, v)
	}
	// An exit port the switch does not have.
	smp = getSMP(mad.AttrNodeInfo, 0, 1, 9)
	if ended, v := f.send("sm", 1, smp); ended != "swA" || v != mad.Drop {
		t.Fatalf("port 9 of 8: ended at %s verdict %d", ended, v)
	}
	// The sender did not advance the hop pointer (C14-9:1).
	smp = getSMP(mad.AttrNodeInfo, 0, 1, 4)
	smp.SetHopPointer(0)
	if ended, v := f.send("sm", 1, smp); ended != "swA" || v != mad.Drop {
		t.Fatalf("hop pointer 0: ended at %s verdict %d", ended, v)
	}
	if f.nodes["swA"].Stats.Discarded != 2 || f.nodes["dst"].Stats.Discarded != 1 {
		t.Fatalf("discard counters swA %+v dst %+v", f.nodes["swA"].Stats, f.nodes["dst"].Stats)
	}
	// LID-routed legs are not handled.
	smp = getSMP(mad.AttrNodeInfo, 0, 1, 4)
	smp[32], smp[33] = 0, 5 // DrSLID 5
	if _, v := f.send("sm", 1, smp); v != mad.Drop || f.nodes["swA"].Stats.Unsupp != 1 {
		t.Fatalf("DrSLID 5: verdict %d stats %+v", v, f.nodes["swA"].Stats)
	}
	if v, _ := mad.DRReceive(smp, 1, true, 8); v.String() != "unsupported" {
		t.Fatalf("verdict %v", v)
	}
}

func setSMP(attr uint16, am uint32, data []byte, path ...uint8) mad.SMP {
	s := getSMP(attr, am, path...)
	s.MAD().SetMethod(mad.MethodSet)
	copy(s.Data(), data)
	return s
}

// The port state machine and LID/LFT programming of IBA 14.2.5.
func TestAgentSet(t *testing.T) {
	f := chain(t)
	sw := f.nodes["swA"]
	pi := func(lid uint16, state uint8) []byte {
		b := make(mad.PortInfo, mad.PortInfoSize)
		b.Encode(&mad.PortInfoFields{LID: lid, MasterSMLID: 1, PortState: state})
		return b
	}
	type step struct {
		name   string
		smp    mad.SMP
		status uint16
		check  func() bool
	}
	lft := make([]byte, 64)
	for i := range lft {
		lft[i] = 0xFF
	}
	lft[1], lft[5], lft[7] = 2, 4, 0
	si := make(mad.SwitchInfo, mad.SwitchInfoSize)
	si.Encode(&mad.SwitchInfoFields{LinearFDBTop: 7, PortStateChange: true})
	steps := []step{
		{"switch LID on port 0", setSMP(mad.AttrPortInfo, 0, pi(7, 0), 1), 0,
			func() bool { return sw.LID() == 7 && sw.SMLID() == 1 && sw.PortState(0) == mad.PortStateInit }},
		{"Active from Init is invalid", setSMP(mad.AttrPortInfo, 4, pi(0, mad.PortStateActive), 1), mad.StatusInvalidField,
			func() bool { return sw.PortState(4) == mad.PortStateInit }},
		{"Armed from Init", setSMP(mad.AttrPortInfo, 4, pi(0, mad.PortStateArmed), 1), 0,
			func() bool { return sw.PortState(4) == mad.PortStateArmed && sw.PortLID(4) == 0 }},
		{"Active from Armed", setSMP(mad.AttrPortInfo, 4, pi(0, mad.PortStateActive), 1), 0,
			func() bool { return sw.PortState(4) == mad.PortStateActive }},
		{"Armed on a port with no link", setSMP(mad.AttrPortInfo, 6, pi(0, mad.PortStateArmed), 1), mad.StatusInvalidField,
			func() bool { return sw.PortState(6) == mad.PortStateDown }},
		{"PortInfo of port 9", getSMP(mad.AttrPortInfo, 9, 1), mad.StatusInvalidField, func() bool { return true }},
		{"LFT block 0", setSMP(mad.AttrLinearFwdTable, 0, lft, 1), 0,
			func() bool { return sw.LFTPort(1) == mad.LFTNoPort }}, // above LinearFDBTop 0 until SwitchInfo says
		{"SwitchInfo top 7", setSMP(mad.AttrSwitchInfo, 0, si, 1), 0,
			func() bool {
				return sw.LinearFDBTop() == 7 && sw.LFTPort(1) == 2 && sw.LFTPort(5) == 4 && sw.LFTPort(7) == 0 && sw.LFTPort(8) == mad.LFTNoPort
			}},
		{"LFT block 768 is past the capacity", setSMP(mad.AttrLinearFwdTable, 768, lft, 1), mad.StatusInvalidField, func() bool { return true }},
		{"Set NodeInfo", setSMP(mad.AttrNodeInfo, 0, nil, 1), mad.StatusMethodAttrUnsupp, func() bool { return true }},
		{"unknown attribute", getSMP(0x0017, 0, 1), mad.StatusMethodAttrUnsupp, func() bool { return true }},
		{"SwitchInfo of a CA", getSMP(mad.AttrSwitchInfo, 0, 1, 4, 3), mad.StatusMethodAttrUnsupp, func() bool { return true }},
		{"CA LID and Armed", setSMP(mad.AttrPortInfo, 0, pi(9, mad.PortStateArmed), 1, 4, 3), 0,
			func() bool { return f.nodes["dst"].LID() == 9 && f.nodes["dst"].PortState(1) == mad.PortStateArmed }},
		{"multicast LID", setSMP(mad.AttrPortInfo, 1, pi(0xC001, 0), 1, 4, 3), mad.StatusInvalidField,
			func() bool { return f.nodes["dst"].LID() == 9 }},
	}
	for _, s := range steps {
		if ended, v := f.send("sm", 1, s.smp); ended != "sm" || v != mad.DeliverSM {
			t.Fatalf("%s: ended at %s, verdict %d", s.name, ended, v)
		}
		if got := s.smp.Status(); got != s.status || !s.check() {
			t.Errorf("%s: status 0x%04x (want 0x%04x), check %v", s.name, got, s.status, s.check())
		}
	}
	// The Get of the LFT block returns what was set; PortStateChange was
	// raised by the links coming up and cleared by the Set above.
	g := getSMP(mad.AttrLinearFwdTable, 0, 1)
	f.send("sm", 1, g)
	if g.Data()[5] != 4 || g.Data()[8] != 0xFF {
		t.Fatalf("LFT block read back %x", g.Data()[:9])
	}
	g = getSMP(mad.AttrSwitchInfo, 0, 1)
	f.send("sm", 1, g)
	if mad.SwitchInfo(g.Data()).PortStateChange() {
		t.Fatal("PortStateChange not cleared")
	}
	sw.SetLinkUp(4, false)
	// A returned response sent out again is discarded at the next hop
	// (D = 1 with hop pointer 0 and hop count 1: C14-13:5).
	if ended, v := f.send("sm", 1, g); ended != "swA" || v != mad.Drop {
		t.Fatalf("a spent response: ended at %s verdict %d", ended, v)
	}
	g = getSMP(mad.AttrSwitchInfo, 0, 1)
	f.send("sm", 1, g)
	if !mad.SwitchInfo(g.Data()).PortStateChange() || sw.PortState(4) != mad.PortStateDown {
		t.Fatal("link down did not raise PortStateChange")
	}
}

// A zero-hop directed route is the SM asking its own node; a LID-routed
// SMP is answered only when addressed to the node.
func TestAgentLocalAndLIDRouted(t *testing.T) {
	a := mad.NewAgent(mad.AgentConfig{NodeType: mad.NodeTypeCA, NumPorts: 1, NodeGUID: 0x10, Description: "h1 HCA-1"})
	a.SetLinkUp(1, true)
	s := getSMP(mad.AttrNodeDescription, 0)
	if act := a.Handle(1, s, false); act.Verdict != mad.DeliverSM || mad.NodeDescription(s.Data()).String() != "h1 HCA-1" {
		t.Fatalf("zero-hop: %+v %q", act, mad.NodeDescription(s.Data()).String())
	}
	var f mad.SMPFields
	f.MgmtClass, f.Method, f.AttributeID, f.AttrModifier = mad.ClassSubnLID, mad.MethodGet, mad.AttrPortInfo, 1
	l := make(mad.SMP, mad.Size)
	l.Encode(&f)
	if act := a.Handle(1, l, false); act.Verdict != mad.Drop {
		t.Fatalf("LID-routed to someone else: %+v", act)
	}
	if act := a.Handle(1, l, true); act.Verdict != mad.SendLID || l.MAD().Method() != mad.MethodGetResp ||
		mad.PortInfo(l.Data()).PhysState() != mad.PhysStateLinkUp || mad.PortInfo(l.Data()).PortState() != mad.PortStateInit {
		t.Fatalf("LID-routed to us: %+v %+v", act, mad.PortInfo(l.Data()).Fields())
	}
	if act := a.Handle(1, l, true); act.Verdict != mad.DeliverSM {
		t.Fatalf("a LID-routed response: %+v", act)
	}
	bad := getSMP(mad.AttrNodeInfo, 0)
	bad[0] = 9
	if act := a.Handle(1, bad, false); act.Verdict != mad.Drop || a.Stats.Malformed != 1 {
		t.Fatalf("malformed: %+v %+v", act, a.Stats)
	}
}

// TestAddressFromHCA: what an HCA's agent sends comes from its LID (the
// permissive LID while it has none); a LID-routed response goes back to
// the request's SLID; other verdicts send nothing and leave the LRH alone.
func TestAddressFromHCA(t *testing.T) {
	for _, c := range []struct {
		name             string
		v                mad.Verdict
		ownLID           uint16
		ok               bool
		wantDLID, wantSL uint16
	}{
		{"directed-route response", mad.SendPort, 0x12, true, mad.PermissiveLID, 0x12},
		{"directed-route response, no LID yet", mad.SendPort, 0, true, mad.PermissiveLID, mad.PermissiveLID},
		{"LID-routed response", mad.SendLID, 0x12, true, 0x34, 0x12},
		{"drop", mad.Drop, 0x12, false, mad.PermissiveLID, 0x34},
		{"for the SM here", mad.DeliverSM, 0x12, false, mad.PermissiveLID, 0x34},
	} {
		lrh := make(wire.LRH, 8)
		lrh.SetDLID(mad.PermissiveLID)
		lrh.SetSLID(0x34) // the requester
		if ok := (mad.Action{Verdict: c.v}).AddressFromHCA(lrh, c.ownLID); ok != c.ok {
			t.Errorf("%s: reported %v, want %v", c.name, ok, c.ok)
		}
		if lrh.DLID() != c.wantDLID || lrh.SLID() != c.wantSL {
			t.Errorf("%s: DLID %#x SLID %#x, want %#x %#x", c.name, lrh.DLID(), lrh.SLID(), c.wantDLID, c.wantSL)
		}
	}
}
