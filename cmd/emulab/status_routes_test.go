package main

import (
	"reflect"
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestRoutedAroundLines: switches that agree on the links they route
// around share one line of status, in the order status meets them; one
// that disagrees gets its own, and a switch that routes around nothing
// adds nothing.
func TestRoutedAroundLines(t *testing.T) {
	var r routedAround
	down := []string{"leaf1:p5-spine1:p1"}
	r.add("spine2", down)
	r.add("leaf1", down)
	r.add("leaf2", nil)
	r.add("leaf3", []string{"leaf1:p5-spine1:p1", "leaf2:p5-spine1:p2"})
	r.add("leaf4", down)
	want := []string{
		"  spine2, leaf1, leaf4 route around: leaf1:p5-spine1:p1",
		"  leaf3 routes around: leaf1:p5-spine1:p1 leaf2:p5-spine1:p2",
	}
	if got := r.lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("lines:\n got %q\nwant %q", got, want)
	}
	var none routedAround
	none.add("sw1", nil)
	if got := none.lines(); len(got) != 0 {
		t.Errorf("nothing routed around: %q", got)
	}
}

// TestDeadNodeLine: status says of a dead daemon which it is and where its
// log is, rather than that its socket refuses (and that status, the
// command being read, shows which is dead).
func TestDeadNodeLine(t *testing.T) {
	got := deadNodeLine(lab.NodeInfo{Name: "leaf1", Log: "/s/l/log/leaf1.log"}, lab.ProcStatus{Name: "emuswitch-leaf1", Pid: 42})
	want := "  leaf1: emuswitch-leaf1 (pid 42) is dead: its ports are not listed, and its links are down; its log: /s/l/log/leaf1.log"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
