package sim

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/switchcore"
)

// simSwitch is a switchcore.Switch placed in the simulation.
type simSwitch struct {
	s     *Sim
	name  string
	cfg   *switchcore.Config
	sw    *switchcore.Switch
	ports []swPort
	// autoRoutes: install shortest-path routes for destinations the
	// configuration does not cover.
	autoRoutes bool
	// static is the configuration's own routes, which link-state routing
	// keeps as they are (installRoutes saves them).
	static []switchcore.Route
}

type swPort struct {
	tx   *linkDir
	link *Link
}

// AddSwitch adds a switch with the given configuration (ports, QoS,
// forwarding). The switch is created at Start, after the topology is known:
// L3 routes (RoCE) or LFT entries (IB) for hosts the configuration does not
// cover are filled in along shortest paths, ECMP over equal-cost ports.
func (s *Sim) AddSwitch(name string, cfg *switchcore.Config) error {
	if cfg == nil {
		return fmt.Errorf("sim: switch %q without configuration", name)
	}
	if cfg.Name == "" {
		cfg.Name = name
	}
	sw := &simSwitch{s: s, name: name, cfg: cfg, ports: make([]swPort, len(cfg.Ports)), autoRoutes: true}
	if err := s.addNode(name, sw); err != nil {
		return err
	}
	s.switches = append(s.switches, sw)
	return nil
}

// Switch returns the named switch engine (nil before Start or if unknown).
func (s *Sim) Switch(name string) *switchcore.Switch {
	if sw, ok := s.nodes[name].(*simSwitch); ok {
		return sw.sw
	}
	return nil
}

func (w *simSwitch) deliver(port int, f *frame.Frame) { w.sw.Receive(port, f) }
func (w *simSwitch) headBytes() int                   { return w.sw.HeadBytes() }
func (w *simSwitch) linkState(port int, up bool)      { w.sw.SetPortUp(port, up) }
func (w *simSwitch) ib() bool                         { return w.cfg.Fabric == switchcore.FabricIB }

// linkStateRefresh is how often a simulated switch that has advertised
// re-advertises (switchcore EnableLinkState): a lost or corrupted
// advertisement is replaced within it. Runs are milliseconds long.
const linkStateRefresh = 500 * clock.Microsecond

// startSwitches computes routes and creates and attaches every switch.
func (s *Sim) startSwitches() error {
	s.installRoutes()
	for _, w := range s.switches {
		sw, err := switchcore.New(w.cfg, s, s.pool)
		if err != nil {
			return fmt.Errorf("sim: switch %s: %w", w.name, err)
		}
		w.sw = sw
	}
	names := make([]string, len(s.switches))
	for i, w := range s.switches {
		names[i] = w.name
	}
	for _, w := range s.switches {
		for i, p := range w.ports {
			if p.tx != nil {
				w.sw.Attach(i, p.tx)
			}
		}
		if !w.ib() && w.autoRoutes {
			peers := make([]string, len(w.ports))
			for i := range w.ports {
				peer, _ := w.peerOf(i)
				if v, ok := peer.(*simSwitch); ok {
					peers[i] = v.name
				}
			}
			w.sw.EnableLinkState(0, peers, names, linkStateRefresh, func(db map[string][]string) { s.reroute(w, db) })
		}
	}
	return nil
}

// peerOf returns the node and port at the other end of a switch port.
func (w *simSwitch) peerOf(i int) (endpoint, int) {
	p := w.ports[i]
	if p.link == nil {
		return nil, 0
	}
	if p.tx == &p.link.dir[0] {
		return p.link.dir[0].to, p.link.dir[0].toPort
	}
	return p.link.dir[1].to, p.link.dir[1].toPort
}

// installRoutes adds, for every host the switch's configuration does not
// already cover, a route (RoCE: host /32 -> ECMP ports; IB: LFT entry) along
// shortest paths. Hosts never forward.
func (s *Sim) installRoutes() {
	for _, w := range s.switches {
		w.static = append([]switchcore.Route(nil), w.cfg.Routes...)
	}
	s.shortestPaths(nil, func(w *simSwitch, h routeTarget, via []int) {
		if w.ib() {
			w.setLFT(h.lid, via)
		} else {
			w.addRoute(h.ip, via)
		}
	})
}

