package lab

import (
	"math"
	"reflect"
	"strings"

	"github.com/emufabric/emufabric/cc"
)

// RDMA traffic: a traffic entry with `op` is a perftest-like stream of
// verbs (RDMA WRITE, RDMA READ or SEND) on reliable connections between
// two real NICs (the nic package), with their transport, go-back-N and
// DCQCN. A nic node that is the source or destination of such a flow is a
// real NIC in the simulator; the other nic nodes stay synthetic traffic
// endpoints (raw `kind` flows), so the existing labs keep their results.
// One host is one or the other: it cannot carry both kinds of flow.

// RDMAOp is the verb of an RDMA flow.
type RDMAOp string

const (
	OpNone  RDMAOp = ""      // a raw flow (kind rdma_write or ud_send)
	OpWrite RDMAOp = "write" // IBV_WR_RDMA_WRITE: data src -> dst
	OpRead  RDMAOp = "read"  // IBV_WR_RDMA_READ: src reads dst, data dst -> src
	OpSend  RDMAOp = "send"  // IBV_WR_SEND: dst keeps receive WQEs posted
)

// Congestion control of an RDMA flow's data sender.
const (
	CCDCQCN = "dcqcn"
	CCNone  = "none"
)

// DCQCN profile names (the `profile` key of a dcqcn section).
const (
	ProfileNVIDIA = "nvidia" // cc.NVIDIAProfile: ConnectX firmware defaults
	ProfilePaper  = "paper"  // cc.PaperProfile: SIGCOMM'15 constants
)

// rdmaKeys are the traffic keys of RDMA flows only.
var rdmaKeys = []string{"op", "qps", "depth", "cc"}

// rawOnlyKeys are traffic keys that describe the synthetic generator and
// mean nothing for a stream of verbs.
var rawOnlyKeys = []string{"kind", "rate", "arrival", "load", "on", "off", "sport", "sl", "ecn"}

// rdmaSettings reads op, qps, depth and cc of a traffic entry.
func (d *decoder) rdmaSettings(s *Spec, m *mapping, f *Flow) {
	v, p, ok := m.get("op")
	if !ok {
		for _, k := range rdmaKeys[1:] {
			if _, kp, ok := m.get(k); ok {
				d.errorf(kp, "%s is for RDMA flows: add op: write, read or send", k)
			}
		}
		return
	}
	x, ok := d.enum(p, v, string(OpWrite), string(OpRead), string(OpSend))
	if !ok {
		return
	}
	f.Op = RDMAOp(x)
	f.QPs, f.Depth = 1, 16
	for _, k := range rawOnlyKeys {
		if k == "sl" && s.Fabric == FabricIB {
			continue // the QPs' service level on native IB
		}
		if _, kp, ok := m.get(k); ok {
			d.errorf(kp, "%s is for raw flows (kind); an op flow posts verbs as fast as the NIC and its congestion control allow", k)
		}
	}
	if v, p, ok := m.get("qps"); ok {
		if n, ok := d.integer(p, v, 1, 1024); ok {
			f.QPs = int(n)
		}
	}
	if v, p, ok := m.get("depth"); ok {
		if n, ok := d.integer(p, v, 1, 4096); ok {
			f.Depth = int(n)
		}
	}
	if v, p, ok := m.get("cc"); ok {
		if c, ok := d.enum(p, v, CCDCQCN, CCNone); ok {
			f.CC = c
			if c == CCDCQCN && s.Fabric == FabricIB {
				d.errorf(p, "fabric ib: congestion control is the IB annex's (the ib.cc section); cc: none turns it off for this sender")
			}
		}
	}
}

// dcqcnKnobs maps each NVIDIA knob name to its field index in cc.DCQCN.
var dcqcnKnobs = func() map[string]int {
	m := make(map[string]int)
	t := reflect.TypeFor[cc.DCQCN]()
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("mapstructure"); tag != "" {
			m[tag] = i
		}
	}
	return m
}()

// dcqcn reads a dcqcn section: `profile: nvidia|paper` (default nvidia)
// and any knob under its NVIDIA name, e.g. rp_ai_rate: 100.
func (d *decoder) dcqcn(path string, v any) *cc.DCQCN {
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	prof := cc.NVIDIAProfile()
	if v, p, ok := m.get("profile"); ok {
		if x, ok := d.enum(p, v, ProfileNVIDIA, ProfilePaper); ok && x == ProfilePaper {
			prof = cc.PaperProfile()
		}
	}
	known := []string{"profile"}
	rv := reflect.ValueOf(&prof).Elem()
	for _, name := range sortedKeys(dcqcnKnobs) {
		known = append(known, name)
		v, p, ok := m.get(name)
		if !ok {
			continue
		}
		fv := rv.Field(dcqcnKnobs[name])
		switch fv.Kind() {
		case reflect.Float64:
			if x, ok := d.number(p, v, -math.MaxFloat64, math.MaxFloat64); ok {
				fv.SetFloat(x)
			}
		case reflect.Int:
			if x, ok := d.integer(p, v, math.MinInt32, math.MaxInt32); ok {
				fv.SetInt(x)
			}
		case reflect.Uint8:
			if x, ok := d.integer(p, v, 0, 255); ok {
				fv.SetUint(uint64(x))
			}
		case reflect.Uint64:
			if x, ok := d.integer(p, v, 0, math.MaxInt64); ok {
				fv.SetUint(uint64(x))
			}
		case reflect.Bool:
			if b, ok := d.boolean(p, v); ok {
				fv.SetBool(b)
			}
		}
	}
	m.done(known...)
	if err := prof.Validate(); err != nil {
		// cc names the knob first ("rp_gd: must be ..."): point at it,
		// or, when the section leaves it to the profile, at another knob
		// the message names that the section writes (rp_min_rate of the
		// profile above a written rp_max_rate).
		at := path
		if knob, rest, ok := strings.Cut(err.Error(), ":"); ok {
			if _, p, written := m.get(knob); written {
				at = p
			} else {
				for _, name := range sortedKeys(dcqcnKnobs) {
					if _, p, written := m.get(name); written && strings.Contains(rest, name) {
						at = p
						break
					}
				}
			}
		}
		d.errorf(at, "%v", err)
		return nil
	}
	return &prof
}

