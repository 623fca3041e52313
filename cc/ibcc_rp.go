package cc

import "github.com/emufabric/emufabric/clock"

// IBCCRP is the IB congestion control reaction of a source channel adapter
// for one CCTI (one QP, or one SL of a port: see PortControl). It is a pure
// state machine (see Algorithm).
//
//	BECN   -> CCTI = min(CCTI + CCTI_Increase, CCTI_Limit);
//	          start the CCTI timer if it is not running
//	timer  -> CCTI = CCTI - 1 if above CCTI_Min; re-arm while above CCTI_Min
//	sending   -> wait Delay() = CCT[CCTI] between packets
//
// The timer runs from the first BECN at a fixed period and is not restarted
// by later BECNs, as the annex's CCTI_Timer and the hfi1 driver's per-SL
// cca_timer (process_becn / cca_timer_fn) behave: the CCTI therefore falls
// by one per period whatever the BECN rate, and an equilibrium is reached
// where BECNs per period times CCTI_Increase equals one.
type IBCCRP struct {
	cfg    IBCC
	line   float64    // bits per second
	maxPkt clock.Time // time to send the largest packet at line rate
	period clock.Time // CCTI_Timer; 0: never decreases
	ccti   uint16
	next   clock.Time // timer deadline, Never when stopped

	Stats IBCCStats
}

// IBCCStats counts what the reaction point did (hfi1 / IBA CongestionLog
// vocabulary).
type IBCCStats struct {
	BECNs           uint64 // BECNs handled
	Increases       uint64 // BECNs that raised the CCTI
	AtLimit         uint64 // BECNs that found the CCTI at CCTI_Limit
	TimerDecrements uint64 // CCTI_Timer expiries that lowered the CCTI
	LogEvents       uint64 // BECNs leaving CCTI >= trigger_threshold (threshold_event_counter)
	MaxCCTI         uint16 // the highest CCTI reached
}

// NewIBCCRP returns a reaction point for a port of lineBPS whose largest
// packet (LRH through VCRC) is maxPacketBytes. cfg must have passed
// Validate.
func NewIBCCRP(cfg IBCC, lineBPS uint64, maxPacketBytes int) *IBCCRP {
	r := &IBCCRP{
		cfg:    cfg,
		line:   float64(lineBPS),
		maxPkt: clock.SerializationTime(maxPacketBytes, lineBPS),
		period: clock.Time(cfg.CCTITimer) * CCTIUnit,
		ccti:   uint16(cfg.CCTIMin),
		next:   clock.Never,
	}
	r.Stats.MaxCCTI = r.ccti
	return r
}

func (r *IBCCRP) Name() string { return "ibcc" }

// CCTI is the current congestion control table index.
func (r *IBCCRP) CCTI() uint16 { return r.ccti }

// Delay is the inter-packet delay of the current CCTI: the time a source
// waits after a packet's last bit before starting the next one.
func (r *IBCCRP) Delay() clock.Time { return r.cfg.CCT[r.ccti].Delay(r.maxPkt) }

// Rate is what a source of back-to-back largest packets achieves with the
// current delay: line * T / (T + Delay), T the largest packet's time.
func (r *IBCCRP) Rate() uint64 {
	d := r.Delay()
	if d == 0 || r.maxPkt == 0 {
		return uint64(r.line)
	}
	return uint64(r.line * float64(r.maxPkt) / float64(r.maxPkt+d))
}

// NextDeadline is the next CCTI_Timer expiry, Never when the timer is
// stopped (CCTI at CCTI_Min, or CCTI_Timer 0).
func (r *IBCCRP) NextDeadline() clock.Time { return r.next }

// Advance processes every timer expiry due at or before now.
func (r *IBCCRP) Advance(now clock.Time) {
	for r.next <= now {
		if r.ccti > uint16(r.cfg.CCTIMin) {
			r.ccti--
			r.Stats.TimerDecrements++
		}
		if r.ccti > uint16(r.cfg.CCTIMin) {
			r.next += r.period
		} else {
			r.next = clock.Never
		}
	}
}

// OnSend does nothing: the CCTI moves only on BECNs and the timer.
func (r *IBCCRP) OnSend(clock.Time, int) {}

// OnFeedback handles a BECN (a CN packet, or an ACK with BECN set); other
// feedback kinds do not concern IB CC.
func (r *IBCCRP) OnFeedback(now clock.Time, fb *Feedback) {
	if fb.Kind != FeedbackBECN {
		return
	}
	r.Advance(now)
	r.Stats.BECNs++
	limit := r.cfg.CCTILimit
	if r.ccti < limit {
		r.ccti = uint16(min(uint32(r.ccti)+uint32(r.cfg.CCTIIncrease), uint32(limit)))
		r.Stats.Increases++
		r.Stats.MaxCCTI = max(r.Stats.MaxCCTI, r.ccti)
	} else {
		r.Stats.AtLimit++
	}
	if r.next == clock.Never && r.period > 0 && r.ccti > uint16(r.cfg.CCTIMin) {
		r.next = now + r.period
	}
	if t := r.cfg.TriggerThreshold; t != 0 && r.ccti >= uint16(t) {
		r.Stats.LogEvents++
	}
}

var _ Algorithm = (*IBCCRP)(nil)
