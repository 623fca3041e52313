package sm

import (
	"slices"

	"github.com/emufabric/emufabric/mad"
)

// Topology is the fabric one heavy sweep found and configured.
type Topology struct {
	SMGUID uint64 // the SM node
	SMPort int
	Nodes  []*Node // in discovery (BFS) order; Nodes[0] is the SM node
	byGUID map[uint64]*Node
	// LFT is the forwarding table computed for each switch (by node GUID):
	// LFT[lid] = output port, 0 for the switch itself, 255 for none.
	LFT map[uint64][]uint8
	// MaxLID is the highest LID assigned.
	MaxLID uint16
}

// Node is one discovered node.
type Node struct {
	GUID, SysImageGUID uint64
	Type               uint8 // mad.NodeTypeCA / NodeTypeSwitch
	NumPorts           int
	VendorID           uint32
	DeviceID           uint16
	Revision           uint32
	Desc               string
	Path               []uint8 // directed route from the SM node
	Ports              []*Port // by IBA port number (0..NumPorts); nil = not read
	LFTCap             uint16  // switches
	LID                uint16  // switch port 0 or a CA's first port, as assigned
	psc                bool
}

// Port is one port of a node.
type Port struct {
	Num      int
	GUID     uint64
	Info     mad.PortInfoFields // as last read or set
	LID      uint16             // assigned (CA ports, switch port 0)
	Peer     *Node              // nil when nothing is attached or it was not found
	PeerPort int
}

func (n *Node) port(p int) *Port {
	if p < 0 || p >= len(n.Ports) {
		return nil
	}
	return n.Ports[p]
}

// IsSwitch reports whether the node is a switch.
func (n *Node) IsSwitch() bool { return n.Type == mad.NodeTypeSwitch }

// Port returns port p or nil.
func (n *Node) Port(p int) *Port { return n.port(p) }

// Node returns the node with GUID guid, or nil.
func (t *Topology) Node(guid uint64) *Node { return t.byGUID[guid] }

// NodeByDesc returns the first node whose description is desc, or nil.
func (t *Topology) NodeByDesc(desc string) *Node {
	for _, n := range t.Nodes {
		if n.Desc == desc {
			return n
		}
	}
	return nil
}

// Switches returns the switches in discovery order.
func (t *Topology) Switches() []*Node {
	var s []*Node
	for _, n := range t.Nodes {
		if n.IsSwitch() {
			s = append(s, n)
		}
	}
	return s
}

// CAs returns the channel adapters in discovery order.
func (t *Topology) CAs() []*Node {
	var s []*Node
	for _, n := range t.Nodes {
		if !n.IsSwitch() {
			s = append(s, n)
		}
	}
	return s
}

// LIDs returns every assigned LID with its node, in LID order.
func (t *Topology) LIDs() []LIDEntry {
	var out []LIDEntry
	for _, n := range t.Nodes {
		for _, p := range n.Ports {
			if p != nil && p.LID != 0 {
				out = append(out, LIDEntry{LID: p.LID, Node: n, Port: p.Num})
			}
		}
	}
	slices.SortFunc(out, func(a, b LIDEntry) int { return int(a.LID) - int(b.LID) })
	return out
}

// LIDEntry is one LID and the port that owns it.
type LIDEntry struct {
	LID  uint16
	Node *Node
	Port int
}

// Route follows the programmed LFTs from switch sw towards lid and returns
// the switches visited and whether it reached the LID's owner; it stops on
// a missing entry, a loop, or after 64 hops.
func (t *Topology) Route(sw *Node, lid uint16) (hops []*Node, ok bool) {
	seen := map[*Node]bool{}
	n := sw
	for len(hops) < 64 {
		if seen[n] {
			return hops, false // loop
		}
		seen[n] = true
		hops = append(hops, n)
		lft := t.LFT[n.GUID]
		if int(lid) >= len(lft) {
			return hops, false
		}
		out := int(lft[lid])
		if out == 0 {
			return hops, n.LID == lid
		}
		p := n.port(out)
		if p == nil || p.Peer == nil {
			return hops, false
		}
		if !p.Peer.IsSwitch() {
			pp := p.Peer.port(p.PeerPort)
			return hops, pp != nil && pp.LID == lid
		}
		n = p.Peer
	}
	return hops, false
}