// validateRDMA runs after the flows are validated: it marks the NICs that
// carry RDMA flows, refuses hosts with both kinds of flow, settles each
// data sender's congestion control, and bounds flows without a count.
func (d *decoder) validateRDMA(s *Spec) {
	raw := make(map[*Node]*Flow)
	rdma := make(map[*Node]*Flow)
	ccOf := make(map[*Node]*Flow)     // the flow that set a NIC's cc
	reported := make(map[string]bool) // traffic entries refused for their DSCP
	for _, f := range s.Traffic {
		ends := append([]*Node{f.Src}, f.Dst...)
		if f.Op == OpNone {
			for _, n := range ends {
				if raw[n] == nil {
					raw[n] = f
				}
			}
			continue
		}
		if len(f.Dst) != 1 {
			d.errorf(f.path, "an RDMA flow connects one source to one destination (pattern random picks a destination per message)")
			continue
		}
		for _, n := range ends {
			if rdma[n] == nil {
				rdma[n] = f
			}
			n.RDMA = true
		}
		// The QPs carry the DSCP and the NIC classifies their frames by
		// it (trust dscp, DSCP >> 3: the lab has no dscp2prio), so the
		// PFC priority they obey is DSCP >> 3 whatever priority says.
		// An entry expanded to several flows is reported once.
		if s.Fabric != FabricIB && f.DSCP>>3 != f.Priority && !reported[f.path] {
			reported[f.path] = true
			d.errorf(join(f.path, "dscp"), "an RDMA flow's NIC classifies DSCP %d to priority %d (DSCP >> 3), not priority %d: write dscp %d for priority %d, or leave one of the two out",
				f.DSCP, f.DSCP>>3, f.Priority, defaultDSCP(f.Priority), f.Priority)
		}
		if f.Size.Dist != DistFixed {
			d.errorf(join(f.path, "size"), "an RDMA flow posts messages of one size (perftest -s); got a %s distribution", f.Size.Dist)
		} else if f.Size.Size > 1<<30 {
			d.errorf(join(f.path, "size"), "message of %d bytes: at most 1 GiB (each QP registers a region of the message size on both NICs)", f.Size.Size)
		}
		if f.CC == "" {
			continue
		}
		// DCQCN paces the data sender: the requester for WRITE and SEND,
		// the responder for READ.
		sender := f.Src
		if f.Op == OpRead {
			sender = f.Dst[0]
		}
		if prev := ccOf[sender]; prev != nil && prev.CC != f.CC {
			d.errorf(join(f.path, "cc"), "cc %s, but flow %s (line %d) sets cc %s on %s: congestion control is per NIC", f.CC, prev.Name, prev.Line, prev.CC, sender.Name)
			continue
		}
		ccOf[sender] = f
		sender.CC = f.CC
	}
	for _, n := range s.Nodes {
		if n.RDMA && raw[n] != nil {
			d.errorf(raw[n].path, "%s is a real NIC (RDMA flow %s, line %d) and cannot also carry raw flows (kind); give the raw flow its own host or an op",
				n.Name, rdma[n].Name, rdma[n].Line)
		}
		if n.RDMA && n.Storm != nil {
			d.errorf("topology.nodes."+n.Name+".pfc_storm", "%s is a real NIC (RDMA flow %s): the PFC storm is a synthetic host's fault", n.Name, rdma[n].Name)
		}
		if n.DCQCN != nil && !n.RDMA {
			d.warnf("topology.nodes."+n.Name+".dcqcn", "%s carries no RDMA flow (op): its dcqcn settings have no effect", n.Name)
		}
	}
}

// DCQCNOf returns the DCQCN knobs of a NIC node: its own dcqcn section,
// else the lab's, else nil (the NIC's default, cc.NVIDIAProfile).
func (s *Spec) DCQCNOf(n *Node) *cc.DCQCN {
	if n.DCQCN != nil {
		return n.DCQCN
	}
	return s.DCQCN
}

func (o RDMAOp) String() string {
	if o == OpNone {
		return "raw"
	}
	return string(o)
}
