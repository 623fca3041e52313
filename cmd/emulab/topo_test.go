package main

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestTopoPriority: --priority is written as given, 0 included (priority
// 0 is the lossy class of most fabrics, not "the default"); without it the
// flows are on 3.
func TestTopoPriority(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"single,2", "--traffic", "incast", "--priority", "0"}, "priority: 0}"},
		{[]string{"single,2", "--traffic", "incast"}, "priority: 3}"},
	} {
		out, errOut, err := runSubcommand(t, "topo", c.args...)
		if err != nil {
			t.Fatalf("topo %v: %v\n%s", c.args, err, errOut)
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("topo %v: the traffic lacks %q:\n%s", c.args, c.want, out)
		}
	}
}

// TestTopoLosslessNone: priority 3 is lossless without --lossless (the
// switches' built-in pfc_enable 3,4), so a lossy fabric to compare with
// needs --lossless none, which writes an empty pfc_enable.
func TestTopoLosslessNone(t *testing.T) {
	out, errOut, err := runSubcommand(t, "topo", "single,3", "--lossless", "none", "--traffic", "incast")
	if err != nil {
		t.Fatalf("topo --lossless none: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, `pfc_enable: ""`) {
		t.Fatalf("--lossless none: no empty pfc_enable in\n%s", out)
	}
	spec, err := lab.Parse("lossy.yaml", []byte(out))
	if err != nil {
		t.Fatalf("the file does not parse: %v\n%s", err, out)
	}
	for _, sw := range spec.Switches() {
		if q := sw.QoS; q == nil || q.PortQoSMap == nil || !q.PortQoSMap.PFCEnableSet || q.PortQoSMap.PFCEnable != 0 {
			t.Errorf("%s: PFC not turned off: %+v", sw.Name, q)
		}
	}
	if _, _, err := runSubcommand(t, "topo", "single,3", "--lossless", "none,3"); err == nil {
		t.Errorf("--lossless none,3 was taken")
	}
}
