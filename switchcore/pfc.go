package switchcore

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// PFC generation (802.1Qbb) and honouring, per priority.
//
// XOFF frames carry PFCQuanta (0xFFFF by default: 335.5 µs at 100 Gb/s) and
// are refreshed every PFCRefresh (default half the quanta time at the port
// speed) while the PG stays congested, so the peer never resumes on expiry
// while we still need it paused (HPCC's model never expires pauses; real
// ASICs refresh). XON is a PFC frame with time 0 for the PG's priorities.

// refreshPeriod is how often an asserted XOFF is re-sent on p.
func (s *Switch) refreshPeriod(p *port) clock.Time {
	if s.cfg.PFCRefresh > 0 {
		return s.cfg.PFCRefresh
	}
	return wire.XoffRefresh(s.pfcQuanta, p.speed)
}

func (s *Switch) sendXoff(p *port, pg int) {
	g := &p.pg[pg]
	g.xoff = true
	now := s.clk.Now()
	newly := g.prios &^ p.xoffPrios
	for prio := range NumPriorities {
		if newly&(1<<prio) != 0 {
			p.xoffSince[prio] = now
		}
	}
	p.xoffPrios |= g.prios
	f := s.pfcFrame(p, g.prios, s.pfcQuanta)
	s.emit(TraceEvent{Kind: TraceXoff, Port: p.idx, Prio: pg, Bytes: g.used + g.hdrm, Frame: f})
	s.queuePFC(p, f)
	if _, armed := p.refreshTimer.When(); !armed {
		p.refreshTimer.Reset(now + s.refreshPeriod(p))
	}
}

func (s *Switch) sendXon(p *port, pg int) {
	g := &p.pg[pg]
	g.xoff = false
	s.accrueXoff(p, g.prios, s.clk.Now())
	p.xoffPrios &^= g.prios
	f := s.pfcFrame(p, g.prios, 0)
	s.emit(TraceEvent{Kind: TraceXon, Port: p.idx, Prio: pg, Bytes: g.used + g.hdrm, Frame: f})
	s.queuePFC(p, f)
	if p.xoffPrios == 0 {
		p.refreshTimer.Stop()
	}
}

// accrueXoff adds the time XOFF was asserted for prios up to now to their
// tx_prioN_pause_duration, and counts on from now. Only while the link is
// up: a port that is down sends no pause (setPortUp accrues at the cut
// and starts counting again when the link returns, XOFF still asserted).
func (s *Switch) accrueXoff(p *port, prios uint8, now clock.Time) {
	if !p.up {
		return
	}
	for prio := range NumPriorities {
		if prios&p.xoffPrios&(1<<prio) != 0 {
			p.c.Prio[prio].TxPauseDurationPs += int64(now - p.xoffSince[prio])
			p.xoffSince[prio] = now
		}
	}
}

// refreshXoff re-sends XOFF for every priority still asserted on p.
// A refresh is skipped while XOFFs for every asserted priority still wait
// to be sent: they pause the peer when they go, and a refresh period
// shorter than a PFC frame's wire time would otherwise queue frames faster
// than the port sends them, without bound. (An XON for another PG waiting
// does not count: the refresh goes.)
func (s *Switch) refreshXoff(p *port) {
	if p.xoffPrios == 0 {
		return
	}
	if p.xoffPrios&^p.xoffQueued != 0 {
		f := s.pfcFrame(p, p.xoffPrios, s.pfcQuanta)
		s.emit(TraceEvent{Kind: TraceXoffRefresh, Port: p.idx, Prio: -1, Frame: f})
		s.queuePFC(p, f)
	}
	p.refreshTimer.Reset(s.clk.Now() + s.refreshPeriod(p))
}

// pfcSent notes a PFC frame leaving p: the priorities an XOFF in it
// paused are no longer queued (refreshXoff).
func (s *Switch) pfcSent(p *port, f *frame.Frame) {
	var mc wire.MACControl
	if p.xoffQueued == 0 || wire.DecodeMACControl(f.Data, &mc) != nil {
		return
	}
	for prio := range NumPriorities {
		if mc.Paused(prio) {
			p.xoffQueued &^= 1 << prio
		}
	}
}

// pfcFrame builds and counts one PFC frame for p: enable bits for prios,
// quanta for each (0 = XON); nil while p is down. The XOFF, XON and
// refresh trace events carry it before queuePFC queues it (a capture
// notes on the frame itself why it was sent: an XON is sent as a frame
// leaves, with no arriving frame to note it on).
func (s *Switch) pfcFrame(p *port, prios uint8, quanta uint16) *frame.Frame {
	if !p.up {
		return nil
	}
	var times [8]uint16
	for prio := range NumPriorities {
		if prios&(1<<prio) != 0 {
			times[prio] = quanta
			if quanta != 0 {
				p.c.Prio[prio].TxPause++
			}
		}
	}
	f := s.pool.Get(wire.MACControlFrameSize)
	wire.EncodePFC(f.Data, p.mac, prios, &times)
	f.Priority = 7
	if quanta != 0 {
		p.xoffQueued |= prios
	}
	p.c.TxPauseCtrlPhy++
	return f
}

// queuePFC queues a frame of pfcFrame on p's PFC queue, which goes before
// any other frame (a burst of link-state advertisements must not delay an
// XOFF the headroom counts on).
func (s *Switch) queuePFC(p *port, f *frame.Frame) {
	if f == nil {
		return
	}
	p.pfcq.push(f)
	s.tryTx(p)
}

