package nicd

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/wire"
)

// PortURI is a parsed --port value: how the NIC's link reaches its peer
// (the daemon contract's URIs, the same as emuswitch's port bindings).
type PortURI struct {
	Kind string // "seqpacket-listen", "seqpacket-dial" or "udp"
	Path string // seqpacket socket file
	// Shm: frames go through shared-memory rings set up over the seqpacket
	// socket (shm-listen:PATH, shm-dial:PATH; rt.Shm). Both ends of a link
	// must use them.
	Shm bool
	// Local and Remote are the UDP link's ends.
	Local, Remote netip.AddrPort
}

// ParsePortURI parses seqpacket-listen:/path, seqpacket-dial:/path,
// shm-listen:/path, shm-dial:/path or udp:LOCAL_ADDR:PORT,REMOTE_ADDR:PORT
// (IPv6 in brackets).
func ParsePortURI(s string) (PortURI, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return PortURI{}, fmt.Errorf("--port %q: want seqpacket-listen:PATH, seqpacket-dial:PATH, shm-listen:PATH, shm-dial:PATH or udp:LOCAL,REMOTE", s)
	}
	switch kind {
	case "seqpacket-listen", "seqpacket-dial", "shm-listen", "shm-dial":
		if rest == "" || !strings.HasPrefix(rest, "/") {
			return PortURI{}, fmt.Errorf("--port %q: the socket path must be absolute", s)
		}
		// sun_path holds 108 bytes including the terminating NUL: a
		// longer path failed only at bind or connect, with EINVAL.
		if len(rest) > 107 {
			return PortURI{}, fmt.Errorf("--port %q: the socket path is %d bytes, at most 107 fit a unix socket address", s, len(rest))
		}
		shm := strings.HasPrefix(kind, "shm-")
		if shm {
			kind = "seqpacket-" + strings.TrimPrefix(kind, "shm-")
		}
		return PortURI{Kind: kind, Path: rest, Shm: shm}, nil
	case "udp":
		l, r, ok := strings.Cut(rest, ",")
		if !ok {
			return PortURI{}, fmt.Errorf("--port %q: want udp:LOCAL_ADDR:PORT,REMOTE_ADDR:PORT", s)
		}
		la, err := rt.ResolveUDPAddr(l)
		if err != nil {
			return PortURI{}, fmt.Errorf("--port %q: local address: %v", s, err)
		}
		ra, err := rt.ResolveUDPAddr(r)
		if err != nil {
			return PortURI{}, fmt.Errorf("--port %q: remote address: %v", s, err)
		}
		if ra.Port() == 0 {
			return PortURI{}, fmt.Errorf("--port %q: the remote port must not be 0", s)
		}
		return PortURI{Kind: kind, Local: la, Remote: ra}, nil
	}
	return PortURI{}, fmt.Errorf("--port %q: unknown transport %q (want seqpacket-listen, seqpacket-dial, shm-listen, shm-dial or udp)", s, kind)
}

func (u PortURI) String() string {
	if u.Kind == "udp" {
		return "udp:" + u.Local.String() + "," + u.Remote.String()
	}
	if u.Shm {
		return "shm-" + strings.TrimPrefix(u.Kind, "seqpacket-") + ":" + u.Path
	}
	return u.Kind + ":" + u.Path
}

// TAPSpec is a parsed --tap value, IFNAME@NETNS: the interface the daemon
// creates and the named network namespace (under /run/netns) it lives in.
// An empty Netns is the daemon's own namespace.
type TAPSpec struct {
	Name  string
	Netns string
}

// ParseTAP parses IFNAME[@NETNS]. Both names are checked so they cannot
// reach outside /run/netns or exceed the kernel's 15-byte interface names.
func ParseTAP(s string) (TAPSpec, error) {
	name, ns, _ := strings.Cut(s, "@")
	if err := checkIfName(name); err != nil {
		return TAPSpec{}, fmt.Errorf("--tap %q: %v", s, err)
	}
	if strings.Contains(s, "@") {
		if ns == "" || strings.ContainsAny(ns, "/\x00") || ns == "." || ns == ".." || len(ns) > 255 {
			return TAPSpec{}, fmt.Errorf("--tap %q: bad namespace name %q", s, ns)
		}
	}
	return TAPSpec{Name: name, Netns: ns}, nil
}

