package cc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/emufabric/emufabric/clock"
)

// InfiniBand congestion control (IBA Annex A10), channel-adapter side.
//
// A switch whose output VL queue is above its threshold sets FECN in the
// BTH of packets it sends (switchcore). The destination CA answers a
// FECN-marked packet with a BECN back to the source; the source raises the
// Congestion Control Table Index (CCTI) of the flow by CCTI_Increase
// (capped at CCTI_Limit) and from then on waits the inter-packet delay
// CCT[CCTI] between packets; every CCTI_Timer the CCTI falls by one, down
// to CCTI_Min, where the timer stops.
//
// Knob names are OpenSM's (cc_ca_cong_setting_*, cc_cct) without the
// prefix, as ibccconfig's CACongestionSetting / CongestionControlTable.
// The annex holds one CACongestionSetting entry per SL; a lab gives one
// entry that every SL uses.

// CCTEntry is one Congestion Control Table entry (IBA A10.2.2.1.1): a
// 2-bit shift and a 14-bit multiplier, packed on the wire as
// shift<<14 | multiplier.
type CCTEntry struct {
	Shift      uint8  // 0..3
	Multiplier uint16 // 0..16383
}

// Delay is the inter-packet delay the entry asks for, for a link whose
// largest packet takes maxPkt to send: (maxPkt >> Shift) * Multiplier.
//
// The annex leaves the unit of the multiplier to the implementation; this
// is how the Linux hfi1 driver programs its static rate control from a CCT
// entry (set_link_ipg: the maximum packet egress time shifted right by the
// shift, times the multiplier). So multiplier m with shift 0 spaces
// packets m largest-packet times apart: the flow gets at most 1/(1+m) of
// the line.
func (e CCTEntry) Delay(maxPkt clock.Time) clock.Time {
	return (maxPkt >> e.Shift) * clock.Time(e.Multiplier)
}

// Word is the entry as the 16-bit CongestionControlTableEntry.
func (e CCTEntry) Word() uint16 { return uint16(e.Shift&3)<<14 | e.Multiplier&0x3FFF }

// PortControl selects what one CCTI governs (CACongestionSetting
// Port_Control bit 0).
type PortControl uint8

const (
	// PortControlQP keeps one CCTI per QP (flow): a BECN slows only the
	// QP it names.
	PortControlQP PortControl = iota
	// PortControlSL keeps one CCTI per SL of the port: a BECN slows every
	// QP of that SL.
	PortControlSL
)

func (p PortControl) String() string {
	if p == PortControlSL {
		return "sl"
	}
	return "qp"
}

// IBCC holds the channel adapter's IB congestion control knobs.
type IBCC struct {
	// PortControl: one CCTI per QP or per SL.
	PortControl PortControl
	// CCTITimer is the CCTI decrease period in units of 1.024 µs (a
	// 16-bit field); 0 never decreases.
	CCTITimer uint16
	// CCTIIncrease is added to the CCTI for each BECN.
	CCTIIncrease uint8
	// CCTIMin is the floor of the CCTI (the timer stops there).
	CCTIMin uint8
	// TriggerThreshold: a BECN that leaves the CCTI at or above it is
	// logged as a congestion event (CongestionLog); 0 disables the log.
	TriggerThreshold uint8
	// CCTILimit is the largest CCTI (CongestionControlTable CCTI_Limit);
	// CCT must have CCTILimit+1 entries.
	CCTILimit uint16
	// CCT is the Congestion Control Table, index = CCTI.
	CCT []CCTEntry
}

// CCTIUnit is the unit of CCTI_Timer (and of the annex's other CC
// timers): 1.024 µs.
const CCTIUnit = 1024 * clock.Nanosecond

// MaxCCTEntries bounds the table: CCTI_Limit is 14 bits in the annex, but
// OpenSM sends at most 64 entries per MAD block and caps the table at 128
// blocks; 16384 entries is far more than any real table.
const MaxCCTEntries = 16384

