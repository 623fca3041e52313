package nicd

import (
	"github.com/emufabric/emufabric/wire"
)

// setupStorm makes a node with a pfc_storm section keep asserting XOFF
// for its priority between Start and Stop (times since the daemon
// started), re-sent before the pause quanta run out: the faulty NIC of
// the lab file, in real time.
func (d *Daemon) setupStorm() {
	n := d.opts.Spec.Node(d.opts.Node)
	if n == nil || n.Storm == nil {
		return
	}
	s := *n.Storm
	const quanta = 0xFFFF
	every := s.Interval
	if every <= 0 {
		every = wire.QuantaToTime(quanta, d.cfg.NIC.Rate) * 9 / 10
	}
	var times [8]uint16
	times[s.Priority&7] = quanta
	d.storm = d.clk.NewTimer(func() {
		now := d.clk.Now()
		if s.Stop > 0 && now >= s.Stop {
			return
		}
		d.nic.SendPFC(1<<(s.Priority&7), &times)
		d.storm.Reset(now + every)
	})
	d.storm.Reset(s.Start)
	d.log.Printf("config: pfc_storm on priority %d from %v every %v", s.Priority, s.Start, every)
}
