package sm

import (
	"slices"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/mad"
)

// Discovery (a heavy sweep's first phase) is a breadth-first walk with
// directed-route SMPs: Get NodeInfo at the end of a path tells who is
// there and on which of its ports the SMP arrived; a node seen for the
// first time is asked for its NodeDescription, SwitchInfo (switches) and
// the PortInfo of every port; every switch port whose physical state is
// LinkUp extends the path by one hop. A GUID already known only adds the
// link, so loops in the fabric end the walk.

func (m *SM) startHeavy(now clock.Time) {
	m.phase = phaseDiscover
	m.sweepStart = now
	m.sweepSent = 0
	m.topo = &Topology{byGUID: map[uint64]*Node{}, LFT: map[uint64][]uint8{}}
	m.pendingLFT = map[uint64][]uint8{}
	m.push(&req{kind: kNodeInfo, method: mad.MethodGet, attr: mad.AttrNodeInfo})
}

func (m *SM) gotNodeInfo(r *req, ni mad.NodeInfo) {
	if ni.Validate(0) != nil {
		m.errorf("NodeInfo at path %v: malformed", r.path)
		return
	}
	t := m.topo
	guid, arrival := ni.NodeGUID(), int(ni.LocalPortNum())
	if n := t.byGUID[guid]; n != nil {
		link(r.from, r.fromPort, n, arrival)
		return
	}
	n := &Node{
		GUID: guid, SysImageGUID: ni.SystemImageGUID(), Type: ni.NodeType(), NumPorts: int(ni.NumPorts()),
		VendorID: ni.VendorID(), DeviceID: ni.DeviceID(), Revision: ni.Revision(), Path: r.path,
	}
	n.Ports = make([]*Port, n.NumPorts+1)
	if r.from == nil {
		t.SMGUID, t.SMPort = guid, arrival
	}
	t.Nodes = append(t.Nodes, n)
	t.byGUID[guid] = n
	if p := n.ensurePort(arrival); p != nil {
		p.GUID = ni.PortGUID()
	}
	link(r.from, r.fromPort, n, arrival)
	m.push(&req{kind: kNodeDesc, method: mad.MethodGet, attr: mad.AttrNodeDescription, path: r.path, node: n})
	if n.IsSwitch() {
		// The ports are read once PortStateChange is cleared (clearPSC).
		m.push(&req{kind: kSwitchInfo, method: mad.MethodGet, attr: mad.AttrSwitchInfo, path: r.path, node: n})
		return
	}
	m.readPorts(n)
}

// clearPSC clears a switch's PortStateChange before its ports are read,
// keeping its LinearFDBTop (top, as just read). A port that changes after
// the clear sets it again and the next light sweep sees it; clearing it
// later, after the reads (as the programming phase could), would lose a
// port that came up in between, and the SM would never look at it.
func (m *SM) clearPSC(r *req, top uint16) {
	c := &req{kind: kClearPSC, method: mad.MethodSet, attr: mad.AttrSwitchInfo, path: r.path, node: r.node}
	mad.SwitchInfo(c.data[:]).Encode(&mad.SwitchInfoFields{LinearFDBTop: top, PortStateChange: true})
	m.push(c)
}

// readPorts asks for the PortInfo of every port of n (port 0 too on a
// switch: its LID).
func (m *SM) readPorts(n *Node) {
	first := 1
	if n.IsSwitch() {
		first = 0
	}
	for p := first; p <= n.NumPorts; p++ {
		m.push(&req{kind: kPortInfo, method: mad.MethodGet, attr: mad.AttrPortInfo, am: uint32(p), path: n.Path, node: n, port: p})
	}
}

func (m *SM) gotPortInfo(r *req, pi mad.PortInfo) {
	n := r.node
	p := n.ensurePort(r.port)
	if p == nil {
		return
	}
	p.Info = pi.Fields()
	if n.IsSwitch() {
		p.GUID = n.GUID
	}
	if r.port == 0 || p.Info.PhysState != mad.PhysStateLinkUp {
		return
	}
	// Only switches forward SMPs; the SM's own CA is the start of every path.
	atSM := len(n.Path) == 0
	if !n.IsSwitch() && !atSM {
		return
	}
	if p.Peer != nil || len(n.Path)+1 >= mad.MaxHops {
		return // the way we came in, or too deep
	}
	path := append(slices.Clone(n.Path), uint8(r.port))
	m.push(&req{kind: kNodeInfo, method: mad.MethodGet, attr: mad.AttrNodeInfo, path: path, from: n, fromPort: r.port})
}

func (n *Node) ensurePort(p int) *Port {
	if p < 0 || p > n.NumPorts {
		return nil
	}
	if n.Ports[p] == nil {
		n.Ports[p] = &Port{Num: p}
	}
	return n.Ports[p]
}

// link records that port ap of a and port bp of b are cabled together.
func link(a *Node, ap int, b *Node, bp int) {
	if a == nil {
		return
	}
	pa, pb := a.ensurePort(ap), b.ensurePort(bp)
	if pa == nil || pb == nil {
		return
	}
	pa.Peer, pa.PeerPort = b, bp
	pb.Peer, pb.PeerPort = a, ap
}
