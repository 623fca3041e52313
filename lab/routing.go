package lab

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// Forwarding. A switch forwards a destination NIC's traffic by its explicit
// routes (longest prefix match on the NIC's IPv4 address) and otherwise on
// the shortest paths through switches, spreading over every equal-cost port
// (ECMP for RoCE; for IB the LFT picks one of them by DLID). NICs never
// forward.

// routes decodes a switch's routes: [{dst: h3 | 10.0.1.0/24, via: p1 | [p1, p2]}].
func (d *decoder) routes(s *Spec, sw *Node, path string, v any) []Route {
	items, ok := d.list(path, v)
	if !ok {
		return nil
	}
	var out []Route
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		m := d.mapping(ip, it)
		if m == nil {
			continue
		}
		r := Route{Line: d.line(ip)}
		good := true
		if v, p, ok := m.get("dst"); ok {
			if str, ok := d.str(p, v); ok {
				r.Dst = str
				if n := s.Node(str); n != nil {
					if n.Kind != KindNIC {
						d.errorf(p, "%s is a switch; routes lead to nic nodes or IPv4 prefixes", str)
						good = false
					}
					r.Prefix, r.Len = n.IPv4, 32
				} else if pf, err := netip.ParsePrefix(str); err == nil && pf.Addr().Is4() {
					if s.Fabric == FabricIB {
						d.errorf(p, "IB switches forward by LID: write a nic name, not a prefix")
						good = false
					}
					pf = pf.Masked()
					r.Prefix, r.Len = pf.Addr().As4(), pf.Bits()
				} else {
					d.errorf(p, "%q is neither a node nor an IPv4 prefix such as 10.0.1.0/24", str)
					good = false
				}
			} else {
				good = false
			}
		} else {
			d.errorf(ip, "missing key \"dst\" (a nic name or an IPv4 prefix)")
			good = false
		}
		if v, p, ok := m.get("via"); ok {
			var names []any
			switch t := v.(type) {
			case []any:
				names = t
			default:
				names = []any{v}
			}
			for j, x := range names {
				vp := p
				if _, isList := v.([]any); isList {
					vp = fmt.Sprintf("%s[%d]", p, j)
				}
				name, ok := d.str(vp, x)
				if !ok {
					good = false
					continue
				}
				port := sw.Port(name)
				if port == nil {
					d.errorf(vp, "unknown port %q (%s has %s)", sw.Name+":"+name, sw.Name, portNames(sw))
					good = false
					continue
				}
				if port.Link == nil {
					d.errorf(vp, "port %s is not connected", port)
					good = false
					continue
				}
				if contains(portNamesOf(sw, r.Via), name) {
					d.errorf(vp, "port %s is listed twice", name)
					good = false
					continue
				}
				r.Via = append(r.Via, port.Index)
			}
			if len(names) == 0 {
				d.errorf(p, "a route needs at least one port")
				good = false
			}
		} else {
			d.errorf(ip, "missing key \"via\" (egress port or ports)")
			good = false
		}
		m.done("dst", "via")
		if good {
			out = append(out, r)
		}
	}
	return out
}

func portNamesOf(n *Node, idx []int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, n.Ports[i].Name)
	}
	return out
}

// hopCounts returns, per node index, the number of links from the node to
// dst on paths whose intermediate nodes are switches; -1 if none. Load
// precomputes it for every NIC (the table is read-only afterwards, so a
// Spec may be shared between goroutines).
func (s *Spec) hopCounts(dst *Node) []int {
	if h, ok := s.hops[dst]; ok {
		return h
	}
	return s.computeHopCounts(dst)
}

// precomputeHops fills the hop-count table of every NIC.
func (s *Spec) precomputeHops() {
	s.hops = make(map[*Node][]int)
	for _, n := range s.Nodes {
		if n.Kind == KindNIC {
			s.hops[n] = s.computeHopCounts(n)
		}
	}
}

func (s *Spec) computeHopCounts(dst *Node) []int { return s.hopCountsAvoiding(dst, nil) }

