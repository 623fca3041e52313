package cc

import (
	"fmt"

	"github.com/emufabric/emufabric/clock"
)

// DCQCN holds the DCQCN knobs under NVIDIA's mlx5 names (cong.c, the
// debugfs cc_params files, and mlxconfig's RPG_*/DCE_TCP_* keys). Rates are
// in Mb/s and times in microseconds where NVIDIA's knobs are, so values can
// be copied from a real NIC's configuration.
type DCQCN struct {
	// RP (reaction point, sender).

	// RPTimeReset is the rate-increase timer period (µs): one increase
	// event per period without a CNP. Paper: T = 55 µs.
	RPTimeReset float64 `mapstructure:"rp_time_reset"`
	// RPByteReset is the byte counter (bytes): one increase event per this
	// many bytes sent without a CNP; 0 disables it. Paper: B = 10 MB.
	RPByteReset uint64 `mapstructure:"rp_byte_reset"`
	// RPThreshold is F: increase events spent in fast recovery before
	// additive increase. Paper: 5.
	RPThreshold int `mapstructure:"rp_threshold"`
	// RPAIRate and RPHAIRate are the additive and hyper increase steps
	// (Mb/s). Paper (40 Gb/s): 40 and 200 (as in ns3-rdma's configuration).
	RPAIRate  float64 `mapstructure:"rp_ai_rate"`
	RPHAIRate float64 `mapstructure:"rp_hai_rate"`
	// RPMaxRate caps the rate (Mb/s); 0 means the line rate.
	RPMaxRate float64 `mapstructure:"rp_max_rate"`
	// RPMinRate is the floor (Mb/s).
	RPMinRate float64 `mapstructure:"rp_min_rate"`
	// RPGD sets the cut: rate *= 1 - alpha/2^(RPGD-10) with alpha in [0,1]
	// (NVIDIA keeps alpha in 1/1024 units, so RPGD 11 cuts by alpha/2,
	// the paper's rule).
	RPGD int `mapstructure:"rp_gd"`
	// RPMinDecFac bounds one cut: the new rate is at least this percentage
	// of the old one. 50 means a cut at most halves the rate.
	RPMinDecFac float64 `mapstructure:"rp_min_dec_fac"`
	// RPRateToSetOnFirstCNP (Mb/s): if non-zero, the first CNP of a flow
	// sets the rate to this value instead of cutting it.
	RPRateToSetOnFirstCNP float64 `mapstructure:"rp_rate_to_set_on_first_cnp"`
	// RPDCETCPG is the alpha gain g in 1/1024 units: alpha = (1-g)*alpha +
	// g*[CNP seen]. NVIDIA's firmware encoding of dce_tcp_g is not public,
	// so this is our reading, stated: the paper's g = 1/256 is 4.
	RPDCETCPG float64 `mapstructure:"rp_dce_tcp_g"`
	// RPDCETCPRTT is the alpha update window (µs). Paper: K = 55 µs.
	RPDCETCPRTT float64 `mapstructure:"rp_dce_tcp_rtt"`
	// RPRateReduceMonitorPeriod (µs): CNPs within one period cause at most
	// one cut, applied at the end of the period. 0 cuts on every CNP, as
	// the paper's RP does (its NP already spaces CNPs 50 µs apart).
	RPRateReduceMonitorPeriod float64 `mapstructure:"rp_rate_reduce_monitor_period"`
	// RPInitialAlphaValue is alpha at the first CNP, in 1/1024 units.
	RPInitialAlphaValue float64 `mapstructure:"rp_initial_alpha_value"`
	// RPClampTgtRate: on a cut, always set the target rate to the current
	// rate (the paper's rule). RPClampTgtRateATI: do so only if a
	// timer-driven increase happened since the last cut (ConnectX default,
	// as modelled by the HPCC simulator's Mellanox mode).
	RPClampTgtRate    bool `mapstructure:"rp_clamp_tgt_rate"`
	RPClampTgtRateATI bool `mapstructure:"rp_clamp_tgt_rate_ati"`
	// PaperAlpha selects the paper's alpha rule (alpha += g at each CNP,
	// decay every RPDCETCPRTT without one) instead of the firmware's
	// windowed rule (once per window, +g if any CNP arrived in it).
	PaperAlpha bool `mapstructure:"paper_alpha"`

	// NP (notification point, receiver).

	// NPMinTimeBetweenCNPs (µs): at most one CNP per flow per this time.
	// Paper: N = 50 µs.
	NPMinTimeBetweenCNPs float64 `mapstructure:"np_min_time_between_cnps"`
	// NPCNPDSCP and NPCNPPrio mark CNPs (firmware default 48 and 6).
	NPCNPDSCP uint8 `mapstructure:"np_cnp_dscp"`
	NPCNPPrio uint8 `mapstructure:"np_cnp_prio"`
	// NPCNPPrioMode: true takes NPCNPPrio, false mirrors the priority of
	// the packet that triggered the CNP.
	NPCNPPrioMode bool `mapstructure:"np_cnp_prio_mode"`
}

