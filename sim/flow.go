package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// flow is one traffic source and its bookkeeping.
type flow struct {
	s    *Sim
	id   int
	cfg  FlowConfig
	src  *Host
	dsts []*Host
	prio uint8
	vl   uint8
	rate uint64
	pmtu int

	// Current message.
	remain, msgLen, msgOff int
	dst                    int // index into dsts
	msgFirst               clock.Time
	msgSeq                 uint64
	started                int // messages started
	nextAt                 clock.Time
	ipID                   uint16
	psn                    []uint32 // next PSN per destination

	// Poisson arrivals waiting to be sent (sizes and destinations).
	pending     []pendingMsg
	pendHead    int
	arrived     int
	arrivalsEnd bool
	arrival     *timer

	done bool
	res  FlowResult
	fcts []clock.Time
	cc   flowCC // IB congestion control (ibcc.go)
}

type pendingMsg struct {
	size, dst int
}

// AddFlow adds a traffic source.
func (s *Sim) AddFlow(cfg FlowConfig) error {
	if s.started {
		return fmt.Errorf("sim: flow %q added after start", cfg.Name)
	}
	src := s.Host(cfg.Src)
	if src == nil {
		return fmt.Errorf("sim: flow %q: unknown source host %q", cfg.Name, cfg.Src)
	}
	if len(cfg.Dst) == 0 {
		return fmt.Errorf("sim: flow %q: no destination", cfg.Name)
	}
	f := &flow{s: s, id: len(s.flows), cfg: cfg, src: src}
	for _, d := range cfg.Dst {
		h := s.Host(d)
		if h == nil {
			return fmt.Errorf("sim: flow %q: unknown destination host %q", cfg.Name, d)
		}
		if h == src {
			return fmt.Errorf("sim: flow %q: source and destination are the same host", cfg.Name)
		}
		if h.cfg.Fabric != src.cfg.Fabric {
			return fmt.Errorf("sim: flow %q: %s and %s are on different fabrics", cfg.Name, cfg.Src, d)
		}
		f.dsts = append(f.dsts, h)
	}
	switch {
	case cfg.DSCP > 63:
		return fmt.Errorf("sim: flow %q: DSCP %d out of range 0..63", cfg.Name, cfg.DSCP)
	case cfg.SL > 15:
		return fmt.Errorf("sim: flow %q: SL %d out of range 0..15", cfg.Name, cfg.SL)
	case cfg.Priority > 7:
		return fmt.Errorf("sim: flow %q: priority %d out of range 0..7 (or -1)", cfg.Name, cfg.Priority)
	case cfg.Count < 0 || cfg.Start < 0 || cfg.Stop < 0:
		return fmt.Errorf("sim: flow %q: negative count, start or stop", cfg.Name)
	}
	if err := checkDist(&cfg.Size); err != nil {
		return fmt.Errorf("sim: flow %q: %v", cfg.Name, err)
	}
	switch cfg.Pattern {
	case OnOff:
		if cfg.On <= 0 || cfg.Off < 0 {
			return fmt.Errorf("sim: flow %q: on/off needs On > 0 and Off >= 0", cfg.Name)
		}
	case Poisson:
		if cfg.Load <= 0 || cfg.Load > 1 {
			return fmt.Errorf("sim: flow %q: poisson load %v not in (0, 1]", cfg.Name, cfg.Load)
		}
	}
	f.pmtu = cfg.PMTU
	if f.pmtu <= 0 {
		f.pmtu = 1024
	}
	if f.pmtu%4 != 0 || f.pmtu > 4096 {
		// FIRST and MIDDLE packets carry whole words (IBA 9.7.7.1).
		return fmt.Errorf("sim: flow %q: path MTU %d is not a multiple of 4 up to 4096", cfg.Name, f.pmtu)
	}
	if cfg.Priority >= 0 && cfg.Priority < 8 {
		f.prio = uint8(cfg.Priority)
	} else {
		f.prio = src.dscpToPrio(cfg.DSCP)
	}
	if src.cfg.Fabric == FabricIB {
		f.prio = cfg.SL & 0xF
		f.vl = src.slToVL(cfg.SL)
	}
	f.psn = make([]uint32, len(f.dsts))
	for i := range f.psn {
		f.psn[i] = uint32(f.id*7919+i*104729) & 0xFFFFFF // arbitrary, deterministic start PSNs
	}
	f.res = FlowResult{Name: cfg.Name, Src: cfg.Src, Dst: cfg.Dst, Priority: int(f.prio)}
	s.flows = append(s.flows, f)
	src.flows = append(src.flows, f)
	for _, h := range f.dsts {
		h.addSink(f)
	}
	if src.cfg.Fabric != FabricIB {
		s.prios |= 1 << (f.prio & 7) // IB: the switches' VLs, ibVLs
	}
	return nil
}

