package lab

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// base is a small valid lab: two hosts behind one switch. Cases below edit
// it with replace() so the line numbers of errors are easy to check:
//
//	line 1  name
//	line 6  sw1
//	line 10 first link
const base = `name: t1
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4200}
  nodes:
    h1: {kind: nic}
    sw1: {kind: switch, ports: 4}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["h2:eth0", "sw1:p2"]
qos:
  PORT_QOS_MAP: {pfc_enable: "3"}
  BUFFER_POOL:
    ingress_lossless_pool: {size: 12MiB, type: ingress, mode: dynamic}
  BUFFER_PROFILE:
    pg_lossless: {pool: ingress_lossless_pool, size: 0, dynamic_th: -3, xon: 18432, xoff: 40KiB}
  BUFFER_PG:
    "3": pg_lossless
traffic:
  - {name: f1, src: h1, dst: h2, size: 64KiB, priority: 3}
sim: {duration: 1ms}
`

func replace(old, new string) string {
	if !strings.Contains(base, old) {
		panic("test base lacks " + old)
	}
	return strings.Replace(base, old, new, 1)
}

func TestParseBase(t *testing.T) {
	s, err := Parse("t.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "t1" || s.Fabric != FabricRoCE || s.TimeDilation != 1 {
		t.Errorf("name %q fabric %q time_dilation %d", s.Name, s.Fabric, s.TimeDilation)
	}
	if d, err := Parse("t.yaml", []byte(replace(`name: t1`, "name: t1\ntime_dilation: 25"))); err != nil || d.TimeDilation != 25 {
		t.Errorf("time_dilation: 25 decoded as %v, %v", d, err)
	}
	sw := s.Node("sw1")
	if sw == nil || sw.Kind != KindSwitch || len(sw.Ports) != 4 || !sw.CutThrough || sw.HeaderBytes != 64 {
		t.Fatalf("sw1 = %+v", sw)
	}
	if p := sw.Port("p2"); p.Index != 1 || p.Peer.String() != "h2:eth0" || p.Link.Rate != 100_000_000_000 || p.Link.Delay != clock.Microsecond || p.Link.MTU != 4200 {
		t.Errorf("sw1:p2 = %+v link %+v", p, p.Link)
	}
	if sw.Port("p3").Link != nil {
		t.Errorf("sw1:p3 should be unconnected")
	}
	bp := sw.QoS.BufferProfiles["pg_lossless"]
	if bp.Xoff != 40960 || bp.DynamicTh != -3 || !bp.HasDynamicTh || bp.Xon != 18432 || !bp.Lossless() {
		t.Errorf("profile %+v", bp)
	}
	if sw.QoS.PortQoSMap.PFCEnable != 1<<3 || sw.QoS.BufferPools["ingress_lossless_pool"].Size != 12<<20 {
		t.Errorf("qos %+v", sw.QoS)
	}
	if len(sw.QoS.BufferPG) != 1 || sw.QoS.BufferPG[0].IDs != 1<<3 || sw.QoS.BufferPG[0].Line != 18 {
		t.Errorf("BUFFER_PG %+v", sw.QoS.BufferPG)
	}
	if len(s.Traffic) != 1 {
		t.Fatalf("traffic %d flows", len(s.Traffic))
	}
	f := s.Traffic[0]
	if f.Name != "f1" || f.Src.Name != "h1" || f.Dst[0].Name != "h2" || f.DSCP != 26 || f.Priority != 3 ||
		f.Rate != 100_000_000_000 || f.PMTU != 4096 || f.Size.Size != 64<<10 || !f.ECN || f.Line != 20 {
		t.Errorf("flow %+v", f)
	}
	// The default sample interval: ten 4242-byte frames of the 100G
	// links (3.39 us) rounded up, not 1 ms / 1000.
	if s.Sim.Duration != clock.Millisecond || s.Sim.SampleInterval != 5*clock.Microsecond || s.Sim.Seed != 1 {
		t.Errorf("sim %+v", s.Sim)
	}
	if h1 := s.Node("h1"); h1.IPv4 != [4]byte{10, 0, 0, 1} || h1.MAC != [6]byte{2, 0, 0, 0, 0, 1} {
		t.Errorf("h1 addresses %v %v", h1.IPv4, h1.MAC)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", s.Warnings)
	}
}

