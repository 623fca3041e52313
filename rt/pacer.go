package rt

import (
	"time"

	"github.com/emufabric/emufabric/clock"
)

// PacerConfig describes the emulated link a Pacer times.
type PacerConfig struct {
	// Rate is the link rate in bits per second of the Clock's (possibly
	// dilated) time.
	Rate uint64
	// Delay is the propagation delay.
	Delay clock.Time
	// HeadBytes is the receiver's cut-through point: a frame is released
	// to the transport once its first HeadBytes have arrived (a cut-through
	// switch acts at header time). 0 releases at the tail (hosts and
	// store-and-forward switches). This is the simulator's timing model:
	// release = start + Delay + ser(min(len, HeadBytes)).
	HeadBytes int
	// Overhead is per-frame wire time not in the frame bytes: preamble and
	// SFD (8), FCS (4) and the minimum inter-frame gap (12) make 24 on
	// Ethernet. Zero counts frame bytes only.
	Overhead int
	// Burst is the pacer's slack, as a token bucket's depth. The wall
	// clock cannot time single frames: a sleep overshoots by 50 us on an
	// idle machine and by a millisecond on a loaded one. So frames due
	// within Burst of now are released together, and a writer that woke up
	// late may book frames up to Burst in the past (the link catches up on
	// time it lost to scheduling, not on time it was idle for longer). The
	// long-run rate is the configured one as long as the writer wakes up
	// within Burst; bursts at the transport's speed are at most Burst long.
	// 0 means the default, 200 us; a negative Burst means no slack at all
	// (exact next-free-time arithmetic, for tests).
	Burst clock.Time
}

// Pacer times frames on an emulated link by next-free-time: each frame
// starts when the link is free (and not before it was offered), occupies
// it for its serialization time, and is due at the receiver after the
// propagation delay and the receiver's cut-through header time. It is used
// by one writer goroutine and reads the Clock's WallNow.
type Pacer struct {
	clk  *Clock
	cfg  PacerConfig
	free clock.Time // when the link's last booked tail has left

	rel   []clock.Time // release times of booked, unsent frames (FIFO)
	timer *time.Timer
}

// NewPacer returns a pacer for a link of cfg on clk.
func NewPacer(clk *Clock, cfg PacerConfig) *Pacer {
	switch {
	case cfg.Burst == 0:
		cfg.Burst = 200 * clock.Microsecond
	case cfg.Burst < 0:
		cfg.Burst = 0
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Pacer{clk: clk, cfg: cfg, timer: t}
}

// Config returns the pacer's configuration.
func (p *Pacer) Config() PacerConfig { return p.cfg }

// Book reserves the link for a frame of n bytes offered at now (the link
// may have been idle since up to Burst before now, see Burst) whose
// ingress tail arrives at tailIn (0 if the frame is already whole). It
// returns the frame's start on the link, its tail (the last bit leaves;
// cut-through egress never lets it leave before the ingress tail
// arrived), and when it is due at the receiver. The link is free again
// after the tail plus the per-frame Overhead.
func (p *Pacer) Book(now clock.Time, n int, tailIn clock.Time) (start, tail, release clock.Time) {
	start = max(now-p.cfg.Burst, p.free)
	tail = max(start+clock.SerializationTime(n, p.cfg.Rate), tailIn)
	p.free = tail + clock.SerializationTime(p.cfg.Overhead, p.cfg.Rate)
	release = tail
	if p.cfg.HeadBytes > 0 && p.cfg.HeadBytes < n {
		release = min(start+clock.SerializationTime(p.cfg.HeadBytes, p.cfg.Rate), tail)
	}
	return start, tail, release + p.cfg.Delay
}

// Admit books every frame of bufs not booked yet and returns how many
// leading frames are due now (within Burst). Call it with the same batch,
// shortened by the frames written, until the batch is empty; Wait sleeps
// until the next frame is due.
func (p *Pacer) Admit(bufs [][]byte) int {
	now := p.clk.WallNow()
	for i := len(p.rel); i < len(bufs); i++ {
		_, _, r := p.Book(now, len(bufs[i]), 0)
		p.rel = append(p.rel, r)
	}
	k := 0
	for k < len(bufs) && p.rel[k] <= now+p.cfg.Burst {
		k++
	}
	p.rel = p.rel[:copy(p.rel, p.rel[k:])]
	return k
}

// Next is when the first booked, unsent frame is due; clock.Never if none.
func (p *Pacer) Next() clock.Time {
	if len(p.rel) == 0 {
		return clock.Never
	}
	return p.rel[0]
}

// WaitDuration is how long the wall clock takes until the first booked
// frame is due (minus Burst); 0 if it is due or nothing is booked.
func (p *Pacer) WaitDuration() time.Duration {
	next := p.Next()
	if next == clock.Never {
		return 0
	}
	return p.clk.WallUntil(next - p.cfg.Burst)
}

// Wait sleeps until the first booked frame is due (minus Burst) or quit
// is closed; it reports false on quit.
func (p *Pacer) Wait(quit <-chan struct{}) bool {
	d := p.WaitDuration()
	if d <= 0 {
		return true
	}
	p.timer.Reset(d)
	select {
	case <-p.timer.C:
		return true
	case <-quit:
		p.timer.Stop()
		return false
	}
}
