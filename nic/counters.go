package nic

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/emufabric/emufabric/clock"
)

// Counter names one NIC counter. The RDMA ones carry the names of mlx5's
// hw_counters (/sys/class/infiniband/<dev>/ports/1/hw_counters, see
// drivers/infiniband/hw/mlx5/counters.c) with the same meaning; the port
// ones the names of mlx5's ethtool -S. Drops and NAKs that mlx5 does not
// count separately carry a name of ours, in the same style, documented
// here. Every drop and every NAK the NIC sends increments exactly one
// counter, at the place that decides it (rxe style).
type Counter uint8

const (
	// Congestion (mlx5 "cong" group).
	NPCNPSent              Counter = iota // np_cnp_sent: CNPs the notification point sent
	NPECNMarkedRoCEPackets                // np_ecn_marked_roce_packets: CE-marked RoCEv2 packets received for our address, whatever QP they name (mlx5 counts per packet); RoCE only (IB's is NPFECNMarkedPackets)
	RPCNPHandled                          // rp_cnp_handled: CNPs handed to the reaction point
	RPCNPIgnored                          // rp_cnp_ignored: CNPs received with congestion control off

	// Retransmission group.
	OutOfSequence       // out_of_sequence: responder saw a PSN gap (sent or suppressed a PSN-sequence NAK); packet dropped
	PacketSeqErr        // packet_seq_err: requester received a PSN-sequence-error NAK
	LocalAckTimeoutErr  // local_ack_timeout_err: requester's ACK timer expired, retry limit not exceeded
	RNRNakRetryErr      // rnr_nak_retry_err: requester received an RNR NAK, retry limit not exceeded
	DuplicateRequest    // duplicate_request: responder received a request with a PSN it already executed
	ImpliedNakSeqErr    // implied_nak_seq_err: requester inferred lost READ/atomic responses (ACK or response beyond them)
	OutOfBuffer         // out_of_buffer: no receive WQE for a SEND or WRITE-with-immediate (RNR NAK on RC, drop on UC/UD)
	RxWriteRequests     // rx_write_requests
	RxReadRequests      // rx_read_requests
	RxAtomicRequests    // rx_atomic_requests
	ReqRemoteAccessErr  // req_remote_access_errors: requester received a remote-access-error NAK
	RespRemoteAccessErr // resp_remote_access_errors: responder NAKed a bad R_Key, access right or range
	ReqRemoteInvalidReq // req_remote_invalid_request: requester received an invalid-request (or invalid-RD-request) NAK
	ReqTransportRetries // req_transport_retries_exceeded: retry_cnt exhausted
	ReqRNRRetries       // req_rnr_retries_exceeded: rnr_retry exhausted
	RespLocalLengthErr  // resp_local_length_error: incoming SEND longer than the receive WQE (invalid-request NAK on RC)
	ReqCQEError         // req_cqe_error: send completions with an error status
	RespCQEError        // resp_cqe_error: receive completions with an error status
	ReqCQEFlushError    // req_cqe_flush_error: send WQEs flushed by a QP error
	RespCQEFlushError   // resp_cqe_flush_error: receive WQEs flushed by a QP error
	RdmaTxPackets       // rdma_tx_packets: RoCEv2 frames the engine sent (CNPs included)
	RdmaTxBytes         // rdma_tx_bytes
	RdmaRxPackets       // rdma_rx_packets: RoCEv2 frames the engine accepted
	RdmaRxBytes         // rdma_rx_bytes
	// roce_adp_retrans: packets the requester sent again (go-back-N after
	// a NAK or an implied NAK, go-back-0 after an ACK timeout), every one
	// of them, on RoCE and IB. Not what mlx5's counter of that name
	// counts: its adaptive-retransmission events, one per retransmission
	// episode under adaptive retransmission (a firmware feature that tunes
	// the ACK timeout), not per resent packet; mlx5 has no counter of
	// resent packets. The emulator's name is kept for the tools that read
	// it; compare it with packet_seq_err + local_ack_timeout_err for
	// episodes.
	RoCEAdpRetrans

	// Drops and NAKs mlx5 does not name separately (emufabric names).
	ReqRemoteOpErr     // req_remote_operational_error: requester received a remote-operational-error NAK
	RespInvalidRequest // resp_invalid_request: responder NAKed an invalid request (op sequence, opcode not allowed, length, too many READ/atomic)
	RxICRCErr          // rx_icrc_errors: RoCEv2 frame with a bad ICRC, dropped
	RxMalformed        // rx_malformed_roce: UDP 4791 frame to our address that does not decode, dropped
	RxUnknownQP        // rx_unknown_qp: packet for a QP number the engine does not have (one destroyed after an interrupted run, or the host RoCE stack's): on RoCE handed to the host when there is one, else dropped; on IB dropped
	RxQPState          // rx_qp_state_drop: packet for a QP whose state does not accept it (RESET, INIT, ERR, wrong transport)
	RxQKeyViolation    // rx_qkey_violation: UD packet with the wrong Q_Key, dropped (IBA 10.2.4)
	RxPKeyViolation    // rx_pkey_violation: packet whose P_Key does not match the QP's, dropped
	RxUCDropped        // rx_uc_dropped: UC packet discarded while resynchronising after a gap or invalid sequence
	RxUDTooLong        // rx_ud_too_long: UD message longer than the receive WQE, dropped
	ReqDupResponse     // req_dup_response: ACK or response for a PSN already completed, dropped
	ReqBadResponse     // req_bad_response: response that matches no outstanding WQE or the wrong operation, dropped
	RxMACControlBad    // rx_mac_control_errors: MAC Control frame that does not decode, dropped
	RxNoHost           // rx_no_host: non-RDMA frame and no host attached, dropped
	TxQueueDropped     // tx_queue_dropped: host frame dropped, its priority queue was full
	CQOverflow         // cq_overflow: completion lost because its CQ was full (the CQ is in error)

	// Native InfiniBand (Config.Fabric FabricIB). On an IB port the
	// congestion counters above count the IB CC annex's events: CN packets
	// sent (np_cnp_sent), BECNs handled (rp_cnp_handled); FECN-marked
	// packets received are NPFECNMarkedPackets.
	IBCreditWaits    // ib_credit_waits: times a VL's next packet had to wait for credit (events; the PMA's PortXmitWait is their time, in mad.XmitWaitTick)
	IBFCTx           // ib_fc_tx: flow-control packets sent
	IBFCRx           // ib_fc_rx: flow-control packets received
	IBLinkErr        // ib_link_errors: link packet with a bad LPCRC or operand, dropped
	IBVLErr          // ib_vl_errors: data packet on a VL the port does not run, dropped (PortRcvErrors)
	IBCreditOverrun  // ib_credit_overrun: data beyond the credit we granted (the sender broke flow control)
	IBVL15Dropped    // vl15_dropped: subnet management packet, dropped (this port runs no SMA)
	IBVCRCErr        // ib_vcrc_errors: packet with a bad VCRC, dropped
	IBWrongLID       // ib_wrong_lid: packet for another DLID, dropped
	IBPortStateDrop  // ib_port_state_drop: data packet while the SMA's port was not yet Armed (IBA 7.2: Init takes SMPs only), dropped
	IPoIBTxPackets   // ipoib_tx_packets: host packets sent over IPoIB
	IPoIBRxPackets   // ipoib_rx_packets: IPoIB packets handed to the host
	IPoIBARPReplies  // ipoib_arp_replies: host ARP requests the NIC answered for a neighbour
	IPoIBNoNeighbour // ipoib_no_neighbour: host frame to a MAC, or IPoIB packet from a LID, that is no configured neighbour, dropped
	IPoIBUnsupported // ipoib_unsupported: host frame IPoIB does not carry here (non-IP, tagged, too long) or IPoIB packet not a UD SEND, dropped
	SMPRx            // smp_rx: subnet management packets the port's SMA took
	SMPTx            // smp_tx: subnet management packets sent (SMA answers, forwarded or the local SM's requests)
	SMPMalformed     // smp_malformed: VL15 packet that is no valid SMP, dropped
	SMPDropped       // smp_dropped: SMP the agent discarded (bad hop, unsupported method or attribute path) or a response with no SM here
	LinkDowned       // link_downed: times the link went down under the port (RoCE and IB, as rxe counts it), or on IB was declared lost for silence (IBLinkTimeout; IB PortCounters LinkDownedCounter)
	GSIRx            // gsi_rx: GMPs QP1 took
	GSITx            // gsi_tx: GMPs QP1 sent (PerfMgt answers, this port's requests)
	GSIUnsupported   // gsi_unsupported: GMP of a class without an agent here (SA, CM) or not a UD SEND, dropped
	// np_fecn_marked_packets: FECN-marked IB packets a QP accepted, each
	// answered with a CN packet when congestion control is on (IB CC
	// annex A10.2.2), the IB counterpart of np_ecn_marked_roce_packets.
	// An emufabric name: mlx5 has no hw_counter for it (its congestion
	// group, cong_cnts in hw/mlx5/counters.c, is RoCE's, read with
	// QUERY_CONG_STATISTICS), and calling IB marks RoCE packets misled.
	NPFECNMarkedPackets
	numCounters
)

