package sm

import "github.com/emufabric/emufabric/mad"

// Min-hop routing (OpenSM's minhop engine): every switch forwards each
// destination LID along a shortest path in switch hops. Among the ports
// that lie on a shortest path, the switch takes the one that so far
// carries the fewest CA destinations (OpenSM's default port profile,
// port_profile_switch_nodes FALSE, counts CAs only), lowest port number on
// a tie; with
// destinations taken in LID order this deals them out round-robin over
// equal-cost uplinks (in a fat tree, each leaf sends half of the remote
// LIDs through each spine). Shortest-path next hops strictly reduce the
// distance, so the tables are loop-free.

func (m *SM) computeRoutes() {
	t := m.topo
	sws := t.Switches()
	idx := make(map[*Node]int, len(sws))
	for i, s := range sws {
		idx[s] = i
	}
	// dist[i][j]: switch hops from switch i to switch j (-1 unreachable).
	dist := make([][]int, len(sws))
	for i := range sws {
		d := make([]int, len(sws))
		for j := range d {
			d[j] = -1
		}
		d[i] = 0
		q := []*Node{sws[i]}
		for len(q) > 0 {
			n := q[0]
			q = q[1:]
			for _, p := range n.Ports {
				if p == nil || p.Num == 0 || p.Peer == nil || !p.Peer.IsSwitch() || !portUp(n, p) {
					continue
				}
				if j := idx[p.Peer]; d[j] < 0 {
					d[j] = d[idx[n]] + 1
					q = append(q, p.Peer)
				}
			}
		}
		dist[i] = d
	}
	use := make([][]int, len(sws))
	for i, s := range sws {
		use[i] = make([]int, s.NumPorts+1)
		lft := make([]uint8, int(t.MaxLID)+1)
		for k := range lft {
			lft[k] = mad.LFTNoPort
		}
		t.LFT[s.GUID] = lft
	}
	for _, e := range t.LIDs() {
		// The switch the destination hangs off, and the port there.
		var at *Node
		atPort := 0
		if e.Node.IsSwitch() {
			at = e.Node
		} else if p := e.Node.port(e.Port); p != nil && p.Peer != nil && p.Peer.IsSwitch() && portUp(e.Node, p) {
			at, atPort = p.Peer, p.PeerPort
		}
		if at == nil {
			continue // an isolated CA: no switch reaches it
		}
		a := idx[at]
		for i, s := range sws {
			lft := t.LFT[s.GUID]
			if s == at {
				lft[e.LID] = uint8(atPort)
				continue
			}
			want := dist[i][a] - 1
			if dist[i][a] < 0 {
				continue
			}
			best := -1
			for _, p := range s.Ports {
				if p == nil || p.Num == 0 || p.Peer == nil || !p.Peer.IsSwitch() || !portUp(s, p) {
					continue
				}
				if dist[idx[p.Peer]][a] != want {
					continue
				}
				if best < 0 || use[i][p.Num] < use[i][best] {
					best = p.Num
				}
			}
			if best > 0 {
				lft[e.LID] = uint8(best)
				if !e.Node.IsSwitch() {
					use[i][best]++
				}
			}
		}
	}
}
