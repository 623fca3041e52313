package lab

import (
	"sort"
	"strings"

	"github.com/emufabric/emufabric/clock"
)

// SONiC table names accepted in a qos section (case-insensitive, as every
// key is).
var qosTables = []string{
	"PORT_QOS_MAP", "DSCP_TO_TC_MAP", "DOT1P_TO_TC_MAP", "TC_TO_PRIORITY_GROUP_MAP",
	"TC_TO_QUEUE_MAP", "MAP_PFC_PRIORITY_TO_QUEUE", "BUFFER_POOL", "BUFFER_PROFILE",
	"BUFFER_PG", "BUFFER_QUEUE", "WRED_PROFILE", "SCHEDULER", "QUEUE", "PFC_WD",
}

// PFC watchdog defaults (SONiC pfcwd CLI).
const (
	DefaultPFCWDDetection   = 200 * clock.Millisecond
	DefaultPFCWDRestoration = 200 * clock.Millisecond
	DefaultPFCWDPoll        = 200 * clock.Millisecond
)

// qos decodes one qos section (top level or a switch's own). Tables that are
// written are non-nil (possibly empty); absent tables stay nil so that a
// switch's section replaces only the tables it writes.
func (d *decoder) qos(path string, v any) *QoS {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	q := &QoS{}
	if v, p, ok := m.get("PORT_QOS_MAP"); ok {
		q.PortQoSMap = d.portQoSMap(p, v)
	}
	if v, p, ok := m.get("DSCP_TO_TC_MAP"); ok {
		q.DSCPToTC = d.qosMap(p, v, 63, 7)
	}
	if v, p, ok := m.get("DOT1P_TO_TC_MAP"); ok {
		q.Dot1pToTC = d.qosMap(p, v, 7, 7)
	}
	if v, p, ok := m.get("TC_TO_PRIORITY_GROUP_MAP"); ok {
		q.TCToPG = d.qosMap(p, v, 7, 7)
	}
	if v, p, ok := m.get("TC_TO_QUEUE_MAP"); ok {
		q.TCToQueue = d.qosMap(p, v, 7, 7)
	}
	if v, p, ok := m.get("MAP_PFC_PRIORITY_TO_QUEUE"); ok {
		q.PFCPrioToQueue = d.qosMap(p, v, 7, 7)
	}
	if v, p, ok := m.get("BUFFER_POOL"); ok {
		q.BufferPools = d.bufferPools(p, v)
	}
	if v, p, ok := m.get("BUFFER_PROFILE"); ok {
		q.BufferProfiles = d.bufferProfiles(p, v)
	}
	if v, p, ok := m.get("BUFFER_PG"); ok {
		q.BufferPG = d.bufferBindings(p, v)
		if q.BufferPG == nil {
			q.BufferPG = []BufferBinding{}
		}
	}
	if v, p, ok := m.get("BUFFER_QUEUE"); ok {
		q.BufferQueue = d.bufferBindings(p, v)
		if q.BufferQueue == nil {
			q.BufferQueue = []BufferBinding{}
		}
	}
	if v, p, ok := m.get("WRED_PROFILE"); ok {
		q.WREDProfiles = d.wredProfiles(p, v)
	}
	if v, p, ok := m.get("SCHEDULER"); ok {
		q.Schedulers = d.schedulers(p, v)
	}
	if v, p, ok := m.get("QUEUE"); ok {
		q.Queues = d.queueBindings(p, v)
		if q.Queues == nil {
			q.Queues = []QueueBinding{}
		}
	}
	if v, p, ok := m.get("PFC_WD"); ok {
		q.PFCWD = d.pfcwd(p, v)
	}
	m.done(qosTables...)
	return q
}

func (d *decoder) portQoSMap(path string, v any) *PortQoSMap {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	pq := &PortQoSMap{}
	if v, p, ok := m.get("pfc_enable"); ok {
		if mask, ok := d.idSet(p, v, 7); ok {
			pq.PFCEnable = uint8(mask)
			pq.PFCEnableSet = true
		}
	}
	m.done("pfc_enable")
	return pq
}

