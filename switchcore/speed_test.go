package switchcore

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// TestSetPortSpeed: after SetPortSpeed the port serializes at the new
// speed (a frame's tail is its length at that rate after its start), a
// speed of 0, an unknown port, and a speed whose pause time would not
// outlast the configured PFC refresh are refused and change nothing.
func TestSetPortSpeed(t *testing.T) {
	c := testConfig(2, 100e9)
	c.PFCQuanta = 0xFFFF
	c.PFCRefresh = 100 * clock.Microsecond // shorter than 65535 quanta at 100G (335 us)
	s, clk, pool := newTestSwitch(t, c)
	out := &sink{clk: clk}
	s.Attach(1, out)
	if err := s.SetPortSpeed(1, 1e9); err != nil {
		t.Fatal(err)
	}
	if got := s.PortSpeed(1); got != 1e9 {
		t.Fatalf("PortSpeed after SetPortSpeed(1G) = %d", got)
	}
	f := roce(26).build(pool)
	n := f.Len()
	deliver(s, clk, 0, f)
	clk.runUntil(clk.now + clock.Millisecond)
	if len(out.frames) != 1 {
		t.Fatalf("%d frames sent, want 1", len(out.frames))
	}
	if ser := out.frames[0].tail - out.frames[0].start; ser != clock.SerializationTime(n, 1e9) {
		t.Errorf("a %d-byte frame took %v on the port, want %v at 1 Gb/s", n, ser, clock.SerializationTime(n, 1e9))
	}

	for _, bad := range []struct {
		port int
		bps  uint64
		want string
	}{
		{1, 0, "speed 0"},
		{5, 1e9, "no port 5"},
		// 65535 quanta at 400G: 84 us, within the 100 us refresh.
		{1, 400e9, "not longer than the PFC refresh"},
	} {
		if err := s.SetPortSpeed(bad.port, bad.bps); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("SetPortSpeed(%d, %d): %v, want %q", bad.port, bad.bps, err, bad.want)
		}
	}
	if got := s.PortSpeed(1); got != 1e9 {
		t.Errorf("a refused speed changed the port's: %d", got)
	}
}

// TestSetPortSpeedMidFrame: a frame started at 1 kb/s sends the rest of
// its bits at the speed set while it is on the wire: the port takes the
// next frame nanoseconds after a change to 100 Gb/s, not when the first
// would have ended at 1 kb/s (half a second later).
func TestSetPortSpeedMidFrame(t *testing.T) {
	s, clk, pool := newTestSwitch(t, testConfig(2, 100e9))
	out := &sink{clk: clk}
	s.Attach(1, out)
	if err := s.SetPortSpeed(1, 1e3); err != nil {
		t.Fatal(err)
	}
	deliver(s, clk, 0, roce(26).build(pool))
	clk.runUntil(clock.Millisecond)
	if err := s.SetPortSpeed(1, 100e9); err != nil {
		t.Fatal(err)
	}
	deliver(s, clk, 0, roce(26).build(pool))
	clk.runUntil(clk.now + clock.Millisecond)
	if len(out.frames) != 2 {
		t.Fatalf("%d frames sent by 2 ms, want 2", len(out.frames))
	}
	if st := out.frames[1].start; st > clock.Millisecond+clock.Microsecond {
		t.Errorf("the second frame started at %v, want just after the change at 1 ms", st)
	}
}

// TestSetPortSpeedArriving: a frame whose tail is still arriving on a port
// (the daemon computed its TailAt at the port's speed) waits in its egress
// queue for the tail; a speed change moves the tail, as the rest of its
// bits come at the new speed. After `link set h1 rate 1` and back to
// 100G, a ping that began to arrive at 1 b/s held its egress queue for
// 784 s and h1 reached nobody.
func TestSetPortSpeedArriving(t *testing.T) {
	s, clk, pool := newTestSwitch(t, testConfig(2, 100e9))
	out := &sink{clk: clk}
	s.Attach(1, out)
	if err := s.SetPortSpeed(0, 1); err != nil {
		t.Fatal(err)
	}
	f := roce(26).build(pool)
	f.HeadAt, f.TailAt = clk.now, clk.now+clock.SerializationTime(f.Len(), 1)
	s.Receive(0, f)
	clk.runUntil(clock.Millisecond)
	if len(out.frames) != 0 {
		t.Fatalf("a store-and-forward port sent a frame before its tail arrived")
	}
	if err := s.SetPortSpeed(0, 100e9); err != nil {
		t.Fatal(err)
	}
	clk.runUntil(2 * clock.Millisecond)
	if len(out.frames) != 1 {
		t.Fatalf("%d frames sent by 2 ms, want the one whose tail came at 100 Gb/s after the change at 1 ms", len(out.frames))
	}
	if st := out.frames[0].start; st > clock.Millisecond+clock.Microsecond {
		t.Errorf("it started at %v, want just after the change at 1 ms", st)
	}
}
