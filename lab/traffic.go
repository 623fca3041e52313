package lab

import (
	"fmt"
	"math"
)

var trafficKeys = []string{"name", "src", "dst", "pattern", "kind", "rate", "size", "count", "start", "stop",
	"arrival", "load", "on", "off", "priority", "dscp", "ecn", "sl", "pmtu", "sport", "op", "qps", "depth", "cc"}

// maxFlows bounds the expansion of one lab's traffic (all_to_all grows as
// the square of the host count).
const maxFlows = 100_000

// traffic decodes the traffic list into flows, expanding patterns.
func (d *decoder) traffic(s *Spec, path string, v any) {
	items, ok := d.list(path, v)
	if !ok {
		return
	}
	names := make(map[string]string) // flow name -> path of its entry
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		m := d.mapping(ip, it)
		if m == nil {
			continue
		}
		base := &Flow{
			Name:     fmt.Sprintf("flow%d", i+1),
			Kind:     FlowRDMAWrite,
			Size:     MessageSize{Dist: DistFixed, Size: 1 << 20},
			Arrival:  ArrivalBackToBack,
			Priority: 3,
			ECN:      true,
			Line:     d.line(ip),
			path:     ip,
		}
		if s.Fabric == FabricIB {
			base.ECN = false
		}
		d.flowSettings(s, m, base)
		d.rdmaSettings(s, m, base)
		srcs := d.nodeList(s, m, "src")
		dsts := d.nodeList(s, m, "dst")
		pattern := Pattern("")
		if v, p, ok := m.get("pattern"); ok {
			if x, ok := d.enum(p, v, string(PatternOne), string(PatternIncast), string(PatternFanout),
				string(PatternPairs), string(PatternAllToAll), string(PatternRandom)); ok {
				pattern = Pattern(x)
			}
		}
		m.done(trafficKeys...)
		if srcs == nil || dsts == nil {
			continue
		}
		flows := d.expand(ip, base, pattern, srcs, dsts)
		if len(s.Traffic)+len(flows) > maxFlows {
			d.errorf(ip, "more than %d flows", maxFlows)
			return
		}
		for _, f := range flows {
			if first, dup := names[f.Name]; dup {
				d.errorf(ip, "flow name %q is also used by %s", f.Name, first)
				continue
			}
			names[f.Name] = ip
			s.Traffic = append(s.Traffic, f)
		}
	}
}

type nodeRef struct {
	n    *Node
	path string
}

// nodeList reads src or dst: a node name or a list of names. Nil on error.
func (d *decoder) nodeList(s *Spec, m *mapping, key string) []nodeRef {
	v, p, ok := m.get(key)
	if !ok {
		d.errorf(m.path, "missing key %q (a nic name or a list of them)", key)
		return nil
	}
	var raw []any
	var paths []string
	switch t := v.(type) {
	case []any:
		if len(t) == 0 {
			d.errorf(p, "empty list")
			return nil
		}
		raw = t
		for i := range t {
			paths = append(paths, fmt.Sprintf("%s[%d]", p, i))
		}
	default:
		raw = []any{v}
		paths = []string{p}
	}
	var out []nodeRef
	seen := make(map[*Node]bool)
	good := true
	for i, x := range raw {
		name, ok := d.str(paths[i], x)
		if !ok {
			good = false
			continue
		}
		n := s.Node(name)
		switch {
		case n == nil:
			if !d.badNodes[name] { // reported at its own entry
				d.errorf(paths[i], "unknown node %q", name)
			}
			good = false
		case n.Kind != KindNIC:
			d.errorf(paths[i], "%s is a switch; traffic runs between nic nodes", name)
			good = false
		case seen[n]:
			d.errorf(paths[i], "%s is listed twice", name)
			good = false
		default:
			seen[n] = true
			out = append(out, nodeRef{n, paths[i]})
		}
	}
	if !good {
		return nil
	}
	return out
}

