package lab

import (
	"fmt"
	"net/netip"
	"slices"
)

// What `emulab up` builds from a lab file, computed before anything is
// touched: the plan is a pure function of the spec, the host mode and the
// socket paths, so it is tested without root and an unsupported lab is
// refused before a namespace exists.
//
// Every node gets a namespace emu-<lab>-<node>. Every switch runs one
// emuswitch inside its namespace; every NIC either runs one emunic inside
// its namespace, which owns the TAP the host's kernel sees (HostsNIC), or
// is a plain TAP port of the switch it is linked to, created by that
// switch's emuswitch in the host's namespace, as vde_switch -t does
// (HostsTAP). Links between processes are unix SOCK_SEQPACKET sockets in
// the state directory: the switch end listens towards a NIC, endpoint A
// listens between two switches (or two NICs), the other end dials.

// HostMode says what stands behind a NIC node's interface.
type HostMode string

const (
	// HostsAuto is HostsNIC when the emunic binary is found, else HostsTAP.
	HostsAuto HostMode = "auto"
	// HostsNIC runs emunic for every NIC node: the emulated RNIC owns the
	// host's TAP.
	HostsNIC HostMode = "nic"
	// HostsTAP makes every NIC node a plain TAP port of its switch: no
	// RNIC, the kernel's frames go straight to the switch.
	HostsTAP HostMode = "tap"
)

// ParseHostMode parses the --hosts flag.
func ParseHostMode(s string) (HostMode, error) {
	switch m := HostMode(s); m {
	case HostsAuto, HostsNIC, HostsTAP:
		return m, nil
	}
	return "", fmt.Errorf("hosts mode %q: want auto, nic or tap", s)
}

// Daemon binaries.
const (
	SwitchBinary = "emuswitch"
	NICBinary    = "emunic"
)

// IPoIBHeader is the IPoIB encapsulation header (RFC 4391 §6): an IB lab's
// host interface MTU is the IB MTU less it.
const IPoIBHeader = 4

// HostPrefixLen is the prefix length of a host's IPv4 address on its
// interface: hosts whose addresses share a /24 are on-link to each other,
// the others are reached through routes the lab adds.
const HostPrefixLen = 24

// upPlan is everything `up` will create, in creation order.
type upPlan struct {
	spec  *Spec
	mode  HostMode // HostsNIC or HostsTAP, never HostsAuto
	nodes []*planNode
}

// planNode is one node: its namespace, its daemon (nil for a TAP host)
// and, for a NIC node, its interface towards the fabric.
type planNode struct {
	node      *Node
	namespace string
	daemon    *planDaemon
	iface     *planIface
	// ports describes the node's connected ports for the table: what
	// each port is bound to and what is at the other end.
	ports []planPort
}

// planDaemon is a daemon to start.
type planDaemon struct {
	name    string // process name in the state directory: emuswitch-sw1, emunic-h1
	binary  string // SwitchBinary or NICBinary
	args    []string
	control string // control socket path
	metrics string // its Prometheus endpoint, ADDR:PORT ("" none)
}

// metrics gives the plan's daemons consecutive ports from base (ADDR:PORT),
// listening in the network namespace at nsPath.
func (p *upPlan) metrics(base, nsPath string) error {
	ap, err := netip.ParseAddrPort(base)
	if err != nil {
		return fmt.Errorf("--metrics %q: want ADDR:PORT (127.0.0.1:9100): %w", base, err)
	}
	port := int(ap.Port())
	if port == 0 {
		return fmt.Errorf("--metrics %s: give the first daemon's port; the others take the ports after it", base)
	}
	for _, pn := range p.nodes {
		d := pn.daemon
		if d == nil {
			continue
		}
		if port > 65535 {
			return fmt.Errorf("--metrics %s: the lab's daemons need ports %d and on, past 65535", base, ap.Port())
		}
		d.metrics = netip.AddrPortFrom(ap.Addr(), uint16(port)).String()
		d.args = append(d.args, "--metrics", d.metrics, "--metrics-netns", nsPath)
		port++
	}
	return nil
}

// planPort is one connected port of a node.
type planPort struct {
	name string // the node's port name
	peer string // "node:port" at the other end
	uri  string // the transport the daemon binds ("" for a TAP host's side)
	// noFlood: the port is outside the switches' spanning tree
	// (--no-flood): broadcasts neither leave nor enter through it.
	noFlood bool
}