// Incast expands one base flow into len(srcs) flows srcs[i] -> dst, named
// name/src.
func Incast(name string, srcs []string, dst string, base FlowConfig) []FlowConfig {
	out := make([]FlowConfig, 0, len(srcs))
	for _, src := range srcs {
		c := base
		c.Name = name + "/" + src
		c.Src = src
		c.Dst = []string{dst}
		out = append(out, c)
	}
	return out
}

func checkDist(d *SizeDist) error {
	switch d.Kind {
	case Fixed:
		if d.Bytes <= 0 {
			return fmt.Errorf("fixed message size %d", d.Bytes)
		}
	case Uniform:
		if d.Min <= 0 || d.Max < d.Min {
			return fmt.Errorf("uniform message size [%d, %d]", d.Min, d.Max)
		}
	case Exponential:
		if d.Bytes <= 0 || (d.Max > 0 && d.Max < d.Min) {
			return fmt.Errorf("exponential message size mean %d [%d, %d]", d.Bytes, d.Min, d.Max)
		}
	case Empirical:
		if len(d.CDF) == 0 || d.CDF[len(d.CDF)-1].P != 1 {
			return fmt.Errorf("empirical size CDF must end at P = 1")
		}
		for i, p := range d.CDF {
			if p.Bytes <= 0 || p.P < 0 || (i > 0 && (p.Bytes < d.CDF[i-1].Bytes || p.P < d.CDF[i-1].P)) {
				return fmt.Errorf("empirical size CDF point %d (%d, %v) not increasing", i, p.Bytes, p.P)
			}
		}
	default:
		return fmt.Errorf("unknown size distribution %d", d.Kind)
	}
	return nil
}

// sample draws a message size.
func (d *SizeDist) sample(r *rand.Rand) int {
	switch d.Kind {
	case Uniform:
		return d.Min + r.IntN(d.Max-d.Min+1)
	case Exponential:
		n := int(math.Ceil(r.ExpFloat64() * float64(d.Bytes)))
		n = max(n, d.Min, 1)
		if d.Max > 0 {
			n = min(n, d.Max)
		}
		return n
	case Empirical:
		u := r.Float64()
		prevB, prevP := 0, 0.0
		for _, p := range d.CDF {
			if u <= p.P {
				if p.P == prevP {
					return max(p.Bytes, 1)
				}
				n := float64(prevB) + (u-prevP)/(p.P-prevP)*float64(p.Bytes-prevB)
				return max(int(math.Ceil(n)), 1)
			}
			prevB, prevP = p.Bytes, p.P
		}
		return d.CDF[len(d.CDF)-1].Bytes
	}
	return d.Bytes
}

// mean is the distribution's mean message size (for Poisson load).
func (d *SizeDist) mean() float64 {
	switch d.Kind {
	case Uniform:
		return float64(d.Min+d.Max) / 2
	case Empirical:
		m, prevB, prevP := 0.0, 0, 0.0
		for _, p := range d.CDF {
			m += (p.P - prevP) * float64(prevB+p.Bytes) / 2
			prevB, prevP = p.Bytes, p.P
		}
		return m
	}
	return float64(d.Bytes)
}

