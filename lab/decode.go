package lab

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/emufabric/emufabric/clock"
)

// Defaults of a lab file (docs/lab-file.md lists them all).
const (
	DefaultRate           = 100_000_000_000 // 100G
	DefaultDelay          = clock.Microsecond
	DefaultMTURoCE        = 4200 // IP MTU that carries a 4096-byte RDMA payload
	DefaultMTUIB          = 4096 // IB MTU
	DefaultHeaderBytes    = 64   // cut-through header bytes
	DefaultDuration       = 10 * clock.Millisecond
	DefaultDeadlockWindow = clock.Millisecond
	DefaultSeed           = 1
	// MaxTimeDilation bounds time_dilation: beyond it a microsecond of
	// lab time outlasts a second of the wall, and the daemons' wall-clock
	// timers (IB credit refresh, link-loss detection) lose meaning.
	MaxTimeDilation = 10_000
)

var topKeys = []string{"name", "fabric", "topology", "qos", "ib", "dcqcn", "traffic", "sim", "time_dilation"}

// decode builds the Spec from viper's settings. Problems are collected in
// d.errs; the Spec is only valid when there are none.
func (d *decoder) decode(settings map[string]any) *Spec {
	s := &Spec{File: d.file, Fabric: FabricRoCE}
	top := d.mapping("", settings)
	if top == nil {
		return s
	}
	if v, p, ok := top.get("name"); ok {
		if name, ok := d.str(p, v); ok {
			if err := checkName(name); err != nil {
				d.errorf(p, "%v", err)
			}
			s.Name = name
		}
	} else {
		d.errorf("", "missing key \"name\" (the lab's name)")
	}
	if v, p, ok := top.get("fabric"); ok {
		if f, ok := d.enum(p, v, string(FabricRoCE), string(FabricIB)); ok {
			s.Fabric = Fabric(f)
		}
	}

	s.TimeDilation = 1
	if v, p, ok := top.get("time_dilation"); ok {
		if n, ok := d.integer(p, v, 1, MaxTimeDilation); ok {
			s.TimeDilation = int(n)
		}
	}

	var nodeQoS map[*Node]nodeQoSSrc
	if v, p, ok := top.get("topology"); ok {
		nodeQoS = d.topology(s, p, v)
	} else {
		d.errorf("", "missing key \"topology\" (nodes and links)")
	}

	d.refuseEthernetOnly(s, top, ethernetOnlyTopKeys)
	if v, p, ok := top.get("qos"); ok {
		s.QoS = d.qos(p, v)
	}
	d.applyQoS(s, nodeQoS)

	if v, p, ok := top.get("ib"); ok {
		if s.Fabric != FabricIB {
			d.errorf(p, "the ib section needs \"fabric: ib\"")
		} else {
			s.IB = d.ibConfig(p, v, defaultIB())
		}
	} else if s.Fabric == FabricIB {
		s.IB = defaultIB()
	}
	if s.Fabric == FabricIB {
		d.applyNodeIB(s, nodeQoS)
	} else {
		for _, n := range s.Nodes {
			if src := nodeQoS[n]; src.hasIB {
				d.errorf(src.ibPath, "the ib settings need \"fabric: ib\"")
			}
		}
	}

	if v, p, ok := top.get("dcqcn"); ok {
		s.DCQCN = d.dcqcn(p, v)
	}
	if v, p, ok := top.get("traffic"); ok {
		d.traffic(s, p, v)
	}
	s.Sim = SimParams{Duration: DefaultDuration, Seed: DefaultSeed, DeadlockWindow: DefaultDeadlockWindow}
	if v, p, ok := top.get("sim"); ok {
		d.simParams(&s.Sim, p, v)
	}
	if s.Sim.SampleInterval == 0 {
		s.Sim.SampleInterval = s.DefaultSampleInterval(s.Sim.Duration)
	}
	top.done(topKeys...)
	return s
}

