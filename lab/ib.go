package lab

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/emufabric/emufabric/clock"
)

// InfiniBand defaults. OpenSM's own defaults (15 VLs, SL i -> VL i) need 15
// VL buffers per port; a lab starts with one data VL, the common case, and
// the ib section adds more.
const (
	DefaultIBMaxVLs       = 1
	DefaultIBHighLimit    = 0
	DefaultIBVLBuffer     = 64 << 10 // 1024 credits of 64 bytes
	DefaultIBCreditUpdate = 4096 * clock.Nanosecond
	// IBCreditBytes is the size of one IB flow-control credit.
	IBCreditBytes = 64
	// maxIBVLBuffer is the 2048-block credit window (IBA 7.9.4).
	maxIBVLBuffer = 2048 * IBCreditBytes
)

var ibKeys = []string{"max_vls", "sl2vl", "vlarb_high", "vlarb_low", "high_limit", "vl_buffer", "credit_update", "sm", "cc"}

// DefaultIBSweepInterval is the SM's light-sweep period when the sm
// section gives none. OpenSM's sweep_interval is 10 s on real fabrics; a
// simulated run lasts milliseconds, so a light sweep every 100 µs is what
// lets a link cut be noticed within a run.
const DefaultIBSweepInterval = 100 * clock.Microsecond

// IBSubnetManager is the ib section's sm key: the fabric starts
// unconfigured (no LIDs, empty forwarding tables, ports in Init) and a
// subnet manager on Host discovers it with directed-route SMPs, assigns
// LIDs, programs every switch's forwarding table and activates the ports
// (IBA 14). Written "sm: h1" or "sm: {host: h1, sweep_interval: 50us}".
type IBSubnetManager struct {
	// Host is the NIC node whose HCA runs the SM (as OpenSM runs on a
	// host and binds to one of its ports).
	Host string
	// SweepInterval is the light-sweep period (OpenSM sweep_interval):
	// how often the SM reads every switch's SwitchInfo to notice a port
	// that went down or came up. Zero disables light sweeps.
	SweepInterval clock.Time
	// Path is the field path, for messages about the host; Line its line.
	Path string
	Line int
}

func defaultIB() *IBConfig {
	c := &IBConfig{
		MaxVLs:       DefaultIBMaxVLs,
		HighLimit:    DefaultIBHighLimit,
		VLBuffer:     DefaultIBVLBuffer,
		CreditUpdate: DefaultIBCreditUpdate,
	}
	c.setDefaultTables()
	return c
}

// setDefaultTables derives SL2VL (SL i -> VL i mod MaxVLs) and a low-priority
// table giving every data VL weight 4, as OpenSM's default low table does.
func (c *IBConfig) setDefaultTables() {
	for sl := range c.SL2VL {
		c.SL2VL[sl] = uint8(sl % c.MaxVLs)
	}
	c.VLArbHigh = nil
	c.VLArbLow = nil
	for vl := 0; vl < c.MaxVLs; vl++ {
		c.VLArbLow = append(c.VLArbLow, VLArbEntry{VL: uint8(vl), Weight: 4})
	}
}