// expand turns one traffic entry into flows.
func (d *decoder) expand(path string, base *Flow, pattern Pattern, srcs, dsts []nodeRef) []*Flow {
	if pattern == "" {
		switch {
		case len(srcs) == 1 && len(dsts) == 1:
			pattern = PatternOne
		case len(dsts) == 1:
			pattern = PatternIncast
		case len(srcs) == 1:
			pattern = PatternFanout
		default:
			d.errorf(path, "several sources and destinations: write pattern: pairs, all_to_all or random")
			return nil
		}
	}
	mk := func(suffix string, src nodeRef, dst ...nodeRef) *Flow {
		f := *base
		f.Group = base.Name
		f.Pattern = pattern
		if suffix != "" {
			f.Name = base.Name + "/" + suffix
		}
		f.Src = src.n
		for _, x := range dst {
			f.Dst = append(f.Dst, x.n)
		}
		return &f
	}
	var out []*Flow
	self := func(src, dst nodeRef) bool {
		if src.n == dst.n {
			d.errorf(dst.path, "%s sends to itself", src.n.Name)
			return true
		}
		return false
	}
	switch pattern {
	case PatternOne:
		if len(srcs) != 1 || len(dsts) != 1 {
			d.errorf(path, "pattern one takes one src and one dst")
			return nil
		}
		if !self(srcs[0], dsts[0]) {
			out = append(out, mk("", srcs[0], dsts[0]))
		}
	case PatternIncast:
		if len(dsts) != 1 {
			d.errorf(path, "pattern incast takes one dst")
			return nil
		}
		for _, src := range srcs {
			if !self(src, dsts[0]) {
				out = append(out, mk(src.n.Name, src, dsts[0]))
			}
		}
	case PatternFanout:
		if len(srcs) != 1 {
			d.errorf(path, "pattern fanout takes one src")
			return nil
		}
		for _, dst := range dsts {
			if !self(srcs[0], dst) {
				out = append(out, mk(dst.n.Name, srcs[0], dst))
			}
		}
	case PatternPairs:
		if len(srcs) != len(dsts) {
			d.errorf(path, "pattern pairs needs as many dst (%d) as src (%d)", len(dsts), len(srcs))
			return nil
		}
		for i := range srcs {
			if !self(srcs[i], dsts[i]) {
				out = append(out, mk(srcs[i].n.Name+"-"+dsts[i].n.Name, srcs[i], dsts[i]))
			}
		}
	case PatternAllToAll:
		if len(srcs)*len(dsts) > maxFlows {
			d.errorf(path, "all_to_all of %d x %d hosts is more than %d flows; use pattern random", len(srcs), len(dsts), maxFlows)
			return nil
		}
		for _, src := range srcs {
			for _, dst := range dsts {
				if src.n != dst.n {
					out = append(out, mk(src.n.Name+"-"+dst.n.Name, src, dst))
				}
			}
		}
	case PatternRandom:
		for _, src := range srcs {
			var ds []nodeRef
			for _, dst := range dsts {
				if dst.n != src.n {
					ds = append(ds, dst)
				}
			}
			if len(ds) == 0 {
				d.errorf(path, "%s has no destination other than itself", src.n.Name)
				continue
			}
			out = append(out, mk(src.n.Name, src, ds...))
		}
	}
	return out
}