var counterNames = [numCounters]string{
	"np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored",
	"out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "rnr_nak_retry_err",
	"duplicate_request", "implied_nak_seq_err", "out_of_buffer", "rx_write_requests",
	"rx_read_requests", "rx_atomic_requests", "req_remote_access_errors", "resp_remote_access_errors",
	"req_remote_invalid_request", "req_transport_retries_exceeded", "req_rnr_retries_exceeded",
	"resp_local_length_error", "req_cqe_error", "resp_cqe_error", "req_cqe_flush_error",
	"resp_cqe_flush_error", "rdma_tx_packets", "rdma_tx_bytes", "rdma_rx_packets", "rdma_rx_bytes",
	"roce_adp_retrans",
	"req_remote_operational_error", "resp_invalid_request", "rx_icrc_errors", "rx_malformed_roce", "rx_unknown_qp", "rx_qp_state_drop",
	"rx_qkey_violation", "rx_pkey_violation", "rx_uc_dropped", "rx_ud_too_long", "req_dup_response",
	"req_bad_response", "rx_mac_control_errors", "rx_no_host", "tx_queue_dropped", "cq_overflow",
	"ib_credit_waits", "ib_fc_tx", "ib_fc_rx", "ib_link_errors", "ib_vl_errors", "ib_credit_overrun",
	"vl15_dropped", "ib_vcrc_errors", "ib_wrong_lid", "ib_port_state_drop",
	"ipoib_tx_packets", "ipoib_rx_packets", "ipoib_arp_replies", "ipoib_no_neighbour", "ipoib_unsupported",
	"smp_rx", "smp_tx", "smp_malformed", "smp_dropped", "link_downed",
	"gsi_rx", "gsi_tx", "gsi_unsupported",
	"np_fecn_marked_packets",
}

