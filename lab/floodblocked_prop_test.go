package lab

// TestFloodBlockedProperty (from a review): FloodBlocked is deterministic, blocks both ends
// of every link alike (so swd's noFlood agrees at both ends given the same
// database), and leaves exactly a spanning forest of the links up.

import (
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

func TestFloodBlockedProperty(t *testing.T) {
	for _, file := range []string{"../examples/leaf-spine.yaml", "../examples/deadlock-ring.yaml", "../cmd/emulab/testdata/up/ring3.yaml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := Parse(file, b)
		if err != nil {
			t.Fatal(err)
		}
		var ss []*Link
		for _, l := range spec.Links {
			if l.A.Node.Kind == KindSwitch && l.B.Node.Kind == KindSwitch {
				ss = append(ss, l)
			}
		}
		for seed := range uint64(2000) {
			rng := rand.New(rand.NewPCG(seed, 3))
			downSet := map[*Link]bool{}
			for _, l := range spec.Links {
				if rng.IntN(3) == 0 {
					downSet[l] = true
				}
			}
			down := func(l *Link) bool { return downSet[l] }
			b1, b2 := FloodBlocked(spec, down), FloodBlocked(spec, down)
			for n := range b1 {
				if !slices.Equal(b1[n], b2[n]) {
					t.Fatalf("%s seed %d: not deterministic at %s", file, seed, n.Name)
				}
			}
			open := 0
			for _, l := range ss {
				ba, bb := slices.Contains(b1[l.A.Node], l.A.Name), slices.Contains(b1[l.B.Node], l.B.Name)
				if ba != bb {
					t.Fatalf("%s seed %d: link %s-%s blocked at one end only", file, seed, l.A, l.B)
				}
				if downSet[l] && !ba {
					t.Fatalf("%s seed %d: down link %s-%s not blocked", file, seed, l.A, l.B)
				}
				if !ba {
					open++
				}
			}
			// a spanning forest: open links = switches - components (over links up)
			parent := map[*Node]*Node{}
			var find func(*Node) *Node
			find = func(n *Node) *Node {
				if parent[n] == nil || parent[n] == n {
					return n
				}
				r := find(parent[n])
				parent[n] = r
				return r
			}
			comps := len(spec.Switches())
			for _, l := range ss {
				if downSet[l] {
					continue
				}
				if a, b := find(l.A.Node), find(l.B.Node); a != b {
					parent[a] = b
					comps--
				}
			}
			if want := len(spec.Switches()) - comps; open != want {
				t.Fatalf("%s seed %d: %d links open for flooding, want %d (a spanning forest)", file, seed, open, want)
			}
		}
	}
}
