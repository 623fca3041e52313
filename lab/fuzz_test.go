package lab

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the whole parse step (YAML, viper,
// decoding, validation): it must return a Spec or an error, never panic or
// hang.
func FuzzParse(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte(replace(`"sw1:p2"]`, `"sw1:p9"]`)))
	f.Add([]byte("name: x\nfabric: ib\ntopology: {nodes: {a: {kind: nic}, s: {kind: switch}}, links: [{endpoints: [a:p, s:p1]}]}\nib: {max_vls: 2, vlarb_low: \"0:4,1:4\"}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("name: x\ntopology:\n  defaults: &d {rate: 1G}\n  nodes: {<<: *d}\n"))
	examples, _ := filepath.Glob("../examples/*.yaml")
	for _, e := range examples {
		if b, err := os.ReadFile(e); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if (s == nil) == (err == nil) {
			t.Fatalf("Parse returned spec %v and error %v", s != nil, err)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		// A valid spec is consistent: every link's ports point back at it.
		for _, l := range s.Links {
			if l.A.Link != l || l.B.Link != l || l.A.Peer != l.B || l.B.Peer != l.A {
				t.Fatalf("link %d is not wired both ways", l.Index)
			}
		}
		for _, n := range s.Switches() {
			_ = s.RoutesOf(n)
		}
	})
}