func (c Counter) String() string {
	if c < numCounters {
		return counterNames[c]
	}
	return fmt.Sprintf("counter(%d)", uint8(c))
}

// CounterByName returns the counter with the given name.
func CounterByName(name string) (Counter, bool) {
	for i, n := range counterNames {
		if n == name {
			return Counter(i), true
		}
	}
	return 0, false
}

// PrioCounters are one priority's mlx5 ethtool counters.
type PrioCounters struct {
	RxBytes, RxPackets uint64 // rx_prioN_bytes, rx_prioN_packets
	TxBytes, TxPackets uint64 // tx_prioN_bytes, tx_prioN_packets
	RxPause            uint64 // rx_prioN_pause: PFC frames received asking this priority to stop
	RxPauseTransition  uint64 // rx_prioN_pause_transition: paused -> resumed transitions
	TxPause            uint64 // tx_prioN_pause: PFC frames sent with this priority's bit set

	pausedUntil clock.Time // egress of this priority is paused until then
	pauseStart  clock.Time // start of the current pause, when paused
	pausedTotal clock.Time // completed pause time

	// XOFF this NIC asserts toward its peer (tx_prioN_pause_duration):
	// from an XOFF sent until the pause it asks for runs out, an XON is
	// sent or the link goes down (pfc.go).
	xoffUntil, xoffStart, xoffTotal clock.Time
}

// PortCounters are the port-level mlx5 ethtool counters.
type PortCounters struct {
	RxPacketsPhy, RxBytesPhy uint64 // rx_packets_phy, rx_bytes_phy
	TxPacketsPhy, TxBytesPhy uint64 // tx_packets_phy, tx_bytes_phy
	RxPauseCtrlPhy           uint64 // rx_pause_ctrl_phy: PAUSE/PFC frames received
	TxPauseCtrlPhy           uint64 // tx_pause_ctrl_phy
	LinkDownEventsPhy        uint64 // link_down_events_phy: times a link that was up went down
}

// Count returns the value of one counter.
func (n *NIC) Count(c Counter) uint64 { return n.cnt[c] }

// EachCounter calls f for every RDMA counter in hw_counters order.
func (n *NIC) EachCounter(f func(name string, v uint64)) {
	for i := range numCounters {
		f(counterNames[i], n.cnt[i])
	}
}

// Prio returns a copy of priority p's counters.
func (n *NIC) Prio(p int) PrioCounters { return n.prio[p&7] }

// Port returns the port counters.
func (n *NIC) Port() PortCounters { return n.port }

