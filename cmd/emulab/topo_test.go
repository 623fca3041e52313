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

// TestTopoFlagErrors: a bad flag value is reported as the flag's, not at a
// line of the file topo would have written (and did not: it does not
// write a file with a problem); --traffic takes only the patterns it
// writes over every host.
func TestTopoFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "100GB"}, `--rate: rate "100GB": rates are in bits per second`},
		{[]string{"--delay", "5"}, `--delay: time "5": needs a unit`},
		{[]string{"--mtu", "100"}, "--mtu: 100 is out of range"},
		{[]string{"--name", "verylongname12345"}, `--name: name "verylongname12345" is 17 bytes long`},
		{[]string{"--traffic", "incast", "--size", "64K"}, `--size: size "64K": ambiguous unit "K"`},
		{[]string{"--traffic", "incast", "--priority", "9"}, "--priority: 9 is out of range"},
		{[]string{"--traffic", "incst"}, `--traffic "incst": one of incast, pairs, all_to_all, random`},
		{[]string{"--traffic", "fanout"}, `--traffic "fanout": one of incast, pairs, all_to_all, random`},
	} {
		_, _, err := runSubcommand(t, "topo", append([]string{"leafspine,2,2"}, c.args...)...)
		if err == nil {
			t.Errorf("%v: no error", c.args)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %q does not say %q", c.args, err, c.want)
		}
		if strings.Contains(err.Error(), ".yaml") {
			t.Errorf("%v: names a file nobody wrote: %q", c.args, err)
		}
	}
}