// nodeQoSSrc remembers a node's own qos and ib sections until the global
// ones are decoded.
type nodeQoSSrc struct {
	qosPath string
	qos     any
	hasQoS  bool
	ibPath  string
	ib      any
	hasIB   bool

	routesPath string
	routes     any
	hasRoutes  bool
}

// endpointRef is one parsed "node:port" string.
type endpointRef struct {
	node, port string
	path       string
}

func (d *decoder) topology(s *Spec, path string, v any) map[*Node]nodeQoSSrc {
	topo := d.mapping(path, v)
	if topo == nil {
		return nil
	}
	s.Defaults = LinkParams{Rate: DefaultRate, Delay: DefaultDelay, MTU: DefaultMTURoCE}
	if s.Fabric == FabricIB {
		s.Defaults.MTU = DefaultMTUIB
	}
	if v, p, ok := topo.get("defaults"); ok {
		if m := d.mapping(p, v); m != nil {
			d.linkParams(s.Fabric, m, &s.Defaults)
			m.done(linkParamKeys...)
		}
	}
	srcs := make(map[*Node]nodeQoSSrc)
	declared := make(map[*Node][]string)
	written := 0 // node entries in the file, valid or not
	if v, p, ok := topo.get("nodes"); ok {
		m := d.mapping(p, v)
		if m != nil {
			for _, e := range m.entries() {
				written++
				n, ports, src := d.node(s, e)
				if n == nil {
					if d.badNodes == nil {
						d.badNodes = make(map[string]bool)
					}
					d.badNodes[e.key] = true
					continue
				}
				n.Index = len(s.Nodes)
				s.Nodes = append(s.Nodes, n)
				declared[n] = ports
				srcs[n] = src
			}
		}
	}
	if written == 0 {
		d.errorf(join(path, "nodes"), "a lab needs at least one node")
	}
	if v, p, ok := topo.get("links"); ok {
		d.links(s, p, v, declared)
	}
	topo.done("defaults", "nodes", "links")
	d.assignAddresses(s)
	return srcs
}

var linkParamKeys = []string{"rate", "delay", "mtu", "loss", "corrupt"}

// linkParams reads rate, delay, mtu, loss and corrupt from m into lp.
func (d *decoder) linkParams(f Fabric, m *mapping, lp *LinkParams) {
	if v, p, ok := m.get("rate"); ok {
		if r, ok := d.rate(p, v); ok {
			if err := CheckLinkRate(r); err != nil {
				d.errorf(p, "%v", err)
			} else {
				lp.Rate = r
			}
		}
	}
	if v, p, ok := m.get("delay"); ok {
		if t, ok := d.duration(p, v); ok {
			lp.Delay = t
			if t > clock.Second {
				// A real lab's daemons hold rate × delay of frames in
				// flight (100G × 1s is 12.5 GB): more than any machine
				// has, and ping gives up first.
				d.warnf(p, "delay %v: more than a second of the link's traffic is held in flight, in a real lab in the daemons' memory", t)
			}
		}
	}
	if v, p, ok := m.get("mtu"); ok {
		if f == FabricIB {
			if n, ok := d.integer(p, v, 256, 4096); ok {
				if n&(n-1) != 0 {
					d.errorf(p, "IB MTU %d: must be 256, 512, 1024, 2048 or 4096", n)
				}
				lp.MTU = int(n)
			}
		} else if n, ok := d.integer(p, v, 576, 9216); ok {
			lp.MTU = int(n)
		}
	}
	if v, p, ok := m.get("loss"); ok {
		if x, ok := d.probability(p, v); ok {
			lp.Loss = x
		}
	}
	if v, p, ok := m.get("corrupt"); ok {
		if x, ok := d.probability(p, v); ok {
			lp.Corrupt = x
		}
	}
}

