package lab

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// Sampling of the simulator's time series (sim.sample_interval).
//
// A flow's rate in flow_rates.csv is the bytes it received in one sample
// interval. An interval shorter than a frame's time on the wire holds no
// frame or one, so the series reads 0 or one frame per interval (a 4 KiB
// payload in 200 ns: 163.84 Gb/s on a 100 Gb/s link), never the rate;
// with n frames per interval a sample is within about 1/n of it.

// SampleFrames is how many of the largest frames of the lab's slowest
// link the default sample interval holds at least: a saturated link's
// samples are then within a tenth of its rate.
const SampleFrames = 10

// DefaultSampleInterval is sample_interval's default for a run of
// duration d: d/1000, but no shorter than SampleFrames of the largest
// frames of the link whose largest frame takes longest (rounded up to 1, 2
// or 5 times a power of ten), unless that leaves fewer than 10 samples;
// at least 1 ns.
func (s *Spec) DefaultSampleInterval(d clock.Time) clock.Time {
	iv := d / 1000
	if l := s.slowestLink(); l != nil {
		iv = max(iv, min(roundStep(SampleFrames*s.FrameTime(l)), d/10))
	}
	return max(iv, clock.Nanosecond)
}

// FrameTime is how long the largest frame of l holds it (wireBytes).
func (s *Spec) FrameTime(l *Link) clock.Time {
	if l.Rate == 0 {
		return 0
	}
	return clock.SerializationTime(s.wireBytes(l), l.Rate)
}

// wireBytes is the largest frame of l on the wire: its bytes and the
// per-frame overhead (wire.Overhead: on Ethernet the preamble, the FCS
// MaxFrameBytes already counts, and the inter-frame gap).
func (s *Spec) wireBytes(l *Link) int {
	ib := s.Fabric == FabricIB
	n := MaxFrameBytes(s.Fabric, l.MTU) + wire.Overhead(ib)
	if !ib {
		n -= 4 // the FCS, in both
	}
	return n
}

// slowestLink is the link whose largest frame takes longest; nil if none.
func (s *Spec) slowestLink() *Link {
	var out *Link
	for _, l := range s.Links {
		if l.Rate > 0 && (out == nil || s.FrameTime(l) > s.FrameTime(out)) {
			out = l
		}
	}
	return out
}

// roundStep rounds t up to 1, 2 or 5 times a power of ten (picoseconds),
// a step a plot's axis and a reader take in.
func roundStep(t clock.Time) clock.Time {
	if t <= 1 {
		return 1
	}
	for p := clock.Time(1); ; p *= 10 {
		for _, m := range []clock.Time{1, 2, 5} {
			if m*p >= t {
				return m * p
			}
		}
	}
}

// validateSampling warns of a sample_interval, as written, shorter than
// one frame of the link of a flow's source or destination: its samples
// in flow_rates.csv would be 0 or a frame's worth.
func (d *decoder) validateSampling(s *Spec) {
	if !s.Sim.sampleSet {
		return
	}
	var worst *Link
	for _, f := range s.Traffic {
		for _, n := range append([]*Node{f.Src}, f.Dst...) {
			if len(n.Ports) == 0 || n.Ports[0].Link == nil || n.Ports[0].Link.Rate == 0 {
				continue
			}
			if l := n.Ports[0].Link; worst == nil || s.FrameTime(l) > s.FrameTime(worst) {
				worst = l
			}
		}
	}
	if worst == nil {
		return
	}
	if ft := s.FrameTime(worst); s.Sim.SampleInterval < ft {
		d.warnf("sim.sample_interval", "%s is shorter than one frame on the link %s - %s (%d bytes on the wire at %s: %v): a flow's samples in flow_rates.csv would read 0 or a whole frame, not its rate; take %s or more (%d frames), or leave it out for the default",
			FormatTime(s.Sim.SampleInterval), worst.A, worst.B, s.wireBytes(worst), FormatRate(worst.Rate), ft,
			FormatTime(roundStep(SampleFrames*ft)), SampleFrames)
	}
}
