package lab

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/cc"
)

// ibCCBase is an IB lab with congestion control; the cc section starts on
// line 12.
const ibCCBase = `name: t1
fabric: ib
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4096}
  nodes:
    h1: {kind: nic}
    sw1: {kind: switch}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:ib0", "sw1:p1"]
ib:
  cc: CC
`

func parseIBCC(t *testing.T, section string) (*Spec, error) {
	t.Helper()
	return Parse("t.yaml", []byte(strings.Replace(ibCCBase, "cc: CC", "cc: "+section, 1)))
}

func TestParseIBCC(t *testing.T) {
	s, err := parseIBCC(t, "true")
	if err != nil {
		t.Fatal(err)
	}
	c := s.IB.CC
	if c == nil || c.Threshold != 12 || c.MarkingRate != 1 || c.PacketSize != 1 || c.VictimMask != VictimCA ||
		c.CA.CCTIIncrease != 1 || c.CA.CCTITimer != 10 || c.CA.CCTILimit != 127 || len(c.CA.CCT) != 128 {
		t.Fatalf("cc: true = %+v", c)
	}
	s, err = parseIBCC(t, "false")
	if err != nil || s.IB.CC != nil {
		t.Fatalf("cc: false = %+v, %v", s.IB.CC, err)
	}
	s, err = parseIBCC(t, `{threshold: 9, marking_rate: 3, packet_size: 8, victim_mask: none, port_control: sl,
    ccti_increase: 2, ccti_min: 1, ccti_timer: 150, trigger_threshold: 4, cct: "0:0,0:1,1:3,2:9", ccti_limit: 2}`)
	if err != nil {
		t.Fatal(err)
	}
	c = s.IB.CC
	want := cc.IBCC{PortControl: cc.PortControlSL, CCTITimer: 150, CCTIIncrease: 2, CCTIMin: 1, TriggerThreshold: 4, CCTILimit: 2,
		CCT: []cc.CCTEntry{{Shift: 0, Multiplier: 0}, {Shift: 0, Multiplier: 1}, {Shift: 1, Multiplier: 3}, {Shift: 2, Multiplier: 9}}}
	if c.Threshold != 9 || c.MarkingRate != 3 || c.PacketSize != 8 || c.VictimMask != VictimNone {
		t.Errorf("switch side %+v", c)
	}
	got := c.CA
	if got.PortControl != want.PortControl || got.CCTITimer != want.CCTITimer || got.CCTIIncrease != want.CCTIIncrease ||
		got.CCTIMin != want.CCTIMin || got.TriggerThreshold != want.TriggerThreshold || got.CCTILimit != want.CCTILimit ||
		len(got.CCT) != len(want.CCT) || got.CCT[3] != want.CCT[3] {
		t.Errorf("host side %+v, want %+v", got, want)
	}
	// A table alone sets the limit to its last entry; linear tables.
	s, err = parseIBCC(t, `{cct: "linear:32:4"}`)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.IB.CC.CA; c.CCTILimit != 31 || c.CCT[31] != (cc.CCTEntry{Shift: 2, Multiplier: 124}) {
		t.Errorf("linear table: limit %d entry 31 %+v", c.CCTILimit, c.CCT[31])
	}
	s, err = parseIBCC(t, `{cct: ["0:0", "0:2"]}`)
	if err != nil || s.IB.CC.CA.CCTILimit != 1 || s.IB.CC.CA.CCT[1].Multiplier != 2 {
		t.Fatalf("list table: %+v %v", s.IB.CC, err)
	}
}

func TestParseIBCCErrors(t *testing.T) {
	for _, c := range []struct{ name, section, want string }{
		{"threshold", "{threshold: 16}", `t.yaml:12: ib.cc.threshold: 16 is out of range [0, 15]`},
		{"typo", "{ccti_timr: 5}", `t.yaml:12: ib.cc.ccti_timr: unknown key "ccti_timr" (did you mean "ccti_timer"?)`},
		{"victim mask", "{victim_mask: some}", `t.yaml:12: ib.cc.victim_mask: "some" is not one of ca, all, none`},
		{"bad table", `{cct: "0:0,9:1"}`, `t.yaml:12: ib.cc.cct: entry 1 "9:1": shift is 0..3 and multiplier 0..16383`},
		{"limit beyond table", `{cct: "0:0,0:1", ccti_limit: 5}`, `t.yaml:12: ib.cc.ccti_limit: ccti_limit: 5 needs 6 table entries, cct has 2`},
		{"increase 0", "{ccti_increase: 0}", `t.yaml:12: ib.cc.ccti_increase: ccti_increase: must be >= 1`},
		{"min above limit", `{cct: "0:0,0:1", ccti_min: 3}`, `t.yaml:12: ib.cc.ccti_min: ccti_min: 3 is above ccti_limit 1`},
		{"linear", `{cct: "linear:0:1"}`, `t.yaml:12: ib.cc.cct: "linear:0:1": linear:N:STEP needs`},
		{"not a mapping", "7", `t.yaml:12: ib.cc: expected a mapping`},
	} {
		_, err := parseIBCC(t, c.section)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
	}
}