// hopCountsAvoiding is computeHopCounts over the links for which down
// reports false (nil: every link).
func (s *Spec) hopCountsAvoiding(dst *Node, down func(*Link) bool) []int {
	dist := make([]int, len(s.Nodes))
	for i := range dist {
		dist[i] = -1
	}
	dist[dst.Index] = 0
	queue := []*Node{dst}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if u != dst && u.Kind != KindSwitch {
			continue // NICs do not forward
		}
		for _, p := range u.Ports {
			if p.Peer == nil || down != nil && down(p.Link) {
				continue
			}
			v := p.Peer.Node
			if dist[v.Index] < 0 {
				dist[v.Index] = dist[u.Index] + 1
				queue = append(queue, v)
			}
		}
	}
	return dist
}

// explicitRoute returns the switch's longest-prefix route covering dst.
func explicitRoute(sw *Node, dst *Node) *Route {
	var best *Route
	a := netip.AddrFrom4(dst.IPv4)
	for i := range sw.Routes {
		r := &sw.Routes[i]
		pf := netip.PrefixFrom(netip.AddrFrom4(r.Prefix), r.Len)
		if pf.Contains(a) && (best == nil || r.Len > best.Len) {
			best = r
		}
	}
	return best
}

// NextHops returns the egress port indexes switch sw uses towards NIC dst:
// its explicit route if one covers dst, else every port on a shortest path.
// Empty when dst is unreachable from sw.
func (s *Spec) NextHops(sw, dst *Node) []int {
	if r := explicitRoute(sw, dst); r != nil {
		return append([]int(nil), r.Via...)
	}
	return shortestNextHops(sw, s.hopCounts(dst), dst)
}

// NextHopsAvoiding is NextHops over the links for which down reports
// false: the routes a switch's link-state routing computes once links
// have gone down (explicit routes are static and stay as written).
func (s *Spec) NextHopsAvoiding(sw, dst *Node, down func(*Link) bool) []int {
	if r := explicitRoute(sw, dst); r != nil {
		return append([]int(nil), r.Via...)
	}
	return shortestNextHopsAvoiding(sw, s.hopCountsAvoiding(dst, down), dst, down)
}

func shortestNextHops(sw *Node, dist []int, dst *Node) []int {
	return shortestNextHopsAvoiding(sw, dist, dst, nil)
}

func shortestNextHopsAvoiding(sw *Node, dist []int, dst *Node, down func(*Link) bool) []int {
	d := dist[sw.Index]
	if d <= 0 {
		return nil
	}
	var out []int
	for _, p := range sw.Ports {
		if p.Peer == nil || down != nil && down(p.Link) {
			continue
		}
		v := p.Peer.Node
		if dist[v.Index] == d-1 && (v == dst || v.Kind == KindSwitch) {
			out = append(out, p.Index)
		}
	}
	return out
}

// RouteEntry is one L3 route of a switch.
type RouteEntry struct {
	Prefix netip.Prefix
	Ports  []int // ECMP set
}

// RoutesOf returns the switch's L3 routing table: its explicit routes, then
// a /32 shortest-path route for every reachable NIC no explicit route covers.
// Sorted by prefix length (longest first), then address.
func (s *Spec) RoutesOf(sw *Node) []RouteEntry {
	var out []RouteEntry
	for _, r := range sw.Routes {
		out = append(out, RouteEntry{
			Prefix: netip.PrefixFrom(netip.AddrFrom4(r.Prefix), r.Len),
			Ports:  append([]int(nil), r.Via...),
		})
	}
	for _, n := range s.Nodes {
		if n.Kind != KindNIC || explicitRoute(sw, n) != nil {
			continue
		}
		if nh := shortestNextHops(sw, s.hopCounts(n), n); len(nh) > 0 {
			out = append(out, RouteEntry{Prefix: netip.PrefixFrom(netip.AddrFrom4(n.IPv4), 32), Ports: nh})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Prefix.Bits() != out[j].Prefix.Bits() {
			return out[i].Prefix.Bits() > out[j].Prefix.Bits()
		}
		return out[i].Prefix.Addr().Less(out[j].Prefix.Addr())
	})
	return out
}

