package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// testHost is a minimal end host for scenario tests: it sends copies of a
// template frame back to back at its link rate until stop, honours PFC
// received from the switch (quanta at the link speed, checked before each
// frame, as a NIC does), and counts data delivered to it. The link has a
// propagation delay; the switch is store-and-forward here, so frames are
// delivered at their tail.
type testHost struct {
	s       *Switch
	port    int
	clk     *manualClock
	pool    *frame.Pool
	speed   uint64
	prop    clock.Time
	tmpl    []byte
	stop    clock.Time
	paused  clock.Time
	timer   clock.Timer
	rxBytes int
	rxAfter clock.Time // count rxBytes only for frames arriving in (rxAfter, stop]
}

func (h *testHost) start(at clock.Time) {
	h.timer = h.clk.NewTimer(h.send)
	h.timer.Reset(at)
}

func (h *testHost) send() {
	now := h.clk.now
	if h.tmpl == nil || now >= h.stop {
		return
	}
	if h.paused > now {
		h.timer.Reset(h.paused)
		return
	}
	f := h.pool.Get(len(h.tmpl))
	copy(f.Data, h.tmpl)
	tail := now + clock.SerializationTime(f.Len(), h.speed)
	arrive := tail + h.prop
	h.clk.at(arrive, func() {
		f.HeadAt, f.TailAt = arrive, arrive
		h.s.Receive(h.port, f)
	})
	h.timer.Reset(tail)
}

// Transmit is the switch -> host direction.
func (h *testHost) Transmit(f *frame.Frame) {
	arrive := f.TailAt + h.prop
	h.clk.at(arrive, func() {
		var mc wire.MACControl
		if wire.DecodeMACControl(f.Data, &mc) == nil && mc.Enable&(1<<3) != 0 {
			h.paused = arrive + wire.QuantaToTime(mc.Time[3], h.speed)
		} else if arrive > h.rxAfter && arrive <= h.stop {
			h.rxBytes += f.Len()
		}
		f.Put()
	})
}

// TestIncastLossless: 8:1 incast on lossless priority 3 at 100G with PFC
// and the default profile (300 m headroom, 1 µs links): zero drops, pauses
// sent, bottleneck busy >= 95 %; without PFC the same incast drops
// (issue 3 check a, at switch level).
func TestIncastLossless(t *testing.T) {
	const (
		senders = 8
		speed   = 100e9
		prop    = clock.Microsecond
		run     = 1000 * clock.Microsecond
	)
	for _, pfc := range []bool{true, false} {
		c := DefaultConfig("leaf", senders+1, speed)
		c.L2 = []L2Entry{{MAC: macB, Port: senders}}
		if !pfc {
			for i := range c.Ports {
				c.Ports[i].PFCEnable = 0
			}
		}
		s, clk, pool := newTestSwitch(t, c)
		tmpl := roce(26)
		tmpl.size = 4096
		f := tmpl.build(pool)
		frameBytes := append([]byte(nil), f.Data...)
		f.Put()
		hosts := make([]*testHost, senders+1)
		for i := range hosts {
			hosts[i] = &testHost{s: s, port: i, clk: clk, pool: pool, speed: speed, prop: prop, stop: run}
			if i < senders {
				hosts[i].tmpl = frameBytes
			}
			s.Attach(i, hosts[i])
			hosts[i].start(clock.Time(i) * 10 * clock.Nanosecond)
		}
		rx := hosts[senders]
		rx.rxAfter = 100 * clock.Microsecond
		clk.runUntil(run + 100*clock.Microsecond)

		var drops, pauses, overflow uint64
		for i := range hosts {
			pc := s.Counters(i)
			drops += pc.TotalDrops()
			pauses += pc.Prio[3].TxPause
			overflow += pc.Prio[3].HeadroomOverflow
		}
		busy := float64(rx.rxBytes) * 8 / speed / (run - rx.rxAfter).Seconds()
		t.Logf("pfc=%v: drops %d, pauses sent %d, headroom overflow %d, bottleneck busy %.3f", pfc, drops, pauses, overflow, busy)
		if pfc {
			if drops != 0 || overflow != 0 || pauses == 0 {
				t.Errorf("PFC on: drops %d, headroom overflow %d, pauses %d", drops, overflow, pauses)
			}
			if busy < 0.95 {
				t.Errorf("bottleneck busy %.3f < 0.95", busy)
			}
		} else if drops == 0 {
			t.Error("PFC off: no drops in an 8:1 incast")
		}
	}
}
