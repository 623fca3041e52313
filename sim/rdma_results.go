package sim

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/nic"
)

// RDMAFlowResult is one RDMA flow: its connections and their sums.
type RDMAFlowResult struct {
	Name     string
	Src, Dst string
	Op       string // write, read, send
	Priority int
	Size     int // message bytes
	QPs      []QPResult
	// Sums over the QPs.
	Posted, Completed, Failed int
	Bytes                     uint64 // completed message bytes
	// Throughput is completed bytes per second between the first post and
	// the last completion of any QP.
	Throughput float64
	// FCT is the flow completion time (first post to last completion) when
	// every QP finished without error; 0 otherwise.
	FCT        clock.Time
	Msg        FCTStats // per-message post -> completion times, all QPs
	CNPsSent   uint64   // by the data receiver's notification point
	CNPHandled uint64   // by the data sender's reaction point
	CNPIgnored uint64   // by a data sender without congestion control
	// ReverseCNPs: CNPs the data sender's NP sent for CE-marked packets
	// coming back to it (ACKs, READ requests): congestion on the reverse
	// path. The NICs' np_cnp_sent counts them with CNPsSent.
	ReverseCNPs uint64
	Retransmit  uint64 // packets sent again (go-back-N)
}

// QPResult is one connection of an RDMA flow, perftest-style: figures of
// the requester QP (on Src) and the CNPs around it.
type QPResult struct {
	SrcQPN, DstQPN            uint32
	Posted, Completed, Failed int
	FirstError                string // IB status name of the first failed completion, "" if none
	PostError                 string // why the flow stopped posting early, "" if it did not
	Bytes                     uint64
	FirstPost, LastCompletion clock.Time
	Throughput                float64 // completed bits per second, first post -> last completion
	FCT                       clock.Time
	Msg                       FCTStats
	// CNPsSent: CNPs the data receiver's NP sent for this connection;
	// CNPHandled: CNPs the data sender's RP acted on (rp_cnp_handled);
	// CNPIgnored: CNPs that reached a sender QP without congestion
	// control (rp_cnp_ignored).
	CNPsSent, CNPHandled, CNPIgnored uint64
	// ReverseCNPs: CNPs the data sender's NP sent for CE-marked ACKs,
	// READ requests or other packets the data receiver sent it.
	ReverseCNPs uint64
	// Requester (Src QP) retransmission figures.
	Retransmitted, Timeouts, SeqNAKs, RNRNAKs uint64
	// FinalRate is the sender's congestion-control rate at the end (bits/s).
	FinalRate uint64
}

// NICResult is one NIC host's counters at the end of the run: the mlx5
// hw_counters (by name, in `rdma statistic` order) and the per-priority
// ethtool counters.
type NICResult struct {
	Name     string
	Counters []NamedCounter
	Prio     [8]nic.PrioCounters
	// PauseDuration per priority: time the NIC's egress was paused by
	// received PFC.
	PauseDuration [8]clock.Time
	Port          nic.PortCounters
}

// NamedCounter is one hw_counters entry.
type NamedCounter struct {
	Name  string
	Value uint64
}

