package switchcore

import (
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// ECN marking by WRED_PROFILE on the egress queue depth (cc-anchors §2.1,
// §4): below green_min_threshold nothing happens; between min and max the
// probability rises linearly to green_drop_probability %; at or above max
// every packet is hit. A hit ECT packet is CE-marked (IPv4 checksum updated
// incrementally). A hit non-ECT packet (or any packet when the profile's
// ecn mode is ecn_none) is dropped only in a lossy queue with
// wred_green_enable; lossless traffic is never dropped by WRED.
//
// depth is the queue's bytes excluding the packet itself.

// applyWRED evaluates queue q's WRED profile for f; it reports whether f
// must be dropped.
func (s *Switch) applyWRED(p *port, q int, f *frame.Frame, depth int) bool {
	w := p.eq[q].wred
	if w == nil || depth < w.GreenMinThreshold {
		return false
	}
	if depth < w.GreenMaxThreshold {
		// p = prob% * (depth-min)/(max-min), drawn from the switch's PCG.
		span := uint64(w.GreenMaxThreshold-w.GreenMinThreshold) * 100
		x := s.rng.Uint64N(span)
		if x >= uint64(w.GreenDropProbability)*uint64(depth-w.GreenMinThreshold) {
			return false
		}
	}
	var l2 wire.L2
	if wire.DecodeEthernet(f.Data, &l2) != nil {
		return false
	}
	if l2.EtherType == wire.EtherTypeIPv4 || l2.EtherType == wire.EtherTypeIPv6 {
		l3 := f.Data[l2.HdrLen:]
		ecn := wire.IPECN(l3)
		if w.ECN != ECNNone && (ecn == wire.ECNECT0 || ecn == wire.ECNECT1) {
			wire.SetIPECN(l3, wire.ECNCE)
			p.c.Prio[f.Priority&7].ECNMarked++
			s.emit(TraceEvent{Kind: TraceECNMark, Port: p.idx, Prio: q, Bytes: depth, Frame: f})
			return false
		}
		if w.ECN != ECNNone && ecn == wire.ECNCE {
			return false // already marked upstream
		}
	}
	lossless := false
	if f.InPort >= 0 && f.InPort < len(s.ports) {
		lossless = s.ports[f.InPort].pg[f.PG].lossless
	}
	return !lossless && w.WREDGreenEnable
}
