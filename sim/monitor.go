package sim

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// deadlockDetector watches for a fabric that has stopped: every source has
// stopped, switch queues hold bytes, and no data frame was delivered on any
// link for the window. PFC refreshes keep flowing in a PFC deadlock, so only
// data frames count as progress.
type deadlockDetector struct {
	s         *Sim
	t         *timer
	lastMoved uint64
	lastQueue int
	since     clock.Time
}

func (d *deadlockDetector) start(s *Sim) {
	d.s = s
	d.t = s.newTimer(d.tick)
	d.t.Reset(s.opt.DeadlockWindow / 4)
}

// sourcesStopped: every flow is finished or past its Stop time.
func (s *Sim) sourcesStopped() bool {
	now := s.now
	for _, f := range s.flows {
		if !f.done && !(f.cfg.Stop > 0 && now >= f.cfg.Stop) {
			return false
		}
	}
	return s.rdmaStopped()
}

// queuedBytes sums every switch egress queue.
func (s *Sim) queuedBytes() int {
	n := 0
	for _, w := range s.switches {
		for p := range w.ports {
			for q := 0; q < 8; q++ {
				n += w.sw.QueueDepth(p, q)
			}
		}
	}
	return n
}

func (d *deadlockDetector) tick() {
	s := d.s
	now := s.now
	q := s.queuedBytes()
	if s.dataMoved != d.lastMoved || q != d.lastQueue {
		if s.deadlock != nil && s.deadlock.ResolvedAt == 0 && s.dataMoved != d.lastMoved {
			s.deadlock.ResolvedAt = now
		}
		d.lastMoved, d.lastQueue, d.since = s.dataMoved, q, now
	} else if q > 0 && s.deadlock == nil && now-d.since >= s.opt.DeadlockWindow && s.sourcesStopped() {
		s.deadlock = d.report(now)
	}
	d.t.Reset(now + s.opt.DeadlockWindow/4)
}

func (d *deadlockDetector) report(now clock.Time) *Deadlock {
	s := d.s
	dl := &Deadlock{Since: d.since, DetectedAt: now, Window: s.opt.DeadlockWindow}
	for _, w := range s.switches {
		for p := range w.ports {
			for q := 0; q < 8; q++ {
				if b := w.sw.QueueDepth(p, q); b > 0 {
					dl.Queues = append(dl.Queues, StuckQueue{Switch: w.name, Port: p, Prio: q, Bytes: b, Paused: w.sw.Paused(p, q)})
				}
			}
		}
	}
	return dl
}

// startSampling arms the time-series sampler.
func (s *Sim) startSampling() {
	iv := s.opt.SampleInterval
	if iv <= 0 {
		return
	}
	sr := &Series{Interval: iv}
	prios := s.opt.SeriesPriorities
	if prios == nil {
		mask := s.prios | s.ibVLs()
		for p := 0; p < 8; p++ {
			if mask&(1<<p) != 0 {
				prios = append(prios, p)
			}
		}
	}
	for _, w := range s.switches {
		for p := range w.ports {
			if w.ports[p].link == nil {
				continue
			}
			for _, q := range prios {
				sr.Queues = append(sr.Queues, QueueSeries{Switch: w.name, Port: p, Prio: q})
			}
		}
	}
	for _, h := range s.hosts {
		if h.ib() {
			continue
		}
		for _, q := range prios {
			sr.Hosts = append(sr.Hosts, HostPauseSeries{Host: h.cfg.Name, Prio: q})
		}
	}
	// RDMA NIC hosts are paused by PFC as synthetic hosts are (the summary's
	// NIC table has their paused us): host_pause.csv and pause.svg show them
	// too. An IB NIC has credits, not pauses.
	for _, h := range s.nics {
		if h.ib() {
			continue
		}
		for _, q := range prios {
			sr.Hosts = append(sr.Hosts, HostPauseSeries{Host: h.cfg.Name, Prio: q})
		}
	}
	for _, f := range s.flows {
		sr.Flows = append(sr.Flows, FlowSeries{Flow: f.cfg.Name})
	}
	s.rdmaSeriesInit(sr)
	s.series = sr
	s.lastRx = make([]uint64, len(s.flows))
	s.sampler = s.newTimer(s.sample)
	s.sampler.Reset(iv)
}

// ibVLs is the VLs the IB flows' packets take at the switches (SL2VL of
// each switch for each flow's SL), as a mask: the queues to sample. An IB
// raw flow's priority is its SL, not a queue.
func (s *Sim) ibVLs() uint8 {
	var sls uint16
	for _, f := range s.flows {
		if f.src.ib() {
			sls |= 1 << (f.cfg.SL & 15)
		}
	}
	for _, f := range s.rdma {
		if f.src.ib() {
			sls |= 1 << (f.cfg.SL & 15)
		}
	}
	var vls uint8
	for _, w := range s.switches {
		if !w.ib() {
			continue
		}
		for sl := range 16 {
			if vl := w.cfg.IB.SL2VL[sl]; sls&(1<<sl) != 0 && vl < 8 {
				vls |= 1 << vl
			}
		}
	}
	return vls
}

func (s *Sim) sample() {
	sr := s.series
	now := s.now
	sr.Times = append(sr.Times, now)
	for i := range sr.Queues {
		qs := &sr.Queues[i]
		w := s.nodes[qs.Switch].(*simSwitch)
		sw := w.sw
		depth := sw.QueueDepth(qs.Port, qs.Prio)
		qs.Bytes = append(qs.Bytes, depth)
		qs.Paused = append(qs.Paused, sw.Paused(qs.Port, qs.Prio))
		qs.Xoff = append(qs.Xoff, sw.XoffSent(qs.Port, qs.Prio))
		if w.ib() {
			avail, _ := sw.Credits(qs.Port, qs.Prio)
			need := 1
			if l := w.ports[qs.Port].link; l != nil && l.Cfg.MTU > 0 {
				need = wire.CreditBlocks(l.Cfg.MTU + ibOverhead)
			}
			qs.Credits = append(qs.Credits, avail)
			qs.Starved = append(qs.Starved, depth > 0 && avail < need)
		}
	}
	for i := range sr.Hosts {
		hs := &sr.Hosts[i]
		hs.Paused = append(hs.Paused, s.hostPaused(hs.Host, hs.Prio))
	}
	for i, f := range s.flows {
		var rx uint64
		for _, h := range f.dsts {
			if sk := h.sinks[f.id]; sk != nil {
				rx += sk.rxB
			}
		}
		bps := float64(rx-s.lastRx[i]) * 8 / sr.Interval.Seconds()
		s.lastRx[i] = rx
		sr.Flows[i].Bps = append(sr.Flows[i].Bps, bps)
	}
	s.rdmaSample(sr)
	s.sampler.Reset(now + sr.Interval)
}

// hostPaused reports whether the named host's (synthetic or NIC) egress
// priority p is paused by received PFC now.
func (s *Sim) hostPaused(name string, p int) bool {
	switch h := s.nodes[name].(type) {
	case *Host:
		return h.Paused(p)
	case *nicHost:
		return h.n != nil && h.n.Paused(p)
	}
	return false
}
