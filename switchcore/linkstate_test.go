package switchcore

import (
	"slices"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// relay is a link from one switch's port to another's: a frame sent
// arrives at its tail time.
type relay struct {
	clk  *manualClock
	to   *Switch
	port int
}

func (r *relay) Transmit(f *frame.Frame) {
	r.clk.at(f.TailAt, func() {
		f.HeadAt = r.clk.now
		r.to.Receive(r.port, f)
	})
}

// TestLinkStateAdvertisements: two switches joined on their p2s, a host
// port each. A switch advertises its down ports to the other when one
// changes; the other tells its driver the new down set once (not again
// for an advertisement it already has); a switch whose link to the other
// comes back sends what it holds; an advertisement of our own coming
// back is ignored, a malformed one counted.
func TestLinkStateAdvertisements(t *testing.T) {
	clk := &manualClock{}
	pool := frame.NewPool()
	mk := func(name string) *Switch {
		c := testConfig(2, 100e9)
		c.Name = name
		s, err := New(c, clk, pool)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := mk("a"), mk("b")
	a.Attach(1, &relay{clk: clk, to: b, port: 1})
	b.Attach(1, &relay{clk: clk, to: a, port: 1})
	a.Attach(0, &sink{clk: clk})
	b.Attach(0, &sink{clk: clk})
	var seenA, seenB []map[string][]string
	a.EnableLinkState(7, []bool{false, true}, func(db map[string][]string) { seenA = append(seenA, db) })
	b.EnableLinkState(7, []bool{false, true}, func(db map[string][]string) { seenB = append(seenB, db) })

	a.SetPortUp(0, false) // a's host link
	clk.runUntil(clk.now + clock.Microsecond)
	if len(seenB) != 1 || !slices.Equal(seenB[0]["a"], []string{"p1"}) {
		t.Fatalf("b's driver saw %v, want one change with a: [p1]", seenB)
	}
	if len(seenA) != 1 || !slices.Equal(seenA[0]["a"], []string{"p1"}) {
		t.Fatalf("a's driver saw %v", seenA)
	}
	if c := b.Counters(1); c.LinkStateRx != 1 || a.Counters(1).LinkStateTx != 1 {
		t.Errorf("advertisements: a sent %d, b received %d", a.Counters(1).LinkStateTx, c.LinkStateRx)
	}

	// The link between them goes down and comes back: on the way up a
	// sends its advertisement again (b's copy is not newer, no change),
	// and b's own, now listing nothing, withdraws its p2 from a's view.
	a.SetPortUp(1, false)
	b.SetPortUp(1, false)
	a.SetPortUp(1, true)
	b.SetPortUp(1, true)
	clk.runUntil(clk.now + clock.Microsecond)
	if db := b.LinkStateDB(); !slices.Equal(db["a"], []string{"p1"}) || len(db["b"]) != 0 {
		t.Errorf("b's database after the link came back: %v", db)
	}
	if db := a.LinkStateDB(); len(db["b"]) != 0 {
		t.Errorf("a's database still has b's p2 down: %v", db)
	}

	// Our own advertisement, come back round: ignored.
	own := a.LinkStateDB()
	f := pool.Get(64)
	l := &wire.LinkState{Origin: "a", Epoch: 7, Seq: 1, Down: []string{"p2"}}
	f.SetLen(wire.LinkStateLen(l))
	wire.EncodeLinkState(f.Data, wire.MAC{2}, l)
	a.Receive(1, f)
	if db := a.LinkStateDB(); !slices.Equal(db["a"], own["a"]) {
		t.Errorf("an old advertisement of our own replaced ours: %v", db)
	}
	// Malformed: counted, nothing else.
	g := pool.Get(64)
	wire.EncodeLinkState(g.Data, wire.MAC{2}, &wire.LinkState{Origin: "x"})
	g.Data[wire.EthernetSize] = 9 // version
	before := b.Counters(1).Drops[DropMalformed]
	b.Receive(1, g)
	if b.Counters(1).Drops[DropMalformed] != before+1 {
		t.Error("a malformed advertisement was not counted")
	}
}