// ibConfig decodes an ib section over base (a copy is returned). Changing
// max_vls without writing sl2vl / vlarb tables re-derives them.
func (d *decoder) ibConfig(path string, v any, base *IBConfig) *IBConfig {
	c := *base
	c.VLArbHigh = append([]VLArbEntry(nil), base.VLArbHigh...)
	c.VLArbLow = append([]VLArbEntry(nil), base.VLArbLow...)
	m := d.mapping(path, v)
	if m == nil {
		return &c
	}
	// The SL2VL and arbitration tables are checked against max_vls; when
	// max_vls itself is refused they are not checked at all (against the
	// previous max_vls every VL above 0 was named out of range too).
	if v, p, ok := m.get("max_vls"); ok {
		x, ok := d.integer(p, v, 1, 8)
		c.badVLs = !ok
		if ok && x != int64(c.MaxVLs) {
			c.MaxVLs = int(x)
			c.setDefaultTables()
		}
	}
	vlsOK := !c.badVLs
	if v, p, ok := m.get("sl2vl"); ok && vlsOK {
		if t, ok := d.sl2vl(p, v, c.MaxVLs); ok {
			c.SL2VL = t
		}
	}
	if v, p, ok := m.get("vlarb_high"); ok && vlsOK {
		c.VLArbHigh = d.vlarb(p, v, c.MaxVLs)
	}
	if v, p, ok := m.get("vlarb_low"); ok && vlsOK {
		c.VLArbLow = d.vlarb(p, v, c.MaxVLs)
		if len(c.VLArbLow) == 0 && len(c.VLArbHigh) == 0 {
			d.errorf(p, "both VL arbitration tables are empty: no VL could ever send")
		}
	}
	if v, p, ok := m.get("high_limit"); ok {
		if x, ok := d.integer(p, v, 0, 255); ok {
			c.HighLimit = int(x)
		}
	}
	if v, p, ok := m.get("vl_buffer"); ok {
		if n, ok := d.size(p, v); ok {
			switch {
			case n%IBCreditBytes != 0:
				d.errorf(p, "%d bytes is not a whole number of 64-byte credits", n)
			case n == 0 || n > maxIBVLBuffer:
				d.errorf(p, "%d bytes: a VL buffer holds 64 B to 128 KiB (the 2048-credit window)", n)
			default:
				c.VLBuffer = n
			}
		}
	}
	if v, p, ok := m.get("credit_update"); ok {
		if t, ok := d.duration(p, v); ok {
			if t <= 0 {
				d.errorf(p, "credit_update must be positive")
			} else {
				c.CreditUpdate = t
			}
		}
	}
	if v, p, ok := m.get("sm"); ok {
		if path != "ib" {
			d.errorf(p, "the subnet manager is lab-wide: set sm in the top-level ib section")
		} else {
			c.SM = d.ibSM(p, v)
		}
	}
	if v, p, ok := m.get("cc"); ok {
		c.CC = d.ibcc(p, v) // ibcc.go
	}
	m.done(ibKeys...)
	return &c
}

// ibSM reads the sm key: a host name or {host, sweep_interval}.
func (d *decoder) ibSM(path string, v any) *IBSubnetManager {
	sm := &IBSubnetManager{SweepInterval: DefaultIBSweepInterval, Path: path, Line: d.line(path)}
	if name, ok := v.(string); ok {
		sm.Host = name
		return sm
	}
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	if v, p, ok := m.get("host"); ok {
		if name, ok := d.str(p, v); ok {
			sm.Host, sm.Path = name, p
		}
	} else {
		d.errorf(path, "missing key \"host\" (the NIC node that runs the subnet manager)")
	}
	if v, p, ok := m.get("sweep_interval"); ok {
		if t, ok := d.duration(p, v); ok {
			if t < 0 {
				d.errorf(p, "sweep_interval must not be negative (0 disables light sweeps)")
			} else {
				sm.SweepInterval = t
			}
		}
	}
	m.done("host", "sweep_interval")
	if sm.Host == "" {
		return nil
	}
	return sm
}

// checkIBSM checks that the subnet manager runs on a connected NIC node.
func (d *decoder) checkIBSM(s *Spec) {
	sm := s.IB.SM
	if sm == nil {
		return
	}
	n := s.Node(sm.Host)
	switch {
	case n == nil:
		d.errorf(sm.Path, "no node %q: the subnet manager runs on a NIC node", sm.Host)
	case n.Kind != KindNIC:
		d.errorf(sm.Path, "%s is a %s: the subnet manager runs on a NIC node's HCA", sm.Host, n.Kind)
	default:
		for _, p := range n.Ports {
			if p.Link != nil {
				return
			}
		}
		d.errorf(sm.Path, "%s has no link: the subnet manager could not reach the fabric", sm.Host)
	}
}

// sl2vl reads 16 VLs: "0,1,0,1,..." or a list. VL 15 means drop.
func (d *decoder) sl2vl(path string, v any, maxVLs int) ([16]uint8, bool) {
	var out [16]uint8
	var parts []string
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			s, ok := scalarString(x)
			if !ok {
				d.errorf(path, "expected 16 VL numbers, got %s", describe(x))
				return out, false
			}
			parts = append(parts, s)
		}
	case string:
		parts = strings.Split(t, ",")
	default:
		d.errorf(path, "expected 16 VL numbers such as \"0,1,0,1,...\", got %s", describe(v))
		return out, false
	}
	if len(parts) != 16 {
		d.errorf(path, "SL2VL has one VL per SL: 16 entries, got %d", len(parts))
		return out, false
	}
	for i, p := range parts {
		vl, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || vl < 0 || (vl >= maxVLs && vl != 15) {
			d.errorf(path, "SL %d -> %q: a VL is 0..%d (max_vls %d) or 15 (drop)", i, strings.TrimSpace(p), maxVLs-1, maxVLs)
			return out, false
		}
		out[i] = uint8(vl)
	}
	return out, true
}

