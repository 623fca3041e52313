package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/sim"
)

// RDMA flows run on real NICs (nic package): one row per flow, and one per
// QP when a flow has several, with perftest's figures (messages, bytes,
// throughput, completion times) and the congestion and recovery counters
// around each QP: CNPs the receiver's notification point sent, CNPs the
// sender's reaction point handled (a sender without congestion control
// ignores them: rdma_qps.csv and the NIC table count those apart),
// packets the requester retransmitted.

// nicCounterColumns are the hw_counters the NIC table shows (all of them
// go to nic_counters.csv).
var nicCounterColumns = []string{"np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored", "np_ecn_marked_roce_packets", "roce_adp_retrans",
	"out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "rx_icrc_errors"}

// ibNICCounterColumns are an IB HCA's: the IB CC annex's events (FECN
// marks received, then CN packets and BECNs under mlx5's congestion
// names), then the link layer's.
var ibNICCounterColumns = []string{"np_fecn_marked_packets", "np_cnp_sent", "rp_cnp_handled", "roce_adp_retrans",
	"local_ack_timeout_err", "ib_credit_waits", "ib_fc_tx", "ib_fc_rx", "ib_credit_overrun", "rx_icrc_errors", "ib_vcrc_errors"}

func rdmaSummary(ew io.Writer, r *sim.Results, ib bool) {
	if len(r.RDMA) == 0 {
		return
	}
	fmt.Fprintf(ew, "\nRDMA flows (per QP when a flow has several)\n")
	t := &Table{
		Header: []string{"flow", "op", "src", "dst", "prio", "QP", "msgs done/posted", "bytes", "throughput", "goodput over run", "FCT", "msg FCT p50", "msg FCT p99",
			"CNPs sent", "CNPs handled", "retransmitted", "timeouts", "final rate"},
		Right: []bool{false, false, false, false, true, false, true, true, true, true, true, true, true, true, true, true, true, true},
	}
	rows := 0
	for _, f := range r.RDMA {
		if rows >= MaxRows {
			break
		}
		qp := "-"
		if len(f.QPs) == 1 {
			qp = fmt.Sprintf("0x%x", f.QPs[0].SrcQPN)
		}
		var timeouts uint64
		rate := ""
		for _, q := range f.QPs {
			timeouts += q.Timeouts
		}
		if len(f.QPs) == 1 {
			rate = Gbps(float64(f.QPs[0].FinalRate))
		}
		t.Add(f.Name, f.Op, f.Src, f.Dst, strconv.Itoa(f.Priority), qp, fmt.Sprintf("%d/%d", f.Completed, f.Posted),
			Bytes(f.Bytes), Gbps(f.Throughput), Gbps(goodput(f.Bytes, r.End)), timeOrDash(f.FCT), timeOrDash(f.Msg.P50), timeOrDash(f.Msg.P99),
			u(f.CNPsSent), u(f.CNPHandled), u(f.Retransmit), u(timeouts), rate)
		rows++
		if len(f.QPs) == 1 {
			continue
		}
		for _, q := range f.QPs {
			if rows >= MaxRows {
				break
			}
			t.Add("  "+f.Name, "", "", "", "", fmt.Sprintf("0x%x", q.SrcQPN), fmt.Sprintf("%d/%d", q.Completed, q.Posted),
				Bytes(q.Bytes), Gbps(q.Throughput), Gbps(goodput(q.Bytes, r.End)), timeOrDash(q.FCT), timeOrDash(q.Msg.P50), timeOrDash(q.Msg.P99),
				u(q.CNPsSent), u(q.CNPHandled), u(q.Retransmitted), u(q.Timeouts), Gbps(float64(q.FinalRate)))
			rows++
		}
	}
	t.Write(ew)
	if rows >= MaxRows {
		fmt.Fprintf(ew, "(the first %d rows; -o DIR writes every QP to rdma_qps.csv)\n", MaxRows)
	}
	fmt.Fprintf(ew, "(throughput: completed bytes / (last completion - first post); goodput over run: completed bytes / the whole %v)\n", r.End)
	reverseCNPs(ew, r)
	for _, f := range r.RDMA {
		for _, q := range f.QPs {
			if q.FirstError != "" {
				fmt.Fprintf(ew, "flow %s QP 0x%x: %d failed completions, first %s\n", f.Name, q.SrcQPN, q.Failed, q.FirstError)
			}
			if q.PostError != "" {
				fmt.Fprintf(ew, "flow %s QP 0x%x: stopped posting: %s\n", f.Name, q.SrcQPN, q.PostError)
			}
		}
	}

	if len(r.NICs) == 0 {
		return
	}
	if ib {
		ibNICSummary(ew, r)
		return
	}
	fmt.Fprintf(ew, "\nNICs (mlx5 hw_counters; XOFF received, rx_prioN_pause, summed over priorities)\n")
	nt := &Table{Header: append(append([]string{"nic"}, nicCounterColumns...), "XOFF rx", "paused us")}
	nt.Right = make([]bool, len(nt.Header))
	for i := 1; i < len(nt.Right); i++ {
		nt.Right[i] = true
	}
	for _, n := range r.NICs {
		row := []string{n.Name}
		for _, c := range nicCounterColumns {
			row = append(row, u(n.Counter(c)))
		}
		var pfc uint64
		var paused int64
		for p := range n.Prio {
			pfc += n.Prio[p].RxPause
			paused += int64(n.PauseDuration[p])
		}
		row = append(row, u(pfc), usec(paused))
		nt.Add(row...)
	}
	nt.Write(ew)
}

// ibNICSummary is the NIC table of an IB lab: FECN received and CN
// packets sent (np_*), BECNs handled (rp_cnp_handled), credit flow control.
func ibNICSummary(ew io.Writer, r *sim.Results) {
	fmt.Fprintf(ew, "\nHCAs (FECN received, CN sent, BECN handled; credit waits and flow-control packets)\n")
	header := []string{"hca", "FECN rx", "CN tx", "BECN handled", "retransmitted", "ack timeouts", "credit waits", "FC tx", "FC rx", "credit overrun", "ICRC errors", "VCRC errors"}
	nt := &Table{Header: header, Right: make([]bool, len(header))}
	for i := 1; i < len(nt.Right); i++ {
		nt.Right[i] = true
	}
	for _, n := range r.NICs {
		row := []string{n.Name}
		for _, c := range ibNICCounterColumns {
			row = append(row, u(n.Counter(c)))
		}
		nt.Add(row...)
	}
	nt.Write(ew)
}

// rdmaQPsCSV is one row per QP of every RDMA flow.
func rdmaQPsCSV(r *sim.Results) ([]byte, error) {
	rows := [][]string{{"flow", "op", "src", "dst", "priority", "message_bytes", "src_qpn", "dst_qpn", "posted", "completed", "failed", "first_error",
		"bytes", "first_post_us", "last_completion_us", "fct_us", "throughput_gbps", "goodput_gbps", "msg_fct_mean_us", "msg_fct_p50_us", "msg_fct_p99_us", "msg_fct_max_us",
		"cnps_sent", "cnps_handled", "cnps_ignored", "retransmitted_packets", "timeouts", "seq_naks", "rnr_naks", "final_rate_gbps", "reverse_cnps_sent"}}
	for _, f := range r.RDMA {
		for _, q := range f.QPs {
			rows = append(rows, []string{f.Name, f.Op, f.Src, f.Dst, strconv.Itoa(f.Priority), strconv.Itoa(f.Size),
				u(uint64(q.SrcQPN)), u(uint64(q.DstQPN)), strconv.Itoa(q.Posted), strconv.Itoa(q.Completed), strconv.Itoa(q.Failed), q.FirstError,
				u(q.Bytes), us(q.FirstPost), usSet(q.LastCompletion), usSet(q.FCT), ff(q.Throughput / 1e9), ff(goodput(q.Bytes, r.End) / 1e9),
				msgFCTs(q.Msg)[0], msgFCTs(q.Msg)[1], msgFCTs(q.Msg)[2], msgFCTs(q.Msg)[3],
				u(q.CNPsSent), u(q.CNPHandled), u(q.CNPIgnored), u(q.Retransmitted), u(q.Timeouts), u(q.SeqNAKs), u(q.RNRNAKs), ff(float64(q.FinalRate) / 1e9), u(q.ReverseCNPs)})
		}
	}
	return writeCSV(rows)
}

// nicCountersCSV is one row per NIC and counter: every hw_counter, then
// the per-priority ethtool counters (rx_prioN_pause, ...).
func nicCountersCSV(r *sim.Results) ([]byte, error) {
	rows := [][]string{{"nic", "counter", "value"}}
	for _, n := range r.NICs {
		for _, c := range n.Counters {
			rows = append(rows, []string{n.Name, c.Name, u(c.Value)})
		}
		for p := range n.Prio {
			pc := &n.Prio[p]
			for _, kv := range []struct {
				k string
				v uint64
			}{
				{"rx_prio%d_packets", pc.RxPackets}, {"rx_prio%d_bytes", pc.RxBytes},
				{"tx_prio%d_packets", pc.TxPackets}, {"tx_prio%d_bytes", pc.TxBytes},
				{"rx_prio%d_pause", pc.RxPause}, {"rx_prio%d_pause_duration", uint64(n.PauseDuration[p] / 1e6)},
				{"rx_prio%d_pause_transition", pc.RxPauseTransition}, {"tx_prio%d_pause", pc.TxPause},
			} {
				rows = append(rows, []string{n.Name, fmt.Sprintf(kv.k, p), u(kv.v)})
			}
		}
	}
	return writeCSV(rows)
}

// goodput is completed bytes per second over the whole run, as the Flows
// table's: a flow stuck for most of the run (a deadlock) shows it, where
// its throughput, measured to its last completion, does not.
func goodput(bytes uint64, end clock.Time) float64 {
	if end <= 0 {
		return 0
	}
	return float64(bytes) * 8 / end.Seconds()
}

// reverseCNPs notes the CNPs data senders sent for CE-marked packets
// coming back to them (ACKs, READ requests): the table's "CNPs sent" are
// the data receivers', so without the note a flow's CNPs would not add
// up to its NICs' np_cnp_sent when the reverse path is congested.
func reverseCNPs(ew io.Writer, r *sim.Results) {
	var total uint64
	var flows []string
	for _, f := range r.RDMA {
		if f.ReverseCNPs > 0 {
			total += f.ReverseCNPs
			if len(flows) < 4 {
				flows = append(flows, fmt.Sprintf("%s %d", f.Name, f.ReverseCNPs))
			} else if len(flows) == 4 {
				flows = append(flows, "...")
			}
		}
	}
	if total == 0 {
		return
	}
	fmt.Fprintf(ew, "(the data senders also sent %d CNPs for CE-marked ACKs or READ requests, congestion on the way back: %s; counted in np_cnp_sent and rdma_qps.csv's reverse_cnps_sent)\n",
		total, strings.Join(flows, ", "))
}