// planIface is a host's interface: the address, MTU and MAC it gets, the
// static neighbours (every other host) and routes to the other hosts'
// subnets. Neighbours are static, as RDMA fabrics are usually configured:
// the switch model never floods unknown unicast (flooding lossless traffic
// causes PFC deadlocks), so a host's first frames must not depend on the
// fabric having learnt where the peer is, and no ARP exchange delays them.
type planIface struct {
	name   string
	mtu    int
	mac    [6]byte
	addr   netip.Prefix
	neigh  []planNeigh
	routes []netip.Prefix
	// owner is the daemon that creates the interface and holds its
	// TAP: the NIC's emunic (HostsNIC) or the emuswitch of the switch at
	// the other end (HostsTAP).
	owner string
}

// planNeigh is a permanent neighbour entry.
type planNeigh struct {
	node string
	ip   netip.Addr
	mac  [6]byte
}

// planError is a problem with the lab as a namespace lab, named at the
// node's line of the file.
func planError(spec *Spec, n *Node, format string, args ...any) *FieldError {
	return &FieldError{File: spec.File, Line: n.Line, Field: "topology.nodes." + n.Name, Msg: fmt.Sprintf(format, args...)}
}

// makePlan computes the plan. labFile is the absolute path of the lab
// file the daemons read; sock returns (and records) the path of a socket
// in the state directory.
func makePlan(spec *Spec, mode HostMode, labFile string, sock func(name string) (string, error)) (*upPlan, error) {
	if mode != HostsNIC && mode != HostsTAP {
		return nil, fmt.Errorf("hosts mode %q: the plan needs nic or tap", mode)
	}
	if spec.Fabric == FabricIB {
		// An IB lab: every host is an emunic HCA (LRH-framed links, credits)
		// whose TAP carries the kernel's traffic as IPoIB. LIDs and
		// forwarding tables are the lab file's, or with ib.sm the subnet
		// manager's, running in the named host's emunic.
		if mode != HostsNIC {
			return nil, &FieldError{File: spec.File, Field: "fabric", Msg: "an InfiniBand lab needs emunic HCAs (--hosts nic): a switch's TAP port speaks Ethernet"}
		}
	}
	var errs ErrorList
	p := &upPlan{spec: spec, mode: mode}
	byNode := make(map[*Node]*planNode, len(spec.Nodes))
	for _, n := range spec.Nodes {
		ns, err := NamespaceName(spec.Name, n.Name)
		if err != nil {
			errs = append(errs, planError(spec, n, "%v", err))
			continue
		}
		pn := &planNode{node: n, namespace: ns}
		byNode[n] = pn
		p.nodes = append(p.nodes, pn)
	}
	if len(errs) > 0 {
		return nil, errs
	}

	// Sockets: one per link between two processes, one control socket
	// per daemon.
	linkSock := make(map[*Link]string)
	for _, l := range spec.Links {
		if mode == HostsTAP && (l.A.Node.Kind == KindNIC || l.B.Node.Kind == KindNIC) {
			if l.A.Node.Kind == KindNIC && l.B.Node.Kind == KindNIC {
				errs = append(errs, planError(spec, l.A.Node, "%s-%s links two NICs directly: with --hosts tap a switch must own the TAPs (use --hosts nic)", l.A, l.B))
			}
			continue // a TAP, no socket
		}
		path, err := sock(fmt.Sprintf("link%d", l.Index))
		if err != nil {
			return nil, err
		}
		linkSock[l] = path
	}
	if len(errs) > 0 {
		return nil, errs
	}

	// Ports outside the switches' spanning tree do not flood (up_stp.go).
	// IB switches never flood: they forward by LFT only.
	var blocked map[*Node][]string
	if spec.Fabric != FabricIB {
		blocked = floodBlocked(spec)
	}
	for _, pn := range p.nodes {
		n := pn.node
		switch {
		case n.Kind == KindSwitch:
			d := &planDaemon{name: SwitchBinary + "-" + n.Name, binary: SwitchBinary}
			ctl, err := sock("ctl-" + n.Name)
			if err != nil {
				return nil, err
			}
			d.control = ctl
			d.args = []string{"--lab", labFile, "--node", n.Name}
			for _, pt := range connected(n) {
				uri := portURI(pt, linkSock[pt.Link], byNode[pt.Peer.Node].namespace, mode)
				d.args = append(d.args, "--port", pt.Name+"="+uri)
				pn.ports = append(pn.ports, planPort{name: pt.Name, peer: pt.Peer.String(), uri: uri})
			}
			// The daemon computes the tree itself, and again as links go
			// down and up (swd/linkstate.go); the plan shows where it starts.
			for _, name := range blocked[n] {
				for i := range pn.ports {
					if pn.ports[i].name == name {
						pn.ports[i].noFlood = true
					}
				}
			}
			d.args = append(d.args, "--control", ctl)
			pn.daemon = d
		case n.Kind == KindNIC:
			// Load allows a NIC one port.
			c := connected(n)
			if len(c) == 0 {
				continue // a host with no link: a namespace with lo only
			}
			pt := c[0]
			pn.iface = hostIface(spec, n, pt)
			if mode == HostsTAP {
				pn.iface.owner = SwitchBinary + "-" + pt.Peer.Node.Name
				pn.ports = append(pn.ports, planPort{name: pt.Name, peer: pt.Peer.String(), uri: "tap"})
				continue
			}
			d := &planDaemon{name: NICBinary + "-" + n.Name, binary: NICBinary}
			pn.iface.owner = d.name
			ctl, err := sock("ctl-" + n.Name)
			if err != nil {
				return nil, err
			}
			d.control = ctl
			uri := portURI(pt, linkSock[pt.Link], "", mode)
			d.args = []string{"--lab", labFile, "--node", n.Name,
				"--tap", pt.Name + "@" + pn.namespace, "--port", uri, "--control", ctl}
			pn.daemon = d
			pn.ports = append(pn.ports, planPort{name: pt.Name, peer: pt.Peer.String(), uri: uri})
		}
	}
	return p, nil
}