func checkIfName(s string) error {
	if s == "" || len(s) > 15 {
		return fmt.Errorf("interface name %q: 1 to 15 bytes", s)
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("interface name %q: only letters, digits, '_', '-' and '.'", s)
		}
	}
	// The kernel refuses these (dev_valid_name), as emuswitch's check does.
	if s == "." || s == ".." {
		return fmt.Errorf("interface name %q: not a name the kernel accepts", s)
	}
	return nil
}

// roceOverhead is what an RDMA payload carries on the IP layer at most: an
// IPv6 header (40), UDP (8), BTH (12), RETH (16) and the ICRC (4). A port
// MTU whose packets fit the link MTU with it never needs IP fragmentation.
const roceOverhead = 40 + 8 + 12 + 16 + 4

// PortMTUFor is the largest IB MTU (256..4096) whose RoCEv2 packets fit an
// Ethernet link of the given IP MTU, as the mlx5 driver derives the
// active_mtu of a RoCE port from the netdev MTU; 0 if not even 256 fits.
func PortMTUFor(linkMTU int) int {
	for m := 4096; m >= 256; m >>= 1 {
		if m+roceOverhead <= linkMTU {
			return m
		}
	}
	return 0
}

// NodeConfig is what the daemon takes from the lab file for one NIC node.
type NodeConfig struct {
	NIC  nic.Config
	Link lab.LinkParams // the link on the NIC's port
	// HostMTU is the MTU of the host's interface (the TAP): the link's on
	// RoCE, the IPoIB MTU (port MTU - 4) on IB.
	HostMTU int
	Port    string // the port's name in the lab file (eth0)
	// PeerNIC: the link's other end is a NIC, not a switch port, so this
	// daemon emulates the wire toward itself (wire.go).
	PeerNIC bool
	Lab     string
	Notes   []string // defaults taken because the lab file does not say, for the log
}

// NICConfig converts the lab file's node (a kind: nic node) into the NIC's
// configuration: MAC and IPv4 from the spec's addressing, link rate and
// port MTU from the link on the port named port ("" takes the node's first
// port), trust (pcp tags frames with the priority in VLAN vid), and the
// DCQCN knobs of the node's or the lab's dcqcn section (NVIDIA's profile
// without one). The lab file has no NIC PFC or dscp2prio keys: PFC is
// honoured on the priorities of the lab's PORT_QOS_MAP pfc_enable (the
// switches the NIC faces) or on 3 if it says nothing, dscp2prio is
// mlnx_qos's default (DSCP>>3); ignore_pfc turns PFC honouring off.
func NICConfig(spec *lab.Spec, node, port string) (*NodeConfig, error) {
	n := spec.Node(node)
	if n == nil {
		return nil, fmt.Errorf("--node %q: no such node in %s", node, spec.File)
	}
	if n.Kind != lab.KindNIC {
		return nil, fmt.Errorf("--node %q: a %s, not a nic", node, n.Kind)
	}
	var p *lab.Port
	if port != "" {
		p = n.Port(port)
	} else if len(n.Ports) > 0 {
		p = n.Ports[0]
	}
	if p == nil || p.Link == nil {
		return nil, fmt.Errorf("--node %q: port %q has no link in %s", node, port, spec.File)
	}
	nc := &NodeConfig{Link: p.Link.LinkParams, Port: p.Name, Lab: spec.Name, HostMTU: p.Link.MTU,
		PeerNIC: p.Peer != nil && p.Peer.Node.Kind == lab.KindNIC}
	if spec.Fabric == lab.FabricIB {
		return ibNICConfig(spec, n, p, nc)
	}
	pmtu := PortMTUFor(p.Link.MTU)
	if pmtu == 0 {
		return nil, fmt.Errorf("--node %q: link mtu %d is too small for RoCEv2 (at least %d)", node, p.Link.MTU, 256+roceOverhead)
	}
	c := nic.Config{
		Name:    n.Name,
		MAC:     wire.MAC(n.MAC),
		IP:      netip.AddrFrom4(n.IPv4),
		Rate:    p.Link.Rate,
		PortMTU: pmtu,
		Trust:   nic.TrustDSCP,
		Tagged:  n.Tagged,
		VID:     n.VID,
	}
	if n.Trust == lab.TrustPCP || n.Tagged {
		c.Trust = nic.TrustPCP
	}
	if dc := spec.DCQCNOf(n); dc != nil {
		k := *dc
		c.DCQCN = &k
	} else {
		nc.Notes = append(nc.Notes, "no dcqcn section: DCQCN runs the NVIDIA profile")
	}
	var pfc [8]bool
	switch {
	case n.IgnorePFC:
		nc.Notes = append(nc.Notes, "ignore_pfc: received PFC is not honoured")
	case spec.QoS != nil && spec.QoS.PortQoSMap != nil && spec.QoS.PortQoSMap.PFCEnableSet:
		for i := range 8 {
			pfc[i] = spec.QoS.PortQoSMap.PFCEnable&(1<<i) != 0
		}
	default:
		pfc[3] = true
		nc.Notes = append(nc.Notes, "no PORT_QOS_MAP pfc_enable in the lab file: PFC honoured on priority 3")
	}
	c.PFC = &pfc
	nc.Notes = append(nc.Notes, "trust "+c.Trust.String()+", default dscp2prio (DSCP>>3)")
	nc.NIC = c
	return nc, nil
}