// qosMap reads a map such as DSCP_TO_TC_MAP: {"26": 3, "48": 6}.
func (d *decoder) qosMap(path string, v any, maxKey, maxVal int64) map[uint8]uint8 {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	out := make(map[uint8]uint8)
	for _, e := range m.entries() {
		k, ok := d.integer(e.path, e.key, 0, maxKey)
		if !ok {
			continue
		}
		val, ok := d.integer(e.path, e.val, 0, maxVal)
		if !ok {
			continue
		}
		out[uint8(k)] = uint8(val)
	}
	return out
}

func (d *decoder) bufferPools(path string, v any) map[string]*BufferPool {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	out := make(map[string]*BufferPool)
	for _, e := range m.entries() {
		if err := checkEntryName(e.key); err != nil {
			d.errorf(e.path, "%v", err)
			continue
		}
		pm := d.mapping(e.path, e.val)
		if pm == nil {
			continue
		}
		bp := &BufferPool{Name: e.key, Type: PoolIngress, Mode: PoolDynamic, Line: d.line(e.path), path: e.path}
		if v, p, ok := pm.get("size"); ok {
			if n, ok := d.size(p, v); ok {
				bp.Size = n
				if n == 0 {
					d.errorf(p, "a pool of 0 bytes holds nothing")
				}
			}
		} else {
			d.errorf(e.path, "missing key \"size\" (bytes)")
		}
		if v, p, ok := pm.get("type"); ok {
			if t, ok := d.enum(p, v, string(PoolIngress), string(PoolEgress)); ok {
				bp.Type = PoolType(t)
			}
		}
		if v, p, ok := pm.get("mode"); ok {
			if t, ok := d.enum(p, v, string(PoolDynamic), string(PoolStatic)); ok {
				bp.Mode = PoolMode(t)
			}
		}
		if v, p, ok := pm.get("xoff"); ok {
			if n, ok := d.size(p, v); ok {
				bp.Xoff = n
				if n > 0 && bp.Type != PoolIngress {
					d.errorf(p, "xoff (shared headroom) is for ingress pools only")
				}
			}
		}
		pm.done("size", "type", "mode", "xoff")
		out[e.key] = bp
	}
	return out
}

var profileKeys = []string{"pool", "size", "dynamic_th", "static_th", "xon", "xoff", "xon_offset"}

func (d *decoder) bufferProfiles(path string, v any) map[string]*BufferProfile {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	out := make(map[string]*BufferProfile)
	for _, e := range m.entries() {
		if err := checkEntryName(e.key); err != nil {
			d.errorf(e.path, "%v", err)
			continue
		}
		pm := d.mapping(e.path, e.val)
		if pm == nil {
			continue
		}
		bp := &BufferProfile{Name: e.key, Line: d.line(e.path), path: e.path}
		if v, p, ok := pm.get("pool"); ok {
			if s, ok := d.str(p, v); ok {
				bp.Pool = stripRef(s, "BUFFER_POOL")
			}
		} else {
			d.errorf(e.path, "missing key \"pool\" (a BUFFER_POOL name)")
		}
		if v, p, ok := pm.get("size"); ok {
			bp.Size, _ = d.size(p, v)
		}
		dv, dp, hasDyn := pm.get("dynamic_th")
		sv, sp, hasStatic := pm.get("static_th")
		switch {
		case hasDyn && hasStatic:
			d.errorf(sp, "a profile has dynamic_th or static_th, not both")
		case hasDyn:
			// SONiC: alpha = 2^dynamic_th; -8 is alpha 0 (no shared
			// buffer), 7 is treated as unlimited.
			if x, ok := d.integer(dp, dv, -8, 7); ok {
				bp.DynamicTh, bp.HasDynamicTh = int(x), true
			}
		case hasStatic:
			bp.StaticTh, _ = d.size(sp, sv)
		default:
			d.errorf(e.path, "missing key \"dynamic_th\" (or static_th)")
		}
		xoffRefused := false
		for _, f := range []struct {
			key string
			dst *uint64
		}{{"xon", &bp.Xon}, {"xoff", &bp.Xoff}, {"xon_offset", &bp.XonOffset}} {
			if v, p, ok := pm.get(f.key); ok {
				var good bool
				*f.dst, good = d.size(p, v)
				xoffRefused = xoffRefused || f.key == "xoff" && !good
			}
		}
		// Not when xoff was written and refused (negative, too large): it
		// has its own error, and this one would send the user looking for
		// a key that is there.
		if (bp.Xon > 0 || bp.XonOffset > 0) && bp.Xoff == 0 && !xoffRefused {
			d.errorf(e.path, "xon and xon_offset need xoff (a lossless profile reserves xoff bytes of headroom)")
		}
		pm.done(profileKeys...)
		out[e.key] = bp
	}
	return out
}

