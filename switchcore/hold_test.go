package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// TestHoldTx: a held port starts no data frame, while control frames
// (PFC) still leave it; the frames wait in its egress queue, where the
// ingress accounting pauses the sender with XOFF on the lossless priority
// instead of dropping; released, the port sends every frame in order at
// link rate and the ingress resumes the sender with XON.
func TestHoldTx(t *testing.T) {
	const speed = 100e9
	s, clk, pool := newTestSwitch(t, testConfig(2, speed))
	in := &sink{clk: clk, keep: true}
	out := &sink{clk: clk, keep: true}
	s.Attach(0, in)
	s.Attach(1, out)

	s.HoldTx(1, true)
	const n = 8000                                                        // 8 MB: beyond the XOFF threshold of the 12 MiB dynamic lossless pool
	gap := clock.SerializationTime(frameLen+wire.EthernetOverhead, speed) // a frame and its preamble, FCS and gap
	for i := range n {
		clk.runUntil(clock.Time(i) * gap)
		f := roce(26).build(pool)
		f.Data[len(f.Data)-1] = byte(i)
		deliver(s, clk, 0, f)
	}
	clk.runUntil(clock.Time(n) * gap * 2)
	if len(out.frames) != 0 {
		t.Fatalf("a held port sent %d frames", len(out.frames))
	}
	c0 := s.Counters(0)
	xoffs := in.count(isPFC)
	if xoffs == 0 || c0.Prio[3].TxPause == 0 {
		t.Fatalf("the ingress sent no XOFF while the egress was held (pfc frames %d)", xoffs)
	}
	if d := s.Counters(0).TotalDrops() + s.Counters(1).TotalDrops(); d != 0 {
		t.Fatalf("%d drops on the lossless priority while held", d)
	}
	if s.QueueDepth(1, 3) != n*frameLen {
		t.Fatalf("queue depth %d, want %d", s.QueueDepth(1, 3), n*frameLen)
	}

	t0 := clk.now
	s.HoldTx(1, false)
	clk.runUntil(t0 + clock.Time(n+1)*gap)
	if len(out.frames) != n {
		t.Fatalf("released port sent %d frames, want %d", len(out.frames), n)
	}
	for i, x := range out.frames {
		if x.data[len(x.data)-1] != byte(i) {
			t.Fatalf("frame %d out of order", i)
		}
		if want := t0 + clock.Time(i)*gap; x.start != want {
			t.Fatalf("frame %d started at %v, want %v (back to back at link rate)", i, x.start, want)
		}
	}
	if in.count(isPFC) == xoffs {
		t.Error("no XON after the queue drained")
	}
	if s.QueueDepth(1, 3) != 0 {
		t.Errorf("queue depth %d after the drain", s.QueueDepth(1, 3))
	}
	// Hold is idempotent; releasing a port that is not held is a no-op.
	s.HoldTx(1, false)
	s.HoldTx(1, true)
	s.HoldTx(1, true)
	s.HoldTx(1, false)
}
