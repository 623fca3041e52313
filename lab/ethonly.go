package lab

import "strings"

// Settings of an Ethernet fabric that an InfiniBand lab has no use for.
// Read and then ignored they would leave a user believing, say, that
// pfc_quanta or a DSCP changes an IB run; refused, the error names the
// line and says what IB has instead.

// Each map gives, per key, why IB has none of it.
var (
	ethernetOnlySwitchKeys = map[string]string{
		"trust":        "classification by DSCP or 802.1Q PCP is Ethernet's; an IB switch maps the packet's SL to a VL (ib.sl2vl)",
		"ecn_mark":     "ECN is an IP field; IB switches mark FECN (ib.cc)",
		"pfc_quanta":   "PFC is Ethernet; IB links have credits",
		"pfc_refresh":  "PFC is Ethernet; IB links have credits",
		"mac_learning": "an IB switch forwards by destination LID (the subnet manager's forwarding table), not by MAC",
		"qos":          "the SONiC tables (PFC, ECN, buffers, schedulers) are Ethernet's; IB's QoS is the ib section (sl2vl, vlarb_high, vlarb_low, vl_buffer)",
	}
	ethernetOnlyNICKeys = map[string]string{
		"trust":      "an HCA sends no 802.1Q tag; an IB flow's service level is its sl",
		"vid":        "an HCA sends no 802.1Q tag; IB packets have an LRH, not a VLAN",
		"ignore_pfc": "PFC is Ethernet; IB links have credits",
		"dcqcn":      "DCQCN is RoCE's congestion control; IB's is the ib.cc section (IBA Annex A10)",
	}
	ethernetOnlyTopKeys = map[string]string{
		"qos":   ethernetOnlySwitchKeys["qos"],
		"dcqcn": ethernetOnlyNICKeys["dcqcn"],
	}
	ethernetOnlyFlowKeys = map[string]string{
		"priority": "an IB flow has no Ethernet priority; its sl (0..15) picks the VL",
		"dscp":     "DSCP is an IP field; an IB flow's sl (0..15) picks the VL",
	}
)

// refuseEthernetOnly reports every key of m listed in keys, in the order
// the keys were written, when the lab is native InfiniBand.
func (d *decoder) refuseEthernetOnly(s *Spec, m *mapping, keys map[string]string) {
	if s.Fabric != FabricIB || m == nil {
		return
	}
	for _, k := range m.keys {
		if why, ok := keys[strings.ToLower(k)]; ok {
			d.errorf(join(m.path, k), "not for fabric: ib: %s", why)
		}
	}
}