// stripRef accepts SONiC's older reference syntax "[BUFFER_PROFILE|name]".
func stripRef(s, table string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		t = t[1 : len(t)-1]
		if rest, ok := strings.CutPrefix(t, table+"|"); ok {
			return rest
		}
	}
	return t
}

// bindingKey splits a BUFFER_PG / BUFFER_QUEUE / QUEUE key: "3-4" (every
// port) or "p1,p2|3-4".
func (d *decoder) bindingKey(path, key string) (ports []string, ids uint8, ok bool) {
	idPart := key
	if pp, rest, found := strings.Cut(key, "|"); found {
		idPart = rest
		for _, p := range strings.Split(pp, ",") {
			p = strings.TrimSpace(p)
			if err := checkName(p); err != nil {
				d.errorf(path, "port name: %v", err)
				return nil, 0, false
			}
			ports = append(ports, p)
		}
	}
	mask, err := parseIDs(strings.Split(idPart, ","), 7)
	if err != nil {
		d.errorf(path, "key %q: %v (write \"3-4\" or \"p1,p2|3-4\")", key, err)
		return nil, 0, false
	}
	return ports, uint8(mask), true
}

func (d *decoder) bufferBindings(path string, v any) []BufferBinding {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	var out []BufferBinding
	for _, e := range m.entries() {
		ports, ids, ok := d.bindingKey(e.path, e.key)
		if !ok {
			continue
		}
		b := BufferBinding{PortNames: ports, IDs: ids, Line: d.line(e.path), path: e.path}
		switch t := e.val.(type) {
		case string:
			b.Profile = stripRef(t, "BUFFER_PROFILE")
		case map[string]any, nil:
			pm := d.mapping(e.path, t)
			if pm == nil {
				continue
			}
			if v, p, ok := pm.get("profile"); ok {
				if s, ok := d.str(p, v); ok {
					b.Profile = stripRef(s, "BUFFER_PROFILE")
				}
			} else {
				d.errorf(e.path, "missing key \"profile\" (a BUFFER_PROFILE name)")
			}
			pm.done("profile")
		default:
			d.errorf(e.path, "expected a BUFFER_PROFILE name, got %s", describe(e.val))
			continue
		}
		out = append(out, b)
	}
	return out
}

func (d *decoder) wredProfiles(path string, v any) map[string]*WREDProfile {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	modes := []string{string(ECNNone), string(ECNGreen), string(ECNYellow), string(ECNRed),
		string(ECNGreenYellow), string(ECNGreenRed), string(ECNYellowRed), string(ECNAll)}
	out := make(map[string]*WREDProfile)
	for _, e := range m.entries() {
		if err := checkEntryName(e.key); err != nil {
			d.errorf(e.path, "%v", err)
			continue
		}
		pm := d.mapping(e.path, e.val)
		if pm == nil {
			continue
		}
		w := &WREDProfile{Name: e.key, ECN: ECNNone, Line: d.line(e.path), path: e.path}
		if v, p, ok := pm.get("ecn"); ok {
			if x, ok := d.enum(p, v, modes...); ok {
				w.ECN = ECNMode(x)
			}
		}
		known := []string{"ecn"}
		for _, c := range []struct {
			name string
			dst  *WREDColor
		}{{"green", &w.Green}, {"yellow", &w.Yellow}, {"red", &w.Red}} {
			en, mn, mx, pr := "wred_"+c.name+"_enable", c.name+"_min_threshold", c.name+"_max_threshold", c.name+"_drop_probability"
			known = append(known, en, mn, mx, pr)
			if v, p, ok := pm.get(en); ok {
				c.dst.Enable, _ = d.boolOrString(p, v)
			}
			_, mnPath, hasMin := pm.get(mn)
			if v, p, ok := pm.get(mn); ok {
				c.dst.MinThreshold, _ = d.size(p, v)
			}
			if v, p, ok := pm.get(mx); ok {
				c.dst.MaxThreshold, _ = d.size(p, v)
				if hasMin && c.dst.MaxThreshold < c.dst.MinThreshold {
					d.errorf(p, "%s %d is below %s %d", mx, c.dst.MaxThreshold, mn, c.dst.MinThreshold)
				}
			} else if hasMin {
				d.errorf(mnPath, "%s needs %s", mn, mx)
			}
			if v, p, ok := pm.get(pr); ok {
				if x, ok := d.integer(p, v, 0, 100); ok {
					c.dst.DropProbability = int(x)
				}
			}
		}
		pm.done(known...)
		out[e.key] = w
	}
	return out
}