// flowSettings reads everything of a traffic entry except src, dst, pattern.
func (d *decoder) flowSettings(s *Spec, m *mapping, f *Flow) {
	d.refuseEthernetOnly(s, m, ethernetOnlyFlowKeys)
	if v, p, ok := m.get("name"); ok {
		if name, ok := d.str(p, v); ok {
			if err := checkEntryName(name); err != nil {
				d.errorf(p, "%v", err)
			}
			f.Name = name
		}
	}
	if v, p, ok := m.get("kind"); ok {
		if x, ok := d.enum(p, v, string(FlowRDMAWrite), string(FlowUDSend)); ok {
			f.Kind = FlowKind(x)
		}
	}
	if v, p, ok := m.get("rate"); ok {
		f.Rate, _ = d.rate(p, v)
	}
	if v, p, ok := m.get("size"); ok {
		f.Size = d.messageSize(p, v)
	}
	if v, p, ok := m.get("count"); ok {
		if x, ok := d.integer(p, v, 0, math.MaxInt32); ok {
			f.Count = int(x)
		}
	}
	if v, p, ok := m.get("start"); ok {
		f.Start, _ = d.duration(p, v)
	}
	if v, p, ok := m.get("stop"); ok {
		if t, ok := d.duration(p, v); ok {
			f.Stop = t
			if t != 0 && t <= f.Start {
				d.errorf(p, "stop %v is not after start %v", t, f.Start)
			}
		}
	}
	arrivalSet := false
	if v, p, ok := m.get("arrival"); ok {
		if x, ok := d.enum(p, v, string(ArrivalBackToBack), string(ArrivalPoisson), string(ArrivalOnOff)); ok {
			f.Arrival = Arrival(x)
			arrivalSet = true
		}
	}
	lv, lp, hasLoad := m.get("load")
	if hasLoad {
		if x, ok := d.number(lp, lv, 0, 1); ok {
			if x == 0 {
				d.errorf(lp, "load 0 sends nothing; remove the flow instead")
			}
			f.Load = x
		}
		if !arrivalSet {
			f.Arrival = ArrivalPoisson
		}
	}
	onv, onp, hasOn := m.get("on")
	offv, offp, hasOff := m.get("off")
	if hasOn || hasOff {
		if !arrivalSet {
			f.Arrival = ArrivalOnOff
		}
		if hasOn {
			f.On, _ = d.duration(onp, onv)
		}
		if hasOff {
			f.Off, _ = d.duration(offp, offv)
		}
	}
	switch f.Arrival {
	case ArrivalPoisson:
		if !hasLoad {
			d.errorf(m.path, "arrival poisson needs load (a fraction of the rate, e.g. 0.5)")
		}
	case ArrivalOnOff:
		if f.On <= 0 || f.Off <= 0 {
			d.errorf(m.path, "arrival onoff needs on and off times greater than zero")
		}
	}
	if hasLoad && f.Arrival != ArrivalPoisson {
		d.errorf(lp, "load is for arrival poisson")
	}
	if (hasOn || hasOff) && f.Arrival != ArrivalOnOff {
		p := onp
		if !hasOn {
			p = offp
		}
		d.errorf(p, "on and off are for arrival onoff")
	}
	prioSet := false
	if v, p, ok := m.get("priority"); ok {
		if x, ok := d.integer(p, v, 0, 7); ok {
			f.Priority = uint8(x)
			prioSet = true
		}
	}
	f.DSCP = defaultDSCP(f.Priority)
	if v, p, ok := m.get("dscp"); ok {
		if x, ok := d.integer(p, v, 0, 63); ok {
			f.DSCP = uint8(x)
			if !prioSet {
				f.Priority = f.DSCP >> 3
			}
		}
	}
	if v, p, ok := m.get("ecn"); ok {
		if b, ok := d.boolean(p, v); ok {
			f.ECN = b
			if b && s.Fabric == FabricIB {
				d.errorf(p, "ECN is an IP field; IB labs have no ECN (IB congestion control is FECN/BECN)")
			}
		}
	}
	if v, p, ok := m.get("sl"); ok {
		if s.Fabric != FabricIB {
			d.errorf(p, "sl (IB service level) needs fabric: ib; RoCE flows use priority and dscp")
		} else if x, ok := d.integer(p, v, 0, 15); ok {
			f.SL = uint8(x)
		}
	}
	if v, p, ok := m.get("pmtu"); ok {
		if x, ok := d.integer(p, v, 256, 4096); ok {
			if x&(x-1) != 0 {
				d.errorf(p, "path MTU %d: must be 256, 512, 1024, 2048 or 4096", x)
			}
			f.PMTU = int(x)
		}
	}
	if v, p, ok := m.get("sport"); ok {
		if x, ok := d.integer(p, v, 1, 0xFFFF); ok {
			f.SrcPort = uint16(x)
		}
	}
}

// defaultDSCP is AF<p>1 (8p+2) for priorities 1..4 (so priority 3 is DSCP
// 26, the usual RoCE marking) and CS<p> (8p) otherwise. Both map back to p
// under the DSCP>>3 classification NICs default to.
func defaultDSCP(prio uint8) uint8 {
	if prio >= 1 && prio <= 4 {
		return 8*prio + 2
	}
	return 8 * prio
}