// TestParseErrors checks that every kind of mistake is reported with the
// file, the line and the field path.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // the whole first error
	}{
		{"unknown port", replace(`"sw1:p2"]`, `"sw1:p9"]`),
			`t.yaml:10: topology.links[1].endpoints[1]: unknown port "sw1:p9" (sw1 declares p1, p2, p3, p4)`},
		{"unknown node", replace(`"h2:eth0"`, `"h3:eth0"`),
			`t.yaml:10: topology.links[1].endpoints[0]: unknown node "h3" in "h3:eth0"`},
		{"not node:port", replace(`"h2:eth0"`, `"h2"`),
			`t.yaml:10: topology.links[1].endpoints[0]: "h2" is not "node:port" (e.g. "sw1:p1")`},
		{"duplicate endpoint", replace(`"sw1:p2"]`, `"sw1:p1"]`),
			`t.yaml:10: topology.links[1].endpoints[1]: duplicate endpoint "sw1:p1" (already used at line 9, topology.links[0].endpoints[1])`},
		{"one endpoint", replace(`["h2:eth0", "sw1:p2"]`, `["h2:eth0"]`),
			`t.yaml:10: topology.links[1].endpoints: a link has 2 endpoints, got 1`},
		{"self link", replace(`"h2:eth0", "sw1:p2"`, `"sw1:p3", "sw1:p2"`),
			`t.yaml:10: topology.links[1].endpoints[1]: both endpoints are on node "sw1"`},
		{"typo in key", replace(`delay: 1us`, `delya: 1us`),
			`t.yaml:3: topology.defaults.delya: unknown key "delya" (did you mean "delay"?)`},
		{"key cut short", replace(`h1: {kind: nic}`, `h1: {kind: nic, ip: 10.1.1.1}`),
			`t.yaml:5: topology.nodes.h1.ip: unknown key "ip" (did you mean "ib" or "ipv4"?)`},
		{"long key misspelt", replace(`sw1: {kind: switch, ports: 4}`, `sw1: {kind: switch, ports: 4, cut_thru: true}`),
			`t.yaml:6: topology.nodes.sw1.cut_thru: unknown key "cut_thru" (did you mean "cut_through"?)`},
		{"kind misspelt", replace(`h1: {kind: nic}`, `h1: {knd: nic}`),
			`t.yaml:5: topology.nodes.h1.knd: unknown key "knd" (did you mean "kind"? nic or switch)`},
		{"unknown top key", replace(`sim: {duration: 1ms}`, `simulation: {duration: 1ms}`),
			`t.yaml:21: simulation: unknown key "simulation" (known keys: name, fabric, topology, qos, ib, dcqcn, traffic, sim, time_dilation)`},
		{"time_dilation zero", replace(`name: t1`, "name: t1\ntime_dilation: 0"),
			`t.yaml:2: time_dilation: 0 is out of range [1, 10000]`},
		{"time_dilation fraction", replace(`name: t1`, "name: t1\ntime_dilation: 2.5"),
			`t.yaml:2: time_dilation: expected a whole number, got 2.5`},
		{"time_dilation word", replace(`name: t1`, "name: t1\ntime_dilation: slow"),
			`t.yaml:2: time_dilation: expected a whole number, got "slow"`},
		{"typo in table", replace(`  BUFFER_PG:`, `  BUFFER_PGS:`),
			`t.yaml:17: qos.BUFFER_PGS: unknown key "BUFFER_PGS" (did you mean "BUFFER_PG"?)`},
		{"xoff below MTU", replace(`xoff: 40KiB`, `xoff: 2048`),
			`t.yaml:16: qos.BUFFER_PROFILE.pg_lossless.xoff: xoff 2048 bytes is smaller than one MTU frame (4222 bytes on sw1:p1, MTU 4200)`},
		{"redefined built-in profile, built-in binding", strings.Replace(replace(`pg_lossless: {pool: ingress_lossless_pool, size: 0, dynamic_th: -3, xon: 18432, xoff: 40KiB}`,
			`pg_lossless_profile: {pool: ingress_lossless_pool, dynamic_th: -3, xoff: 2048}`), `"3": pg_lossless`, `"0": ingress_lossy_profile`, 1),
			`t.yaml:16: qos.BUFFER_PROFILE.pg_lossless_profile.xoff: xoff 2048 bytes is smaller than one MTU frame (4222 bytes on sw1:p1, MTU 4200)`},
		{"pfc_refresh below a frame", replace(`sw1: {kind: switch, ports: 4}`, `sw1: {kind: switch, ports: 4, pfc_refresh: 1ns}`),
			`t.yaml:6: topology.nodes.sw1.pfc_refresh: 1ns is shorter than one PFC frame on sw1:p1 (6.72ns at 100G)`},
		{"pfc_refresh above the pause", replace(`sw1: {kind: switch, ports: 4}`, `sw1: {kind: switch, ports: 4, pfc_refresh: 10ms}`),
			`t.yaml:6: topology.nodes.sw1.pfc_refresh: 10ms is not shorter than the pause an XOFF asks for on sw1:p1 (65535 quanta at 100G: 335.539us): the peer would resume between refreshes`},
		{"dynamic_th high", replace(`dynamic_th: -3`, `dynamic_th: 8`),
			`t.yaml:16: qos.BUFFER_PROFILE.pg_lossless.dynamic_th: 8 is out of range [-8, 7]`},
		{"dynamic_th low", replace(`dynamic_th: -3`, `dynamic_th: -9`),
			`t.yaml:16: qos.BUFFER_PROFILE.pg_lossless.dynamic_th: -9 is out of range [-8, 7]`},
		{"static_th on dynamic pool", replace(`dynamic_th: -3`, `static_th: 64KiB`),
			`t.yaml:16: qos.BUFFER_PROFILE.pg_lossless.static_th: pool ingress_lossless_pool is dynamic: the profile needs dynamic_th, not static_th`},
		{"unknown pool", replace(`{pool: ingress_lossless_pool, size: 0`, `{pool: ingress_pool, size: 0`),
			`t.yaml:16: qos.BUFFER_PROFILE.pg_lossless.pool: unknown BUFFER_POOL "ingress_pool" (known: egress_lossless_pool, egress_lossy_pool, ingress_lossless_pool, ingress_lossy_pool)`},
		{"unknown profile", replace(`"3": pg_lossless`, `"3": pg_lossles`),
			`t.yaml:18: qos.BUFFER_PG.3: unknown BUFFER_PROFILE "pg_lossles" (known: egress_lossless_profile, egress_lossy_profile, ingress_lossy_profile, pg_lossless, pg_lossless_profile)`},
		{"ingress profile on a queue", replace(`    "3": pg_lossless`, `    "3": pg_lossless`+"\n  BUFFER_QUEUE: {\"0-7\": pg_lossless}"),
			`t.yaml:19: qos.BUFFER_QUEUE.0-7: BUFFER_QUEUE binds egress profiles; pg_lossless uses ingress pool ingress_lossless_pool`},
		{"unknown scheduler", replace(`    "3": pg_lossless`, `    "3": pg_lossless`+"\n  QUEUE: {\"3\": {scheduler: sched1}}"),
			`t.yaml:19: qos.QUEUE.3.scheduler: unknown SCHEDULER "sched1" (known: scheduler.0, scheduler.1)`},
		{"strict with weight", replace(`    "3": pg_lossless`, `    "3": pg_lossless`+"\n  SCHEDULER: {s0: {type: STRICT, weight: 3}}"),
			`t.yaml:19: qos.SCHEDULER.s0.weight: a STRICT scheduler has no weight`},
		{"wred min above max", replace(`    "3": pg_lossless`, `    "3": pg_lossless`+"\n  WRED_PROFILE: {w: {ecn: ecn_all, green_min_threshold: 2MiB, green_max_threshold: 1MiB}}"),
			`t.yaml:19: qos.WRED_PROFILE.w.green_max_threshold: green_max_threshold 1048576 is below green_min_threshold 2097152`},
		{"pfcwd bad action", replace(`    "3": pg_lossless`, `    "3": pg_lossless`+"\n  PFC_WD: {ports: {action: reboot}}"),
			`t.yaml:19: qos.PFC_WD.ports.action: "reboot" is not one of drop, forward, alert`},
		{"binding on unknown port", replace(`"3": pg_lossless`, `"p7|3": pg_lossless`),
			`t.yaml:18: qos.BUFFER_PG.p7|3: port "p7" is not a port of switch sw1 (p1, p2, p3, p4)`},
		{"bad pg range", replace(`"3": pg_lossless`, `"3-9": pg_lossless`),
			`t.yaml:18: qos.BUFFER_PG.3-9: key "3-9": "3-9" is outside 0..7 (write "3-4" or "p1,p2|3-4")`},
		{"pfc_enable out of range", replace(`pfc_enable: "3"`, `pfc_enable: "3,8"`),
			`t.yaml:12: qos.PORT_QOS_MAP.pfc_enable: "8" is outside 0..7`},
		{"unreachable", replace(`    - endpoints: ["h2:eth0", "sw1:p2"]`, `    - endpoints: ["h2:eth0", "sw2:p1"]`) + "",
			``}, // replaced below: needs sw2
		{"bad rate bytes", replace(`rate: 100G`, `rate: 100GB`),
			`t.yaml:3: topology.defaults.rate: rate "100GB": rates are in bits per second (write 100G or 100Gbps, not bytes)`},
		{"bad rate word", replace(`rate: 100G`, `rate: fast`),
			`t.yaml:3: topology.defaults.rate: "fast": not a number with a unit`},
		{"zero rate", replace(`rate: 100G`, `rate: 0G`),
			`t.yaml:3: topology.defaults.rate: rate "0G": must be greater than zero`},
		{"ambiguous size", replace(`size: 64KiB`, `size: 64K`),
			`t.yaml:20: traffic[0].size: size "64K": ambiguous unit "K" (write 64KiB for 1024-byte or 64KB for 1000-byte units)`},
		{"time without unit", replace(`duration: 1ms`, `duration: 10`),
			`t.yaml:21: sim.duration: time "10": needs a unit (ps, ns, us, ms or s)`},
		{"negative time", replace(`delay: 1us`, `delay: -1us`),
			`t.yaml:3: topology.defaults.delay: "-1us": must not be negative`},
		{"unsafe node name", replace("    h2: {kind: nic}", "    h2.x: {kind: nic}"),
			`t.yaml:7: topology.nodes.h2.x: node name: name "h2.x" has '.': only letters, digits, '_' and '-' are allowed`},
		{"long port name", replace(`"h1:eth0"`, `"h1:eth0-is-far-too-long"`),
			`t.yaml:9: topology.links[0].endpoints[0]: port name: name "eth0-is-far-too-long" is 20 bytes long; at most 15`},
		{"NIC port named lo", replace(`"h1:eth0"`, `"h1:lo"`),
			`t.yaml:9: topology.links[0].endpoints[0]: port name "lo" of a NIC: every namespace has its loopback interface lo already`},
		{"NIC port named all", replace(`"h1:eth0"`, `"h1:all"`),
			`t.yaml:9: topology.links[0].endpoints[0]: port name "all" of a NIC: the kernel refuses it as an interface name (it names /proc/sys/net/*/conf/all)`},
		{"long lab name", replace(`name: t1`, `name: my-very-long-lab-name`),
			`t.yaml:1: name: name "my-very-long-lab-name" is 21 bytes long; at most 15`},
		{"missing kind", replace(`h1: {kind: nic}`, `h1: {}`),
			`t.yaml:5: topology.nodes.h1: missing key "kind" (nic or switch)`},
		{"null node", replace(`h1: {kind: nic}`, `h1:`),
			`t.yaml:5: topology.nodes.h1: missing key "kind" (nic or switch)`},
		{"bad kind", replace(`h1: {kind: nic}`, `h1: {kind: host}`),
			`t.yaml:5: topology.nodes.h1.kind: "host" is not one of nic, switch`},
		{"switch setting on nic", replace(`h1: {kind: nic}`, `h1: {kind: nic, cut_through: false}`),
			`t.yaml:5: topology.nodes.h1.cut_through: "cut_through" is a switch setting; h1 is a nic`},
		{"case-folded duplicate", replace("    h2: {kind: nic}", "    h2: {kind: nic}\n    H2: {kind: nic}"),
			`t.yaml:8: topology.nodes.H2: key "H2" repeats "h2" (line 7): keys are case-insensitive`},
		{"duplicate", replace("    h2: {kind: nic}", "    h2: {kind: nic}\n    h2: {kind: switch}"),
			`t.yaml:8: topology.nodes.h2: key "h2" repeats line 7`},
		{"yaml syntax", replace(`sim: {duration: 1ms}`, `sim: {duration: 1ms`),
			`t.yaml:21: did not find expected ',' or '}' (in the mapping or list that starts on this line)`},
		{"bad indentation", replace("    h2: {kind: nic}", "    h2: {kind: nic}\n   h3: {kind: nic}"),
			`t.yaml:8: did not find expected key (in the mapping or list that starts on line 3)`},
		{"tab", replace("    h2: {kind: nic}", "\th2: {kind: nic}"),
			`t.yaml:7: found character that cannot start any token (a tab? YAML indents with spaces only)`},
		{"not a mapping", "- just\n- a list\n",
			`t.yaml:1: a lab file is a YAML mapping (name:, topology:, ...)`},
		{"empty", "", `t.yaml: the file is empty`},
		{"traffic from switch", replace(`src: h1,`, `src: sw1,`),
			`t.yaml:20: traffic[0].src: sw1 is a switch; traffic runs between nic nodes`},
		{"traffic to itself", replace(`dst: h2,`, `dst: h1,`),
			`t.yaml:20: traffic[0].dst: h1 sends to itself`},
		{"flow faster than link", replace(`size: 64KiB,`, `size: 64KiB, rate: 200G,`),
			`t.yaml:20: traffic[0].rate: 200G is faster than h1's link (100G)`},
		{"pmtu too big", replace(`mtu: 4200}`, `mtu: 1500}`) + "",
			``}, // replaced below
		{"priority range", replace(`priority: 3}`, `priority: 8}`),
			`t.yaml:20: traffic[0].priority: 8 is out of range [0, 7]`},
		{"missing name", replace(`name: t1`, `nom: t1`),
			`t.yaml:1: missing key "name" (the lab's name)`},
		{"sl on roce", replace(`priority: 3}`, `priority: 3, sl: 1}`),
			`t.yaml:20: traffic[0].sl: sl (IB service level) needs fabric: ib; RoCE flows use priority and dscp`},
		{"loss out of range", replace(`mtu: 4200}`, `mtu: 4200, loss: 2}`),
			`t.yaml:3: topology.defaults.loss: 2 is out of range [0, 1]`},
		{"mtu out of range", replace(`mtu: 4200}`, `mtu: 10000}`),
			`t.yaml:3: topology.defaults.mtu: 10000 is out of range [576, 9216]`},
		{"nic with two links", replace(`    - endpoints: ["h2:eth0", "sw1:p2"]`, `    - endpoints: ["h2:eth0", "sw1:p2"]`+"\n"+`    - endpoints: ["h2:eth1", "sw1:p3"]`),
			`t.yaml:11: topology.links[2].endpoints[0]: nic h2 already has a link (topology.links[1], line 10): a nic has one port`},
		// An RDMA flow's priority is its DSCP's to the NIC: a priority
		// that disagrees was refused only by the simulator, at the entry's
		// line, with the field "sim" and a NIC command-line option for
		// advice.
		{"RDMA priority against DSCP", replace(`size: 64KiB, priority: 3}`, `size: 64KiB, op: write,
    priority: 3, dscp: 10}`),
			`t.yaml:21: traffic[0].dscp: an RDMA flow's NIC classifies DSCP 10 to priority 1 (DSCP >> 3), not priority 3: write dscp 26 for priority 3, or leave one of the two out`},
		// Errors of the YAML reader, and an unknown alias, come without a
		// line from the parser: the line is found.
		{"unknown alias", replace(`    h1: {kind: nic}`, `    h1: *nope`),
			`t.yaml:5: unknown anchor 'nope' referenced`},
		{"not UTF-8", replace(`name: t1`, "name: t\xff1"),
			`t.yaml:1: invalid leading UTF-8 octet`},
		{"control character", replace(`sim: {duration: 1ms}`, "sim: {duration: 1ms}\x01"),
			`t.yaml:21: control characters are not allowed`},
		// A complex key reached viper, which failed with a Go dump of it
		// ("invalid map key: []interface {}{...}") and no line.
		{"complex key", replace(`    h2: {kind: nic}`, "    ? [a, b]\n    : {kind: nic}"),
			`t.yaml:7: topology.nodes: a key is a name: not a list, a mapping or an alias (did a "? " or a "*" slip in?)`},
		// yaml.Unmarshal reads the first document: a second lab pasted
		// after "---" was ignored without a word.
		{"second document", replace(`sim: {duration: 1ms}`, "sim: {duration: 1ms}\n---\nname: t2"),
			`t.yaml:22: a second YAML document starts here: a lab file holds one lab (split the file, or remove the "---")`},
		// A second document that does not parse is a second document
		// too: the decoder's error on it was taken for "no second one".
		{"second document that does not parse", replace(`sim: {duration: 1ms}`, "sim: {duration: 1ms}\n---\nname: [t2"),
			`t.yaml:22: a second YAML document starts here: a lab file holds one lab (split the file, or remove the "---")`},
		// A refused xoff is one error: not also "xon ... need xoff" at the
		// profile, a line earlier, as if xoff were missing.
		{"negative xoff", replace(`xoff: 40KiB}`, `xoff: -5}`),
			`t.yaml:16: qos.BUFFER_PROFILE.pg_lossless.xoff: "-5": must not be negative`},
		// YAML's .nan and .inf were "out of range [-1.797e+308, 1.797e+308]"
		// for a knob that takes any number.
		{"NaN knob", replace(`sim: {duration: 1ms}`, "sim: {duration: 1ms}\ndcqcn: {rp_ai_rate: .nan}"),
			`t.yaml:22: dcqcn.rp_ai_rate: expected a finite number, got NaN`},
		{"infinite knob", replace(`sim: {duration: 1ms}`, "sim: {duration: 1ms}\ndcqcn: {rp_hai_rate: -.inf}"),
			`t.yaml:22: dcqcn.rp_hai_rate: expected a finite number, got -Inf`},
		// An unknown distribution is one error; it came after "missing
		// key size for dist fixed", a distribution the user did not write.
		{"unknown size dist", replace(`size: 64KiB, priority: 3}`, `size: {dist: normal, mean: 1KiB}, priority: 3}`),
			`t.yaml:20: traffic[0].size.dist: "normal" is not one of fixed, uniform, exponential, cdf`},
		// Addresses a host on its /24 cannot be reached at: they came up
		// and then no other host's kernel could reach them.
		{"loopback ipv4", replace(`    h1: {kind: nic}`, `    h1: {kind: nic, ipv4: 127.0.0.1}`),
			`t.yaml:5: topology.nodes.h1.ipv4: 127.0.0.1 is a loopback address: in every namespace it is lo's, so no other host can reach it`},
		{"broadcast ipv4", replace(`    h1: {kind: nic}`, `    h1: {kind: nic, ipv4: 10.0.0.255}`),
			`t.yaml:5: topology.nodes.h1.ipv4: 10.0.0.255 is the broadcast address of its /24 (a lab's hosts are on /24 subnets): give the host another`},
		// A non-ASCII name is refused with the character as written, not
		// the first byte of its UTF-8 sequence read as Latin-1 ('Ã').
		{"non-ASCII name", replace(`name: t1`, `name: lab-é`),
			`t.yaml:1: name: name "lab-é" has 'é': only letters, digits, '_' and '-' are allowed`},
		// A name pasted by mistake is quoted short: the message stays one line.
		{"very long name", replace(`name: t1`, `name: `+strings.Repeat("a", 100000)),
			`t.yaml:1: name: name "` + strings.Repeat("a", 80) + `..." is 100000 bytes long; at most 15`},
	}
	// Cases that need more than one edit.
	for i := range tests {
		switch tests[i].name {
		case "unreachable":
			tests[i].yaml = strings.Replace(tests[i].yaml, "    h2: {kind: nic}", "    h2: {kind: nic}\n    sw2: {kind: switch}", 1)
			tests[i].want = `t.yaml:21: traffic[0].dst: h2 is unreachable from h1: no path through the topology`
		case "pmtu too big":
			tests[i].yaml = strings.Replace(tests[i].yaml, `priority: 3}`, `priority: 3, pmtu: 4096}`, 1)
			tests[i].want = `t.yaml:20: traffic[0].pmtu: path MTU 4096 does not fit the smallest link MTU on the way (1500)`
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("t.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("no error; spec %+v", s)
			}
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error %T %v is not an ErrorList", err, err)
			}
			if got := list[0].Error(); got != tt.want {
				t.Errorf("first error\n got: %s\nwant: %s\n all:\n%v", got, tt.want, err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.File != "t.yaml" {
				t.Errorf("errors.As FieldError: %v", fe)
			}
		})
	}
}