// vlarb reads an arbitration table: "0:4,1:8", a list of "vl:weight"
// strings, or a list of {vl, weight} mappings.
func (d *decoder) vlarb(path string, v any, maxVLs int) []VLArbEntry {
	var items []any
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		if strings.TrimSpace(t) == "" {
			return nil
		}
		for _, s := range strings.Split(t, ",") {
			items = append(items, s)
		}
	case []any:
		items = t
	default:
		d.errorf(path, "expected entries such as \"0:4,1:8\", got %s", describe(v))
		return nil
	}
	if len(items) > 64 {
		d.errorf(path, "%d entries: a VL arbitration table has at most 64", len(items))
		return nil
	}
	var out []VLArbEntry
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		var vlv, wv any
		switch t := it.(type) {
		case string:
			a, b, ok := strings.Cut(t, ":")
			if !ok {
				d.errorf(path, "entry %q is not \"vl:weight\"", strings.TrimSpace(t))
				continue
			}
			vlv, wv = strings.TrimSpace(a), strings.TrimSpace(b)
			ip = path
		case map[string]any, nil:
			m := d.mapping(ip, t)
			if m == nil {
				continue
			}
			var p string
			var ok bool
			if vlv, p, ok = m.get("vl"); !ok {
				d.errorf(ip, "missing key \"vl\"")
				continue
			}
			_ = p
			if wv, _, ok = m.get("weight"); !ok {
				d.errorf(ip, "missing key \"weight\" (64-byte units, 0..255)")
				continue
			}
			m.done("vl", "weight")
		default:
			d.errorf(ip, "expected \"vl:weight\" or {vl, weight}, got %s", describe(it))
			continue
		}
		vl, ok1 := d.integer(ip, vlv, 0, int64(maxVLs-1))
		w, ok2 := d.integer(ip, wv, 0, 255)
		if ok1 && ok2 {
			out = append(out, VLArbEntry{VL: uint8(vl), Weight: uint8(w)})
		}
	}
	return out
}

// applyNodeIB gives nodes with their own ib section a merged IBConfig.
func (d *decoder) applyNodeIB(s *Spec, srcs map[*Node]nodeQoSSrc) {
	d.checkIBSM(s)
	for _, n := range s.Nodes {
		src := srcs[n]
		if src.hasIB {
			n.IB = d.ibConfig(src.ibPath, src.ib, s.IB)
		}
	}
}

// IBConfigOf returns the node's IB configuration: its own or the lab's.
func (s *Spec) IBConfigOf(n *Node) *IBConfig {
	if n.IB != nil {
		return n.IB
	}
	return s.IB
}

// IBGUID is the node GUID every driver (the simulator, emuswitch, emunic)
// gives the node called name, so an SM sees the same fabric in each:
// FNV-64a of the name with the low byte cleared, so a CA's port GUID (node
// GUID + port) stays distinct.
func IBGUID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() &^ 0xFF
}

// IBOf returns a node's IB settings: its own ib mapping, else the lab's
// (nil outside an IB lab). Every driver of a node reads them here.
func (s *Spec) IBOf(n *Node) *IBConfig {
	if n.IB != nil {
		return n.IB
	}
	return s.IB
}

// BlocksPerVL is the VL buffer in 64-byte credit blocks (at most 2048,
// the credit window: Load refuses more).
func (c *IBConfig) BlocksPerVL() int { return int(c.VLBuffer / IBCreditBytes) }

// SLToVL is the SL-to-VL table with every VL within the MaxVLs data VLs
// (an entry beyond them is taken modulo, as the simulator's hosts do).
func (c *IBConfig) SLToVL() [16]uint8 {
	var t [16]uint8
	vls := uint8(max(c.MaxVLs, 1))
	for sl := range t {
		t[sl] = c.SL2VL[sl] % vls
	}
	return t
}