var (
	commonNodeKeys = []string{"kind", "ports", "mac", "ipv4", "lid", "ib"}
	switchNodeKeys = []string{"cut_through", "header_bytes", "trust", "ecmp_seed", "routes", "qos",
		"ecn_mark", "pfc_quanta", "pfc_refresh", "mac_learning"}
	nicNodeKeys = []string{"trust", "vid", "ignore_pfc", "pfc_storm", "dcqcn"}
)

// node decodes one topology.nodes entry. It returns the declared port names
// (nil when ports are implied by the links).
func (d *decoder) node(s *Spec, e entry) (*Node, []string, nodeQoSSrc) {
	var src nodeQoSSrc
	if err := checkName(e.key); err != nil {
		d.errorf(e.path, "node name: %v", err)
		return nil, nil, src
	}
	m := d.mapping(e.path, e.val)
	if m == nil {
		return nil, nil, src
	}
	n := &Node{Name: e.key, Line: d.line(e.path)}
	v, p, ok := m.get("kind")
	if !ok {
		// A misspelt kind is named as such, not only as missing; a node
		// key that happens to lie near "kind" (lid, vid) is not one.
		for _, k := range m.keys {
			if lk := strings.ToLower(k); !contains(commonNodeKeys, lk) && !contains(switchNodeKeys, lk) && !contains(nicNodeKeys, lk) &&
				closest(k, []string{"kind"}) != "" {
				d.errorf(join(e.path, k), "unknown key %q (did you mean \"kind\"? nic or switch)", k)
				m.entries()
				return nil, nil, src
			}
		}
		d.errorf(e.path, "missing key \"kind\" (nic or switch)")
		m.entries()
		return nil, nil, src
	}
	k, ok := d.enum(p, v, string(KindNIC), string(KindSwitch))
	if !ok {
		m.entries()
		return nil, nil, src
	}
	n.Kind = NodeKind(k)

	var ports []string
	if v, p, ok := m.get("ports"); ok {
		ports = d.portList(p, v, n.Kind)
	}
	if v, p, ok := m.get("mac"); ok {
		if str, ok := d.str(p, v); ok {
			hw, err := net.ParseMAC(str)
			if err != nil || len(hw) != 6 {
				d.errorf(p, "%q is not a MAC address such as 02:00:00:00:00:01", str)
			} else if hw[0]&1 != 0 {
				d.errorf(p, "%q is a multicast address", str)
			} else {
				copy(n.MAC[:], hw)
			}
		}
	}
	if v, p, ok := m.get("ipv4"); ok {
		if n.Kind != KindNIC {
			d.errorf(p, "only nic nodes have an address; switches route by the NICs' addresses")
		} else if str, ok := d.str(p, v); ok {
			a, err := netip.ParseAddr(str)
			if err != nil || !a.Is4() || a.IsUnspecified() || a.IsMulticast() {
				d.errorf(p, "%q is not a unicast IPv4 address", str)
			} else if a.IsLoopback() {
				d.errorf(p, "%s is a loopback address: in every namespace it is lo's, so no other host can reach it", str)
			} else if a.As4()[3] == 255 {
				// up puts each host on a /24 (HostPrefixLen): .255 is
				// its subnet's broadcast, which the hosts' kernels do
				// not treat as a host (ping: "Do you want to ping
				// broadcast?").
				d.errorf(p, "%s is the broadcast address of its /%d (a lab's hosts are on /%d subnets): give the host another", str, HostPrefixLen, HostPrefixLen)
			} else {
				n.IPv4 = a.As4()
			}
		}
	}
	if v, p, ok := m.get("lid"); ok {
		if lid, ok := d.integer(p, v, 1, 0xBFFF); ok {
			n.LID = uint16(lid)
		}
	}
	if v, p, ok := m.get("ib"); ok {
		src.ib, src.ibPath, src.hasIB = v, p, true
	}

	switch n.Kind {
	case KindSwitch:
		n.CutThrough = true
		n.HeaderBytes = DefaultHeaderBytes
		n.Trust = TrustDSCP
		n.ECMPSeed = uint64(len(s.Nodes))
		n.ECNMarkAt = MarkDequeue
		n.MACLearning = true
		d.switchSettings(n, m, &src)
		d.refuseEthernetOnly(s, m, ethernetOnlySwitchKeys)
		for _, k := range nicNodeKeys {
			if _, p, ok := m.get(k); ok && !contains(switchNodeKeys, k) {
				d.errorf(p, "%q is a nic setting; %s is a switch", k, n.Name)
			}
		}
		m.done(append(append([]string{}, commonNodeKeys...), switchNodeKeys...)...)
	case KindNIC:
		d.nicSettings(n, m)
		d.refuseEthernetOnly(s, m, ethernetOnlyNICKeys)
		for _, k := range switchNodeKeys {
			if _, p, ok := m.get(k); ok && !contains(nicNodeKeys, k) {
				d.errorf(p, "%q is a switch setting; %s is a nic", k, n.Name)
			}
		}
		m.done(append(append([]string{}, commonNodeKeys...), nicNodeKeys...)...)
	}
	return n, ports, src
}

