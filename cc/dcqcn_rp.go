package cc

import (
	"math"

	"github.com/emufabric/emufabric/clock"
)

// RP is the DCQCN reaction point of one flow (QP): the sender's rate
// controller. It is a pure state machine (see Algorithm).
//
// State (paper §3.2): RC the current rate, RT the target rate, alpha the
// congestion estimate, and two increase-event counters since the last cut:
// the timer stage T and the byte-counter stage BC.
//
//	CNP            -> cut: RT <- RC (see clamping), RC <- RC*(1-alpha/2), stages reset
//	timer/bytes    -> increase event, chosen by (T, BC) against F (RPThreshold):
//	                    max(T,BC) <  F : fast recovery   RC <- (RT+RC)/2
//	                    min(T,BC) >  F : hyper increase  RT += i*R_HAI, RC <- (RT+RC)/2, i = min-F
//	                    otherwise      : additive incr.  RT += R_AI,    RC <- (RT+RC)/2
//
// The stages are compared before they are incremented, so F = 5 gives five
// fast-recovery steps, as in the paper's analysis and the HPCC simulator's
// firmware model ("stage < F").
//
// Alpha is kept lazily: it only changes at window boundaries, so instead of
// a timer per window (one event per microsecond per flow with the firmware
// defaults) it is brought up to date in closed form whenever it is read.
type RP struct {
	cfg                          DCQCN
	line                         float64 // line rate, bps
	max, min, ai, hai            float64 // bps
	timeReset, alphaWin, monitor clock.Time
	g                            float64

	active bool    // a CNP has been seen; before that the flow runs at max
	rc, rt float64 // bps

	alpha      float64
	alphaAt    clock.Time // paper: time of the last CNP; firmware: epoch of window 0
	alphaWinN  int64      // firmware: index of the window alpha is current to
	alphaSeen  bool       // firmware: a CNP arrived in window alphaWinN
	timeStage  int
	byteStage  int
	byteCount  uint64
	timeIncr   bool // a timer-driven increase happened since the last cut
	firstCut   bool
	nextIncr   clock.Time
	cutWindow  clock.Time // end of the rate-reduce monitor window, Never if closed
	pendingCut bool

	Stats RPStats
}

// RPStats counts what the reaction point did.
type RPStats struct {
	CNPs          uint64 // CNPs handled (rp_cnp_handled)
	Cuts          uint64
	FastRecovery  uint64
	Additive      uint64
	Hyper         uint64
	TimerEvents   uint64
	ByteEvents    uint64
	MinRateClamps uint64
}

// NewRP returns a reaction point for a flow on a link of lineBPS. cfg must
// have passed Validate.
func NewRP(cfg DCQCN, lineBPS uint64) *RP {
	r := &RP{cfg: cfg, line: float64(lineBPS)}
	r.max = r.line
	if cfg.RPMaxRate > 0 && mbps(cfg.RPMaxRate) < r.max {
		r.max = mbps(cfg.RPMaxRate)
	}
	r.min = math.Min(mbps(cfg.RPMinRate), r.max)
	r.ai, r.hai = mbps(cfg.RPAIRate), mbps(cfg.RPHAIRate)
	r.timeReset = micros(cfg.RPTimeReset)
	r.alphaWin = micros(cfg.RPDCETCPRTT)
	r.monitor = micros(cfg.RPRateReduceMonitorPeriod)
	r.g = cfg.RPDCETCPG / 1024
	r.rc, r.rt = r.max, r.max
	r.nextIncr, r.cutWindow = clock.Never, clock.Never
	return r
}

func (r *RP) Name() string { return "dcqcn" }

// Rate is RC, the current rate in bits per second.
func (r *RP) Rate() uint64 { return uint64(r.rc) }

// TargetRate is RT.
func (r *RP) TargetRate() uint64 { return uint64(r.rt) }

// Alpha returns the congestion estimate at now.
func (r *RP) Alpha(now clock.Time) float64 {
	r.catchUpAlpha(now)
	return r.alpha
}

// NextDeadline is the earliest pending timer: the next rate increase or
// the end of the rate-reduce monitor window.
func (r *RP) NextDeadline() clock.Time { return min(r.nextIncr, r.cutWindow) }

// Advance processes every timer event due at or before now, in time order.
func (r *RP) Advance(now clock.Time) {
	for {
		t := r.NextDeadline()
		if t > now {
			return
		}
		if r.cutWindow <= r.nextIncr {
			r.closeCutWindow(t)
		} else {
			r.nextIncr += r.timeReset
			r.Stats.TimerEvents++
			r.increase(true)
			r.timeStage++
		}
	}
}

// OnSend counts bytes toward the byte counter.
func (r *RP) OnSend(now clock.Time, bytes int) {
	r.Advance(now)
	if !r.active || r.cfg.RPByteReset == 0 || r.nextIncr == clock.Never {
		return
	}
	r.byteCount += uint64(bytes)
	for r.byteCount >= r.cfg.RPByteReset {
		r.byteCount -= r.cfg.RPByteReset
		r.Stats.ByteEvents++
		r.increase(false)
		r.byteStage++
	}
}

