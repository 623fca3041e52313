package rt

import (
	"testing"
	"time"

	"github.com/emufabric/emufabric/clock"
)

func TestPacerBook(t *testing.T) {
	const us = clock.Microsecond
	type step struct {
		now, tailIn                clock.Time
		n                          int
		wantStart, wantTail, wantR clock.Time
	}
	cases := []struct {
		name  string
		cfg   PacerConfig
		steps []step
	}{
		{"saf-back-to-back", PacerConfig{Rate: 10e9}, []step{
			{0, 0, 1250, 0, 1 * us, 1 * us},      // 1250 B at 10 Gb/s = 1 us
			{0, 0, 1250, 1 * us, 2 * us, 2 * us}, // waits for the link
			{5 * us, 0, 625, 5 * us, 5*us + us/2, 5*us + us/2},
		}},
		{"delay-and-cut-through", PacerConfig{Rate: 10e9, Delay: 3 * us, HeadBytes: 125}, []step{
			{0, 0, 1250, 0, 1 * us, 3*us + us/10}, // released after 125 B
			{0, 0, 100, 1 * us, 1*us + 80*clock.Nanosecond, 1*us + 3*us + 80*clock.Nanosecond},
		}},
		{"cut-through-egress-waits-for-ingress-tail", PacerConfig{Rate: 100e9}, []step{
			// A 10 Gb/s ingress feeding a 100 Gb/s egress: the tail cannot
			// leave before it arrived.
			{0, 1 * us, 1250, 0, 1 * us, 1 * us},
			{0, 0, 1250, 1 * us, 1*us + us/10, 1*us + us/10},
		}},
		{"catch-up-credit", PacerConfig{Rate: 10e9, Burst: 5 * us}, []step{
			// The writer woke up at 100 us: the link may reclaim 5 us it
			// lost, not the 99 us it was idle.
			{0, 0, 1250, 0, 1 * us, 1 * us},
			{100 * us, 0, 1250, 95 * us, 96 * us, 96 * us},
			{100 * us, 0, 1250, 96 * us, 97 * us, 97 * us},
		}},
		{"overhead", PacerConfig{Rate: 1e9, Overhead: 24}, []step{
			// 101 B take 808 ns; preamble, FCS and gap 192 ns more.
			{0, 0, 101, 0, 808 * clock.Nanosecond, 808 * clock.Nanosecond},
			{0, 0, 101, 1 * us, 1*us + 808*clock.Nanosecond, 1*us + 808*clock.Nanosecond},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.cfg.Burst == 0 {
				c.cfg.Burst = -1 // no slack: exact next-free-time arithmetic
			}
			p := NewPacer(NewClock(1), c.cfg)
			for i, s := range c.steps {
				st, tl, r := p.Book(s.now, s.n, s.tailIn)
				if st != s.wantStart || tl != s.wantTail || r != s.wantR {
					t.Errorf("step %d: start %v tail %v release %v, want %v %v %v", i, st, tl, r, s.wantStart, s.wantTail, s.wantR)
				}
			}
		})
	}
}

// TestPacerAdmit uses an enormous dilation so virtual time stands still
// (one wall hour is 3.6 us virtual): what is due is then exact.
func TestPacerAdmit(t *testing.T) {
	clk := NewClock(1_000_000_000)
	p := NewPacer(clk, PacerConfig{Rate: 10e9, Burst: 20 * clock.Microsecond})
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 1250) // 1 us each
	}
	k := p.Admit(bufs)
	// Frames are due at 1, 2, ... us (the link was not idle before the
	// epoch); those due within now+20 us go.
	if k != 20 {
		t.Fatalf("admitted %d, want 20", k)
	}
	if p.Next() != 21*clock.Microsecond {
		t.Fatalf("next due %v", p.Next())
	}
	// The rest stay booked; admitting again books nothing twice.
	if k2 := p.Admit(bufs[k:]); k2 != 0 {
		t.Fatalf("admitted %d more before time moved", k2)
	}
	if p.free != 64*clock.Microsecond {
		t.Fatalf("link booked until %v, want 64us", p.free)
	}
}

// discard is a Link that counts what it is given.
type discard struct{ frames, bytes int }

func (d *discard) Read([][]byte, []int, int) (int, error) { select {} }
func (d *discard) Write(bufs [][]byte, offset int) (int, error) {
	for _, b := range bufs {
		d.bytes += len(b) - offset
	}
	d.frames += len(bufs)
	return len(bufs), nil
}
func (d *discard) BatchSize() int { return DefaultBatchSize }
func (d *discard) Close() error   { return nil }

// BenchmarkPacer paces 1500-byte frames at 10 Gb/s on the wall clock and
// reports the rate achieved (it should be the configured one: bookings are
// in link time) and the largest burst released at once.
func BenchmarkPacer(b *testing.B) {
	for _, c := range []struct {
		rate  uint64
		burst clock.Time
	}{{1e9, 0}, {10e9, 0}, {40e9, 0}, {1e9, 2 * clock.Millisecond}, {10e9, 2 * clock.Millisecond}} {
		rate := c.rate
		eff := NewPacer(nil, PacerConfig{Burst: c.burst}).Config().Burst
		name := FormatBps(rate) + "/burst-" + itoa(int(eff/clock.Microsecond)) + "us"
		b.Run(name, func(b *testing.B) {
			clk := NewClock(1)
			p := NewPacer(clk, PacerConfig{Rate: rate, Burst: c.burst})
			var sink discard
			bufs := make([][]byte, DefaultBatchSize)
			for i := range bufs {
				bufs[i] = make([]byte, 1500)
			}
			quit := make(chan struct{})
			b.ReportAllocs()
			b.SetBytes(1500)
			start := time.Now()
			maxBurst := 0
			for sent := 0; sent < b.N; {
				batch := bufs[:min(len(bufs), b.N-sent)]
				for len(batch) > 0 {
					k := p.Admit(batch)
					if k == 0 {
						p.Wait(quit)
						continue
					}
					maxBurst = max(maxBurst, k)
					sink.Write(batch[:k], 0)
					batch = batch[k:]
					sent += k
				}
			}
			el := time.Since(start)
			got := float64(sink.bytes*8) / el.Seconds()
			b.ReportMetric(got/1e9, "Gb/s")
			b.ReportMetric(100*(got-float64(rate))/float64(rate), "rate-err-%")
			b.ReportMetric(float64(maxBurst), "max-burst-frames")
		})
	}
}

// FormatBps prints a rate for benchmark names.
func FormatBps(r uint64) string {
	switch {
	case r >= 1e9:
		return itoa(int(r/1e9)) + "G"
	case r >= 1e6:
		return itoa(int(r/1e6)) + "M"
	}
	return itoa(int(r))
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