// MellanoxCCT returns the 128-entry table the LLNL congestion control
// study calls "mellanox default": shift 0, multiplier
// floor(7 i² / 95² / 0.218), a quadratic from 0 (no delay) to 57 largest
// packets of delay (1/58 of the line).
func MellanoxCCT() []CCTEntry {
	t := make([]CCTEntry, 128)
	for i := range t {
		m := float64(7*i*i) / (95.0 * 95.0) / 0.218
		t[i] = CCTEntry{Multiplier: uint16(m)}
	}
	return t
}

// LinearCCT returns n entries whose delay grows by step quarters of a
// largest-packet time per CCTI: entry i is shift 2, multiplier i*step (at
// most 16383). Every CCTI step adds the same delay, which makes the
// response easy to reason about in tests and teaching labs.
func LinearCCT(n, step int) []CCTEntry {
	t := make([]CCTEntry, n)
	for i := range t {
		t[i] = CCTEntry{Shift: 2, Multiplier: uint16(min(i*step, 0x3FFF))}
	}
	return t
}

// DefaultIBCC returns the settings of the lab default: QP-based control,
// CCTI_Increase 1, CCTI_Min 0, CCTI_Timer 10 (10.24 µs), trigger threshold
// 0, and MellanoxCCT with CCTI_Limit 127.
//
// The timer is shorter than the hundreds of units the LLNL study sweeps
// on real clusters because the emulator's links are short: with a 1 µs
// round trip a source hears a BECN every few microseconds while the
// hot spot lasts, and the CCTI must be able to fall about as fast as it
// rises once the congestion is gone.
func DefaultIBCC() IBCC {
	t := MellanoxCCT()
	return IBCC{
		PortControl:  PortControlQP,
		CCTITimer:    10,
		CCTIIncrease: 1,
		CCTIMin:      0,
		CCTILimit:    uint16(len(t) - 1),
		CCT:          t,
	}
}

// Validate reports the first knob out of range, by its OpenSM name.
func (c *IBCC) Validate() error {
	switch {
	case c.PortControl > PortControlSL:
		return fmt.Errorf("port_control: must be qp or sl")
	case c.CCTIIncrease == 0:
		return fmt.Errorf("ccti_increase: must be >= 1 (0 would ignore every BECN)")
	case len(c.CCT) == 0:
		return fmt.Errorf("cct: the congestion control table is empty")
	case len(c.CCT) > MaxCCTEntries:
		return fmt.Errorf("cct: %d entries, at most %d", len(c.CCT), MaxCCTEntries)
	case int(c.CCTILimit) >= len(c.CCT):
		return fmt.Errorf("ccti_limit: %d needs %d table entries, cct has %d", c.CCTILimit, int(c.CCTILimit)+1, len(c.CCT))
	case uint16(c.CCTIMin) > c.CCTILimit:
		return fmt.Errorf("ccti_min: %d is above ccti_limit %d", c.CCTIMin, c.CCTILimit)
	}
	for i, e := range c.CCT {
		if e.Shift > 3 || e.Multiplier > 0x3FFF {
			return fmt.Errorf("cct: entry %d (%d:%d): shift is 0..3 and multiplier 0..16383", i, e.Shift, e.Multiplier)
		}
	}
	return nil
}

// ParseCCT reads a table in OpenSM's cc_cct syntax: comma-separated
// "shift:multiplier" pairs, entry 0 first ("0:0,0:1,0:2,..."). Numbers
// may be decimal or 0x-prefixed hex.
func ParseCCT(s string) ([]CCTEntry, error) {
	var out []CCTEntry
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		a, b, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("entry %d %q is not shift:multiplier", i, part)
		}
		sh, err1 := strconv.ParseUint(strings.TrimSpace(a), 0, 8)
		mu, err2 := strconv.ParseUint(strings.TrimSpace(b), 0, 16)
		if err1 != nil || err2 != nil || sh > 3 || mu > 0x3FFF {
			return nil, fmt.Errorf("entry %d %q: shift is 0..3 and multiplier 0..16383", i, part)
		}
		out = append(out, CCTEntry{Shift: uint8(sh), Multiplier: uint16(mu)})
	}
	if len(out) > MaxCCTEntries {
		return nil, fmt.Errorf("%d entries, at most %d", len(out), MaxCCTEntries)
	}
	return out, nil
}
