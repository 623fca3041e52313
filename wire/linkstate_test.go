package wire_test

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/wire"
)

func TestLinkStateRoundTrip(t *testing.T) {
	for _, l := range []wire.LinkState{
		{Origin: "leaf1", Epoch: 1, Seq: 2},
		{Origin: "spine2", Epoch: 1<<63 + 5, Seq: 9, Topology: 0x0123456789abcdef, Down: []string{"p1", "p12", "Ethernet48"}},
	} {
		b := make([]byte, wire.LinkStateLen(&l))
		n := wire.EncodeLinkState(b, wire.MAC{2, 0, 0, 0, 0, 9}, &l)
		if n < wire.MinFrameSize || n != len(b) {
			t.Fatalf("length %d of %d", n, len(b))
		}
		var got wire.LinkState
		if err := wire.DecodeLinkState(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Origin != l.Origin || got.Epoch != l.Epoch || got.Seq != l.Seq || got.Topology != l.Topology || strings.Join(got.Down, ",") != strings.Join(l.Down, ",") {
			t.Errorf("decoded %+v, want %+v", got, l)
		}
	}
	// Version 1 (no topology field) is refused, not misread.
	v1 := make([]byte, wire.LinkStateLen(&wire.LinkState{Origin: "leaf1"}))
	wire.EncodeLinkState(v1, wire.MAC{2}, &wire.LinkState{Origin: "leaf1"})
	v1[wire.EthernetSize] = 1
	if err := wire.DecodeLinkState(v1, &wire.LinkState{}); err == nil {
		t.Error("a version 1 advertisement decoded")
	}
	long := make([]byte, 256)
	if wire.LinkStateLen(&wire.LinkState{Origin: string(long)}) != -1 {
		t.Error("a 256-byte name was accepted")
	}
}

func FuzzDecodeLinkState(f *testing.F) {
	l := wire.LinkState{Origin: "sw1", Epoch: 3, Seq: 4, Topology: 7, Down: []string{"p2"}}
	b := make([]byte, wire.LinkStateLen(&l))
	wire.EncodeLinkState(b, wire.MAC{2}, &l)
	f.Add(b)
	f.Add(b[:20])
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var l wire.LinkState
		if wire.DecodeLinkState(b, &l) != nil {
			return
		}
		out := make([]byte, wire.LinkStateLen(&l))
		wire.EncodeLinkState(out, wire.MAC{2}, &l)
		var again wire.LinkState
		if err := wire.DecodeLinkState(out, &again); err != nil || again.Origin != l.Origin || again.Seq != l.Seq || again.Topology != l.Topology || len(again.Down) != len(l.Down) {
			t.Fatalf("re-encoded advertisement decodes to %+v (%v), want %+v", again, err, l)
		}
	})
}
