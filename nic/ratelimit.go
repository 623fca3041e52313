package nic

import (
	"net/netip"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// Per-QP rate limiting and DCQCN plumbing. Data-bearing packets of a QP
// (requests it sends, READ responses it returns) are paced at the QP's
// congestion-control rate: the next may start when the previous one would
// have finished at that rate, next = last start + bytes*8/rate. The bytes
// are the packet's wire bytes, its per-frame overhead (wire.Overhead)
// included, as a hardware rate limiter paces the link's time: a QP held to
// rate r takes that share of the link whatever its packet size, and the
// DCQCN rate, whose ceiling is the line rate, means the same bits per
// second as the link's. (The reaction point's byte counter still counts
// packet bytes.) ACKs, NAKs and CNPs are never paced. The algorithm
// (cc.Algorithm) is a pure state machine; its one timer per QP is armed at
// NextDeadline.

// paceAt is when the QP may start its next data packet.
func (q *QP) paceAt() clock.Time {
	if q.rp == nil || q.lastLen == 0 {
		return 0
	}
	r := q.rp.Rate()
	if r >= q.nic.cfg.Rate {
		return 0 // the port's own serialization is the limit
	}
	return q.lastStart + clock.SerializationTime(q.lastLen+wire.Overhead(q.nic.ib()), r)
}

// sentData records a paced packet of l wire bytes started now.
func (q *QP) sentData(now clock.Time, l int) {
	q.lastStart, q.lastLen = now, l
	if q.rp != nil {
		q.rp.OnSend(now, l)
		q.armCC()
	}
}

func (q *QP) armCC() {
	dl := q.rp.NextDeadline()
	if dl == q.ccArmed {
		return
	}
	q.ccArmed = dl
	if dl == clock.Never {
		q.ccTimer.Stop()
		return
	}
	q.ccTimer.Reset(dl)
}

func (q *QP) onCCTimer() {
	q.ccArmed = clock.Never
	if q.rp == nil {
		return
	}
	q.rp.Advance(q.nic.clk.Now())
	q.armCC()
	if q.scheduled {
		// The rate may have gone up: a paced QP may start sooner.
		q.nic.wake()
	}
}

var cnp = cc.Feedback{Kind: cc.FeedbackCNP}

// receiveCNP is the reaction point's input: a CNP names the QP to slow.
func (n *NIC) receiveCNP(q *QP) { n.feedback(q, &cnp, true) }

// feedback hands a congestion signal for local QP q to its reaction point
// (rp_cnp_handled), or counts it ignored (rp_cnp_ignored) when q has none
// or is not sending. notice counts it in the QP's CNPsReceived (a CNP or
// CN packet; not a BECN riding on another packet).
func (n *NIC) feedback(q *QP, fb *cc.Feedback, notice bool) {
	if q != nil && notice {
		q.Stats.CNPsReceived++
	}
	if q == nil || q.rp == nil || q.state == IBV_QPS_ERR || q.state == IBV_QPS_RESET {
		n.cnt[RPCNPIgnored]++
		return
	}
	n.cnt[RPCNPHandled]++
	q.rp.OnFeedback(n.clk.Now(), fb)
	q.armCC()
}

// notifyCE is the notification point: a CE-marked packet q accepted
// arrived (receiveRoCE counted it in np_ecn_marked_roce_packets).
// At most one CNP per QP per np_min_time_between_cnps goes back to the
// packet's sender, addressed to the sending QP.
func (n *NIC) notifyCE(q *QP, pkt *bth.Packet, prio uint8) {
	if n.np == nil || !n.np.OnCE(&q.npFlow, n.clk.Now()) {
		return
	}
	dest := q.attr.DestQPNum
	if q.typ == IBV_QPT_UD {
		dest = pkt.DETH.SrcQP()
	}
	var src netip.Addr
	if pkt.IPVersion == 4 {
		src = netip.AddrFrom4(pkt.IPv4.Src())
	} else {
		src = netip.AddrFrom16(pkt.IPv6.Src())
	}
	n.rf.BTH = bth.CNPFields(dest, q.pkey)
	cp := n.np.Priority(prio)
	f := n.emit(pkt.L2.Src, src, n.np.CNPDSCP, wire.ECNNotECT, cp, q.sport, q.flowLabel, q.qpn, nil)
	n.cnt[NPCNPSent]++
	q.Stats.CNPsSent++
	q.Stats.TxPackets++
	q.Stats.TxBytes += uint64(len(f.Data))
	n.q[cp].frames.push(f)
	n.wake()
}