// TestParseCollectsErrors: one Load reports every independent problem, in
// line order.
func TestParseCollectsErrors(t *testing.T) {
	y := strings.Replace(base, `delay: 1us`, `delay: 1`, 1)
	y = strings.Replace(y, `dynamic_th: -3`, `dynamic_th: 12`, 1)
	y = strings.Replace(y, `priority: 3}`, `priority: 3, colour: red}`, 1)
	_, err := Parse("t.yaml", []byte(y))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %v", err)
	}
	var lines []int
	for _, e := range list {
		lines = append(lines, e.Line)
	}
	if len(list) != 3 || lines[0] != 3 || lines[1] != 16 || lines[2] != 20 {
		t.Errorf("got %d errors at lines %v:\n%v", len(list), lines, err)
	}
}

func TestParseWarnings(t *testing.T) {
	// 40 KiB of headroom is not enough for a 10 us cable at 100G.
	y := strings.Replace(base, `delay: 1us`, `delay: 10us`, 1)
	s, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0].Error(), "t.yaml:16: qos.BUFFER_PROFILE.pg_lossless.xoff: xoff 40960 bytes is below the 258444 bytes in flight on sw1:p1") {
		t.Errorf("warnings %v", s.Warnings)
	}
}

func TestLoadNamesFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if err == nil || !strings.Contains(err.Error(), "testdata/does-not-exist.yaml") {
		t.Errorf("got %v", err)
	}
	_, err = Parse("lab.json", []byte(`{}`))
	if err == nil || err.Error() != `lab.json: lab files are YAML (.yaml or .yml), not ".json"` {
		t.Errorf("got %v", err)
	}
}

