package rt

// PortTotals are a link's transport counters as plain numbers: its port's
// (PortCounters) and its ring link's waits (Waiter), added up over the
// ports a daemon had for that link in turn (a re-dialled or re-accepted
// link gets a new Port, whose counters start at 0).
type PortTotals struct {
	RxFrames, RxBytes, TxFrames, TxBytes uint64
	RxTooLarge, TxQueueDrops, TxErrors   uint64
	TxDirect, RxLinkErrors               uint64
	RxSleeps, TxFull                     uint64 // a ring link's waits
	Rings                                bool   // some port's link had rings (Waiter)
}

// Add adds port p's counters.
func (s *PortTotals) Add(p *Port) {
	c := &p.Counters
	s.RxFrames += c.RxFrames.Load()
	s.RxBytes += c.RxBytes.Load()
	s.TxFrames += c.TxFrames.Load()
	s.TxBytes += c.TxBytes.Load()
	s.RxTooLarge += c.RxTooLarge.Load()
	s.TxQueueDrops += c.TxQueueDrops.Load()
	s.TxErrors += c.TxErrors.Load()
	s.TxDirect += c.TxDirect.Load()
	s.RxLinkErrors += c.RxLinkErrors.Load()
	if w, ok := p.Link().(Waiter); ok {
		rx, tx := w.Waits()
		s.RxSleeps += rx
		s.TxFull += tx
		s.Rings = true
	}
}
