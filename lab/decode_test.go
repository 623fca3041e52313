package lab

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// TestPerSwitchQoS: a switch's own qos tables replace the top-level tables
// of the same name; other tables are inherited; built-in names resolve.
func TestPerSwitchQoS(t *testing.T) {
	y := strings.Replace(base, "    sw1: {kind: switch, ports: 4}", `    sw1:
      kind: switch
      ports: 4
      qos:
        PORT_QOS_MAP: {pfc_enable: [3, 4]}
        BUFFER_PG: {"p1,p2|3": pg_lossless, "4": pg_lossless_profile}
        QUEUE: {"3-4": {scheduler: scheduler.1, wred_profile: AZURE_LOSSLESS}}`, 1)
	s, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	q := s.Node("sw1").QoS
	if q.PortQoSMap.PFCEnable != 1<<3|1<<4 {
		t.Errorf("pfc_enable %08b", q.PortQoSMap.PFCEnable)
	}
	if len(q.BufferPG) != 2 || q.BufferPG[0].IDs != 1<<3 || len(q.BufferPG[0].Ports) != 2 || q.BufferPG[0].Ports[1] != 1 ||
		q.BufferPG[1].Ports != nil || q.BufferPG[1].Profile != "pg_lossless_profile" {
		t.Errorf("BUFFER_PG %+v", q.BufferPG)
	}
	if q.BufferProfiles["pg_lossless"] == nil || q.BufferPools["ingress_lossless_pool"] == nil {
		t.Errorf("inherited tables missing: %+v", q)
	}
	if len(q.Queues) != 1 || q.Queues[0].Queues != 1<<3|1<<4 || q.Queues[0].Scheduler != "scheduler.1" {
		t.Errorf("QUEUE %+v", q.Queues)
	}
	// The top-level section is unchanged.
	if s.QoS.PortQoSMap.PFCEnable != 1<<3 || len(s.QoS.BufferPG) != 1 || s.QoS.BufferPG[0].Ports != nil {
		t.Errorf("top-level qos modified: %+v", s.QoS)
	}
}

