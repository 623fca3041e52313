package lab

import (
	"fmt"
	"slices"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// Frame overheads used by the checks.
const (
	// EthernetFraming is what an Ethernet frame adds to its IP packet on a
	// tagged link: header 14, 802.1Q tag 4, FCS 4. (The wire's own time
	// per frame, preamble, FCS and gap, is wire.EthernetOverhead.)
	EthernetFraming = 22
	// RoCEOverhead is what RoCEv2 over IPv4 adds to an RDMA payload inside
	// the IP packet: IPv4 20, UDP 8, BTH 12, RETH 16, ICRC 4.
	RoCEOverhead = 60
	// IBOverhead is what an IB packet adds to its payload: LRH 8, GRH 40,
	// BTH 12, RETH 16, ICRC 4, VCRC 2.
	IBOverhead = 82
)

// MaxFrameBytes is the largest frame a link of this MTU carries: the
// Ethernet frame of an MTU-sized IP packet, or the IB packet of an
// MTU-sized payload.
func MaxFrameBytes(f Fabric, mtu int) int {
	if f == FabricIB {
		return mtu + IBOverhead
	}
	return mtu + EthernetFraming
}

// Built-in QoS entries: the tables every emulated switch starts with
// (SONiC's usual names), which a lab file may reference without defining
// them. An entry of the same name in the file replaces the built-in one.
// docs/lab-file.md lists their values.
const (
	// losslessPGProfile is the built-in lossless PG profile, bound to PGs
	// 3 and 4 (builtinLosslessPGs) of every port unless the file binds
	// them (BUFFER_PG).
	losslessPGProfile        = "pg_lossless_profile"
	builtinLosslessPGs uint8 = 1<<3 | 1<<4
)

var (
	builtinPools = map[string]*BufferPool{
		"ingress_lossless_pool": {Name: "ingress_lossless_pool", Type: PoolIngress, Mode: PoolDynamic},
		"ingress_lossy_pool":    {Name: "ingress_lossy_pool", Type: PoolIngress, Mode: PoolDynamic},
		"egress_lossless_pool":  {Name: "egress_lossless_pool", Type: PoolEgress, Mode: PoolDynamic},
		"egress_lossy_pool":     {Name: "egress_lossy_pool", Type: PoolEgress, Mode: PoolDynamic},
	}
	// builtinProfiles maps each built-in profile to its pool. Unless the
	// file defines pg_lossless_profile, the switch sizes each port's
	// lossless headroom from its speed and its link's delay.
	builtinProfiles = map[string]string{
		"pg_lossless_profile":     "ingress_lossless_pool",
		"ingress_lossy_profile":   "ingress_lossy_pool",
		"egress_lossless_profile": "egress_lossless_pool",
		"egress_lossy_profile":    "egress_lossy_pool",
	}
	builtinWRED       = map[string]bool{"AZURE_LOSSLESS": true}
	builtinSchedulers = map[string]bool{"scheduler.0": true, "scheduler.1": true}
)

// validate checks what needs the whole file: links per node, QoS references
// and buffer sizes against the ports they apply to, traffic against the
// topology, IB tables.
func (d *decoder) validate(s *Spec) {
	s.precomputeHops()
	for _, n := range s.Nodes {
		var links []*Link
		for _, p := range n.Ports {
			if p.Link != nil {
				links = append(links, p.Link)
			}
		}
		connected := len(links)
		switch {
		case n.Kind == KindNIC && connected > 1:
			// Named at each link after the first, which is where the
			// file says more than a NIC has.
			slices.SortFunc(links, func(a, b *Link) int { return a.Index - b.Index })
			first := fmt.Sprintf("topology.links[%d]", links[0].Index)
			for _, l := range links[1:] {
				end := 0
				if l.A.Node != n {
					end = 1
				}
				d.errorf(fmt.Sprintf("topology.links[%d].endpoints[%d]", l.Index, end),
					"nic %s already has a link (%s, line %d): a nic has one port", n.Name, first, d.line(first))
			}
		case connected == 0:
			d.warnf("topology.nodes."+n.Name, "%s has no link", n.Name)
		}
		if n.Kind == KindSwitch && n.QoS != nil {
			d.validateQoS(s, n)
		}
		if n.Kind == KindSwitch && n.PFCRefresh > 0 && s.Fabric != FabricIB {
			d.validatePFCRefresh(n)
		}
		if n.Storm != nil && s.Fabric == FabricIB {
			d.errorf("topology.nodes."+n.Name+".pfc_storm", "PFC is Ethernet; IB links have credits")
		}
		if s.Fabric == FabricIB {
			d.validateIB(s, n)
		}
		if n.Storm != nil && n.Storm.Start >= s.Sim.Duration {
			d.warnf("topology.nodes."+n.Name+".pfc_storm.start", "the storm starts at %v, after the run ends (%v)", n.Storm.Start, s.Sim.Duration)
		}
	}
	for _, l := range s.Links {
		for _, ev := range l.Schedule {
			if ev.At >= s.Sim.Duration {
				d.warnf(fmt.Sprintf("topology.links[%d].schedule", l.Index), "event at %v is after the run ends (%v)", ev.At, s.Sim.Duration)
			}
		}
	}
	for _, f := range s.Traffic {
		d.validateFlow(s, f)
	}
	d.validateRDMA(s)
	d.validateSampling(s) // sample.go
	d.checkConsistency(s) // consistency.go
}

// validatePFCRefresh checks a switch's pfc_refresh against each port's
// link: shorter than the pause its XOFF asks for (or the peer resumes
// between refreshes), and no shorter than one PFC frame on the wire, its
// preamble, FCS and inter-frame gap included (a
// refresh per frame time keeps the port busy with nothing but PFC).
func (d *decoder) validatePFCRefresh(n *Node) {
	quanta := n.PFCQuanta
	if quanta == 0 {
		quanta = 0xFFFF
	}
	path := "topology.nodes." + n.Name + ".pfc_refresh"
	for _, p := range n.Ports {
		if p.Link == nil || p.Link.Rate == 0 {
			continue
		}
		pause := wire.QuantaToTime(quanta, p.Link.Rate)
		frame := clock.SerializationTime(wire.MACControlFrameSize+wire.EthernetOverhead, p.Link.Rate)
		switch {
		case n.PFCRefresh >= pause:
			d.errorf(path, "%v is not shorter than the pause an XOFF asks for on %s (%d quanta at %s: %v): the peer would resume between refreshes",
				n.PFCRefresh, p, quanta, FormatRate(p.Link.Rate), pause)
			return
		case n.PFCRefresh < frame:
			d.errorf(path, "%v is shorter than one PFC frame on %s (%v at %s)", n.PFCRefresh, p, frame, FormatRate(p.Link.Rate))
			return
		}
	}
}

// validateQoS checks a switch's effective QoS: every reference resolves,
// thresholds match the pool mode, and lossless headroom (xoff) holds at
// least one frame of every port the profile is bound to.
func (d *decoder) validateQoS(s *Spec, sw *Node) {
	q := sw.QoS
	pools := make(map[string]*BufferPool)
	for k, v := range builtinPools {
		pools[k] = v
	}
	for k, v := range q.BufferPools {
		pools[k] = v
	}
	profileNames := make(map[string]bool)
	for k := range builtinProfiles {
		profileNames[k] = true
	}
	for k := range q.BufferProfiles {
		profileNames[k] = true
	}
	for _, name := range sortedKeys(q.BufferProfiles) {
		bp := q.BufferProfiles[name]
		pool, ok := pools[bp.Pool]
		if !ok {
			d.errorf(join(bp.path, "pool"), "unknown BUFFER_POOL %q%s", bp.Pool, known(pools))
			continue
		}
		switch {
		case pool.Mode == PoolDynamic && !bp.HasDynamicTh:
			d.errorf(join(bp.path, "static_th"), "pool %s is dynamic: the profile needs dynamic_th, not static_th", pool.Name)
		case pool.Mode == PoolStatic && bp.HasDynamicTh:
			d.errorf(join(bp.path, "dynamic_th"), "pool %s is static: the profile needs static_th, not dynamic_th", pool.Name)
		}
		if bp.Xoff > 0 && pool.Type != PoolIngress {
			d.errorf(join(bp.path, "xoff"), "xoff (headroom) belongs to ingress profiles; pool %s is %s", pool.Name, pool.Type)
		}
		if pool.Xoff > 0 && bp.Xoff > pool.Xoff {
			d.errorf(join(bp.path, "xoff"), "xoff %d is larger than the shared headroom pool %s (xoff %d)", bp.Xoff, pool.Name, pool.Xoff)
		}
	}
	checkBinding := func(b BufferBinding, table string, want PoolType) {
		bp, ok := q.BufferProfiles[b.Profile]
		if !ok {
			if poolName, ok := builtinProfiles[b.Profile]; ok {
				if pools[poolName].Type != want {
					d.errorf(b.path, "%s binds %s profiles; %s uses %s pool %s", table, want, b.Profile, pools[poolName].Type, poolName)
				}
				return
			}
			d.errorf(b.path, "unknown BUFFER_PROFILE %q%s", b.Profile, known(profileNames))
			return
		}
		if pool, ok := pools[bp.Pool]; ok && pool.Type != want {
			d.errorf(b.path, "%s binds %s profiles; %s uses %s pool %s", table, want, bp.Name, pool.Type, pool.Name)
			return
		}
		if !bp.Lossless() || want != PoolIngress {
			return
		}
		for _, p := range bindingPorts(sw, b.Ports, b.PortNames) {
			if p.Link == nil {
				continue
			}
			frame := MaxFrameBytes(s.Fabric, p.Link.MTU)
			if bp.Xoff < uint64(frame) {
				d.errorf(join(bp.path, "xoff"), "xoff %d bytes is smaller than one MTU frame (%d bytes on %s, MTU %d)", bp.Xoff, frame, p, p.Link.MTU)
				return
			}
			// Headroom absorbs what arrives after XOFF: the round trip of
			// the cable at line rate plus a frame being sent at each end
			// (SONiC headroom calculation; cc-anchors §4).
			need := clock.BytesIn(2*p.Link.Delay, p.Link.Rate) + 2*uint64(frame)
			if bp.Xoff < need {
				// One warning per profile and link kind, naming every port.
				d.warnPorts(join(bp.path, "xoff"), p.String(), "xoff %d bytes is below the %d bytes in flight on %%s (2 × %v × %s + 2 frames): headroom may overflow", bp.Xoff, need, p.Link.Delay, FormatRate(p.Link.Rate))
			}
		}
	}
	for _, b := range q.BufferPG {
		checkBinding(b, "BUFFER_PG", PoolIngress)
	}
	// Ports whose lossless PGs keep the built-in binding (PG 3-4 to
	// pg_lossless_profile) while the file redefines that profile: its xoff
	// must hold for them too (only the file's own bindings were checked).
	if bp, ok := q.BufferProfiles[losslessPGProfile]; ok {
		bound := make([]uint8, len(sw.Ports))
		for _, b := range q.BufferPG {
			for _, p := range bindingPorts(sw, b.Ports, b.PortNames) {
				bound[p.Index] |= b.IDs
			}
		}
		implicit := BufferBinding{Profile: losslessPGProfile, PortNames: []string{}, path: bp.path}
		for i := range sw.Ports {
			if bound[i]&builtinLosslessPGs != builtinLosslessPGs {
				implicit.Ports = append(implicit.Ports, i)
			}
		}
		if len(implicit.Ports) > 0 {
			checkBinding(implicit, "BUFFER_PG", PoolIngress)
		}
	}
	for _, b := range q.BufferQueue {
		checkBinding(b, "BUFFER_QUEUE", PoolEgress)
	}
	for _, qb := range q.Queues {
		if qb.Scheduler != "" {
			if _, ok := q.Schedulers[qb.Scheduler]; !ok && !builtinSchedulers[qb.Scheduler] {
				d.errorf(join(qb.path, "scheduler"), "unknown SCHEDULER %q%s", qb.Scheduler, known(merge(q.Schedulers, builtinSchedulers)))
			}
		}
		if qb.WREDProfile != "" {
			if _, ok := q.WREDProfiles[qb.WREDProfile]; !ok && !builtinWRED[qb.WREDProfile] {
				d.errorf(join(qb.path, "wred_profile"), "unknown WRED_PROFILE %q%s", qb.WREDProfile, known(merge(q.WREDProfiles, builtinWRED)))
			}
		}
	}
}

// bindingPorts returns the ports a binding applies to.
func bindingPorts(sw *Node, idx []int, names []string) []*Port {
	if names == nil {
		return sw.Ports
	}
	var out []*Port
	for _, i := range idx {
		out = append(out, sw.Ports[i])
	}
	return out
}

// merge returns the names of a table and of the built-in entries.
func merge[V any](m map[string]V, builtin map[string]bool) map[string]bool {
	out := make(map[string]bool)
	for k := range m {
		out[k] = true
	}
	for k := range builtin {
		out[k] = true
	}
	return out
}

func known[V any](m map[string]V) string {
	if len(m) == 0 {
		return " (the table is empty or missing)"
	}
	keys := sortedKeys(m)
	if len(keys) > 8 {
		keys = append(keys[:8], "...")
	}
	return fmt.Sprintf(" (known: %s)", joinComma(keys))
}

// validateIB checks that a node's VL buffer holds one packet of its links.
func (d *decoder) validateIB(s *Spec, n *Node) {
	c := s.IBConfigOf(n)
	path := "ib.vl_buffer"
	if n.IB != nil {
		path = "topology.nodes." + n.Name + ".ib.vl_buffer"
	}
	for _, p := range n.Ports {
		if p.Link == nil {
			continue
		}
		if frame := MaxFrameBytes(FabricIB, p.Link.MTU); c.VLBuffer < uint64(frame) {
			d.errorf(path, "vl_buffer %d bytes cannot hold one packet of %s (%d bytes at MTU %d): no credit would ever suffice", c.VLBuffer, p, frame, p.Link.MTU)
			return
		}
	}
}

// validateFlow checks a flow against the topology: rate, path MTU,
// reachability, timing.
func (d *decoder) validateFlow(s *Spec, f *Flow) {
	src := f.Src
	if len(src.Ports) == 0 || src.Ports[0].Link == nil {
		d.errorf(join(f.path, "src"), "%s has no link", src.Name)
		return
	}
	link := src.Ports[0].Link
	if f.Rate == 0 {
		f.Rate = link.Rate
	} else if f.Rate > link.Rate {
		d.errorf(join(f.path, "rate"), "%s is faster than %s's link (%s)", FormatRate(f.Rate), src.Name, FormatRate(link.Rate))
	}
	for _, dst := range f.Dst {
		if err := s.checkReachable(src, dst); err != nil {
			d.errorf(join(f.path, "dst"), "%v", err)
			return
		}
	}
	// Path MTU: the largest RDMA MTU every link on the way carries.
	minMTU := link.MTU
	for _, dst := range f.Dst {
		path, err := s.Path(src, dst)
		if err != nil {
			d.errorf(join(f.path, "dst"), "%v", err)
			return
		}
		for _, p := range path {
			minMTU = min(minMTU, p.Link.MTU)
		}
	}
	fits := func(pmtu int) bool {
		if s.Fabric == FabricIB {
			return pmtu <= minMTU
		}
		return pmtu+RoCEOverhead <= minMTU
	}
	if f.PMTU == 0 {
		for _, m := range []int{4096, 2048, 1024, 512, 256} {
			if fits(m) {
				f.PMTU = m
				break
			}
		}
		if f.PMTU == 0 {
			d.errorf(f.path, "no RDMA MTU (256..4096) fits the path's MTU %d", minMTU)
		}
	} else if !fits(f.PMTU) {
		d.errorf(join(f.path, "pmtu"), "path MTU %d does not fit the smallest link MTU on the way (%d)", f.PMTU, minMTU)
	}
	if f.Start >= s.Sim.Duration {
		d.warnf(join(f.path, "start"), "the flow starts at %v, after the run ends (%v)", f.Start, s.Sim.Duration)
	}
	if s.Fabric == FabricIB {
		if vl := s.IBConfigOf(src).SL2VL[f.SL]; vl == 15 {
			d.errorf(join(f.path, "sl"), "SL %d maps to VL15 on %s: the packets would be dropped", f.SL, src.Name)
		}
	}
}
