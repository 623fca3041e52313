package lab

import (
	"fmt"
	"strings"

	"github.com/emufabric/emufabric/cc"
)

// IBCC is the ib section's cc key: InfiniBand congestion control (IBA
// Annex A10) with OpenSM's knob names (cc_sw_cong_setting_* for the
// switches, cc_ca_cong_setting_* and cc_cct for the hosts) without their
// prefixes. Written "cc: true" for the defaults or as a mapping:
//
//	cc:
//	  threshold: 12        # switch: 0 (never) .. 15 (most aggressive)
//	  marking_rate: 1      # switch: eligible packets skipped after each mark
//	  packet_size: 1       # switch: smaller packets (64-byte credits) never marked
//	  victim_mask: ca      # switch: ca | all | none, ports that mark while credit-starved
//	  port_control: qp     # host: one CCTI per qp or per sl
//	  ccti_increase: 1
//	  ccti_limit: 127      # default: the last table entry
//	  ccti_min: 0
//	  ccti_timer: 10       # units of 1.024 us
//	  trigger_threshold: 0
//	  cct: mellanox        # mellanox, linear:N:STEP, or "shift:mult,shift:mult,..."
type IBCC struct {
	// Switch side (SwitchCongestionSetting).
	Threshold   uint8
	MarkingRate uint16
	PacketSize  uint8
	VictimMask  string // VictimCA, VictimAll or VictimNone
	// CA is the host side (CACongestionSetting and the CCT).
	CA cc.IBCC
	// Path is the section's field path, for messages.
	Path string
}

// Victim mask choices: the ports that mark while they wait for credit.
const (
	// VictimCA marks on switch ports whose peer is a host: a channel
	// adapter does not mark, so a slow receiver would otherwise never be
	// seen as congested.
	VictimCA   = "ca"
	VictimAll  = "all"
	VictimNone = "none"
)

// Switch-side defaults. The annex gives none. Threshold 12 marks above a
// quarter of a VL buffer, and every other eligible packet is marked: on
// examples/ib-cc.yaml (100G, 1 µs links, 64 KiB VL buffers, CCTI_Timer
// 10.24 µs) this keeps the hot spot's link above 95 % busy with the hot
// flows within 10 % of their fair share, where threshold 15 with every
// packet marked over-throttles (about 70 % busy). Every packet size is
// eligible, as in the LLNL study's setups.
const (
	DefaultIBCCThreshold   = 12
	DefaultIBCCMarkingRate = 1
	DefaultIBCCPacketSize  = 1
)

var ibccKeys = []string{"threshold", "marking_rate", "packet_size", "victim_mask", "port_control",
	"ccti_increase", "ccti_limit", "ccti_min", "ccti_timer", "trigger_threshold", "cct"}

// DefaultIBCC returns the settings of "cc: true".
func DefaultIBCC() *IBCC {
	return &IBCC{Threshold: DefaultIBCCThreshold, MarkingRate: DefaultIBCCMarkingRate, PacketSize: DefaultIBCCPacketSize,
		VictimMask: VictimCA, CA: cc.DefaultIBCC()}
}

// ibcc decodes the cc key; nil when it is false or invalid.
func (d *decoder) ibcc(path string, v any) *IBCC {
	c := DefaultIBCC()
	c.Path = path
	if b, ok := v.(bool); ok {
		if !b {
			return nil
		}
		return c
	}
	m := d.mapping(path, v)
	if m == nil {
		return nil
	}
	num := func(key string, hi int64, set func(int64)) {
		if v, p, ok := m.get(key); ok {
			if x, ok := d.integer(p, v, 0, hi); ok {
				set(x)
			}
		}
	}
	num("threshold", 15, func(x int64) { c.Threshold = uint8(x) })
	num("marking_rate", 0xFFFF, func(x int64) { c.MarkingRate = uint16(x) })
	num("packet_size", 0xFF, func(x int64) { c.PacketSize = uint8(x) })
	if v, p, ok := m.get("victim_mask"); ok {
		if s, ok := d.enum(p, v, VictimCA, VictimAll, VictimNone); ok {
			c.VictimMask = s
		}
	}
	if v, p, ok := m.get("port_control"); ok {
		if s, ok := d.enum(p, v, "qp", "sl"); ok {
			c.CA.PortControl = cc.PortControlQP
			if s == "sl" {
				c.CA.PortControl = cc.PortControlSL
			}
		}
	}
	ca := &c.CA
	num("ccti_increase", 0xFF, func(x int64) { ca.CCTIIncrease = uint8(x) })
	num("ccti_min", 0xFF, func(x int64) { ca.CCTIMin = uint8(x) })
	num("ccti_timer", 0xFFFF, func(x int64) { ca.CCTITimer = uint16(x) })
	num("trigger_threshold", 0xFF, func(x int64) { ca.TriggerThreshold = uint8(x) })
	tablePath := path
	if v, p, ok := m.get("cct"); ok {
		tablePath = p
		if t, ok := d.cct(p, v); ok {
			ca.CCT = t
			ca.CCTILimit = uint16(len(t) - 1)
		}
	}
	limitPath := tablePath
	if v, p, ok := m.get("ccti_limit"); ok {
		limitPath = p
		if x, ok := d.integer(p, v, 0, cc.MaxCCTEntries-1); ok {
			ca.CCTILimit = uint16(x)
		}
	}
	m.done(ibccKeys...)
	if err := ca.Validate(); err != nil {
		at := path
		// The error names its knob first (cc.IBCC.Validate).
		switch knob, _, _ := strings.Cut(err.Error(), ":"); knob {
		case "ccti_limit":
			at = limitPath
		case "cct":
			at = tablePath
		case "ccti_increase", "ccti_min", "port_control":
			at = join(path, knob)
		}
		d.errorf(at, "%v", err)
		return nil
	}
	return c
}

// cct reads a congestion control table: "mellanox", "linear:N:STEP" (N
// entries, entry i delaying i*STEP quarter packet times), OpenSM's
// "shift:mult,shift:mult,..." or a list of "shift:mult" strings.
func (d *decoder) cct(path string, v any) ([]cc.CCTEntry, bool) {
	var s string
	switch t := v.(type) {
	case string:
		s = strings.TrimSpace(t)
	case []any:
		parts := make([]string, 0, len(t))
		for _, x := range t {
			p, ok := scalarString(x)
			if !ok {
				d.errorf(path, "expected \"shift:multiplier\" entries, got %s", describe(x))
				return nil, false
			}
			parts = append(parts, p)
		}
		s = strings.Join(parts, ",")
	default:
		d.errorf(path, "expected mellanox, linear:N:STEP or \"shift:multiplier,...\", got %s", describe(v))
		return nil, false
	}
	switch {
	case strings.EqualFold(s, "mellanox"):
		return cc.MellanoxCCT(), true
	case strings.HasPrefix(strings.ToLower(s), "linear:"):
		var n, step int
		if _, err := fmt.Sscanf(strings.ToLower(s), "linear:%d:%d", &n, &step); err != nil || n < 1 || n > cc.MaxCCTEntries || step < 0 || step > 0x3FFF {
			d.errorf(path, "%q: linear:N:STEP needs 1 <= N <= %d entries and 0 <= STEP <= 16383", s, cc.MaxCCTEntries)
			return nil, false
		}
		return cc.LinearCCT(n, step), true
	}
	t, err := cc.ParseCCT(s)
	if err != nil {
		d.errorf(path, "%v", err)
		return nil, false
	}
	return t, true
}
