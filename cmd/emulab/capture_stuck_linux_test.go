package main

import (
	"context"
	"io"
	"os"
	"testing"
	"time"
)

// TestWatchStuck: a stopped capture whose output's reader takes nothing
// (here a pipe nobody reads, full) is given up on after stuckGrace, while
// a capture still running, or one whose reader still reads, is not.
func TestWatchStuck(t *testing.T) {
	defer func(g time.Duration) { stuckGrace = g }(stuckGrace)
	stuckGrace = 200 * time.Millisecond

	// blocked starts writing into a pipe, which blocks for good once the
	// pipe is full unless drain reads it; closeAll ends it.
	blocked := func(drain bool) (pw *progressWriter, closeAll func()) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		pw = &progressWriter{w: w}
		go func() { // as the capture writes: buffer after buffer
			b := make([]byte, 4096)
			for {
				if _, err := pw.Write(b); err != nil {
					return
				}
			}
		}()
		if drain {
			go func() {
				b := make([]byte, 4096)
				for {
					if _, err := r.Read(b); err != nil {
						return
					}
					time.Sleep(5 * time.Millisecond) // slow, but reading
				}
			}()
		}
		return pw, func() { w.Close(); r.Close() }
	}

	// Stopped, nothing read: given up.
	pw, closeAll := blocked(false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	gaveUp := make(chan struct{})
	watchStuck(ctx, done, pw, func() { close(gaveUp) })
	cancel()
	select {
	case <-gaveUp:
	case <-time.After(30 * time.Second):
		t.Error("a stopped capture blocked on a reader that takes nothing was not given up on")
	}
	close(done)
	closeAll()

	// Running (not stopped), or stopped with a slow reader that reads:
	// never given up on.
	for _, c := range []struct {
		name        string
		stop, drain bool
	}{{"running", false, false}, {"slow reader", true, true}} {
		pw, closeAll := blocked(c.drain)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		gaveUp := make(chan struct{})
		watchStuck(ctx, done, pw, func() { close(gaveUp) })
		if c.stop {
			cancel()
		}
		select {
		case <-gaveUp:
			t.Errorf("%s: given up on", c.name)
		case <-time.After(5 * stuckGrace):
		}
		close(done)
		cancel()
		closeAll()
	}
}

var _ io.Writer = (*progressWriter)(nil)