func TestRoutesAndPatterns(t *testing.T) {
	y := `name: r
topology:
  nodes:
    s1: {kind: switch, routes: [{dst: 10.0.0.0/24, via: [p2, p3]}, {dst: h1, via: p1}]}
    s2: {kind: switch}
    s3: {kind: switch}
    s4: {kind: switch}
    h1: {kind: nic, ipv4: 10.0.1.1, mac: "02:aa:00:00:00:01"}
    h2: {kind: nic}
    h3: {kind: nic}
  links:
    - endpoints: [h1:eth0, s1:p1]
    - endpoints: [s1:p2, s2:p1]
    - endpoints: [s1:p3, s3:p1]
    - endpoints: [s2:p2, s4:p1]
    - endpoints: [s3:p2, s4:p2]
    - endpoints: [s4:p3, h2:eth0]
    - endpoints: [s4:p4, h3:eth0]
traffic:
  - {name: all, src: [h1, h2, h3], dst: [h1, h2, h3], pattern: all_to_all, size: {dist: uniform, min: 1KiB, max: 8KiB}}
  - {name: pairs, src: [h1, h2], dst: [h2, h3], pattern: pairs, arrival: onoff, on: 10us, off: 5us}
  - {name: fan, src: h1, dst: [h2, h3], size: {dist: exponential, mean: 64KiB, max: 1MiB}, load: 0.3}
sim: {duration: 100us, seed: 9}
`
	s, err := Parse("r.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	s1 := s.Node("s1")
	if len(s1.Routes) != 2 || s1.Routes[0].Len != 24 || len(s1.Routes[0].Via) != 2 || s1.Routes[1].Prefix != [4]byte{10, 0, 1, 1} {
		t.Errorf("routes %+v", s1.Routes)
	}
	if h1 := s.Node("h1"); h1.MAC != [6]byte{2, 0xaa, 0, 0, 0, 1} {
		t.Errorf("mac %x", h1.MAC)
	}
	// h2 (10.0.0.2) is covered by the /24: both ports, as written.
	if nh := s.NextHops(s1, s.Node("h2")); len(nh) != 2 {
		t.Errorf("s1 -> h2 %v", nh)
	}
	routes := s.RoutesOf(s1)
	if routes[0].Prefix != netip.MustParsePrefix("10.0.1.1/32") || routes[len(routes)-1].Prefix.Bits() != 24 {
		t.Errorf("RoutesOf %v", routes)
	}
	var names []string
	for _, f := range s.Traffic {
		names = append(names, f.Name)
	}
	want := "all/h1-h2 all/h1-h3 all/h2-h1 all/h2-h3 all/h3-h1 all/h3-h2 pairs/h1-h2 pairs/h2-h3 fan/h2 fan/h3"
	if strings.Join(names, " ") != want {
		t.Errorf("flows %v", names)
	}
	if f := s.Traffic[0]; f.Size.Dist != DistUniform || f.Size.Min != 1024 || f.Size.Max != 8192 {
		t.Errorf("size %+v", f.Size)
	}
	if f := s.Traffic[6]; f.Arrival != ArrivalOnOff || f.On != 10*clock.Microsecond || f.Off != 5*clock.Microsecond {
		t.Errorf("onoff %+v", f)
	}
	if f := s.Traffic[8]; f.Arrival != ArrivalPoisson || f.Load != 0.3 || f.Size.Mean != 64<<10 || f.Group != "fan" || f.Pattern != PatternFanout {
		t.Errorf("poisson %+v", f)
	}
	// The default sample interval: ten frames of the default links (100G,
	// MTU 4200), not 100 us / 1000.
	if s.Sim.Seed != 9 || s.Sim.SampleInterval != 5*clock.Microsecond {
		t.Errorf("sim %+v", s.Sim)
	}
}

func TestRoutingLoop(t *testing.T) {
	y := `name: loop
topology:
  nodes:
    s1: {kind: switch, routes: [{dst: h2, via: p2}]}
    s2: {kind: switch, routes: [{dst: h2, via: p1}]}
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: [h1:eth0, s1:p1]
    - endpoints: [s1:p2, s2:p1]
    - endpoints: [s2:p2, h2:eth0]
traffic:
  - {src: h1, dst: h2}
`
	_, err := Parse("loop.yaml", []byte(y))
	want := "loop.yaml:13: traffic[0].dst: routing loop towards h2: s1 -> s2 -> s1"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestIBDecode(t *testing.T) {
	y := `name: ib
fabric: ib
topology:
  nodes:
    sw: {kind: switch, lid: 100, ib: {vl_buffer: 32KiB}}
    a: {kind: nic}
    b: {kind: nic}
  links:
    - endpoints: [a:ib0, sw:p1]
    - endpoints: [b:ib0, sw:p2]
ib:
  max_vls: 4
  vlarb_low: [{vl: 0, weight: 8}, "1:16", {vl: 3, weight: 255}]
traffic:
  - {src: a, dst: b, sl: 5}
`
	s, err := Parse("ib.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if s.IB.MaxVLs != 4 || s.IB.SL2VL[5] != 1 || s.IB.SL2VL[15] != 3 || len(s.IB.VLArbLow) != 3 || s.IB.VLArbLow[1] != (VLArbEntry{1, 16}) {
		t.Errorf("ib %+v", s.IB)
	}
	sw := s.Node("sw")
	if sw.LID != 100 || sw.IB == nil || sw.IB.VLBuffer != 32<<10 || sw.IB.MaxVLs != 4 || s.IBConfigOf(s.Node("a")) != s.IB {
		t.Errorf("node ib %+v", sw.IB)
	}
	if f := s.Traffic[0]; f.SL != 5 || f.PMTU != 4096 || f.ECN {
		t.Errorf("flow %+v", f)
	}
	for _, c := range []struct{ edit, want string }{
		{"max_vls: 4", "ib.yaml:12: ib.max_vls: 9 is out of range [1, 8]"},
		{"vl_buffer: 32KiB", "ib.yaml:5: topology.nodes.sw.ib.vl_buffer: 100 bytes is not a whole number of 64-byte credits"},
	} {
		bad := strings.Replace(y, c.edit, map[string]string{"max_vls: 4": "max_vls: 9", "vl_buffer: 32KiB": "vl_buffer: 100"}[c.edit], 1)
		if _, err := Parse("ib.yaml", []byte(bad)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v\nwant %s", err, c.want)
		}
	}
	// An invalid max_vls is the only error: the tables written for it are
	// not checked against the default max_vls 1 ("ib.sl2vl: SL 1 -> "1": a
	// VL is 0..0 (max_vls 1)", "vlarb_low[1]: 1 is out of range [0, 0]").
	bad := strings.Replace(y, "max_vls: 4", "max_vls: 9\n  sl2vl: \"0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3\"", 1)
	if _, err := Parse("ib.yaml", []byte(bad)); err == nil || err.Error() != "ib.yaml:12: ib.max_vls: 9 is out of range [1, 8]" {
		t.Errorf("max_vls 9: %v", err)
	}
	// Nor in a node's section that inherits it.
	bad = strings.Replace(bad, "ib: {vl_buffer: 32KiB}", "ib: {vl_buffer: 32KiB, vlarb_low: \"0:4,2:4\"}", 1)
	if _, err := Parse("ib.yaml", []byte(bad)); err == nil || err.Error() != "ib.yaml:12: ib.max_vls: 9 is out of range [1, 8]" {
		t.Errorf("max_vls 9, the switch's own tables: %v", err)
	}
	if _, err := Parse("ib.yaml", []byte(strings.Replace(y, "ib: {vl_buffer: 32KiB}", "ib: {vl_buffer: 2KiB}", 1))); err == nil ||
		!strings.Contains(err.Error(), "vl_buffer 2048 bytes cannot hold one packet of sw:p1 (4178 bytes at MTU 4096)") {
		t.Errorf("small VL buffer: %v", err)
	}
}

// TestIBRefusesEthernetSettings: an IB lab has no PFC, ECN, DSCP, 802.1Q
// or DCQCN, so a key of those is an error at its line, not a setting
// silently ignored.
func TestIBRefusesEthernetSettings(t *testing.T) {
	const y = `name: ib
fabric: ib
topology:
  nodes:
    sw: {kind: switch}
    a: {kind: nic}
    b: {kind: nic}
  links:
    - endpoints: [a:ib0, sw:p1]
    - endpoints: [b:ib0, sw:p2]
traffic:
  - {src: a, dst: b, sl: 1}
`
	for _, c := range []struct{ old, new, want string }{
		{"sw: {kind: switch}", "sw: {kind: switch, pfc_quanta: 100}", "ib.yaml:5: topology.nodes.sw.pfc_quanta: not for fabric: ib: PFC is Ethernet"},
		{"sw: {kind: switch}", "sw: {kind: switch, ecn_mark: enqueue}", "ib.yaml:5: topology.nodes.sw.ecn_mark: not for fabric: ib: ECN is an IP field"},
		{"sw: {kind: switch}", "sw: {kind: switch, trust: pcp}", "ib.yaml:5: topology.nodes.sw.trust: not for fabric: ib:"},
		{"sw: {kind: switch}", "sw: {kind: switch, mac_learning: false}", "ib.yaml:5: topology.nodes.sw.mac_learning: not for fabric: ib:"},
		{"a: {kind: nic}", "a: {kind: nic, vid: 10}", "ib.yaml:6: topology.nodes.a.vid: not for fabric: ib:"},
		{"a: {kind: nic}", "a: {kind: nic, ignore_pfc: true}", "ib.yaml:6: topology.nodes.a.ignore_pfc: not for fabric: ib: PFC is Ethernet"},
		{"a: {kind: nic}", "a: {kind: nic, dcqcn: {rp_time_reset: 300}}", "ib.yaml:6: topology.nodes.a.dcqcn: not for fabric: ib: DCQCN is RoCE's"},
		{"traffic:", "qos:\n  PORT_QOS_MAP: {pfc_enable: \"3\"}\ntraffic:", "ib.yaml:11: qos: not for fabric: ib: the SONiC tables"},
		{"traffic:", "dcqcn: {rp_time_reset: 300}\ntraffic:", "ib.yaml:11: dcqcn: not for fabric: ib:"},
		{"sl: 1}", "sl: 1, priority: 3}", "ib.yaml:12: traffic[0].priority: not for fabric: ib:"},
		{"sl: 1}", "sl: 1, dscp: 26}", "ib.yaml:12: traffic[0].dscp: not for fabric: ib: DSCP is an IP field"},
	} {
		bad := strings.Replace(y, c.old, c.new, 1)
		if _, err := Parse("ib.yaml", []byte(bad)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\ngot  %v\nwant %s...", c.new, err, c.want)
		}
	}
	if _, err := Parse("ib.yaml", []byte(y)); err != nil {
		t.Fatal(err)
	}
}

// TestIBLIDClash: a LID written on one node that another has by default is
// reported at the written lid, saying which node has it by default.
func TestIBLIDClash(t *testing.T) {
	const y = `name: ib
fabric: ib
topology:
  nodes:
    sw: {kind: switch}
    a: {kind: nic, lid: 3}
    b: {kind: nic}
  links:
    - endpoints: [a:ib0, sw:p1]
    - endpoints: [b:ib0, sw:p2]
`
	want := "ib.yaml:6: topology.nodes.a.lid: LID 3 is a's lid and b's by default (its place in the node list + 1): give one of them another lid"
	if _, err := Parse("ib.yaml", []byte(y)); err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// TestDottedKeys: SONiC names such as scheduler.0 stay one key (viper would
// split them at the dot with its default key delimiter).
func TestDottedKeys(t *testing.T) {
	y := strings.Replace(base, "  BUFFER_PG:", `  SCHEDULER:
    scheduler.0: {type: DWRR, weight: 14}
    scheduler.1: {type: STRICT}
  QUEUE:
    "0-2": {scheduler: scheduler.0}
    "3": {scheduler: "[SCHEDULER|scheduler.1]"}
  BUFFER_PG:`, 1)
	s, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	q := s.Node("sw1").QoS
	if sc := q.Schedulers["scheduler.0"]; sc == nil || sc.Weight != 14 || sc.Type != SchedDWRR || q.Schedulers["scheduler.1"].Type != SchedStrict {
		t.Errorf("schedulers %+v", q.Schedulers)
	}
	if len(q.Queues) != 2 || q.Queues[1].Scheduler != "scheduler.1" || q.Queues[0].Queues != 7 {
		t.Errorf("queues %+v", q.Queues)
	}
}
