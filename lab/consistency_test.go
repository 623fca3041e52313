package lab

import (
	"strings"
	"testing"
)

// TestDCQCNMinAboveMax: rp_min_rate above rp_max_rate is refused (the cap
// won and the floor was ignored without a word), at rp_min_rate's line, or
// at rp_max_rate's when the floor is the profile's.
func TestDCQCNMinAboveMax(t *testing.T) {
	for _, c := range []struct{ name, section, want string }{
		{"both written", "dcqcn:\n  rp_max_rate: 20000\n  rp_min_rate: 40000\n",
			`t.yaml:23: dcqcn.rp_min_rate: rp_min_rate: 40000 Mb/s is above rp_max_rate 20000 Mb/s: a floor above the cap`},
		{"floor from the profile", "dcqcn:\n  profile: paper\n  rp_max_rate: 5\n",
			`t.yaml:23: dcqcn.rp_max_rate: rp_min_rate: 10 Mb/s is above rp_max_rate 5 Mb/s: a floor above the cap`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(replace("sim: {duration: 1ms}", c.section+"sim: {duration: 1ms}")))
			if err == nil {
				t.Fatal("no error")
			}
			if first := strings.SplitN(err.Error(), "\n", 2)[0]; first != c.want {
				t.Errorf("got  %s\nwant %s", first, c.want)
			}
		})
	}
	// A cap of 0 is the line rate: any floor is below it.
	if _, err := Parse("t.yaml", []byte(replace("sim: {duration: 1ms}", "dcqcn: {rp_max_rate: 0, rp_min_rate: 40000}\nsim: {duration: 1ms}"))); err != nil {
		t.Errorf("rp_max_rate 0: %v", err)
	}
}

// TestDCQCNFloorAtLineRate: a data sender's rp_min_rate at or above its
// line rate turns DCQCN off in effect; the lab runs, with a warning at the
// knob's line naming the senders once.
func TestDCQCNFloorAtLineRate(t *testing.T) {
	y := replace(`  - {name: f1, src: h1, dst: h2, size: 64KiB, priority: 3}`,
		"  - {name: f1, src: h1, dst: h2, size: 64KiB, priority: 3, op: write}\n  - {name: f2, src: h2, dst: h1, size: 64KiB, priority: 3, op: read}")
	y = strings.Replace(y, "sim: {duration: 1ms}", "dcqcn:\n  profile: paper\n  rp_min_rate: 100000\nsim: {duration: 1ms}", 1)
	s, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	want := `t.yaml:24: dcqcn.rp_min_rate: rp_min_rate 100000 Mb/s is not below the line rate (100G) of h1: DCQCN never sends slower than its floor, so CNPs never slow the sender down`
	if len(s.Warnings) != 1 || s.Warnings[0].Error() != want {
		t.Errorf("warnings %v\nwant %s", s.Warnings, want)
	}
	// cc: none on the sender: nothing to warn about.
	y = strings.Replace(y, "op: write}", "op: write, cc: none}", 1)
	y = strings.Replace(y, "op: read}", "op: read, cc: none}", 1)
	if s, err := Parse("t.yaml", []byte(y)); err != nil || len(s.Warnings) != 0 {
		t.Errorf("cc none: %v %v", err, s.Warnings)
	}
}

const ibVLBase = `name: t
fabric: ib
topology:
  nodes:
    sw1: {kind: switch}
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:ib0", "sw1:p1"]
    - endpoints: ["h2:ib0", "sw1:p2"]
ib:
  max_vls: 2
  vlarb_low: "0:4,1:4"
traffic:
  - {name: f1, src: h1, dst: h2, size: 64KiB}
  - {name: f2, src: h2, dst: h1, size: 64KiB, sl: 1}
sim: {duration: 1ms}
`

// TestIBUnservedVL: a VL that neither arbitration table gives a weight
// never sends; traffic on it delivered 0 bytes without a word
// (vlarb_low "0:0,1:0"). Now a warning at the table's line names the
// switch, the flows and the VL; SL2VL to VL 15 (drop) likewise.
func TestIBUnservedVL(t *testing.T) {
	for _, c := range []struct{ name, old, new, want string }{
		{"weight 0", `vlarb_low: "0:4,1:4"`, `vlarb_low: "0:0,1:4"`,
			`t.yaml:13: ib.vlarb_low: VL 0 has no weight in the VL arbitration tables (vlarb_high, vlarb_low) of sw1, so it never sends there: flow f1 (SL 0 -> VL 0) would deliver nothing; give VL 0 a weight above 0 (warning)`},
		{"not listed", `vlarb_low: "0:4,1:4"`, `vlarb_low: "0:4"`,
			`t.yaml:13: ib.vlarb_low: VL 1 has no weight in the VL arbitration tables (vlarb_high, vlarb_low) of sw1, so it never sends there: flow f2 (SL 1 -> VL 1) would deliver nothing; give VL 1 a weight above 0 (warning)`},
		{"served by the high table", `vlarb_low: "0:4,1:4"`, "vlarb_high: \"0:4\"\n  vlarb_low: \"1:4\"", ""},
		{"the switch's own section", "    sw1: {kind: switch}", "    sw1: {kind: switch, ib: {vlarb_low: \"0:0,1:4\"}}",
			`t.yaml:5: topology.nodes.sw1.ib.vlarb_low: VL 0 has no weight in the VL arbitration tables (vlarb_high, vlarb_low) of sw1, so it never sends there: flow f1 (SL 0 -> VL 0) would deliver nothing; give VL 0 a weight above 0 (warning)`},
		// On the source HCA that is an error (validateFlow); a switch
		// dropping an SL is legal, and counts vl15_drop.
		{"VL 15 on a switch", "    sw1: {kind: switch}", "    sw1:\n      kind: switch\n      ib: {sl2vl: \"15,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1\"}",
			`t.yaml:7: topology.nodes.sw1.ib.sl2vl: SL 0 maps to VL 15 on sw1, which drops every packet: flow f1 would deliver nothing (warning)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(ibVLBase, c.old) {
				t.Fatalf("base lacks %q", c.old)
			}
			s, err := Parse("t.yaml", []byte(strings.Replace(ibVLBase, c.old, c.new, 1)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range s.Warnings {
				got = append(got, w.Error()+" (warning)")
			}
			if c.want == "" && len(got) != 0 || c.want != "" && (len(got) != 1 || got[0] != c.want) {
				t.Errorf("warnings %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestStormIntervalFloor: a pfc_storm interval shorter than one PFC frame
// on the link is refused at its line: 1ps ran 10^8 events per 100 µs, a
// run that never ended in practice.
func TestStormIntervalFloor(t *testing.T) {
	storm := func(iv string) string {
		return replace("    h2: {kind: nic}", "    h2:\n      kind: nic\n      pfc_storm:\n        priority: 3\n        interval: "+iv)
	}
	_, err := Parse("t.yaml", []byte(storm("1ps")))
	want := `t.yaml:11: topology.nodes.h2.pfc_storm.interval: interval 1ps is shorter than one PFC frame on h2's 100G link (84 bytes with preamble, FCS and gap: 6.72ns): XOFFs cannot leave faster; 0 re-sends every half of the pause`
	if err == nil || strings.SplitN(err.Error(), "\n", 2)[0] != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	for _, iv := range []string{"6.72ns", "0", "2us"} {
		if _, err := Parse("t.yaml", []byte(storm(iv))); err != nil {
			t.Errorf("interval %s: %v", iv, err)
		}
	}
}