// portURI is the transport a daemon binds port pt to.
func portURI(pt *Port, sockPath, peerNamespace string, mode HostMode) string {
	peer := pt.Peer.Node
	if mode == HostsTAP && peer.Kind == KindNIC {
		// The switch creates the host's interface in the host's namespace.
		return "tap:" + pt.Peer.Name + "@" + peerNamespace
	}
	// A switch listens towards a NIC; between equals, endpoint A listens.
	listen := pt == pt.Link.A
	if pt.Node.Kind != peer.Kind {
		listen = pt.Node.Kind == KindSwitch
	}
	// Frames between two daemons go through shared-memory rings set up
	// over the socket (rt.Shm): a copy into the ring and one out, no
	// system call while both sides are busy.
	if listen {
		return "shm-listen:" + sockPath
	}
	return "shm-dial:" + sockPath
}

// hostIface is the configuration of NIC n's interface on port pt.
func hostIface(spec *Spec, n *Node, pt *Port) *planIface {
	own := netip.PrefixFrom(netip.AddrFrom4(n.IPv4), HostPrefixLen)
	f := &planIface{name: pt.Name, mtu: pt.Link.MTU, mac: n.MAC, addr: own}
	if spec.Fabric == FabricIB {
		f.mtu = pt.Link.MTU - IPoIBHeader // IPoIB over the link's IB MTU
	}
	for _, o := range spec.NICs() {
		if o == n || len(connected(o)) == 0 {
			continue
		}
		ip := netip.AddrFrom4(o.IPv4)
		f.neigh = append(f.neigh, planNeigh{node: o.Name, ip: ip, mac: o.MAC})
		sub := netip.PrefixFrom(ip, HostPrefixLen).Masked()
		if !own.Masked().Contains(ip) && !slices.Contains(f.routes, sub) {
			f.routes = append(f.routes, sub)
		}
	}
	return f
}

// connected lists the node's ports that have a link.
func connected(n *Node) []*Port {
	var out []*Port
	for _, p := range n.Ports {
		if p.Link != nil {
			out = append(out, p)
		}
	}
	return out
}

// daemons lists the planned daemons in start order: switches first (they
// listen), then NICs (they dial).
func (p *upPlan) daemons() []*planNode {
	var out []*planNode
	for _, k := range []NodeKind{KindSwitch, KindNIC} {
		for _, pn := range p.nodes {
			if pn.node.Kind == k && pn.daemon != nil {
				out = append(out, pn)
			}
		}
	}
	return out
}