// PauseDuration is how long priority p's egress has been paused so far
// (rx_prioN_pause_duration, reported in microseconds by mlx5).
func (n *NIC) PauseDuration(p int) clock.Time {
	pc := &n.prio[p&7]
	d := pc.pausedTotal
	if now := n.clk.Now(); pc.pausedUntil > pc.pauseStart && pc.pauseStart <= now {
		d += min(now, pc.pausedUntil) - pc.pauseStart
	}
	return d
}

// TxPauseDuration is how long the NIC has asserted XOFF for priority p so
// far (tx_prioN_pause_duration, microseconds in mlx5's ethtool -S), as the
// switch counts its own: from each PFC frame that pauses p, sent, until
// the pause it asks for runs out or an XON for p is sent; not while the
// link is down, when nothing is sent. It grows while XOFF is asserted.
func (n *NIC) TxPauseDuration(p int) clock.Time {
	pc := &n.prio[p&7]
	d := pc.xoffTotal
	if now := n.clk.Now(); pc.xoffUntil > pc.xoffStart && pc.xoffStart <= now {
		d += min(now, pc.xoffUntil) - pc.xoffStart
	}
	return d
}

// WriteEthtool writes the port counters as `ethtool -S` prints them:
// "NIC statistics:" then one "     name: value" per line. An IB port has
// no MAC Control frames and no priorities: it lists its data VLs' packets
// and bytes instead (writeEthtoolIB).
func (n *NIC) WriteEthtool(w io.Writer) error {
	if _, err := fmt.Fprintln(w, "NIC statistics:"); err != nil {
		return err
	}
	if n.ib() {
		return n.writeEthtoolIB(w)
	}
	p := &n.port
	for _, kv := range []struct {
		k string
		v uint64
	}{
		{"rx_packets_phy", p.RxPacketsPhy}, {"tx_packets_phy", p.TxPacketsPhy},
		{"rx_bytes_phy", p.RxBytesPhy}, {"tx_bytes_phy", p.TxBytesPhy},
		{"rx_pause_ctrl_phy", p.RxPauseCtrlPhy}, {"tx_pause_ctrl_phy", p.TxPauseCtrlPhy},
		{"link_down_events_phy", p.LinkDownEventsPhy},
	} {
		if _, err := fmt.Fprintf(w, "     %s: %d\n", kv.k, kv.v); err != nil {
			return err
		}
	}
	for i := range 8 {
		c := &n.prio[i]
		_, err := fmt.Fprintf(w, "     rx_prio%[1]d_bytes: %[2]d\n     rx_prio%[1]d_packets: %[3]d\n"+
			"     tx_prio%[1]d_bytes: %[4]d\n     tx_prio%[1]d_packets: %[5]d\n"+
			"     rx_prio%[1]d_pause: %[6]d\n     rx_prio%[1]d_pause_duration: %[7]d\n"+
			"     rx_prio%[1]d_pause_transition: %[8]d\n     tx_prio%[1]d_pause: %[9]d\n"+
			"     tx_prio%[1]d_pause_duration: %[10]d\n",
			i, c.RxBytes, c.RxPackets, c.TxBytes, c.TxPackets, c.RxPause,
			int64(n.PauseDuration(i)/clock.Microsecond), c.RxPauseTransition, c.TxPause,
			int64(n.TxPauseDuration(i)/clock.Microsecond))
		if err != nil {
			return err
		}
	}
	return nil
}

