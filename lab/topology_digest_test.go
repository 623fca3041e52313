package lab

import (
	"strings"
	"testing"
)

// The digest moves with what routes are computed from, and only with it.
func TestTopologyDigest(t *testing.T) {
	const base = `
name: digest
topology:
  defaults: {rate: 100G, delay: 1us}
  nodes:
    sw1: {kind: switch}
    sw2: {kind: switch}
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["sw1:p2", "sw2:p1"]
    - endpoints: ["h2:eth0", "sw2:p2"]
`
	digest := func(text string) uint64 {
		t.Helper()
		s, err := Parse("digest.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return s.TopologyDigest()
	}
	d := digest(base)
	if d == 0 || digest(base) != d {
		t.Fatalf("digest %x not stable and non-zero", d)
	}
	for _, c := range []struct {
		what, from, to string
		moves          bool
	}{
		{"a link's port", `"sw1:p2", "sw2:p1"`, `"sw1:p3", "sw2:p1"`, true},
		{"a host's address", `h2: {kind: nic}`, `h2: {kind: nic, ipv4: 10.0.9.9}`, true},
		{"a node's name", `h2: {kind: nic}`, `h3: {kind: nic}`, true},
		{"the rate", `rate: 100G`, `rate: 25G`, false},
		{"the delay", `delay: 1us`, `delay: 5us`, false},
	} {
		text := strings.Replace(base, c.from, c.to, 1)
		if c.what == "a node's name" {
			text = strings.ReplaceAll(text, "h2", "h3")
		}
		if got := digest(text); (got != d) != c.moves {
			t.Errorf("%s changed: digest %x -> %x, want moved %v", c.what, d, got, c.moves)
		}
	}
}