// NVIDIAProfile returns ConnectX firmware defaults (mlxconfig query of a
// ConnectX card; see the project's reference notes). Two readings are ours:
// the byte counter unit (bytes) and the alpha gain (g = 1/256, as the
// simulators that model this firmware use), since NVIDIA does not publish
// their encodings.
func NVIDIAProfile() DCQCN {
	return DCQCN{
		RPTimeReset:               300,
		RPByteReset:               32767,
		RPThreshold:               1,
		RPAIRate:                  5,
		RPHAIRate:                 50,
		RPMaxRate:                 0,
		RPMinRate:                 1,
		RPGD:                      11,
		RPMinDecFac:               50,
		RPRateToSetOnFirstCNP:     0,
		RPDCETCPG:                 4,
		RPDCETCPRTT:               1,
		RPRateReduceMonitorPeriod: 4,
		RPInitialAlphaValue:       1023,
		RPClampTgtRate:            false,
		RPClampTgtRateATI:         true,
		NPMinTimeBetweenCNPs:      2,
		NPCNPDSCP:                 48,
		NPCNPPrio:                 6,
		NPCNPPrioMode:             true,
	}
}

// PaperProfile returns the SIGCOMM'15 constants: g = 1/256, K = T = 55 µs,
// B = 10 MB, F = 5, CNP interval N = 50 µs, R_AI 40 Mb/s, R_HAI 200 Mb/s,
// cut on every CNP with alpha starting at 1.
func PaperProfile() DCQCN {
	return DCQCN{
		RPTimeReset:               55,
		RPByteReset:               10 * 1024 * 1024,
		RPThreshold:               5,
		RPAIRate:                  40,
		RPHAIRate:                 200,
		RPMinRate:                 10,
		RPGD:                      11,
		RPMinDecFac:               0,
		RPDCETCPG:                 4,
		RPDCETCPRTT:               55,
		RPRateReduceMonitorPeriod: 0,
		RPInitialAlphaValue:       1024,
		RPClampTgtRate:            true,
		PaperAlpha:                true,
		NPMinTimeBetweenCNPs:      50,
		NPCNPDSCP:                 48,
		NPCNPPrio:                 6,
		NPCNPPrioMode:             true,
	}
}

// Validate reports the first knob out of range, by its NVIDIA name.
func (c *DCQCN) Validate() error {
	switch {
	case c.RPTimeReset <= 0:
		return fmt.Errorf("rp_time_reset: must be > 0 µs, got %g", c.RPTimeReset)
	case c.RPThreshold < 0:
		return fmt.Errorf("rp_threshold: must be >= 0, got %d", c.RPThreshold)
	case c.RPAIRate < 0:
		return fmt.Errorf("rp_ai_rate: must be >= 0 Mb/s, got %g", c.RPAIRate)
	case c.RPHAIRate < 0:
		return fmt.Errorf("rp_hai_rate: must be >= 0 Mb/s, got %g", c.RPHAIRate)
	case c.RPMinRate <= 0:
		return fmt.Errorf("rp_min_rate: must be > 0 Mb/s, got %g", c.RPMinRate)
	case c.RPMaxRate < 0:
		return fmt.Errorf("rp_max_rate: must be >= 0 Mb/s, got %g", c.RPMaxRate)
	case c.RPMaxRate > 0 && c.RPMinRate > c.RPMaxRate:
		// The cap wins (NewRP clamps the floor to it): the floor would be
		// ignored without a word.
		return fmt.Errorf("rp_min_rate: %g Mb/s is above rp_max_rate %g Mb/s: a floor above the cap", c.RPMinRate, c.RPMaxRate)
	case c.RPGD < 10 || c.RPGD > 20:
		return fmt.Errorf("rp_gd: must be in 10..20, got %d", c.RPGD)
	case c.RPMinDecFac < 0 || c.RPMinDecFac >= 100:
		return fmt.Errorf("rp_min_dec_fac: must be in [0,100) percent, got %g", c.RPMinDecFac)
	case c.RPRateToSetOnFirstCNP < 0:
		// The RP takes the knob only when it is above 0: a negative
		// value would quietly mean "cut as usual".
		return fmt.Errorf("rp_rate_to_set_on_first_cnp: must be >= 0 Mb/s (0: cut as usual), got %g", c.RPRateToSetOnFirstCNP)
	case c.RPDCETCPG <= 0 || c.RPDCETCPG > 1024:
		return fmt.Errorf("rp_dce_tcp_g: must be in (0,1024], got %g", c.RPDCETCPG)
	case c.RPDCETCPRTT <= 0:
		return fmt.Errorf("rp_dce_tcp_rtt: must be > 0 µs, got %g", c.RPDCETCPRTT)
	case c.RPRateReduceMonitorPeriod < 0:
		return fmt.Errorf("rp_rate_reduce_monitor_period: must be >= 0 µs")
	case c.RPInitialAlphaValue < 0 || c.RPInitialAlphaValue > 1024:
		return fmt.Errorf("rp_initial_alpha_value: must be in [0,1024], got %g", c.RPInitialAlphaValue)
	case c.NPMinTimeBetweenCNPs < 0:
		return fmt.Errorf("np_min_time_between_cnps: must be >= 0 µs")
	case c.NPCNPDSCP > 63:
		return fmt.Errorf("np_cnp_dscp: must be 0..63, got %d", c.NPCNPDSCP)
	case c.NPCNPPrio > 7:
		return fmt.Errorf("np_cnp_prio: must be 0..7, got %d", c.NPCNPPrio)
	}
	return nil
}

func micros(us float64) clock.Time { return clock.Time(us * float64(clock.Microsecond)) }
func mbps(m float64) float64       { return m * 1e6 }