// receiveMACControl honours a PFC or PAUSE frame arriving on p: it pauses
// or resumes p's egress queues. The frame is consumed.
func (s *Switch) receiveMACControl(p *port, f *frame.Frame) {
	var mc wire.MACControl
	if err := wire.DecodeMACControl(f.Data, &mc); err != nil {
		s.drop(p, -1, f, DropMalformed)
		return
	}
	f.Put()
	p.c.RxPauseCtrlPhy++
	now := s.clk.Now()
	if mc.Opcode == wire.MACControlOpPause {
		// 802.3x PAUSE stops every queue for pause_time quanta.
		if mc.Time[0] != 0 {
			s.accrueGlobalPause(p, now)
			p.c.RxGlobalPause++
			if p.gPausedUntil <= now {
				p.gPauseAcct = now
			}
			p.gPausedUntil = now + wire.QuantaToTime(mc.Time[0], p.speed)
		} else {
			s.endGlobalPause(p, now)
		}
		for q := range NumPriorities {
			s.pauseQueue(p, q, q, mc.Time[0], now)
		}
	} else {
		// Only priorities in the port's pfc_enable are honoured (PFC is
		// enabled per priority for both directions, 802.1Qbb §36.1); a PFC
		// frame for other priorities is counted as a MAC control frame only.
		for prio := range NumPriorities {
			if mc.Enable&(1<<prio) == 0 || p.cfg.PFCEnable&(1<<prio) == 0 {
				continue
			}
			q := int(s.cfg.PFCPriorityToQueue[prio])
			if mc.Time[prio] != 0 {
				p.c.Prio[prio].RxPause++
			}
			s.pauseQueue(p, q, prio, mc.Time[prio], now)
		}
	}
	s.tryTx(p)
}

// pauseQueue applies quanta (0 = resume) to egress queue q of p.
func (s *Switch) pauseQueue(p *port, q, prio int, quanta uint16, now clock.Time) {
	s.accruePause(p, q, now)
	wasPaused := p.pausedUntil[q] > now
	if quanta == 0 {
		if wasPaused {
			p.c.Prio[prio].RxPauseTransition++
			s.emit(TraceEvent{Kind: TraceResumeRx, Port: p.idx, Prio: prio})
		}
		s.endPause(p, q, now)
		return
	}
	if !wasPaused {
		p.pauseStart[q] = now
		p.pauseAcct[q] = now
	}
	p.pausedUntil[q] = now + wire.QuantaToTime(quanta, p.speed)
	p.wd[q].lastPauseRx = now
	s.emit(TraceEvent{Kind: TracePauseRx, Port: p.idx, Prio: prio, Quanta: quanta})
}

// accruePause adds the paused time of queue q up to now to the rx pause
// duration counter of the priority mapped to it.
func (s *Switch) accruePause(p *port, q int, now clock.Time) {
	end := min(now, p.pausedUntil[q])
	if end > p.pauseAcct[q] {
		// Report against the PFC priority that maps to this queue (identity
		// by default; the first priority mapping to q otherwise).
		prio := q
		for pr := range NumPriorities {
			if int(s.cfg.PFCPriorityToQueue[pr]) == q {
				prio = pr
				break
			}
		}
		p.c.Prio[prio].RxPauseDurationPs += int64(end - p.pauseAcct[q])
		p.pauseAcct[q] = end
	}
}

// endPause ends a received pause of queue q at now (an XON, or the link
// going down) after accruing it. A pause that already expired keeps its end:
// moving pausedUntil forward to now without moving pauseAcct with it would
// count the unpaused gap since the expiry as paused time the next time the
// duration is accrued. rx_prioN_pause_duration is the time the priority was
// actually stopped by the peer's 802.1Qbb pause timers (mlx5 reports it in
// microseconds of pause), not the time since the last pause began.
func (s *Switch) endPause(p *port, q int, now clock.Time) {
	s.accruePause(p, q, now)
	if p.pausedUntil[q] > now {
		p.pausedUntil[q] = now
	}
	p.pauseAcct[q] = p.pausedUntil[q]
}

// endGlobalPause is endPause for the 802.3x PAUSE accounting.
func (s *Switch) endGlobalPause(p *port, now clock.Time) {
	s.accrueGlobalPause(p, now)
	if p.gPausedUntil > now {
		p.gPausedUntil = now
	}
	p.gPauseAcct = p.gPausedUntil
}

// accrueGlobalPause adds the 802.3x PAUSE time of p up to now to
// rx_global_pause_duration.
func (s *Switch) accrueGlobalPause(p *port, now clock.Time) {
	if end := min(now, p.gPausedUntil); end > p.gPauseAcct {
		p.c.RxGlobalPauseDurationPs += int64(end - p.gPauseAcct)
		p.gPauseAcct = end
	}
}

// queuePaused reports whether egress queue q of p may not send at now
// because of a received pause, honouring the watchdog (a stormed queue with
// action drop or forward ignores pauses).
func (p *port) queuePaused(q int, now clock.Time) bool {
	if p.pausedUntil[q] <= now {
		return false
	}
	w := &p.wd[q]
	return !(w.stormed && w.action != PFCWDAlert)
}
