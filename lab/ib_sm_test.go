package lab

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// ibSMBase is an IB lab with a subnet manager; line 12 holds the sm key.
const ibSMBase = `name: t1
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
  sm: h1
`

func TestParseIBSM(t *testing.T) {
	for _, c := range []struct {
		name, sm string
		host     string
		sweep    clock.Time
	}{
		{"name", "h1", "h1", DefaultIBSweepInterval},
		{"mapping", "{host: h1, sweep_interval: 50us}", "h1", 50 * clock.Microsecond},
		{"no light sweeps", "{host: h1, sweep_interval: 0}", "h1", 0},
	} {
		s, err := Parse("t.yaml", []byte(strings.Replace(ibSMBase, "sm: h1", "sm: "+c.sm, 1)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.IB.SM == nil || s.IB.SM.Host != c.host || s.IB.SM.SweepInterval != c.sweep {
			t.Errorf("%s: SM %+v", c.name, s.IB.SM)
		}
	}
	s, err := Parse("t.yaml", []byte(strings.Replace(ibSMBase, "ib:\n  sm: h1\n", "", 1)))
	if err != nil || s.IB.SM != nil {
		t.Errorf("no sm key: SM %+v, %v", s.IB.SM, err)
	}
}

func TestParseIBSMErrors(t *testing.T) {
	for _, c := range []struct{ name, edit, want string }{
		{"unknown node", "sm: h9", `t.yaml:12: ib.sm: no node "h9": the subnet manager runs on a NIC node`},
		{"a switch", "sm: sw1", `t.yaml:12: ib.sm: sw1 is a switch: the subnet manager runs on a NIC node's HCA`},
		{"no link", "sm: h2", `t.yaml:12: ib.sm: h2 has no link: the subnet manager could not reach the fabric`},
		{"host missing", "sm: {sweep_interval: 1us}", `t.yaml:12: ib.sm: missing key "host" (the NIC node that runs the subnet manager)`},
		{"negative sweep", "sm: {host: h1, sweep_interval: -1us}", `t.yaml:12: ib.sm.sweep_interval:`},
		{"typo", "sm: {host: h1, sweep_intervall: 1us}", `t.yaml:12: ib.sm.sweep_intervall: unknown key "sweep_intervall" (did you mean "sweep_interval"?)`},
	} {
		_, err := Parse("t.yaml", []byte(strings.Replace(ibSMBase, "sm: h1", c.edit, 1)))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
	}
	// The SM is lab-wide: a node's own ib section cannot move it.
	y := strings.Replace(ibSMBase, "h2: {kind: nic}", "h2: {kind: nic, ib: {sm: h2}}", 1)
	if _, err := Parse("t.yaml", []byte(y)); err == nil || !strings.Contains(err.Error(), "t.yaml:8: topology.nodes.h2.ib.sm: the subnet manager is lab-wide") {
		t.Errorf("node-level sm: %v", err)
	}
}