// shortestPaths calls fn with every switch's shortest-path ports towards
// every host, over the links for which down (nil: none) reports neither
// end down.
func (s *Sim) shortestPaths(down func(w *simSwitch, port int) bool, fn func(w *simSwitch, h routeTarget, via []int)) {
	idx := make(map[*simSwitch]int, len(s.switches))
	for i, w := range s.switches {
		idx[w] = i
	}
	cut := func(w *simSwitch, i int) bool {
		if down == nil {
			return false
		}
		if down(w, i) {
			return true
		}
		peer, pp := w.peerOf(i)
		v, ok := peer.(*simSwitch)
		return ok && down(v, pp)
	}
	for _, h := range s.routeTargets() {
		// BFS over switches from the host's attachment.
		dist := make([]int, len(s.switches))
		for i := range dist {
			dist[i] = -1
		}
		var queue []*simSwitch
		if h.link != nil {
			peer, port := h.link.dir[0].to, h.link.dir[0].toPort
			if h.tx == &h.link.dir[1] {
				peer, port = h.link.dir[1].to, h.link.dir[1].toPort
			}
			if w, ok := peer.(*simSwitch); ok && !(down != nil && down(w, port)) {
				dist[idx[w]] = 0
				queue = append(queue, w)
			}
		}
		for len(queue) > 0 {
			w := queue[0]
			queue = queue[1:]
			for i := range w.ports {
				if peer, _ := w.peerOf(i); peer != nil && !cut(w, i) {
					if v, ok := peer.(*simSwitch); ok && dist[idx[v]] < 0 {
						dist[idx[v]] = dist[idx[w]] + 1
						queue = append(queue, v)
					}
				}
			}
		}
		for wi, w := range s.switches {
			if dist[wi] < 0 || !w.autoRoutes {
				continue
			}
			var via []int
			for i := range w.ports {
				peer, _ := w.peerOf(i)
				if peer == nil || cut(w, i) {
					continue
				}
				switch v := peer.(type) {
				case *simSwitch:
					if dist[wi] > 0 && dist[idx[v]] == dist[wi]-1 {
						via = append(via, i)
					}
				default:
					if peer == h.ep {
						via = append(via, i)
					}
				}
			}
			if len(via) > 0 {
				fn(w, h, via)
			}
		}
	}
}

// reroute is a RoCE switch's link-state routing at work (switchcore
// linkstate.go): its database says which ports of which switches are
// down, and it routes every host its configuration does not cover along
// the shortest paths that avoid them.
func (s *Sim) reroute(w *simSwitch, db map[string][]string) {
	var key strings.Builder
	for _, o := range slices.Sorted(maps.Keys(db)) {
		key.WriteString(o)
		for _, p := range db[o] {
			key.WriteByte(0)
			key.WriteString(p)
		}
		key.WriteByte(1)
	}
	// Every switch comes to the same database (in turn, as the
	// advertisements reach it): the routes of all are computed once per
	// database, not once per switch.
	routes, ok := s.rerouted[key.String()]
	if !ok {
		routes = s.routesAvoiding(db)
		if s.rerouted == nil {
			s.rerouted = map[string]map[*simSwitch][]switchcore.Route{}
		}
		s.rerouted[key.String()] = routes
	}
	w.cfg.Routes = routes[w]
	w.sw.SetRoutes(w.cfg.Routes) // routes built here are never duplicates
}

// routesAvoiding is every switch's routes with the ports db lists down:
// its own, then for each host it does not cover the shortest paths that
// avoid them; a host no path reaches keeps its route through the down
// link, where its frames are counted as link_down drops, not no_route.
func (s *Sim) routesAvoiding(db map[string][]string) map[*simSwitch][]switchcore.Route {
	down := map[*simSwitch]map[int]bool{}
	for origin, ports := range db {
		v, ok := s.nodes[origin].(*simSwitch)
		if !ok {
			continue
		}
		m := map[int]bool{}
		for _, name := range ports {
			for i := range v.cfg.Ports {
				if v.cfg.Ports[i].Name == name {
					m[i] = true
				}
			}
		}
		down[v] = m
	}
	out := map[*simSwitch][]switchcore.Route{}
	routed := map[*simSwitch]map[[4]byte]bool{}
	for _, w := range s.switches {
		out[w] = slices.Clone(w.static)
		routed[w] = map[[4]byte]bool{}
	}
	add := func(w *simSwitch, h routeTarget, via []int) {
		if routed[w][h.ip] || w.covered(h.ip) {
			return
		}
		routed[w][h.ip] = true
		out[w] = append(out[w], switchcore.Route{Prefix: netip.PrefixFrom(netip.AddrFrom4(h.ip), 32), Ports: via})
	}
	s.shortestPaths(func(v *simSwitch, port int) bool { return down[v][port] }, add)
	s.shortestPaths(nil, add)
	return out
}

// covered reports whether the switch's own routes cover ip.
func (w *simSwitch) covered(ip [4]byte) bool {
	a := netip.AddrFrom4(ip)
	for _, r := range w.static {
		if r.Prefix.Contains(a) {
			return true
		}
	}
	return false
}

func (w *simSwitch) addRoute(ip [4]byte, via []int) {
	a := netip.AddrFrom4(ip)
	for _, r := range w.cfg.Routes {
		if r.Prefix.Contains(a) {
			return // the configuration covers it
		}
	}
	w.cfg.Routes = append(w.cfg.Routes, switchcore.Route{Prefix: netip.PrefixFrom(a, 32), Ports: via})
}

// setLFT fills LFT[lid] unless configured; with several equal ports it
// spreads destinations by LID, as OpenSM's min-hop routing balances.
func (w *simSwitch) setLFT(lid uint16, via []int) {
	lft := w.cfg.IB.LFT
	for len(lft) <= int(lid) {
		lft = append(lft, -1)
	}
	if lft[lid] < 0 {
		lft[lid] = via[int(lid)%len(via)]
	}
	w.cfg.IB.LFT = lft
}