func (f *flow) start() {
	f.rate = f.cfg.Rate
	if f.rate == 0 || f.rate > f.src.link.Cfg.Rate {
		f.rate = f.src.link.Cfg.Rate
	}
	f.nextAt = f.cfg.Start
	f.s.active++
	if f.cfg.Pattern == Poisson {
		f.arrival = f.s.newTimer(f.arrive)
		f.arrival.Reset(f.cfg.Start + f.gap())
	}
}

// gap is an exponential inter-arrival time giving mean load Load*rate.
func (f *flow) gap() clock.Time {
	meanBits := f.cfg.Size.mean() * 8
	meanGap := meanBits / (f.cfg.Load * float64(f.rate)) * float64(clock.Second)
	return clock.Time(f.s.rng.ExpFloat64() * meanGap)
}

// arrive is a Poisson message arrival.
func (f *flow) arrive() {
	now := f.s.now
	if (f.cfg.Stop > 0 && now >= f.cfg.Stop) || (f.cfg.Count > 0 && f.arrived >= f.cfg.Count) {
		f.arrivalsEnd = true
		f.src.kick()
		return
	}
	f.arrived++
	f.pending = append(f.pending, pendingMsg{size: f.cfg.Size.sample(f.s.rng), dst: f.pickDst()})
	f.arrival.Reset(now + f.gap())
	f.src.kick()
}

func (f *flow) pickDst() int {
	if len(f.dsts) == 1 {
		return 0
	}
	return f.s.rng.IntN(len(f.dsts))
}

// readyAt returns when the flow can send its next packet (Never if it has
// nothing to send and no timer of its own will change that). It starts the
// next message when the current one is finished.
func (f *flow) readyAt(now clock.Time) clock.Time {
	if f.done {
		return clock.Never
	}
	if f.remain == 0 {
		if now < f.cfg.Start {
			return f.cfg.Start
		}
		if !f.nextMessage(now) {
			return clock.Never
		}
	}
	t := max(f.nextAt, now)
	if f.cfg.Pattern == OnOff {
		period := f.cfg.On + f.cfg.Off
		if ph := (t - f.cfg.Start) % period; ph >= f.cfg.On {
			t += period - ph
		}
	}
	return t
}

// nextMessage starts the next message; false when there is none now.
func (f *flow) nextMessage(now clock.Time) bool {
	switch f.cfg.Pattern {
	case Poisson:
		if f.pendHead == len(f.pending) {
			if f.arrivalsEnd {
				f.finish()
			}
			return false
		}
		m := f.pending[f.pendHead]
		f.pendHead++
		if f.pendHead == len(f.pending) {
			f.pending, f.pendHead = f.pending[:0], 0
		}
		f.msgLen, f.dst = m.size, m.dst
	default:
		if (f.cfg.Count > 0 && f.started >= f.cfg.Count) || (f.cfg.Stop > 0 && now >= f.cfg.Stop) {
			f.finish()
			return false
		}
		f.msgLen, f.dst = f.cfg.Size.sample(f.s.rng), f.pickDst()
	}
	f.started++
	f.remain, f.msgOff = f.msgLen, 0
	f.msgSeq++
	return true
}

func (f *flow) finish() {
	if !f.done {
		f.done = true
		f.s.active--
	}
}

// sent advances the flow after a packet of wireLen bytes and payload
// bytes started at now.
func (f *flow) sent(now clock.Time, wireLen, payload int) {
	f.remain -= payload
	f.msgOff += payload
	// The rate is on the wire: it counts the frame's wire overhead.
	f.nextAt = max(f.nextAt, now) + clock.SerializationTime(wireLen+wire.Overhead(f.src.ib()), f.rate)
	f.res.TxFrames++
	f.res.TxBytes += uint64(payload)
	f.res.TxWireBytes += uint64(wireLen)
	if f.res.TxFrames == 1 {
		f.res.Start = now
	}
	if f.remain == 0 {
		f.res.MessagesSent++
	}
}