// messageSize reads size: a fixed size, or {dist: ..., ...}.
func (d *decoder) messageSize(path string, v any) MessageSize {
	if _, isMap := v.(map[string]any); !isMap {
		n, ok := d.size(path, v)
		if ok && n == 0 {
			d.errorf(path, "a message of 0 bytes")
		}
		return MessageSize{Dist: DistFixed, Size: n}
	}
	m := d.mapping(path, v)
	ms := MessageSize{Dist: DistFixed}
	distOK := false
	if v, p, ok := m.get("dist"); ok {
		if x, ok := d.enum(p, v, string(DistFixed), string(DistUniform), string(DistExponential), string(DistCDF)); ok {
			ms.Dist = SizeDist(x)
			distOK = true
		}
	} else {
		d.errorf(path, "missing key \"dist\" (fixed, uniform, exponential or cdf)")
	}
	if !distOK {
		// Without a distribution there is nothing to check the other
		// keys against: {dist: normal, mean: 1KiB} is one mistake, not
		// also a missing "size" of dist fixed and an unknown "mean".
		known := []string{"dist", "size", "min", "max", "mean", "points"}
		for _, k := range known {
			m.get(k) // marks it read
		}
		m.done(known...)
		return ms
	}
	need := func(key string, dst *uint64) {
		if v, p, ok := m.get(key); ok {
			if n, ok := d.size(p, v); ok {
				if n == 0 {
					d.errorf(p, "%s must be greater than zero", key)
				}
				*dst = n
			}
		} else {
			d.errorf(path, "missing key %q for dist %s", key, ms.Dist)
		}
	}
	switch ms.Dist {
	case DistFixed:
		need("size", &ms.Size)
		m.done("dist", "size")
	case DistUniform:
		need("min", &ms.Min)
		need("max", &ms.Max)
		if ms.Max < ms.Min {
			d.errorf(join(path, "max"), "max %d is below min %d", ms.Max, ms.Min)
		}
		m.done("dist", "min", "max")
	case DistExponential:
		need("mean", &ms.Mean)
		if v, p, ok := m.get("max"); ok {
			ms.Max, _ = d.size(p, v)
			if ms.Max < ms.Mean {
				d.errorf(p, "max %d is below mean %d", ms.Max, ms.Mean)
			}
		}
		m.done("dist", "mean", "max")
	case DistCDF:
		if v, p, ok := m.get("points"); ok {
			ms.Points = d.cdfPoints(p, v)
		} else {
			d.errorf(path, "missing key \"points\" for dist cdf: [[size, probability], ...]")
		}
		m.done("dist", "points")
	}
	return ms
}

func (d *decoder) cdfPoints(path string, v any) []CDFPoint {
	items, ok := d.list(path, v)
	if !ok {
		return nil
	}
	var out []CDFPoint
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		pair, ok := it.([]any)
		if !ok || len(pair) != 2 {
			d.errorf(ip, "expected [size, probability], got %s", describe(it))
			return nil
		}
		size, ok1 := d.size(ip, pair[0])
		p, ok2 := d.number(ip, pair[1], 0, 1)
		if !ok1 || !ok2 {
			return nil
		}
		if len(out) > 0 && (size <= out[len(out)-1].Size || p < out[len(out)-1].P) {
			d.errorf(ip, "CDF points must increase in size and not decrease in probability")
			return nil
		}
		out = append(out, CDFPoint{Size: size, P: p})
	}
	if len(out) == 0 {
		d.errorf(path, "a CDF needs at least one point")
		return nil
	}
	if out[len(out)-1].P != 1 {
		d.errorf(fmt.Sprintf("%s[%d]", path, len(out)-1), "the last CDF point must have probability 1")
	}
	if out[0].Size == 0 {
		d.errorf(fmt.Sprintf("%s[0]", path), "a message of 0 bytes")
	}
	return out
}

var simKeys = []string{"duration", "sample_interval", "seed", "deadlock_window", "max_events"}

func (d *decoder) simParams(sp *SimParams, path string, v any) {
	m := d.mapping(path, v)
	if m == nil {
		return
	}
	if v, p, ok := m.get("duration"); ok {
		if t, ok := d.duration(p, v); ok {
			if t <= 0 {
				d.errorf(p, "duration must be greater than zero")
			} else {
				sp.Duration = t
			}
		}
	}
	if v, p, ok := m.get("sample_interval"); ok {
		if t, ok := d.duration(p, v); ok {
			switch {
			case t <= 0:
				d.errorf(p, "sample_interval must be greater than zero")
			case t > sp.Duration:
				d.errorf(p, "sample_interval %v is longer than the duration %v", t, sp.Duration)
			case sp.Duration/t > 1_000_000:
				d.errorf(p, "%v gives %d samples per series; at most 1000000", t, sp.Duration/t)
			default:
				sp.SampleInterval, sp.sampleSet = t, true
			}
		}
	}
	if v, p, ok := m.get("seed"); ok {
		if x, ok := d.integer(p, v, 0, math.MaxInt64); ok {
			sp.Seed = uint64(x)
		}
	}
	if v, p, ok := m.get("deadlock_window"); ok {
		if t, ok := d.duration(p, v); ok {
			if t <= 0 {
				d.errorf(p, "deadlock_window must be greater than zero")
			} else {
				sp.DeadlockWindow = t
			}
		}
	}
	if v, p, ok := m.get("max_events"); ok {
		if x, ok := d.integer(p, v, 0, math.MaxInt64); ok {
			sp.MaxEvents = uint64(x)
		}
	}
	m.done(simKeys...)
}