// LFTOf returns an IB switch's linear forwarding table entries: for every
// reachable NIC, DLID -> one output port. Where several ports are equally
// short, the DLID picks one (LID mod count), spreading destinations over
// them as OpenSM's min-hop routing balances ports.
func (s *Spec) LFTOf(sw *Node) map[uint16]int {
	out := make(map[uint16]int)
	for _, n := range s.Nodes {
		if n.Kind != KindNIC {
			continue
		}
		if nh := s.NextHops(sw, n); len(nh) > 0 {
			out[n.LID] = nh[int(n.LID)%len(nh)]
		}
	}
	return out
}

// Path returns one path from src to dst as the nodes' ports taken (the
// first next hop at every switch), or an error saying where it breaks.
func (s *Spec) Path(src, dst *Node) ([]*Port, error) {
	var out []*Port
	if len(src.Ports) == 0 || src.Ports[0].Peer == nil {
		return nil, fmt.Errorf("%s is not connected", src.Name)
	}
	p := src.Ports[0]
	for hops := 0; hops <= len(s.Nodes); hops++ {
		out = append(out, p)
		next := p.Peer.Node
		if next == dst {
			return out, nil
		}
		if next.Kind != KindSwitch {
			return nil, fmt.Errorf("the path reaches nic %s, which does not forward", next.Name)
		}
		nh := s.NextHops(next, dst)
		if len(nh) == 0 {
			return nil, fmt.Errorf("%s has no route to %s", next.Name, dst.Name)
		}
		p = next.Ports[nh[0]]
	}
	return nil, fmt.Errorf("routing loop")
}

// checkReachable follows every next hop from src towards dst and reports
// the first dead end or loop.
func (s *Spec) checkReachable(src, dst *Node) error {
	if len(src.Ports) == 0 || src.Ports[0].Peer == nil {
		return fmt.Errorf("%s is unreachable from %s: %s has no link", dst.Name, src.Name, src.Name)
	}
	dist := s.hopCounts(dst)
	first := src.Ports[0].Peer.Node
	if first == dst {
		return nil
	}
	if first.Kind != KindSwitch {
		return fmt.Errorf("%s is unreachable from %s: %s's link leads to nic %s", dst.Name, src.Name, src.Name, first.Name)
	}
	if dist[first.Index] < 0 && len(first.Routes) == 0 {
		return fmt.Errorf("%s is unreachable from %s: no path through the topology", dst.Name, src.Name)
	}
	done := make(map[*Node]bool)
	onPath := make(map[*Node]bool)
	var trail []string
	var walk func(sw *Node) error
	walk = func(sw *Node) error {
		if done[sw] {
			return nil
		}
		if onPath[sw] {
			return fmt.Errorf("routing loop towards %s: %s -> %s", dst.Name, strings.Join(trail, " -> "), sw.Name)
		}
		onPath[sw] = true
		trail = append(trail, sw.Name)
		defer func() { onPath[sw] = false; trail = trail[:len(trail)-1] }()
		var nh []int
		if r := explicitRoute(sw, dst); r != nil {
			nh = r.Via
		} else {
			nh = shortestNextHops(sw, dist, dst)
		}
		if len(nh) == 0 {
			return fmt.Errorf("%s is unreachable from %s: %s has no route to it", dst.Name, src.Name, sw.Name)
		}
		for _, pi := range nh {
			peer := sw.Ports[pi].Peer
			if peer == nil {
				return fmt.Errorf("%s routes %s to unconnected port %s", sw.Name, dst.Name, sw.Ports[pi])
			}
			next := peer.Node
			switch {
			case next == dst:
			case next.Kind != KindSwitch:
				return fmt.Errorf("%s routes %s's traffic to nic %s", sw.Name, dst.Name, next.Name)
			default:
				if err := walk(next); err != nil {
					return err
				}
			}
		}
		done[sw] = true
		return nil
	}
	return walk(first)
}
