package switchcore

import "github.com/emufabric/emufabric/clock"

// PFC watchdog (SONiC pfcwd; cc-anchors §3.3).
//
// Every POLL_INTERVAL the watchdog looks at each queue of each port whose
// priority is PFC-enabled. A queue is in a storm when it has been paused by
// received PFC continuously, and has had frames waiting, for at least
// detection_time; so a storm is declared between detection_time and
// detection_time + POLL_INTERVAL after it starts. Actions:
//   - drop: the queue's frames are discarded, frames forwarded to it are
//     discarded (tx drop), frames arriving on that port with that priority
//     are discarded (rx drop), and received pauses are ignored. Nothing
//     accumulates behind the storm, so no XOFF is propagated upstream.
//   - forward: received pauses are ignored; traffic flows (tx/rx ok).
//   - alert: counted and traced only.
// The storm is restored when no PFC frame pausing the queue has arrived for
// restoration_time (checked at the poll).

type wdState struct {
	stormed     bool
	action      PFCWDAction
	lastPauseRx clock.Time
}

func (s *Switch) pollWatchdog() {
	now := s.clk.Now()
	cfg := &s.cfg.PFCWD
	for i := range s.ports {
		p := &s.ports[i]
		for q := range NumPriorities {
			if p.cfg.PFCEnable&(1<<q) == 0 {
				continue
			}
			w := &p.wd[q]
			e := &p.eq[q]
			if !w.stormed {
				if p.pausedUntil[q] <= now || e.size == 0 {
					continue
				}
				since := max(p.pauseStart[q], e.nonEmptySince)
				if now-since < cfg.DetectionTime {
					continue
				}
				w.stormed, w.action = true, cfg.Action
				p.c.Prio[q].PFCWDStormDetected++
				s.emit(TraceEvent{Kind: TracePFCWDStorm, Port: i, Prio: q})
				if w.action == PFCWDDrop {
					for f := e.pop(); f != nil; f = e.pop() {
						s.dequeued(p, q, f)
						p.c.Prio[q].PFCWDTxDrop++
						s.dropAfterAdmit(p, f, DropPFCWD)
					}
				}
				s.tryTx(p)
				continue
			}
			if now-w.lastPauseRx >= cfg.RestorationTime {
				w.stormed = false
				p.c.Prio[q].PFCWDStormRestored++
				s.emit(TraceEvent{Kind: TracePFCWDRestore, Port: i, Prio: q})
				s.tryTx(p)
			}
		}
	}
	s.wdTimer.Reset(now + cfg.PollInterval)
}
