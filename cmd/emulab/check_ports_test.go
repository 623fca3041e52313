package main

import (
	"reflect"
	"strings"
	"testing"
)

// TestPortRuns: check names the ports kept out of flooding by runs, so a
// large leaf-spine's list stays short; a run breaks at a gap, at another
// switch and at a name without a number, and a single port stays as it is.
func TestPortRuns(t *testing.T) {
	in := []string{"spine2:p2", "spine2:p3", "spine2:p4", "leaf2:p6", "leaf3:p6", "leaf3:p8", "leaf3:p9",
		"sw1:up", "sw1:eth1", "sw1:eth2", "sw1:p01", "sw1:p02"}
	want := []string{"spine2:p2-p4", "leaf2:p6", "leaf3:p6", "leaf3:p8-p9", "sw1:up", "sw1:eth1-eth2", "sw1:p01", "sw1:p02"}
	if got := portRuns(in); !reflect.DeepEqual(got, want) {
		t.Errorf("portRuns:\n got %q\nwant %q", got, want)
	}
	if got := portRuns(nil); len(got) != 0 {
		t.Errorf("portRuns(nil) = %q", got)
	}
}

// TestCheckLargeLeafSpine: the summary of the largest leaf-spine topo
// writes (737 ports outside the spanning tree) has no line longer than a
// terminal's 100 columns or so, and still names every switch's ports.
func TestCheckLargeLeafSpine(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/big.yaml"
	if _, errOut, err := runSubcommand(t, "topo", "leafspine,32,24,8", "-o", file); err != nil {
		t.Fatalf("topo: %v\n%s", err, errOut)
	}
	out, errOut, err := runCheckCmd(t, file)
	if err != nil {
		t.Fatalf("check: %v\n%s", err, errOut)
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 130 {
			t.Errorf("a line of %d bytes: %.80s...", len(l), l)
		}
	}
	for _, want := range []string{"spine2:p2-p32", "spine24:p2-p32", "leaf32:p10-p32"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := wrapWords([]string{"aaaa", "bb", "cc", "dddddddd"}, 7); !reflect.DeepEqual(got, []string{"aaaa bb", "cc", "dddddddd"}) {
		t.Errorf("wrapWords: %q", got)
	}
}
