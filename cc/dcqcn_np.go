package cc

import "github.com/emufabric/emufabric/clock"

// NP is the DCQCN notification point policy of a receiver: when a packet
// marked ECN-CE arrives for a flow, answer with a CNP unless one was sent
// for that flow less than np_min_time_between_cnps ago (paper §3.1: at most
// one CNP per N = 50 µs per flow). The per-flow state lives with the flow
// (NPFlow), so the NIC needs no lookup table here.
type NP struct {
	minGap clock.Time
	// CNPDSCP and CNPPrio mark the CNPs the NIC builds.
	CNPDSCP uint8
	CNPPrio uint8
	// FixedPrio: use CNPPrio (np_cnp_prio_mode 1) rather than the priority
	// of the packet that triggered the CNP.
	FixedPrio bool
}

// NPFlow is the notification point's memory of one flow (one QP).
type NPFlow struct {
	lastCNP clock.Time
	sent    bool
}

// NewNP returns the NP policy for cfg.
func NewNP(cfg DCQCN) *NP {
	return &NP{minGap: micros(cfg.NPMinTimeBetweenCNPs), CNPDSCP: cfg.NPCNPDSCP, CNPPrio: cfg.NPCNPPrio, FixedPrio: cfg.NPCNPPrioMode}
}

// OnCE is called for each CE-marked RoCEv2 packet of a flow (the NIC counts
// np_ecn_marked_roce_packets). It reports whether to send a CNP now (the NIC
// then counts np_cnp_sent).
func (np *NP) OnCE(fl *NPFlow, now clock.Time) bool {
	if fl.sent && now-fl.lastCNP < np.minGap {
		return false
	}
	fl.sent, fl.lastCNP = true, now
	return true
}

// Priority is the priority a CNP answering a packet of priority p carries.
func (np *NP) Priority(p uint8) uint8 {
	if np.FixedPrio {
		return np.CNPPrio
	}
	return p
}
