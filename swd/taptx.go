package swd

// flushTAPs runs after every event of the loop (rt.Loop.SetAfterEvent):
// it writes the segment trains the TAP ports merged while the event was
// handled. The segments of one TSO frame read from a host arrive in one
// batch and, on an idle egress port, leave in the same event, so they
// reach the other host as one GSO frame with one write(2) instead of one
// per segment; a lone frame (a ping) is written at once by Queue and
// never waits here. Every segment was still admitted, queued, scheduled,
// counted and timed by the switch engine on its own.
func (d *Daemon) flushTAPs() {
	for _, p := range d.ports {
		if p.tapQueued {
			p.tapQueued = false
			p.tap.Flush() // a failed write is counted by the TAP (TxErrors)
		}
	}
}