// Counter returns the value of the named hw counter (0 if unknown).
func (r *NICResult) Counter(name string) uint64 {
	for _, c := range r.Counters {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// RDMAFlow returns the named RDMA flow's result, or nil.
func (r *Results) RDMAFlow(name string) *RDMAFlowResult {
	for i := range r.RDMA {
		if r.RDMA[i].Name == name {
			return &r.RDMA[i]
		}
	}
	return nil
}

// NIC returns the named NIC host's counters, or nil.
func (r *Results) NIC(name string) *NICResult {
	for i := range r.NICs {
		if r.NICs[i].Name == name {
			return &r.NICs[i]
		}
	}
	return nil
}

// rdmaResults adds the RDMA flows and NIC counters to r.
func (s *Sim) rdmaResults(r *Results) {
	for _, f := range s.rdma {
		fr := RDMAFlowResult{Name: f.cfg.Name, Src: f.cfg.Src, Dst: f.cfg.Dst, Op: f.cfg.Op.String(),
			Priority: int(f.prio), Size: f.cfg.Size}
		// The data sender is the requester for WRITE and SEND, the
		// responder for READ; CNPs go from the data receiver to it.
		var first, last clock.Time
		var all []clock.Time
		ok := len(f.qps) > 0
		for _, q := range f.qps {
			st := q.st.Stats()
			sendQP, recvQP := q.src.QP, q.dst.QP
			if f.cfg.Op == OpRead {
				sendQP, recvQP = q.dst.QP, q.src.QP
			}
			qr := QPResult{
				SrcQPN: q.src.QP.QPN(), DstQPN: q.dst.QP.QPN(),
				Posted: st.Posted, Completed: st.Completed, Failed: st.Failed, Bytes: st.Bytes,
				FirstPost: st.FirstPost, LastCompletion: st.LastCompletion, Throughput: st.Throughput(),
				Msg:         fctStats(st.FCT),
				CNPsSent:    recvQP.Stats.CNPsSent,
				ReverseCNPs: sendQP.Stats.CNPsSent,
				// Retransmissions are the requester's (READ
				// responses are re-requested by it too).
				Retransmitted: q.src.QP.Stats.RetransmittedPackets,
				Timeouts:      q.src.QP.Stats.Timeouts,
				SeqNAKs:       q.src.QP.Stats.SeqNAKs,
				RNRNAKs:       q.src.QP.Stats.RNRNAKs,
				FinalRate:     sendQP.Rate(),
			}
			if sendQP.CC() != nil {
				qr.CNPHandled = sendQP.Stats.CNPsReceived
			} else {
				qr.CNPIgnored = sendQP.Stats.CNPsReceived
			}
			if st.Failed > 0 {
				qr.FirstError = st.FirstError.String()
			}
			if st.PostError != nil {
				qr.PostError = st.PostError.Error()
				ok = false
			}
			if st.Done && st.Failed == 0 && st.Completed > 0 {
				qr.FCT = st.LastCompletion - st.FirstPost
			} else {
				ok = false
			}
			fr.QPs = append(fr.QPs, qr)
			fr.Posted += qr.Posted
			fr.Completed += qr.Completed
			fr.Failed += qr.Failed
			fr.Bytes += qr.Bytes
			fr.CNPsSent += qr.CNPsSent
			fr.CNPHandled += qr.CNPHandled
			fr.CNPIgnored += qr.CNPIgnored
			fr.ReverseCNPs += qr.ReverseCNPs
			fr.Retransmit += qr.Retransmitted
			all = append(all, st.FCT...)
			if st.Posted > 0 && (first == 0 || st.FirstPost < first) {
				first = st.FirstPost
			}
			last = max(last, st.LastCompletion)
		}
		if last > first {
			fr.Throughput = float64(fr.Bytes) * 8 / (last - first).Seconds()
		}
		if ok {
			fr.FCT = last - first
		}
		fr.Msg = fctStats(all)
		r.RDMA = append(r.RDMA, fr)
	}
	for _, h := range s.nics {
		if h.n == nil {
			continue
		}
		nr := NICResult{Name: h.cfg.Name, Port: h.n.Port()}
		h.n.EachCounter(func(name string, v uint64) { nr.Counters = append(nr.Counters, NamedCounter{name, v}) })
		for p := range 8 {
			nr.Prio[p] = h.n.Prio(p)
			nr.PauseDuration[p] = h.n.PauseDuration(p)
		}
		r.NICs = append(r.NICs, nr)
	}
}

// rdmaSeriesInit adds one throughput series per RDMA flow.
func (s *Sim) rdmaSeriesInit(sr *Series) {
	for _, f := range s.rdma {
		sr.Flows = append(sr.Flows, FlowSeries{Flow: f.cfg.Name})
	}
}

// rdmaSample appends each RDMA flow's received rate (the payload of the
// data frames the data receiver's QPs accepted) over the last interval,
// the unit of a raw flow's FlowSeries.
func (s *Sim) rdmaSample(sr *Series) {
	base := len(s.flows)
	for i, f := range s.rdma {
		rx := f.rxBytes()
		bps := float64(rx-f.lastRx) * 8 / sr.Interval.Seconds()
		f.lastRx = rx
		sr.Flows[base+i].Bps = append(sr.Flows[base+i].Bps, bps)
	}
}
