package main

import (
	"strings"
	"testing"
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
