package switchcore

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

type discard struct{}

func (discard) Transmit(f *frame.Frame) { f.Put() }

// benchForward pushes frames built from tmpl through s from port 0, one
// serialization time apart, and reports allocations per frame.
func benchForward(b *testing.B, s *Switch, clk *manualClock, pool *frame.Pool, tmpl []byte) {
	for i := range s.Ports() {
		s.Attach(i, discard{})
	}
	gap := clock.SerializationTime(len(tmpl), 100e9)
	b.ReportAllocs()
	b.SetBytes(int64(len(tmpl)))
	b.ResetTimer()
	for range b.N {
		f := pool.Get(len(tmpl))
		copy(f.Data, tmpl)
		f.HeadAt, f.TailAt = clk.now, clk.now
		s.Receive(0, f)
		clk.runUntil(clk.now + gap)
	}
	b.StopTimer()
	if d := s.Counters(0).TotalDrops() + s.Counters(1).TotalDrops(); d != 0 {
		b.Fatalf("%d drops", d)
	}
}

// BenchmarkForward: L2 (static FDB), lossless priority 3, store-and-forward.
func BenchmarkForward(b *testing.B) {
	s, clk, pool := newTestSwitch(b, testConfig(2, 100e9))
	f := roce(26).build(pool)
	tmpl := append([]byte(nil), f.Data...)
	f.Put()
	benchForward(b, s, clk, pool, tmpl)
}

// BenchmarkForwardL3ECMP: routed with a 4-way ECMP group, cut-through, ECN
// profile evaluated at dequeue, TTL decremented.
func BenchmarkForwardL3ECMP(b *testing.B) {
	c := testConfig(5, 100e9)
	c.L2 = nil
	c.CutThrough = true
	c.DecrementTTL = true
	c.Routes = []Route{{Prefix: netip.MustParsePrefix("10.0.0.0/24"), Ports: []int{1, 2, 3, 4}}}
	s, clk, pool := newTestSwitch(b, c)
	r := roce(26)
	f := r.build(pool)
	tmpl := append([]byte(nil), f.Data...)
	f.Put()
	benchForward(b, s, clk, pool, tmpl)
}

// BenchmarkForwardIB: native IB, LFT lookup, VL rewrite + VCRC, credits
// and flow-control packets.
func BenchmarkForwardIB(b *testing.B) {
	s, clk, pool := newTestSwitch(b, ibConfig(2))
	for i := range 2 {
		s.Attach(i, discard{})
	}
	s.cfg.IB.SL2VL[0] = 1 // force a VL change, so the VCRC is recomputed
	f := ibPkt(pool, 0, 0, 2, 1024)
	tmpl := append([]byte(nil), f.Data...)
	f.Put()
	// 10% slack: the egress port also carries its periodic flow-control
	// packets, so at exactly line rate its queue would grow without bound.
	gap := clock.SerializationTime(len(tmpl), 100e9) * 11 / 10
	fccl := uint16(0)
	b.ReportAllocs()
	b.SetBytes(int64(len(tmpl)))
	b.ResetTimer()
	for i := range b.N {
		if i%64 == 0 {
			fccl = uint16((int(fccl) + 64*17) & 4095)
			fc := fcPkt(pool, 1, 0, fccl)
			fc.HeadAt, fc.TailAt = clk.now, clk.now
			s.Receive(1, fc)
		}
		f := pool.Get(len(tmpl))
		copy(f.Data, tmpl)
		f.HeadAt, f.TailAt = clk.now, clk.now
		s.Receive(0, f)
		clk.runUntil(clk.now + gap)
	}
}

// TestMemoryPerPort states the fixed memory of one port (without queued
// frames, whose ring buffers grow to the deepest backlog seen: 8 bytes per
// queued frame slot).
func TestMemoryPerPort(t *testing.T) {
	size := unsafe.Sizeof(port{}) + unsafe.Sizeof(PortConfig{})
	t.Logf("port state %d bytes + config %d bytes = %d bytes per port", unsafe.Sizeof(port{}), unsafe.Sizeof(PortConfig{}), size)
	if size > 16<<10 {
		t.Errorf("port state grew to %d bytes", size)
	}
}
