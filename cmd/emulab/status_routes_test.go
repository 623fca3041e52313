package main

import (
	"reflect"
	"testing"
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