// Real-time IB link timing, in wall time (see ibNICConfig).
const (
	ibFCRefreshWall   = 100 * clock.Millisecond
	ibLinkTimeoutWall = clock.Second
)

// ibNICConfig is NICConfig for an InfiniBand lab: an HCA with the node's
// LID from the lab (which an SM, with ib.sm, keeps), the lab's
// data VLs, SL-to-VL table, VL buffer and IB CC, the link's MTU as its IB
// MTU, and IPoIB towards every other NIC node of the lab.
func ibNICConfig(spec *lab.Spec, n *lab.Node, p *lab.Port, nc *NodeConfig) (*NodeConfig, error) {
	mtu := p.Link.MTU
	if _, ok := nic.MTUFor(mtu); !ok {
		return nil, fmt.Errorf("--node %q: link mtu %d: an IB link's MTU is the IB MTU, 256, 512, 1024, 2048 or 4096", n.Name, mtu)
	}
	c := nic.Config{
		Name: n.Name, MAC: wire.MAC(n.MAC), IP: netip.AddrFrom4(n.IPv4), Rate: p.Link.Rate, PortMTU: mtu,
		Fabric: nic.FabricIB, LID: n.LID,
	}
	if ibc := spec.IBOf(n); ibc != nil {
		c.IBDataVLs, c.IBBlocksPerVL = ibc.MaxVLs, ibc.BlocksPerVL()
		sl2vl := ibc.SLToVL()
		c.SL2VL = &sl2vl
		if ibc.CC != nil {
			k := ibc.CC.CA
			c.IBCC = &k
		} else {
			c.CC = "none"
			nc.Notes = append(nc.Notes, "no ib.cc section: IB congestion control off")
		}
	}
	// A real-time port need not refresh credits every 64 us: the NIC
	// sends a flow-control packet whenever it consumed data, so the
	// refresh only repairs an update lost on a lossy wire, and each one is
	// a wake-up of both daemons (emuswitch does the same, swd/ib.go).
	// Ten missed refreshes of the switch's mean its port is disabled.
	// Both are wall times; the daemon divides them by its time dilation.
	c.IBFCRefresh = ibFCRefreshWall
	c.IBLinkTimeout = ibLinkTimeoutWall
	ip := &nic.IPoIB{}
	for _, o := range spec.NICs() {
		if o == n {
			continue
		}
		ip.Neighbours = append(ip.Neighbours, nic.IPoIBNeighbour{IP: netip.AddrFrom4(o.IPv4), MAC: wire.MAC(o.MAC), LID: o.LID})
	}
	c.IPoIB = ip
	if sm := spec.IB; sm != nil && sm.SM != nil {
		// A managed fabric: the HCA's SMA reports the lab's LID, which
		// the SM keeps (it keeps a valid, free reported LID), so the
		// IPoIB neighbours above stay right; data waits for Active.
		c.SMA = &nic.SMAConfig{NodeGUID: lab.IBGUID(n.Name), Description: n.Name + " HCA-1", IsSM: sm.SM.Host == n.Name}
		nc.Notes = append(nc.Notes, fmt.Sprintf("ib.sm: the subnet manager on %s makes the port Active", sm.SM.Host))
	}
	nc.HostMTU = mtu - 4 // RFC 4391: the IPoIB header takes 4 bytes of the IB MTU
	nc.Notes = append(nc.Notes, fmt.Sprintf("IB HCA, LID %d, IPoIB MTU %d to %d neighbours", n.LID, nc.HostMTU, len(ip.Neighbours)))
	nc.NIC = c
	return nc, nil
}
