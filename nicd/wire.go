package nicd

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/rt"
)

// The wire between two emunics.
//
// Toward a NIC a switch port emulates the wire both ways (swd), and two
// switches each emulate their egress. Between two NICs there is no switch:
// each emunic emulates the wire toward itself, its ingress, so that a
// link's delay, loss and corruption hold in real time as they do in the
// simulator. A frame from the link is lost or damaged on arrival, then
// held for the delay (rt.DelayLine, unpaced: the sending NIC paced it at
// the link rate), then handed to the NIC.

// inWire is the ingress wire of an emunic whose link's other end is a
// NIC. Loop goroutine, but for the counters.
type inWire struct {
	line          *rt.DelayLine
	delay         clock.Time
	loss, corrupt float64
	rng           *rand.Rand
	ib            bool

	lossRx, corruptRx, queueDrops atomic.Uint64
}

func (d *Daemon) newInWire() *inWire {
	w := &inWire{delay: d.cfg.Link.Delay, loss: d.cfg.Link.Loss, corrupt: d.cfg.Link.Corrupt, ib: d.cfg.NIC.Fabric == nic.FabricIB,
		rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	w.line = rt.NewDelayLine(d.clk, rt.PacerConfig{Rate: rt.Unpaced, Delay: d.cfg.Link.Delay}, d.arrive)
	// An IB sender is bounded by our credits: its frames on the wire
	// never exceed our receive buffer, however long the delay.
	w.line.Lossless = w.ib
	return w
}

// carry puts frames that came off the link on the wire toward the NIC.
func (w *inWire) carry(now clock.Time, fs []*frame.Frame) {
	for _, f := range fs {
		if w.loss > 0 && w.rng.Float64() < w.loss {
			w.lossRx.Add(1)
			f.Put()
			continue
		}
		if w.corrupt > 0 && w.rng.Float64() < w.corrupt {
			rt.Corrupt(f, w.ib)
			w.corruptRx.Add(1)
		}
		w.line.Push(now, f, 0)
	}
	w.queueDrops.Store(w.line.Drops())
}

// arrive is the wire's sink: f reached the NIC.
func (d *Daemon) arrive(f *frame.Frame, _, _ clock.Time) {
	if d.adminDown {
		d.rxAdminDown.Add(1)
		f.Put()
		return
	}
	d.capture(f, false)
	d.nic.Receive(f)
}
