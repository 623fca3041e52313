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
	names := []string{"a", "b"}
	a.EnableLinkState(7, []string{"", "b"}, names, 0, func(db map[string][]string) { seenA = append(seenA, db) })
	b.EnableLinkState(7, []string{"", "a"}, names, 0, func(db map[string][]string) { seenB = append(seenB, db) })

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

// lineOfSwitches is a - b - c, p2 of a to p2 of b, p3 of b to p2 of c, a
// host port (p1) on each, link-state routing on.
func lineOfSwitches(t *testing.T) (*manualClock, *frame.Pool, [3]*Switch) {
	clk := &manualClock{}
	pool := frame.NewPool()
	mk := func(name string, n int) *Switch {
		c := testConfig(n, 100e9)
		c.Name = name
		s, err := New(c, clk, pool)
		if err != nil {
			t.Fatal(err)
		}
		s.Attach(0, &sink{clk: clk})
		return s
	}
	a, b, c := mk("a", 2), mk("b", 3), mk("c", 2)
	a.Attach(1, &relay{clk: clk, to: b, port: 1})
	b.Attach(1, &relay{clk: clk, to: a, port: 1})
	b.Attach(2, &relay{clk: clk, to: c, port: 1})
	c.Attach(1, &relay{clk: clk, to: b, port: 2})
	names := []string{"a", "b", "c"}
	a.EnableLinkState(1, []string{"", "b"}, names, 0, nil)
	b.EnableLinkState(1, []string{"", "a", "c"}, names, 0, nil)
	c.EnableLinkState(1, []string{"", "b"}, names, 0, nil)
	return clk, pool, [3]*Switch{a, b, c}
}

// TestLinkStateHealsACutOffSwitch: a's p1 goes down and every switch
// learns it; c is cut off, a's p1 comes back (c misses the news), c
// reconnects: it learns that a's p1 is up again (b sends it every
// advertisement it holds, one listing nothing down included). It kept
// a: [p1] for good (a review).
func TestLinkStateHealsACutOffSwitch(t *testing.T) {
	clk, _, sw := lineOfSwitches(t)
	a, b, c := sw[0], sw[1], sw[2]
	step := func() { clk.runUntil(clk.now + clock.Microsecond) }
	a.SetPortUp(0, false)
	step()
	if !slices.Equal(c.LinkStateDB()["a"], []string{"p1"}) {
		t.Fatalf("c's database %v, want a: [p1]", c.LinkStateDB())
	}
	b.SetPortUp(2, false)
	c.SetPortUp(1, false)
	step()
	a.SetPortUp(0, true)
	step()
	b.SetPortUp(2, true)
	c.SetPortUp(1, true)
	step()
	if db := c.LinkStateDB(); len(db["a"]) != 0 {
		t.Errorf("c still believes a's p1 is down after the fabric healed: %v", db)
	}
}

// TestLinkStateRefusesHostsAndStrangers: an advertisement from a port to
// a host, or from a switch the fabric does not have, is refused and
// counted (a host could flood the database and make every switch
// recompute its routes a thousand times); a frame of the experimental
// EtherType to an ordinary address is forwarded like any other; our own
// name with the last sequence number does not stop our advertisements.
func TestLinkStateRefusesHostsAndStrangers(t *testing.T) {
	clk, pool, sw := lineOfSwitches(t)
	b := sw[1]
	inject := func(port int, l *wire.LinkState) {
		f := pool.Get(wire.LinkStateLen(l))
		wire.EncodeLinkState(f.Data, wire.MAC{2}, l)
		b.Receive(port, f)
	}
	for i := range 100 {
		inject(0, &wire.LinkState{Origin: "a", Epoch: 9, Seq: uint64(i + 1), Down: []string{"p2"}})
	}
	inject(1, &wire.LinkState{Origin: "ghost", Epoch: 9, Seq: 1, Down: []string{"p1"}})
	clk.runUntil(clk.now + clock.Microsecond)
	if db := b.LinkStateDB(); len(db) != 0 {
		t.Errorf("database %v after advertisements from a host and a stranger", db)
	}
	if c0, c1 := b.Counters(0), b.Counters(1); c0.LinkStateRefused != 100 || c1.LinkStateRefused != 1 || c0.LinkStateRx+c1.LinkStateRx != 0 {
		t.Errorf("refused %d on the host port, %d from the stranger; received %d", c0.LinkStateRefused, c1.LinkStateRefused, c0.LinkStateRx+c1.LinkStateRx)
	}

	out := &sink{clk: clk}
	b.Attach(0, out)
	f := pool.Get(100)
	wire.EncodeEthernet(f.Data, &wire.EthernetFields{Dst: macA, Src: macB, EtherType: wire.EtherTypeLinkState})
	deliver(b, clk, 1, f)
	clk.runUntil(clk.now + clock.Microsecond)
	if len(out.frames) != 1 {
		t.Errorf("a unicast frame of EtherType 0x88B5 was not forwarded (%d out)", len(out.frames))
	}

	// Our own name, the last sequence number, from a neighbour: we
	// outnumber it in the next epoch, and our next advertisement is
	// still newer than it.
	inject(1, &wire.LinkState{Origin: "b", Epoch: 1, Seq: ^uint64(0)})
	b.SetPortUp(0, false)
	clk.runUntil(clk.now + clock.Microsecond)
	if db := sw[0].LinkStateDB(); !slices.Equal(db["b"], []string{"p1"}) {
		t.Errorf("a's view of b after b's sequence ran out: %v", db)
	}
}