// boolOrString reads SONiC's "true"/"false" strings as well as YAML booleans.
func (d *decoder) boolOrString(path string, v any) (bool, bool) {
	if s, ok := v.(string); ok {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return d.boolean(path, v)
}

func (d *decoder) schedulers(path string, v any) map[string]*Scheduler {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	out := make(map[string]*Scheduler)
	for _, e := range m.entries() {
		if err := checkEntryName(e.key); err != nil {
			d.errorf(e.path, "%v", err)
			continue
		}
		pm := d.mapping(e.path, e.val)
		if pm == nil {
			continue
		}
		sc := &Scheduler{Name: e.key, Type: SchedDWRR, Line: d.line(e.path), path: e.path}
		if v, p, ok := pm.get("type"); ok {
			if x, ok := d.enum(p, v, string(SchedStrict), string(SchedDWRR), string(SchedWRR)); ok {
				sc.Type = SchedulerType(x)
			}
		}
		if v, p, ok := pm.get("weight"); ok {
			if x, ok := d.integer(p, v, 1, 100); ok {
				sc.Weight = int(x)
				if sc.Type == SchedStrict {
					d.errorf(p, "a STRICT scheduler has no weight")
				}
			}
		} else if sc.Type != SchedStrict {
			d.errorf(e.path, "missing key \"weight\" (1..100) for a %s scheduler", sc.Type)
		}
		pm.done("type", "weight")
		out[e.key] = sc
	}
	return out
}

func (d *decoder) queueBindings(path string, v any) []QueueBinding {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	var out []QueueBinding
	for _, e := range m.entries() {
		ports, ids, ok := d.bindingKey(e.path, e.key)
		if !ok {
			continue
		}
		pm := d.mapping(e.path, e.val)
		if pm == nil {
			continue
		}
		qb := QueueBinding{PortNames: ports, Queues: ids, Line: d.line(e.path), path: e.path}
		if v, p, ok := pm.get("scheduler"); ok {
			if s, ok := d.str(p, v); ok {
				qb.Scheduler = stripRef(s, "SCHEDULER")
			}
		}
		if v, p, ok := pm.get("wred_profile"); ok {
			if s, ok := d.str(p, v); ok {
				qb.WREDProfile = stripRef(s, "WRED_PROFILE")
			}
		}
		if qb.Scheduler == "" && qb.WREDProfile == "" && len(pm.keys) == 0 {
			d.errorf(e.path, "a QUEUE entry names a scheduler, a wred_profile or both")
		}
		pm.done("scheduler", "wred_profile")
		out = append(out, qb)
	}
	return out
}

func (d *decoder) pfcwd(path string, v any) *PFCWatchdog {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	wd := &PFCWatchdog{
		PollInterval:    DefaultPFCWDPoll,
		DetectionTime:   DefaultPFCWDDetection,
		RestorationTime: DefaultPFCWDRestoration,
		Action:          PFCWDDrop,
		Line:            d.line(path),
	}
	if v, p, ok := m.get("GLOBAL"); ok {
		gm := d.mapping(p, v)
		if gm != nil {
			if v, p, ok := gm.get("POLL_INTERVAL"); ok {
				if t, ok := d.msDuration(p, v); ok {
					wd.PollInterval = t
					if t <= 0 {
						d.errorf(p, "POLL_INTERVAL must be positive")
					}
				}
			}
			gm.done("POLL_INTERVAL")
		}
	}
	if v, p, ok := m.get("ports"); ok {
		pm := d.mapping(p, v)
		if pm != nil {
			for _, f := range []struct {
				key string
				dst *clock.Time
			}{{"detection_time", &wd.DetectionTime}, {"restoration_time", &wd.RestorationTime}} {
				if v, p, ok := pm.get(f.key); ok {
					if t, ok := d.msDuration(p, v); ok {
						*f.dst = t
						if t <= 0 {
							d.errorf(p, "%s must be positive", f.key)
						}
					}
				}
			}
			if v, p, ok := pm.get("action"); ok {
				if x, ok := d.enum(p, v, string(PFCWDDrop), string(PFCWDForward), string(PFCWDAlert)); ok {
					wd.Action = PFCWDAction(x)
				}
			}
			pm.done("detection_time", "restoration_time", "action")
		}
	}
	for _, k := range m.keys {
		if !strings.EqualFold(k, "GLOBAL") && !strings.EqualFold(k, "ports") {
			m.used[strings.ToLower(k)] = true
			d.errorf(join(path, k), "unknown key %q: PFC_WD has GLOBAL (POLL_INTERVAL) and ports (detection_time, restoration_time, action, applied to every port)", k)
		}
	}
	return wd
}

// applyQoS gives every switch its effective QoS (the top-level section with
// the switch's own tables replacing whole tables), resolves port names of
// bindings, and decodes routes.
func (d *decoder) applyQoS(s *Spec, srcs map[*Node]nodeQoSSrc) {
	for _, n := range s.Nodes {
		src := srcs[n]
		if n.Kind != KindSwitch {
			continue
		}
		var own *QoS
		if src.hasQoS {
			own = d.qos(src.qosPath, src.qos)
		}
		n.QoS = mergeQoS(s.QoS, own)
		if n.QoS != nil {
			d.resolvePorts(n)
		}
		if src.hasRoutes {
			n.Routes = d.routes(s, n, src.routesPath, src.routes)
		}
	}
}

// mergeQoS returns global with own's tables replacing whole tables, as a new
// value (bindings are resolved per switch, so nothing is shared).
func mergeQoS(global, own *QoS) *QoS {
	if global == nil && own == nil {
		return nil
	}
	q := &QoS{}
	for _, src := range []*QoS{global, own} {
		if src == nil {
			continue
		}
		if src.PortQoSMap != nil {
			q.PortQoSMap = src.PortQoSMap
		}
		if src.DSCPToTC != nil {
			q.DSCPToTC = src.DSCPToTC
		}
		if src.Dot1pToTC != nil {
			q.Dot1pToTC = src.Dot1pToTC
		}
		if src.TCToPG != nil {
			q.TCToPG = src.TCToPG
		}
		if src.TCToQueue != nil {
			q.TCToQueue = src.TCToQueue
		}
		if src.PFCPrioToQueue != nil {
			q.PFCPrioToQueue = src.PFCPrioToQueue
		}
		if src.BufferPools != nil {
			q.BufferPools = src.BufferPools
		}
		if src.BufferProfiles != nil {
			q.BufferProfiles = src.BufferProfiles
		}
		if src.BufferPG != nil {
			q.BufferPG = append([]BufferBinding{}, src.BufferPG...)
		}
		if src.BufferQueue != nil {
			q.BufferQueue = append([]BufferBinding{}, src.BufferQueue...)
		}
		if src.WREDProfiles != nil {
			q.WREDProfiles = src.WREDProfiles
		}
		if src.Schedulers != nil {
			q.Schedulers = src.Schedulers
		}
		if src.Queues != nil {
			q.Queues = append([]QueueBinding{}, src.Queues...)
		}
		if src.PFCWD != nil {
			q.PFCWD = src.PFCWD
		}
	}
	return q
}

// resolvePorts turns the port names of a switch's bindings into indexes.
func (d *decoder) resolvePorts(n *Node) {
	resolve := func(path string, names []string) []int {
		var idx []int
		for _, name := range names {
			p := n.Port(name)
			if p == nil {
				d.errorf(path, "port %q is not a port of switch %s (%s)", name, n.Name, portNames(n))
				continue
			}
			idx = append(idx, p.Index)
		}
		sort.Ints(idx)
		return idx
	}
	for i := range n.QoS.BufferPG {
		b := &n.QoS.BufferPG[i]
		b.Ports = resolve(b.path, b.PortNames)
	}
	for i := range n.QoS.BufferQueue {
		b := &n.QoS.BufferQueue[i]
		b.Ports = resolve(b.path, b.PortNames)
	}
	for i := range n.QoS.Queues {
		b := &n.QoS.Queues[i]
		b.Ports = resolve(b.path, b.PortNames)
	}
}