func (d *decoder) switchSettings(n *Node, m *mapping, src *nodeQoSSrc) {
	if v, p, ok := m.get("cut_through"); ok {
		if b, ok := d.boolean(p, v); ok {
			n.CutThrough = b
		}
	}
	if v, p, ok := m.get("header_bytes"); ok {
		if x, ok := d.integer(p, v, 14, 512); ok {
			n.HeaderBytes = int(x)
		}
	}
	if v, p, ok := m.get("trust"); ok {
		if t, ok := d.enum(p, v, string(TrustDSCP), string(TrustPCP)); ok {
			n.Trust = Trust(t)
		}
	}
	if v, p, ok := m.get("ecmp_seed"); ok {
		if x, ok := d.integer(p, v, 0, 1<<62); ok {
			n.ECMPSeed = uint64(x)
		}
	}
	if v, p, ok := m.get("ecn_mark"); ok {
		if x, ok := d.enum(p, v, string(MarkDequeue), string(MarkEnqueue)); ok {
			n.ECNMarkAt = MarkPoint(x)
		}
	}
	if v, p, ok := m.get("pfc_quanta"); ok {
		if x, ok := d.integer(p, v, 1, 0xFFFF); ok {
			n.PFCQuanta = uint16(x)
		}
	}
	if v, p, ok := m.get("pfc_refresh"); ok {
		if t, ok := d.duration(p, v); ok {
			n.PFCRefresh = t
		}
	}
	if v, p, ok := m.get("mac_learning"); ok {
		if b, ok := d.boolean(p, v); ok {
			n.MACLearning = b
		}
	}
	if v, p, ok := m.get("qos"); ok {
		src.qos, src.qosPath, src.hasQoS = v, p, true
	}
	if v, p, ok := m.get("routes"); ok {
		// Resolved once ports and addresses are known (applyQoS time).
		src.routes, src.routesPath, src.hasRoutes = v, p, true
	}
}

