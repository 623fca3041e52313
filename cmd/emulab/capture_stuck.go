//go:build linux

package main

import (
	"context"
	"io"
	"sync/atomic"
	"time"
)

// A capture writes its output on the goroutine that merges the daemons'
// streams; SIGINT and SIGTERM only cancel a context that goroutine looks
// at between writes. A reader that neither reads nor closes its end
// (a process stopped or wedged, `| less` waiting at a prompt, a stalled
// Wireshark) blocks that write for as long as it likes, so a stopped
// capture did not end: Ctrl-C and SIGTERM did nothing, only SIGKILL.
// stuckWriter lets a watch see that no byte got out since the capture was
// stopped, and give up on the output then.

// stuckGrace is how long a stopped capture's output may take no byte
// before the capture gives up on it: the daemons' records still in flight
// and the statistics blocks need a reader that reads, not a fast one.
var stuckGrace = liveFinishTimeout + 5*time.Second

// progressWriter counts the bytes written through it and whether a write
// is in progress.
type progressWriter struct {
	w       io.Writer
	n       atomic.Uint64
	writing atomic.Bool
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.writing.Store(true)
	n, err := p.w.Write(b)
	p.n.Add(uint64(n))
	p.writing.Store(false)
	return n, err
}

// watchStuck calls giveUp once ctx is done (the capture was stopped) and
// then, while done is open, a write through p blocks with no byte written
// for stuckGrace. It returns at once; the watch ends with done.
func watchStuck(ctx context.Context, done <-chan struct{}, p *progressWriter, giveUp func()) {
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		tick := time.NewTicker(stuckGrace / 10)
		defer tick.Stop()
		last, since := p.n.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if n := p.n.Load(); n != last || !p.writing.Load() {
					last, since = n, now
				} else if now.Sub(since) >= stuckGrace {
					giveUp()
					return
				}
			}
		}
	}()
}