// TestLinkStateEndsComeUpApart: in real time the two ends of a link come
// up milliseconds apart, and what the first end sends at once is dropped
// at the other, still down. b has no advertisement of a at all (a's
// host port went down while their link was down); when b's end comes up,
// its new advertisement makes a send its database again, and b learns
// that a's p1 is down. (An older copy at b is answered too: an older
// advertisement of a switch's own gets its newest back.)
func TestLinkStateEndsComeUpApart(t *testing.T) {
	clk, _, sw := lineOfSwitches(t)
	a, b := sw[0], sw[1]
	step := func() { clk.runUntil(clk.now + clock.Microsecond) }
	a.SetPortUp(1, false)
	b.SetPortUp(1, false)
	step()
	a.SetPortUp(0, false) // nobody hears it: a's only link to a switch is down
	a.SetPortUp(1, true)  // a's end first: its advertisements die at b's end
	step()
	if b.Counters(1).Drops[DropLinkDown] == 0 {
		t.Fatal("nothing was lost at b's end: the test proves nothing")
	}
	b.SetPortUp(1, true)
	step()
	if db := b.LinkStateDB(); !slices.Equal(db["a"], []string{"p1"}) {
		t.Errorf("b's database %v, want a: [p1]", db)
	}
}

// TestLinkStateTopologyMismatch: in a - b - c, a's lab file differs (its
// digest): b and c count every advertisement of a's and tell their
// drivers once each; a tells of b and c; the digest crosses b unchanged
// (c learns a's, not b's); switches with the same digest, or one not
// given, are not told.
func TestLinkStateTopologyMismatch(t *testing.T) {
	clk, _, sw := lineOfSwitches(t)
	a, b, c := sw[0], sw[1], sw[2]
	told := map[string][]string{}
	for i, s := range sw {
		digest := uint64(100)
		if i == 0 {
			digest = 200
		}
		name := s.Name()
		s.SetLinkStateTopology(digest, func(origin string, theirs uint64) {
			told[name] = append(told[name], origin)
		})
	}
	step := func() { clk.runUntil(clk.now + clock.Microsecond) }
	a.SetPortUp(0, false)
	step()
	a.SetPortUp(0, true)
	step()
	c.SetPortUp(0, false)
	step()
	if !slices.Equal(told["b"], []string{"a"}) || !slices.Equal(told["c"], []string{"a"}) {
		t.Errorf("b told of %v, c of %v; want a once each", told["b"], told["c"])
	}
	if got := slices.Sorted(slices.Values(told["a"])); !slices.Equal(got, []string{"c"}) {
		t.Errorf("a told of %v, want c (b never advertised)", got)
	}
	// a's two, and a's again in b's database, which b sends c when c
	// says its ports changed.
	if n := c.Counters(1).LinkStateMismatch; n != 3 {
		t.Errorf("c counted %d mismatched advertisements, want the 3 of a's it received", n)
	}
	if got := c.LinkStateMismatched(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("c's mismatched origins %v, want [a]", got)
	}
	if n := b.Counters(2).LinkStateMismatch; n != 0 {
		t.Errorf("b counted %d mismatches from c, which has its digest", n)
	}
}

// TestLinkStateTopologyMismatchClears: a's lab file differed and a is
// run again with the one b and c have (here: its digest set to theirs,
// then a new advertisement): c no longer lists a, as its newest
// advertisement agrees; a's differing again is told again. b's own
// advertisement from an earlier life, with another digest, neither
// lists b nor counts (it kept a restarted switch listed as mismatched
// for good, and `emulab status` printed it).
func TestLinkStateTopologyMismatchClears(t *testing.T) {
	clk, pool, sw := lineOfSwitches(t)
	a, b, c := sw[0], sw[1], sw[2]
	told := map[string][]string{}
	set := func(s *Switch, digest uint64) {
		name := s.Name()
		s.SetLinkStateTopology(digest, func(origin string, theirs uint64) {
			if theirs == digest {
				origin += " agrees" // told when it agrees again
			}
			told[name] = append(told[name], origin)
		})
	}
	set(a, 200)
	set(b, 100)
	set(c, 100)
	step := func() { clk.runUntil(clk.now + clock.Microsecond) }
	a.SetPortUp(0, false)
	step()
	if got := c.LinkStateMismatched(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("c's mismatched origins %v, want [a]", got)
	}
	set(a, 100)
	a.SetPortUp(0, true)
	step()
	if got := c.LinkStateMismatched(); len(got) != 0 {
		t.Errorf("c still lists %v after a advertised c's digest", got)
	}
	if got := b.LinkStateMismatched(); len(got) != 0 {
		t.Errorf("b still lists %v after a advertised b's digest", got)
	}
	set(a, 300)
	a.SetPortUp(0, false)
	step()
	if want := []string{"a", "a agrees", "a"}; !slices.Equal(told["c"], want) {
		t.Errorf("c told of %v, want %v (it differed, agreed, differed)", told["c"], want)
	}

	before := b.Counters(1).LinkStateMismatch
	f := pool.Get(wire.LinkStateLen(&wire.LinkState{Origin: "b"}))
	wire.EncodeLinkState(f.Data, wire.MAC{2}, &wire.LinkState{Origin: "b", Epoch: 0, Seq: 1, Topology: 999})
	b.Receive(1, f)
	step()
	if got := b.LinkStateMismatched(); slices.Contains(got, "b") {
		t.Errorf("b lists itself as mismatched after its own old advertisement: %v", got)
	}
	if n := b.Counters(1).LinkStateMismatch - before; n != 0 {
		t.Errorf("b counted its own old advertisement as %d mismatched", n)
	}
}