func (d *decoder) nicSettings(n *Node, m *mapping) {
	if v, p, ok := m.get("dcqcn"); ok {
		n.DCQCN = d.dcqcn(p, v)
	}
	if v, p, ok := m.get("trust"); ok {
		if t, ok := d.enum(p, v, string(TrustDSCP), string(TrustPCP)); ok {
			n.Trust = Trust(t)
			n.Tagged = n.Trust == TrustPCP
		}
	}
	if v, p, ok := m.get("vid"); ok {
		if x, ok := d.integer(p, v, 0, 4094); ok {
			n.VID = uint16(x)
		}
	}
	if v, p, ok := m.get("ignore_pfc"); ok {
		if b, ok := d.boolean(p, v); ok {
			n.IgnorePFC = b
		}
	}
	if v, p, ok := m.get("pfc_storm"); ok {
		sm := d.mapping(p, v)
		if sm == nil {
			return
		}
		st := &PFCStorm{Priority: 3}
		if v, p, ok := sm.get("priority"); ok {
			if x, ok := d.integer(p, v, 0, 7); ok {
				st.Priority = uint8(x)
			}
		}
		if v, p, ok := sm.get("start"); ok {
			if t, ok := d.duration(p, v); ok {
				st.Start = t
			}
		}
		if v, p, ok := sm.get("stop"); ok {
			if t, ok := d.duration(p, v); ok {
				st.Stop = t
				if t != 0 && t <= st.Start {
					d.errorf(p, "stop %v is not after start %v", t, st.Start)
				}
			}
		}
		if v, p, ok := sm.get("interval"); ok {
			if t, ok := d.duration(p, v); ok {
				st.Interval = t
			}
		}
		sm.done("priority", "start", "stop", "interval")
		n.Storm = st
	}
}

// portList reads `ports:` — a count (switches: p1..pN) or a list of names.
func (d *decoder) portList(path string, v any, kind NodeKind) []string {
	var names []string
	switch t := v.(type) {
	case int:
		if kind != KindSwitch {
			d.errorf(path, "a nic lists its interfaces by name, e.g. [eth0]")
			return nil
		}
		if t < 1 || t > 1024 {
			d.errorf(path, "%d ports: a switch has 1 to 1024", t)
			return nil
		}
		for i := 1; i <= t; i++ {
			names = append(names, fmt.Sprintf("p%d", i))
		}
		return names
	case []any:
		seen := make(map[string]bool)
		for i, x := range t {
			p := fmt.Sprintf("%s[%d]", path, i)
			name, ok := d.str(p, x)
			if !ok {
				continue
			}
			if err := checkName(name); err != nil {
				d.errorf(p, "port name: %v", err)
				continue
			}
			if seen[name] {
				d.errorf(p, "port %q is listed twice", name)
				continue
			}
			seen[name] = true
			names = append(names, name)
		}
		if len(names) == 0 {
			d.errorf(path, "empty port list")
		}
		return names
	}
	d.errorf(path, "expected a port count or a list of port names, got %s", describe(v))
	return nil
}

var linkKeys = append([]string{"endpoints", "schedule"}, linkParamKeys...)

func (d *decoder) links(s *Spec, path string, v any, declared map[*Node][]string) {
	items, ok := d.list(path, v)
	if !ok {
		return
	}
	type pending struct {
		link *Link
		ends [2]endpointRef
	}
	var all []pending
	used := make(map[string]string) // "node:port" -> path of first use
	for i, it := range items {
		lp := fmt.Sprintf("%s[%d]", path, i)
		m := d.mapping(lp, it)
		if m == nil {
			continue
		}
		l := &Link{Index: len(all), LinkParams: s.Defaults, Line: d.line(lp)}
		d.linkParams(s.Fabric, m, &l.LinkParams)
		ends, ok := d.endpoints(s, m)
		if v, p, ok := m.get("schedule"); ok {
			l.Schedule = d.schedule(p, v)
		}
		m.done(linkKeys...)
		if !ok {
			continue
		}
		for _, e := range ends {
			key := e.node + ":" + e.port
			if first, dup := used[key]; dup {
				d.errorf(e.path, "duplicate endpoint %q (already used at line %d, %s)", key, d.line(first), first)
				ok = false
				continue
			}
			used[key] = e.path
		}
		if ends[0].node == ends[1].node {
			d.errorf(ends[1].path, "both endpoints are on node %q", ends[0].node)
			ok = false
		}
		if ok {
			all = append(all, pending{l, ends})
		}
	}

	// Ports: declared ones in declaration order, otherwise those the links
	// name, in natural order (p1, p2, ..., p10).
	implied := make(map[*Node][]string)
	for _, pl := range all {
		for _, e := range pl.ends {
			n := s.Node(e.node)
			if declared[n] == nil {
				implied[n] = append(implied[n], e.port)
			}
		}
	}
	for _, n := range s.Nodes {
		names := declared[n]
		if names == nil {
			names = implied[n]
			sort.SliceStable(names, func(i, j int) bool { return naturalLess(names[i], names[j]) })
		}
		for i, name := range names {
			n.Ports = append(n.Ports, &Port{Name: name, Index: i, Node: n})
		}
	}
	for _, pl := range all {
		var ports [2]*Port
		for i, e := range pl.ends {
			n := s.Node(e.node)
			ports[i] = n.Port(e.port)
			if ports[i] == nil {
				d.errorf(e.path, "unknown port %q (%s declares %s)", e.node+":"+e.port, n.Name, portNames(n))
			}
		}
		if ports[0] == nil || ports[1] == nil {
			continue
		}
		l := pl.link
		l.Index = len(s.Links)
		l.A, l.B = ports[0], ports[1]
		ports[0].Link, ports[1].Link = l, l
		ports[0].Peer, ports[1].Peer = ports[1], ports[0]
		s.Links = append(s.Links, l)
	}
}

