package swd

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/switchcore"
)

// Link-state routing in real time (switchcore/linkstate.go): the switch
// engines of a RoCE lab advertise their down ports to one another over
// the switch-to-switch links, and each daemon, told when its engine's
// database changes, recomputes from the lab file the routes and the
// flooding tree the fabric converges to without the links that are down,
// as the simulator's switches do. A link set down by hand, a neighbour
// killed, a UDP peer gone silent: every switch routes around it once the
// advertisements have crossed the fabric.

// enableLinkState starts the engine's link-state routing; after the ports
// were created, before the loop runs.
func (d *Daemon) enableLinkState() {
	if d.ib {
		return // the subnet manager routes an IB fabric
	}
	peers := make([]string, len(d.node.Ports))
	for i, lp := range d.node.Ports {
		if lp.Peer != nil && lp.Peer.Node.Kind == lab.KindSwitch {
			peers[i] = lp.Peer.Node.Name
		}
	}
	// The epoch orders this life's advertisements after those of a
	// daemon this one replaces (a restart after kill -9).
	var origins []string
	for _, n := range d.spec.Switches() {
		origins = append(origins, n.Name)
	}
	// Refreshed every second of the lab's time: a lost advertisement (a
	// lossy link) is replaced within it.
	d.sw.EnableLinkState(uint64(time.Now().UnixNano()), peers, origins, clock.Second, d.reroute)
	// A switch run by hand with another copy of the lab file (a UDP link
	// to another machine) computes its routes from that copy: said once
	// per switch, and counted.
	ours := d.spec.TopologyDigest()
	d.sw.SetLinkStateTopology(ours, func(origin string, theirs uint64) {
		if theirs == ours {
			d.log.Printf("link-state routing: %s's lab file describes this fabric again (topology digest %016x)", origin, ours)
			return
		}
		d.log.Printf("link-state routing: %s's lab file describes another fabric than %s (topology digest %016x, ours %016x): routes may disagree; run every switch with the same lab file",
			origin, d.opts.Lab, theirs, ours)
	})
	d.lsEnabled = true
}

// reroute installs the routes and flooding tree for the links db says
// are down; loop goroutine (the engine calls it).
func (d *Daemon) reroute(db map[string][]string) {
	down := func(l *lab.Link) bool {
		return l != nil && (slices.Contains(db[l.A.Node.Name], l.A.Name) || slices.Contains(db[l.B.Node.Name], l.B.Name))
	}
	var cut []string
	for _, l := range d.spec.Links {
		if down(l) {
			cut = append(cut, l.A.String()+"-"+l.B.String())
		}
	}
	key := strings.Join(cut, " ")
	if d.cutKey != nil && *d.cutKey == key {
		return // the same links down, said by another switch
	}
	d.cutKey = &key
	routes := slices.Clone(d.static)
	for _, nic := range d.spec.NICs() {
		a := netip.AddrFrom4(nic.IPv4)
		if slices.ContainsFunc(d.static, func(r switchcore.Route) bool { return r.Prefix.Contains(a) }) {
			continue
		}
		via := d.spec.NextHopsAvoiding(d.node, nic, down)
		if len(via) == 0 {
			// Unreachable: keep the route through the down link, where
			// its frames are counted as link_down rather than no_route.
			via = d.spec.NextHops(d.node, nic)
		}
		if len(via) > 0 {
			routes = append(routes, switchcore.Route{Prefix: netip.PrefixFrom(a, 32), Ports: via})
		}
	}
	if err := d.sw.SetRoutes(routes); err != nil {
		d.log.Printf("link-state routing: %v", err)
		return
	}
	blocked := lab.FloodBlocked(d.spec, down)[d.node]
	for _, p := range d.ports {
		p.noFlood = p.noFloodFlag || slices.Contains(blocked, p.name)
	}
	d.logCut(db, down)
}

// logCut logs the links routed around when they change, leaving out
// those never seen up: while a lab comes up, links not yet connected
// are down in every advertisement, and a line per port connecting read
// like a fault.
func (d *Daemon) logCut(db map[string][]string, down func(*lab.Link) bool) {
	if d.everUp == nil {
		d.everUp = map[*lab.Link]bool{}
	}
	heard := func(p *lab.Port) bool {
		_, ok := db[p.Node.Name]
		return p.Node.Kind != lab.KindSwitch || ok
	}
	var cut []string
	for _, l := range d.spec.Links {
		switch {
		case !down(l) && heard(l.A) && heard(l.B):
			// Up as every switch at its ends advertised it (a switch
			// not heard from yet is not taken as saying so).
			d.everUp[l] = true
		case down(l) && d.everUp[l]:
			cut = append(cut, l.A.String()+"-"+l.B.String())
		}
	}
	if d.loggedCut == "" {
		d.loggedCut = "[]" // nothing routed around to begin with
	}
	if msg := fmt.Sprint(cut); msg != d.loggedCut {
		d.loggedCut = msg
		d.log.Printf("link-state routing: routes recomputed, links down: %s", msg)
	}
}
