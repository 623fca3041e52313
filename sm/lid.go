package sm

import "github.com/emufabric/emufabric/mad"

// LID assignment. A LID, once given to a port GUID, stays with it for the
// SM's lifetime, so re-sweeps never renumber the fabric (OpenSM keeps its
// guid2lid table the same way). A port met for the first time keeps the
// LID it reports if that LID is valid and free (an SM taking over a
// running subnet), otherwise it gets the lowest free unicast LID. A switch
// has one LID, on port 0; a CA has one per port (LMC 0).

const maxUnicastLID = 0xBFFF

func (m *SM) assignLIDs() {
	t := m.topo
	t.MaxLID = 0
	for _, n := range t.Nodes {
		for _, p := range n.Ports {
			if p == nil || (n.IsSwitch() && p.Num != 0) || (!n.IsSwitch() && p.Num == 0) {
				continue
			}
			guid := p.GUID
			if guid == 0 {
				guid = n.GUID + uint64(p.Num)
			}
			p.LID = m.lidFor(guid, p.Info.LID)
			if n.LID == 0 {
				n.LID = p.LID
			}
			t.MaxLID = max(t.MaxLID, p.LID)
		}
	}
}

func (m *SM) lidFor(guid uint64, reported uint16) uint16 {
	if lid, ok := m.lids[guid]; ok {
		return lid
	}
	lid := uint16(0)
	if reported != 0 && reported <= maxUnicastLID {
		if _, used := m.lidOwner[reported]; !used {
			lid = reported
		}
	}
	for next := uint16(1); lid == 0 && next <= maxUnicastLID; next++ {
		if _, used := m.lidOwner[next]; !used {
			lid = next
		}
	}
	if lid == 0 {
		m.errorf("LID space exhausted for GUID 0x%016x", guid)
		return 0
	}
	m.lids[guid] = lid
	m.lidOwner[lid] = guid
	return lid
}

// portUp reports whether a port's link is physically up (a switch's port
// 0 always is).
func portUp(n *Node, p *Port) bool {
	return (n.IsSwitch() && p.Num == 0) || p.Info.PhysState == mad.PhysStateLinkUp
}