// OnFeedback handles a CNP; other feedback kinds do not concern DCQCN.
func (r *RP) OnFeedback(now clock.Time, fb *Feedback) {
	if fb.Kind != FeedbackCNP {
		return
	}
	r.Advance(now)
	r.Stats.CNPs++
	if !r.active {
		r.active, r.firstCut = true, true
		r.alpha = r.cfg.RPInitialAlphaValue / 1024
		r.alphaAt, r.alphaWinN, r.alphaSeen = now, 0, false
		if r.cfg.RPRateToSetOnFirstCNP > 0 {
			r.rc = r.clampRate(mbps(r.cfg.RPRateToSetOnFirstCNP))
		}
	}
	r.catchUpAlpha(now)
	if r.monitor == 0 {
		r.cut(now)
	} else if r.cutWindow == clock.Never {
		// First CNP of a quiet period: react at once, then coalesce the
		// CNPs of the next monitor period into at most one more cut.
		r.cut(now)
		r.cutWindow = now + r.monitor
	} else {
		r.pendingCut = true
	}
	// The paper raises alpha at every CNP and restarts its decay timer;
	// the firmware notes that the current window saw a CNP. The cut above
	// used alpha as it was before this CNP (paper Algorithm 1 order).
	if r.cfg.PaperAlpha {
		r.alpha = (1-r.g)*r.alpha + r.g
		r.alphaAt = now
	} else {
		r.alphaSeen = true
	}
}

func (r *RP) closeCutWindow(at clock.Time) {
	if r.pendingCut {
		r.pendingCut = false
		r.catchUpAlpha(at)
		r.cut(at)
		r.cutWindow = at + r.monitor
		return
	}
	r.cutWindow = clock.Never
}

func (r *RP) cut(now clock.Time) {
	if r.cfg.RPClampTgtRate || (r.cfg.RPClampTgtRateATI && r.timeIncr) || r.firstCut {
		r.rt = r.rc
	}
	r.firstCut = false
	factor := r.alpha * math.Ldexp(1, 10-r.cfg.RPGD)
	next := r.rc * (1 - factor)
	if f := r.cfg.RPMinDecFac; f > 0 && next < r.rc*f/100 {
		next = r.rc * f / 100
	}
	r.rc = r.clampRate(next)
	r.timeStage, r.byteStage, r.byteCount, r.timeIncr = 0, 0, 0, false
	r.nextIncr = now + r.timeReset
	r.Stats.Cuts++
}

func (r *RP) increase(timer bool) {
	t, bc, f := r.timeStage, r.byteStage, r.cfg.RPThreshold
	if r.cfg.RPByteReset == 0 {
		bc = t // no byte counter: the timer alone decides (paper §3.2)
	}
	switch {
	case max(t, bc) < f:
		r.Stats.FastRecovery++
	case min(t, bc) > f:
		r.rt += float64(min(t, bc)-f) * r.hai
		r.Stats.Hyper++
	default:
		r.rt += r.ai
		r.Stats.Additive++
	}
	if r.rt > r.max {
		r.rt = r.max
	}
	r.rc = r.clampRate((r.rt + r.rc) / 2)
	if timer {
		r.timeIncr = true
	}
	// Back at the cap with nothing left to recover: stop the timer, so an
	// uncongested flow costs no events. The next CNP restarts it.
	if r.rc >= r.max && r.rt >= r.max {
		r.rc = r.max
		r.nextIncr = clock.Never
	}
}

func (r *RP) clampRate(v float64) float64 {
	if v < r.min {
		r.Stats.MinRateClamps++
		return r.min
	}
	if v > r.max {
		return r.max
	}
	return v
}

// catchUpAlpha brings alpha to its value at now in closed form.
func (r *RP) catchUpAlpha(now clock.Time) {
	if !r.active || now < r.alphaAt {
		return
	}
	if r.cfg.PaperAlpha {
		// Decay once per window without a CNP since the last CNP.
		n := int64((now - r.alphaAt) / r.alphaWin)
		if n > 0 {
			r.alpha *= math.Pow(1-r.g, float64(n))
			r.alphaAt += clock.Time(n) * r.alphaWin
		}
		return
	}
	// Firmware: windows of alphaWin from the first CNP; at the end of each,
	// alpha = (1-g)*alpha + g*[a CNP arrived in it].
	w := int64((now - r.alphaAt) / r.alphaWin)
	if w <= r.alphaWinN {
		return
	}
	seen := 0.0
	if r.alphaSeen {
		seen = 1
	}
	r.alpha = (1-r.g)*r.alpha + r.g*seen
	if quiet := w - r.alphaWinN - 1; quiet > 0 {
		r.alpha *= math.Pow(1-r.g, float64(quiet))
	}
	r.alphaWinN, r.alphaSeen = w, false
}
