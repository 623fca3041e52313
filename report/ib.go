package report

import (
	"fmt"
	"io"
	"strconv"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/switchcore"
)

// ibSummary writes an InfiniBand run's switch ports per VL (credits, not
// pauses: an IB link never pauses and never drops for want of buffer) and,
// with congestion control on, what it did per flow.
func ibSummary(w io.Writer, spec *lab.Spec, r *sim.Results) {
	if rows, score := ibPortRows(spec, r); len(rows) > 0 {
		fmt.Fprintf(w, "\nSwitch ports per VL (traffic, credit waits, congestion marks, drops)\n")
		t := &Table{
			Header: []string{"port", "peer", "VL", "rx pkts", "tx pkts", "credit stalls", "xmit wait us", "FC tx", "FC rx", "FECN marked", "drops", "max queue"},
			Right:  []bool{false, false, true, true, true, true, true, true, true, true, true, true},
		}
		keep := mostInteresting(score, MaxRows)
		for i, row := range rows {
			if keep[i] {
				t.Add(row...)
			}
		}
		t.Write(w)
		if len(rows) > MaxRows {
			fmt.Fprintf(w, "(the %d of %d rows with the most drops, credit waits and queueing; -o DIR writes all of them to ports.csv)\n", MaxRows, len(rows))
		}
	}
	var cc []sim.FlowResult
	for _, f := range r.Flows {
		if f.IBCC != nil {
			cc = append(cc, f)
		}
	}
	if len(cc) == 0 {
		return
	}
	fmt.Fprintf(w, "\nIB congestion control per flow (FECN at the destination, CN back to the source, CCT index)\n")
	t := &Table{
		Header: []string{"flow", "FECN rx", "CN (BECN) rx", "CCTI end", "CCTI max", "packet delay at end"},
		Right:  []bool{false, true, true, true, true, true},
	}
	for i, f := range cc {
		if i >= MaxRows {
			break
		}
		c := f.IBCC
		t.Add(f.Name, strconv.FormatUint(c.FECNRx, 10), strconv.FormatUint(c.BECNRx, 10),
			strconv.Itoa(int(c.CCTI)), strconv.Itoa(int(c.MaxCCTI)), c.Delay.String())
	}
	t.Write(w)
}

// ibPortRows are the per-VL rows of every switch port that saw anything.
func ibPortRows(spec *lab.Spec, r *sim.Results) ([][]string, []portScore) {
	var rows [][]string
	var scores []portScore
	for i := range r.Ports {
		p := &r.Ports[i]
		for vl := 0; vl < switchcore.NumPriorities; vl++ {
			c := &p.Prio[vl]
			drops := c.TotalDrops()
			if c.RxPackets == 0 && c.TxPackets == 0 && c.CreditStalls == 0 && c.FECNMarked == 0 && drops == 0 && c.QueueWatermark == 0 {
				continue
			}
			rows = append(rows, []string{
				p.Switch + ":" + p.Name, peerName(spec, p), strconv.Itoa(vl),
				strconv.FormatUint(c.RxPackets, 10), strconv.FormatUint(c.TxPackets, 10),
				strconv.FormatUint(c.CreditStalls, 10), usec(c.XmitWaitPs),
				strconv.FormatUint(c.FCTx, 10), strconv.FormatUint(c.FCRx, 10),
				strconv.FormatUint(c.FECNMarked, 10), strconv.FormatUint(drops, 10),
				Bytes(uint64(c.QueueWatermark)),
			})
			scores = append(scores, portScore{drops, c.CreditStalls, c.QueueWatermark})
		}
	}
	return rows, scores
}