func BenchmarkParseIncast(b *testing.B) {
	data, err := os.ReadFile("../examples/incast.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse("incast.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseLeafSpine(b *testing.B) {
	data, err := os.ReadFile("../examples/leaf-spine.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse("leaf-spine.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseTooManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: many\ntopology:\n  nodes:\n")
	for i := range 60 {
		fmt.Fprintf(&b, "    n%d: {kind: router}\n", i)
	}
	_, err := Parse("many.yaml", []byte(b.String()))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != maxErrors+1 || list[maxErrors].Error() != "many.yaml: 10 more errors not shown" {
		t.Fatalf("got %d errors, last %v", len(list), list[len(list)-1])
	}
}

// TestParseErrorsNoFollowOn: a node rejected at its own entry (a bad kind,
// a bad name) is one error: the links and flows that name it do not add
// "unknown node" errors, and other mistakes of the file are still found.
func TestParseErrorsNoFollowOn(t *testing.T) {
	src := `name: t
topology:
  nodes:
    sw1: {kind: switch}
    h1: {kind: nic}
    h2: {kind: nicc}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["h2:eth0", "sw1:p2"]
traffic:
  - {src: h1, dst: h2, kind: rdma_write, size: 64KiB, bogus: 1}
`
	_, err := Parse("t.yaml", []byte(src))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v", err)
	}
	var msgs []string
	for _, e := range list {
		msgs = append(msgs, e.Error())
		if strings.Contains(e.Error(), "unknown node") {
			t.Errorf("follow-on error: %v", e)
		}
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, `t.yaml:6: topology.nodes.h2.kind: "nicc" is not one of nic, switch`) || !strings.Contains(all, "bogus") {
		t.Errorf("errors:\n%s", all)
	}
}

// TestParseGoesOnAfterRepeatedKey: a repeated key is reported and the rest
// of the file is still read (the first of the two keys stays), so its
// other problems come in the same run, at their own lines; anchors and
// merge keys survive.
func TestParseGoesOnAfterRepeatedKey(t *testing.T) {
	src := `name: t
topology:
  defaults: {rate: 100G}
  nodes:
    sw1: {kind: switch}
    h1: &nic {kind: nic}
    h2: {<<: *nic}
    h2: {kind: nic, mac: "02:00:00:00:00:09", ipv4: 10.0.0.9, bogus: 1}
    h3: *nic
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["h2:eth0", "sw1:p2"]
traffic:
  - {src: h1, dst: h2, kind: rdma_write, size: 64K}
`
	_, err := Parse("t.yaml", []byte(src))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v", err)
	}
	all := list.Error() // one problem a line
	for _, want := range []string{`t.yaml:8: topology.nodes.h2: key "h2" repeats line 7`,
		`t.yaml:14: traffic[0].size: size "64K": ambiguous unit "K"`} {
		if !strings.Contains(all, want) {
			t.Errorf("errors lack %q:\n%s", want, all)
		}
	}
	// Nothing of the dropped h2 is read: not its keys, not its values.
	if len(list) != 2 {
		t.Errorf("%d errors, want the repeated key and the size:\n%s", len(list), all)
	}
	// Fixed, the file loads, with the anchors as written.
	spec, err := Parse("t.yaml", []byte(strings.Replace(strings.Replace(src, "    h2: {kind: nic, mac: \"02:00:00:00:00:09\", ipv4: 10.0.0.9, bogus: 1}\n", "", 1), "64K", "64KiB", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"h2", "h3"} {
		if n := spec.Node(name); n == nil || n.Kind != KindNIC {
			t.Errorf("%s: %+v", name, n)
		}
	}
}

// TestSuggest: what an unknown key or value is taken for.
func TestSuggest(t *testing.T) {
	for _, c := range []struct {
		k     string
		known []string
		want  string
	}{
		{"ip", []string{"kind", "ib", "ipv4", "mac"}, `"ib" or "ipv4"`},
		{"delya", []string{"rate", "delay", "mtu"}, `"delay"`},
		{"si", []string{"size", "sl"}, `"sl" or "size"`},
		{"cut_thru", []string{"cut_through", "trust"}, `"cut_through"`},
		{"max_events", []string{"max_vls", "sm"}, ``},
		{"high_limit", []string{"ccti_limit", "ccti_timer"}, ``},
		{"BUFFER_PGS", []string{"BUFFER_PG", "BUFFER_POOL"}, `"BUFFER_PG"`},
		{"zzz", []string{"rate", "delay"}, ``},
	} {
		if got := didYouMean(c.k, c.known); got != c.want {
			t.Errorf("%s among %v: %s, want %s", c.k, c.known, got, c.want)
		}
	}
	// A node key near "kind" is a key, not a misspelt kind.
	_, err := Parse("t.yaml", []byte("name: t\ntopology:\n  nodes:\n    h1: {lid: 5, knd: nic}\n"))
	if err == nil || !strings.Contains(err.Error(), `topology.nodes.h1.knd: unknown key "knd" (did you mean "kind"? nic or switch)`) {
		t.Errorf("lid and knd: %v", err)
	}
}

// TestLongDelayWarned: a link delay above a second loads, with a warning.
func TestLongDelayWarned(t *testing.T) {
	spec, err := Parse("t.yaml", []byte("name: t\ntopology:\n  defaults: {delay: 3600s}\n  nodes:\n    sw1: {kind: switch}\n    h1: {kind: nic}\n  links:\n    - endpoints: [\"h1:eth0\", \"sw1:p1\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var ws []string
	for _, w := range spec.Warnings {
		ws = append(ws, w.Error())
	}
	if all := strings.Join(ws, "\n"); !strings.Contains(all, "t.yaml:3: topology.defaults.delay: delay 3600s: more than a second") {
		t.Errorf("warnings:\n%s", all)
	}
}

// TestOneDocumentMarkers: "---" before the lab, and an empty document
// after it, are not a second lab.
func TestOneDocumentMarkers(t *testing.T) {
	for _, y := range []string{"---\n" + base, base + "---\n", base + "---\n# end\n...\n"} {
		if _, err := Parse("t.yaml", []byte(y)); err != nil {
			t.Errorf("%q...: %v", y[:10], err)
		}
	}
}

// TestDefaultIPv4SkipsBroadcast: the 255th NIC got 10.0.0.255, its /24's
// broadcast address, and the 256th 10.0.1.0.
func TestDefaultIPv4SkipsBroadcast(t *testing.T) {
	for _, c := range []struct {
		nic  int
		want [4]byte
	}{{1, [4]byte{10, 0, 0, 1}}, {254, [4]byte{10, 0, 0, 254}}, {255, [4]byte{10, 0, 1, 1}},
		{508, [4]byte{10, 0, 1, 254}}, {509, [4]byte{10, 0, 2, 1}}, {254*256 + 1, [4]byte{10, 1, 0, 1}}} {
		if got := defaultIPv4(c.nic); got != c.want {
			t.Errorf("defaultIPv4(%d) = %v, want %v", c.nic, got, c.want)
		}
	}
	var y strings.Builder
	y.WriteString("name: big\ntopology:\n  nodes:\n    sw1: {kind: switch}\n")
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&y, "    h%d: {kind: nic}\n", i)
	}
	y.WriteString("  links:\n")
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&y, "    - endpoints: [\"h%d:eth0\", \"sw1:p%d\"]\n", i, i)
	}
	s, err := Parse("big.yaml", []byte(y.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.NICs() {
		if n.IPv4[3] == 255 || n.IPv4[3] == 0 {
			t.Errorf("%s got %v", n.Name, n.IPv4)
		}
	}
}
