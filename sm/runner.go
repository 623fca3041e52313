package sm

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/mad"
)

// SMPort is the HCA port an SM runs on, as a Runner needs it: send an SMP
// out as a directed-route packet from QP0, or hand one addressed to the
// SM's own node (a zero-hop route) to the node's agent, which reports
// whether the response (written into smp) is for the SM. nic.NIC is one.
type SMPort interface {
	SendSMP(smp mad.SMP)
	LocalSMP(smp mad.SMP) bool
}

// Runner drives an SM with a clock on one port: it starts the first heavy
// sweep, sends what the SM polls, feeds it the responses (Receive) and
// arms one timer for its deadlines (timeouts, light sweeps). The real-time
// daemon and the simulator use it alike; it is not safe for concurrent
// use (the port's goroutine drives it).
type Runner struct {
	m     *SM
	clk   clock.Clock
	port  SMPort
	timer clock.Timer
	buf   [mad.Size]byte
	after func()
}

// OnStep sets a function called after each step of the SM (an answer
// taken, a timeout or a light sweep due), when a sweep may have ended:
// a sweep that ends on timeouts ends in a timer's step, not a receive.
func (r *Runner) OnStep(f func()) { r.after = f }

// NewRunner returns a runner for m on port p.
func NewRunner(m *SM, clk clock.Clock, p SMPort) *Runner {
	r := &Runner{m: m, clk: clk, port: p}
	r.timer = clk.NewTimer(r.tick)
	return r
}

// SM returns the state machine (stats, topology, text output).
func (r *Runner) SM() *SM { return r.m }

// Start begins the first heavy sweep now.
func (r *Runner) Start() {
	r.m.Start(r.clk.Now())
	r.pump()
}

// Receive takes an SMP response for the SM (the port's SMA delivers it).
func (r *Runner) Receive(smp mad.SMP) {
	r.m.Receive(r.clk.Now(), smp)
	r.pump()
}

func (r *Runner) tick() {
	r.m.Tick(r.clk.Now())
	r.pump()
}

// pump sends what the SM has to send and re-arms its timer.
func (r *Runner) pump() {
	now := r.clk.Now()
	for {
		port, ok := r.m.Poll(now, r.buf[:])
		if !ok {
			break
		}
		if port == 0 {
			if r.port.LocalSMP(r.buf[:]) {
				r.m.Receive(now, r.buf[:])
			}
			continue
		}
		r.port.SendSMP(r.buf[:])
	}
	if at := r.m.Deadline(); at != clock.Never {
		r.timer.Reset(max(at, now))
	} else {
		r.timer.Stop()
	}
	if r.after != nil {
		r.after()
	}
}