// writeEthtoolIB writes an IB port's counters after the header: every
// packet on the wire each way (the _phy ones, link packets included, as
// the switch's), then per data VL what the VL carried (link packets are
// no VL's data: ib_fc_tx and ib_fc_rx count them). IBA's PortCounters,
// which exclude link packets, are what `emulab ib counters` reads.
func (n *NIC) writeEthtoolIB(w io.Writer) error {
	p := &n.port
	var sb strings.Builder
	fmt.Fprintf(&sb, "     rx_packets_phy: %d\n     tx_packets_phy: %d\n     rx_bytes_phy: %d\n     tx_bytes_phy: %d\n     link_down_events_phy: %d\n",
		p.RxPacketsPhy, p.TxPacketsPhy, p.RxBytesPhy, p.TxBytesPhy, p.LinkDownEventsPhy)
	for vl := range n.cfg.IBDataVLs {
		c := &n.prio[vl&7]
		fmt.Fprintf(&sb, "     vl%[1]d_rx_packets: %[2]d\n     vl%[1]d_rx_bytes: %[3]d\n     vl%[1]d_tx_packets: %[4]d\n     vl%[1]d_tx_bytes: %[5]d\n",
			vl, c.RxPackets, c.RxBytes, c.TxPackets, c.TxBytes)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// WriteHWCounters writes every RDMA counter, one "name value" per line, as
// the files under hw_counters name them, in Counter order: both fabrics'
// counters, for programs (emunic's counters op reads them into its
// hw_counters map). What `rdma statistic show` prints is
// WriteRdmaStatistic.
func (n *NIC) WriteHWCounters(w io.Writer) error {
	for i := range numCounters {
		if _, err := fmt.Fprintf(w, "%s %d\n", counterNames[i], n.cnt[i]); err != nil {
			return err
		}
	}
	return nil
}

// fabrics says on which ports a counter exists.
type fabrics uint8

const (
	onRoCE fabrics = 1 << iota
	onIB
	onBoth = onRoCE | onIB
)

// counterFabrics are the counters that exist on one fabric only: those
// of IB's link layer, IPoIB, the SMA and GSI (IB), of MAC Control frames
// (RoCE). The others exist on both.
var counterFabrics = func() (f [numCounters]fabrics) {
	for i := range f {
		f[i] = onBoth
	}
	f[RxMACControlBad] = onRoCE
	f[NPECNMarkedRoCEPackets] = onRoCE
	for _, c := range []Counter{IBCreditWaits, IBFCTx, IBFCRx, IBLinkErr, IBVLErr, IBCreditOverrun,
		IBVL15Dropped, IBVCRCErr, IBWrongLID, IBPortStateDrop, IPoIBTxPackets, IPoIBRxPackets,
		IPoIBARPReplies, IPoIBNoNeighbour, IPoIBUnsupported, SMPRx, SMPTx, SMPMalformed, SMPDropped,
		GSIRx, GSITx, GSIUnsupported, NPFECNMarkedPackets} {
		f[c] = onIB
	}
	return f
}()

// statisticOrder is the order `rdma statistic show` lists a port's
// counters in: mlx5's, in the driver's groups (hw/mlx5/counters.c; see the
// project's conventions, NIC counters): basic, out_of_sequence,
// retransmission, congestion, extended errors, RoCE accelerator, the
// optional rdma_{tx,rx}_{packets,bytes}; then the emulator's own in Counter
// order. mlx5 counters we do not keep (rx_dct_connect, roce_adp_retrans_to,
// roce_slow_restart*, rx_icrc_encapsulated, cc_*) are not listed.
var statisticOrder = func() []Counter {
	mlx5 := []Counter{
		RxWriteRequests, RxReadRequests, RxAtomicRequests, OutOfBuffer,
		OutOfSequence,
		DuplicateRequest, RNRNakRetryErr, PacketSeqErr, ImpliedNakSeqErr, LocalAckTimeoutErr,
		RPCNPIgnored, RPCNPHandled, NPECNMarkedRoCEPackets, NPFECNMarkedPackets, NPCNPSent,
		RespLocalLengthErr, RespCQEError, ReqCQEError, ReqRemoteInvalidReq, ReqRemoteAccessErr,
		RespRemoteAccessErr, RespCQEFlushError, ReqCQEFlushError, ReqTransportRetries, ReqRNRRetries,
		RoCEAdpRetrans,
		RdmaTxPackets, RdmaTxBytes, RdmaRxPackets, RdmaRxBytes,
	}
	order := append([]Counter(nil), mlx5...)
	for c := range numCounters {
		if !slices.Contains(mlx5, c) {
			order = append(order, c)
		}
	}
	return order
}()

// EachStatistic calls f for every RDMA counter of the port's fabric, in
// `rdma statistic show` order (statisticOrder): a RoCE port has no IB
// link, IPoIB or subnet management counters, an IB port no MAC Control
// one.
func (n *NIC) EachStatistic(f func(name string, v uint64)) {
	on := onRoCE
	if n.ib() {
		on = onIB
	}
	for _, c := range statisticOrder {
		if counterFabrics[c]&on != 0 {
			f(counterNames[c], n.cnt[c])
		}
	}
}

// WriteRdmaStatistic writes what `rdma statistic show link DEV/1` prints
// for the port (iproute2 rdma/stat.c): one line, "link DEV/1" then a
// "name value" pair per counter (EachStatistic), space-separated.
func (n *NIC) WriteRdmaStatistic(w io.Writer, dev string) error {
	var sb strings.Builder
	sb.WriteString("link " + dev + "/1")
	n.EachStatistic(func(name string, v uint64) {
		sb.WriteString(" " + name + " " + strconv.FormatUint(v, 10))
	})
	sb.WriteString("\n")
	_, err := io.WriteString(w, sb.String())
	return err
}
