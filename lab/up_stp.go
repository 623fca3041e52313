package lab

import (
	"slices"
	"strings"
)

// The switch daemons flood broadcast and multicast (ARP, neighbour
// discovery) to every other port, as a plain L2 switch does. On a fabric
// with a cycle of switch-to-switch links (a ring, two spines, parallel
// links between two switches) a flooded frame comes back to where it
// started and circulates for ever: a broadcast storm. Real switches run
// the spanning tree protocol (RSTP, IEEE 802.1D-2004 clause 17) and block the
// ports outside the tree for flooding. Every emuswitch has the whole
// topology (the lab file), so each computes the same spanning tree
// (FloodBlocked) and leaves the ports outside it out of flooding, which is
// what STP would converge to without the BPDU exchange and its
// convergence time; when links go down or come back the switches' link-
// state routing tells every one of them, and each computes the tree over
// the links that are up (swd/linkstate.go), as RSTP reconverges. Unicast
// is unaffected: it follows the routes (ECMP over all links that are up,
// blocked ones included).

// floodBlocked returns, for each switch with switch-to-switch links that
// are not in the spanning tree, the names of those ports in port order.
//
// The tree is deterministic so a lab comes up the same every time: a
// breadth-first search over switch-to-switch links from the switch whose
// name sorts first, each switch's links taken in the lab file's link
// order; a switch not reached starts a new tree from the smallest name
// left (one tree per connected group of switches). Every switch-to-switch
// link the search did not take is blocked at both ends, as is a link from
// a switch to itself. Links to NICs are never blocked.
func floodBlocked(spec *Spec) map[*Node][]string { return FloodBlocked(spec, nil) }

// FloodBlocked is floodBlocked over the links for which down reports false
// (nil: every link): the tree the switches' link-state routing recomputes
// when links go down or come back, as RSTP reconverges. A down link is
// blocked at both ends too (nothing crosses it anyway).
func FloodBlocked(spec *Spec, down func(*Link) bool) map[*Node][]string {
	// adj lists each switch's switch-to-switch links in link order.
	adj := make(map[*Node][]*Link)
	for _, l := range spec.Links {
		if l.A.Node.Kind != KindSwitch || l.B.Node.Kind != KindSwitch || down != nil && down(l) {
			continue
		}
		adj[l.A.Node] = append(adj[l.A.Node], l)
		if l.B.Node != l.A.Node {
			adj[l.B.Node] = append(adj[l.B.Node], l)
		}
	}
	switches := spec.Switches()
	roots := slices.Clone(switches)
	slices.SortStableFunc(roots, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })

	inTree := make(map[*Link]bool)
	seen := make(map[*Node]bool)
	var queue []*Node
	for _, root := range roots {
		if seen[root] {
			continue
		}
		seen[root] = true
		queue = append(queue[:0], root)
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			for _, l := range adj[u] {
				v := l.B.Node
				if v == u {
					v = l.A.Node
				}
				if seen[v] {
					continue // a self-link, or a second path to v: blocked
				}
				seen[v] = true
				inTree[l] = true
				queue = append(queue, v)
			}
		}
	}

	out := make(map[*Node][]string)
	for _, n := range switches {
		for _, pt := range n.Ports {
			if pt.Link == nil || pt.Peer.Node.Kind != KindSwitch || inTree[pt.Link] {
				continue
			}
			out[n] = append(out[n], pt.Name)
		}
	}
	return out
}