// endpoints reads a link's two "node:port" strings.
func (d *decoder) endpoints(s *Spec, m *mapping) ([2]endpointRef, bool) {
	var out [2]endpointRef
	v, p, ok := m.get("endpoints")
	if !ok {
		d.errorf(m.path, "missing key \"endpoints\" (two \"node:port\" strings)")
		return out, false
	}
	items, ok := d.list(p, v)
	if !ok {
		return out, false
	}
	if len(items) != 2 {
		d.errorf(p, "a link has 2 endpoints, got %d", len(items))
		return out, false
	}
	good := true
	for i, it := range items {
		ep := fmt.Sprintf("%s[%d]", p, i)
		str, ok := d.str(ep, it)
		if !ok {
			good = false
			continue
		}
		node, port, found := strings.Cut(str, ":")
		if !found || strings.Contains(port, ":") {
			d.errorf(ep, "%q is not \"node:port\" (e.g. \"sw1:p1\")", str)
			good = false
			continue
		}
		n := s.Node(node)
		if n == nil {
			if !d.badNodes[node] {
				d.errorf(ep, "unknown node %q in %q", node, str)
			}
			good = false
			continue
		}
		if err := checkName(port); err != nil {
			d.errorf(ep, "port name: %v", err)
			good = false
			continue
		}
		if why, bad := reservedIfName[port]; bad && n.Kind == KindNIC {
			// The port becomes the host's interface in its namespace.
			d.errorf(ep, "port name %q of a NIC: %s", port, why)
			good = false
			continue
		}
		out[i] = endpointRef{node: node, port: port, path: ep}
	}
	return out, good
}

func (d *decoder) schedule(path string, v any) []LinkEvent {
	items, ok := d.list(path, v)
	if !ok {
		return nil
	}
	var out []LinkEvent
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		m := d.mapping(ip, it)
		if m == nil {
			continue
		}
		var ev LinkEvent
		good := true
		if v, p, ok := m.get("at"); ok {
			ev.At, good = d.duration(p, v)
			if good && len(out) > 0 && ev.At <= out[len(out)-1].At {
				d.errorf(p, "%v is not after the previous event (%v)", ev.At, out[len(out)-1].At)
				good = false
			}
		} else {
			d.errorf(ip, "missing key \"at\" (when the state changes)")
			good = false
		}
		if v, p, ok := m.get("state"); ok {
			st, ok := d.enum(p, v, "up", "down")
			ev.Up = st == "up"
			good = good && ok
		} else {
			d.errorf(ip, "missing key \"state\" (up or down)")
			good = false
		}
		m.done("at", "state")
		if good {
			out = append(out, ev)
		}
	}
	return out
}

