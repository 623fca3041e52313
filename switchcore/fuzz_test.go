package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// queued counts frames the switch holds.
func (s *Switch) queued() int {
	n := 0
	for i := range s.ports {
		p := &s.ports[i]
		n += p.ctrl.len()
		for q := range NumPriorities {
			n += p.eq[q].len()
		}
	}
	return n
}

// FuzzReceive feeds arbitrary bytes to an Ethernet and an IB switch: no
// panic, every frame is either forwarded, consumed (PFC / flow control),
// queued, or dropped with a counted reason, and no frame leaks.
func FuzzReceive(f *testing.F) {
	pool := frame.NewPool()
	add := func(fr *frame.Frame) {
		f.Add(append([]byte(nil), fr.Data...))
		fr.Put()
	}
	add(roce(26).build(pool))
	r := roce(0)
	r.tagged, r.pcp = true, 3
	add(r.build(pool))
	add(pfcFrame(pool, 1<<3, [8]uint16{3: 100}))
	pz := pool.Get(wire.MACControlFrameSize)
	wire.EncodePause(pz.Data, macB, 10)
	add(pz)
	add(ibPkt(pool, 0, 1, 2, ibLen))
	add(ibPkt(pool, 15, 0, 2, 24))
	add(fcPkt(pool, 0, 5, 100))
	f.Add([]byte{})
	f.Add([]byte{0x81, 0, 0, 0})
	f.Add(make([]byte, 18))

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > frame.MaxFrame {
			data = data[:frame.MaxFrame]
		}
		for _, fabric := range []Fabric{FabricEthernet, FabricIB} {
			var c *Config
			if fabric == FabricIB {
				c = ibConfig(3)
			} else {
				c = testConfig(3, 100e9)
			}
			c.CutThrough = len(data)%2 == 0
			s, clk, pool := newTestSwitch(t, c)
			for i := range 3 {
				s.Attach(i, &sink{clk: clk})
			}
			if fabric == FabricIB {
				for vl := range uint8(8) {
					deliver(s, clk, 1, fcPkt(pool, vl, 0, 2000))
				}
			}
			fr := pool.Get(len(data))
			copy(fr.Data, data)
			deliver(s, clk, 0, fr)
			// Long enough for any pause (0xFFFF quanta at 100G = 336 µs)
			// to expire; IB has no pauses and sends credit updates every
			// 4 µs, so a short run covers it.
			end := 2 * clock.Millisecond
			if fabric == FabricIB {
				end = 50 * clock.Microsecond
			}
			clk.runUntil(clk.now + end)
			if got := pool.Outstanding; got != s.queued() {
				t.Fatalf("fabric %d: %d frames outstanding, %d queued", fabric, got, s.queued())
			}
			if s.Counters(0).RxPacketsPhy == 0 {
				t.Fatal("frame not counted")
			}
		}
	})
}
