package lab

import (
	"fmt"
	"sort"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// Settings that are each in range but say something surprising together
// or with the topology: mostly warnings, since the lab still runs
// (contradictions between two knobs of one section are errors where the
// section is read, such as rp_min_rate above rp_max_rate in
// cc.DCQCN.Validate). validate calls checkConsistency once the links, the
// flows and the RDMA NICs are settled.
func (d *decoder) checkConsistency(s *Spec) {
	d.checkStormInterval(s)
	d.checkDCQCNFloor(s)
	d.checkIBServedVLs(s)
	d.checkIBRates(s) // ibrate.go
}

// checkStormInterval refuses a pfc_storm interval shorter than one PFC
// frame on the node's link: the NIC cannot send faster than back to back,
// and the simulator would still wake for every interval (1ps: 10^8 events
// per 100 µs of a run, which never ends in practice).
func (d *decoder) checkStormInterval(s *Spec) {
	for _, n := range s.Nodes {
		st := n.Storm
		if st == nil || st.Interval <= 0 || len(n.Ports) == 0 || n.Ports[0].Link == nil {
			continue
		}
		rate := n.Ports[0].Link.Rate
		// The frame and its preamble, FCS and inter-frame gap: what a
		// back-to-back XOFF takes on the wire.
		size := wire.MACControlFrameSize + wire.EthernetOverhead
		if floor := clock.SerializationTime(size, rate); st.Interval < floor {
			d.errorf("topology.nodes."+n.Name+".pfc_storm.interval", "interval %v is shorter than one PFC frame on %s's %s link (%d bytes with preamble, FCS and gap: %v): XOFFs cannot leave faster; 0 re-sends every half of the pause",
				st.Interval, n.Name, FormatRate(rate), size, floor)
		}
	}
}

// written reports whether the file writes the key at path itself (not
// only a parent of it).
func (d *decoder) written(path string) bool {
	return d.pos != nil && d.pos.entries[strings.ToLower(path)] != nil
}

// checkDCQCNFloor warns when a data sender's rp_min_rate is not below its
// line rate: the reaction point never goes below its floor, so DCQCN never
// slows the sender down and the CNPs it handles change nothing.
func (d *decoder) checkDCQCNFloor(s *Spec) {
	if s.Fabric == FabricIB {
		return // HCAs run the IB annex's congestion control, not DCQCN
	}
	senders := make(map[*Node]bool)
	for _, f := range s.Traffic {
		switch {
		case f.Op == OpNone || len(f.Dst) != 1:
		case f.Op == OpRead:
			senders[f.Dst[0]] = true
		default:
			senders[f.Src] = true
		}
	}
	type floor struct {
		min   float64
		nodes []string
		rates []string
	}
	bySection := make(map[string]*floor)
	for _, n := range s.Nodes {
		c := s.DCQCNOf(n)
		if !senders[n] || n.CC == CCNone || c == nil || len(n.Ports) == 0 || n.Ports[0].Link == nil {
			continue
		}
		line := n.Ports[0].Link.Rate
		if c.RPMinRate*1e6 < float64(line) {
			continue
		}
		section := "dcqcn"
		if n.DCQCN != nil {
			section = "topology.nodes." + n.Name + ".dcqcn"
		}
		fl := bySection[section]
		if fl == nil {
			fl = &floor{min: c.RPMinRate}
			bySection[section] = fl
		}
		fl.nodes = append(fl.nodes, n.Name)
		fl.rates = append(fl.rates, FormatRate(line))
	}
	for _, section := range sortedKeys(bySection) {
		fl := bySection[section]
		who := "the sender"
		if len(fl.nodes) > 1 {
			who = "the senders"
		}
		d.warnf(join(section, "rp_min_rate"), "rp_min_rate %g Mb/s is not below the line rate %s: DCQCN never sends slower than its floor, so CNPs never slow %s down",
			fl.min, namesWithRates(fl.nodes, fl.rates), who)
	}
}

// namesWithRates writes "(100G) of h1", "(100G) of h1 and h2" or "of h1
// (100G), h2 (25G)".
func namesWithRates(names, rates []string) string {
	same := true
	for _, r := range rates {
		same = same && r == rates[0]
	}
	if same {
		return fmt.Sprintf("(%s) of %s", rates[0], andList(names))
	}
	parts := make([]string, len(names))
	for i := range names {
		parts[i] = fmt.Sprintf("%s (%s)", names[i], rates[i])
	}
	return "of " + strings.Join(parts, ", ")
}

func andList(v []string) string {
	if len(v) < 2 {
		return strings.Join(v, "")
	}
	return strings.Join(v[:len(v)-1], ", ") + " and " + v[len(v)-1]
}

// servesVL reports whether a switch with IB settings c ever gives VL an
// opportunity to send: an entry with weight > 0 in either arbitration
// table. An empty low-priority table is the switch's default, which
// gives every data VL a weight (sim.SwitchConfig keeps it).
func (c *IBConfig) servesVL(vl uint8) bool {
	for _, e := range c.VLArbHigh {
		if e.VL == vl && e.Weight > 0 {
			return true
		}
	}
	if len(c.VLArbLow) == 0 {
		return true
	}
	for _, e := range c.VLArbLow {
		if e.VL == vl && e.Weight > 0 {
			return true
		}
	}
	return false
}

// checkIBServedVLs warns when traffic crosses a switch whose SL2VL puts it
// on a VL that neither arbitration table serves (vlarb_low "0:0,1:0" with
// the flows on VL 0: nothing is ever delivered), or on VL 15, which drops
// it. An RDMA flow is checked both ways: its ACKs and READ responses come
// back on the same SL.
func (d *decoder) checkIBServedVLs(s *Spec) {
	if s.Fabric != FabricIB {
		return
	}
	type stuck struct {
		switches map[string]bool
		flows    []string
		sl, vl   uint8
	}
	found := make(map[string]*stuck) // by the table's path and the VL
	var order []string
	note := func(path string, sw *Node, f *Flow, vl uint8) {
		key := fmt.Sprintf("%s\x00%d", path, vl)
		st := found[key]
		if st == nil {
			st = &stuck{switches: make(map[string]bool), sl: f.SL, vl: vl}
			found[key] = st
			order = append(order, key)
		}
		st.switches[sw.Name] = true
		if len(st.flows) == 0 || st.flows[len(st.flows)-1] != f.Name {
			st.flows = append(st.flows, f.Name)
		}
	}
	for _, f := range s.Traffic {
		var ends [][2]*Node
		for _, dst := range f.Dst {
			ends = append(ends, [2]*Node{f.Src, dst})
			if f.Op != OpNone {
				ends = append(ends, [2]*Node{dst, f.Src})
			}
		}
		for _, e := range ends {
			for _, sw := range s.switchesOnPaths(e[0], e[1]) {
				c := s.IBConfigOf(sw)
				vl := c.SL2VL[f.SL&15]
				switch {
				case vl == 15:
					note(d.ibTablePath(sw, "sl2vl"), sw, f, vl)
				case !c.servesVL(vl):
					note(d.ibTablePath(sw, "vlarb_low", "vlarb_high"), sw, f, vl)
				}
			}
		}
	}
	for _, key := range order {
		st := found[key]
		path, _, _ := strings.Cut(key, "\x00")
		sws := sortedKeys(st.switches)
		if st.vl == 15 {
			d.warnf(path, "SL %d maps to VL 15 on %s, which drops every packet: %s would deliver nothing", st.sl, andList(sws), plural(st.flows, "flow"))
			continue
		}
		d.warnf(path, "VL %d has no weight in the VL arbitration tables (vlarb_high, vlarb_low) of %s, so it never sends there: %s (SL %d -> VL %d) would deliver nothing; give VL %d a weight above 0",
			st.vl, andList(sws), plural(st.flows, "flow"), st.sl, st.vl, st.vl)
	}
}

// plural writes "flow f1", "flows f1, f2 and f3", or, for more than
// five, the first four and how many more.
func plural(names []string, noun string) string {
	switch {
	case len(names) == 1:
		return noun + " " + names[0]
	case len(names) > 5:
		return fmt.Sprintf("%ss %s and %d more", noun, strings.Join(names[:4], ", "), len(names)-4)
	}
	return noun + "s " + andList(names)
}

// ibTablePath is where the file sets the first of keys for switch sw: in
// the node's own ib section, else the top-level one; the section itself
// when neither writes any of them.
func (d *decoder) ibTablePath(sw *Node, keys ...string) string {
	sections := []string{"ib"}
	if sw.IB != nil {
		sections = []string{"topology.nodes." + sw.Name + ".ib", "ib"}
	}
	for _, sec := range sections {
		for _, k := range keys {
			if p := join(sec, k); d.written(p) {
				return p
			}
		}
	}
	return sections[0]
}

// switchesOnPaths returns every switch a packet from src to dst may cross,
// over every equal-cost next hop, in a stable order.
func (s *Spec) switchesOnPaths(src, dst *Node) []*Node {
	if len(src.Ports) == 0 || src.Ports[0].Peer == nil {
		return nil
	}
	seen := make(map[*Node]bool)
	var out []*Node
	queue := []*Node{src.Ports[0].Peer.Node}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == dst || n.Kind != KindSwitch || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
		for _, i := range s.NextHops(n, dst) {
			if i < len(n.Ports) && n.Ports[i].Peer != nil {
				queue = append(queue, n.Ports[i].Peer.Node)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}