// defaultIPv4 is the address of the nic-th NIC (1-based): 10.0.0.1 to
// 10.0.0.254, then 10.0.1.1 and on, 254 to each /24. The host byte skips 0
// and 255: up puts hosts on /24 subnets (HostPrefixLen), where .255 is the
// broadcast address that no host answers as its own, so numbering through
// it left the 255th NIC out of reach of every other host's kernel.
func defaultIPv4(nic int) [4]byte {
	k := nic - 1
	sub := k / 254
	return [4]byte{10, byte(sub >> 8), byte(sub), byte(k%254 + 1)}
}

// assignAddresses gives every node without an explicit MAC, IPv4 (NICs) or
// LID a default derived from its index, and reports duplicates.
func (d *decoder) assignAddresses(s *Spec) {
	nic := 0
	macs := make(map[[6]byte]*Node)
	ips := make(map[[4]byte]*Node)
	lids := make(map[uint16]*Node)
	for _, n := range s.Nodes {
		id := n.Index + 1
		if n.MAC == ([6]byte{}) {
			n.MAC = [6]byte{0x02, 0, 0, byte(id >> 16), byte(id >> 8), byte(id)}
		}
		if n.Kind == KindNIC {
			nic++
			if n.IPv4 == ([4]byte{}) {
				n.IPv4 = defaultIPv4(nic)
			}
		}
		if n.LID == 0 {
			n.LID = uint16(id)
		}
	}
	// Explicit addresses may collide with derived ones: check after.
	for _, n := range s.Nodes {
		p := "topology.nodes." + n.Name
		if o := macs[n.MAC]; o != nil {
			d.errorf(p, "MAC %s is also %s's", net.HardwareAddr(n.MAC[:]), o.Name)
		}
		macs[n.MAC] = n
		if n.Kind == KindNIC {
			if o := ips[n.IPv4]; o != nil {
				d.errorf(p, "IPv4 %s is also %s's", netip.AddrFrom4(n.IPv4), o.Name)
			}
			ips[n.IPv4] = n
		}
		if s.Fabric == FabricIB {
			if o := lids[n.LID]; o != nil {
				d.lidClash(n, o)
			}
			lids[n.LID] = n
		}
	}
}

// lidClash reports two nodes with one LID. One of them often has it by
// default (its place in the node list + 1) and wrote no lid: the error says
// which, at the lid that was written, so that the user does not look for
// a lid key the other node never had.
func (d *decoder) lidClash(n, o *Node) {
	whose := func(x *Node) string {
		if d.written("topology.nodes." + x.Name + ".lid") {
			return x.Name + "'s lid"
		}
		return fmt.Sprintf("%s's by default (its place in the node list + 1)", x.Name)
	}
	path := "topology.nodes." + n.Name
	if nw, ow := d.written(path+".lid"), d.written("topology.nodes."+o.Name+".lid"); nw {
		path += ".lid"
	} else if ow {
		path = "topology.nodes." + o.Name + ".lid"
	}
	d.errorf(path, "LID %d is %s and %s: give one of them another lid", n.LID, whose(o), whose(n))
}

func portNames(n *Node) string {
	if len(n.Ports) == 0 {
		return "no ports"
	}
	if len(n.Ports) > 6 {
		return fmt.Sprintf("%s..%s", n.Ports[0].Name, n.Ports[len(n.Ports)-1].Name)
	}
	var b []string
	for _, p := range n.Ports {
		b = append(b, p.Name)
	}
	return strings.Join(b, ", ")
}

// naturalLess orders "p2" before "p10": digit runs compare as numbers.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		ad, bd := isDigit(a[0]), isDigit(b[0])
		if ad && bd {
			i, j := digitRun(a), digitRun(b)
			x, y := strings.TrimLeft(a[:i], "0"), strings.TrimLeft(b[:j], "0")
			if len(x) != len(y) {
				return len(x) < len(y)
			}
			if x != y {
				return x < y
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digitRun(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
