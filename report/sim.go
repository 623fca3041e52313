package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/switchcore"
)

// Summary writes the human-readable result of a run: per flow bytes,
// throughput and completion times; per switch port and priority pauses, ECN
// marks, drops and the largest queue; drops by reason; the busiest links;
// a deadlock if one was found.
func Summary(w io.Writer, spec *lab.Spec, r *sim.Results) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "lab %s (%s): %v simulated, seed %d, %d events\n", spec.Name, spec.Fabric, r.End, r.Seed, r.Events)
	if r.Truncated {
		fmt.Fprintf(ew, "WARNING: the event budget ended the run early; results are partial\n")
	}

	if len(r.Flows) > 0 {
		fmt.Fprintf(ew, "\nFlows\n")
		t := &Table{
			Header: []string{"flow", "src", "dst", "prio", "msgs done/sent", "sent", "received", "last rx", "throughput to last rx", "goodput over run", "FCT", "msg FCT p50", "msg FCT p99", "PSN gaps"},
			Right:  []bool{false, false, false, true, true, true, true, true, true, true, true, true, true, true},
		}
		var sent, recv, gaps uint64
		var done, started int
		var goodput float64
		for i, f := range r.Flows {
			sent, recv, gaps = sent+f.TxBytes, recv+f.RxBytes, gaps+f.PSNGaps
			goodput += f.Goodput
			done, started = done+f.MessagesDone, started+f.MessagesSent
			if i >= MaxRows {
				continue
			}
			dst := strings.Join(f.Dst, ",")
			if len(f.Dst) > 3 {
				dst = fmt.Sprintf("%d hosts", len(f.Dst))
			}
			t.Add(f.Name, f.Src, dst, strconv.Itoa(f.Priority),
				fmt.Sprintf("%d/%d", f.MessagesDone, f.MessagesSent),
				Bytes(f.TxBytes), Bytes(f.RxBytes), timeOrDash(f.LastRx), Gbps(f.Throughput), Gbps(f.Goodput),
				timeOrDash(f.FCT), timeOrDash(f.Msg.P50), timeOrDash(f.Msg.P99), strconv.FormatUint(f.PSNGaps, 10))
		}
		if len(r.Flows) > 1 {
			name := fmt.Sprintf("all %d flows", len(r.Flows))
			t.Add(name, "", "", "", fmt.Sprintf("%d/%d", done, started), Bytes(sent), Bytes(recv), "", "", Gbps(goodput), "", "", "", strconv.FormatUint(gaps, 10))
		}
		t.Write(ew)
		fmt.Fprintf(ew, "(msgs done/sent: messages received / sent in full; sent and received bytes include messages cut off by the end of the run)\n")
		fmt.Fprintf(ew, "(throughput to last rx: payload received / (last rx - first byte sent); goodput over run: payload received / the whole %v)\n", r.End)
		if len(r.Flows) > MaxRows {
			fmt.Fprintf(ew, "(the first %d of %d flows; -o DIR writes all of them to flows.csv)\n", MaxRows, len(r.Flows))
		}
	}

	rdmaSummary(ew, r, spec.Fabric == lab.FabricIB)

	if spec.Fabric == lab.FabricIB {
		ibSummary(ew, spec, r)
	} else if rows, score := portRows(spec, r); len(rows) > 0 {
		fmt.Fprintf(ew, "\nSwitch ports (priorities with traffic, pauses, marks or drops)\n")
		t := &Table{
			Header: []string{"port", "peer", "prio", "rx pkts", "tx pkts", "pause rx", "pause tx", "paused (rx) us", "pausing (tx) us", "ECN marked", "drops", "max queue", "PG headroom max"},
			Right:  []bool{false, false, true, true, true, true, true, true, true, true, true, true, true},
		}
		keep := mostInteresting(score, MaxRows)
		for i, row := range rows {
			if keep[i] {
				t.Add(row...)
			}
		}
		t.Write(ew)
		if len(rows) > MaxRows {
			fmt.Fprintf(ew, "(the %d of %d rows with the most drops, pauses and queueing; -o DIR writes all of them to ports.csv)\n", MaxRows, len(rows))
		}
	}

	if total, by := r.SwitchDrops(); total > 0 || by[switchcore.DropHeadroomOverflow] > 0 {
		fmt.Fprintf(ew, "\nSwitch drops by reason\n")
		t := &Table{Header: []string{"reason", "frames"}, Right: []bool{false, true}}
		for k, v := range by {
			if v > 0 {
				name := switchcore.DropReason(k).String()
				if switchcore.DropReason(k) == switchcore.DropHeadroomOverflow {
					name += " (not a drop: lossless headroom too small, a configuration error)"
				}
				t.Add(name, strconv.FormatUint(v, 10))
			}
		}
		t.Write(ew)
	}

	if rows := hostRows(r); len(rows) > 0 {
		fmt.Fprintf(ew, "\nHosts: PFC received per priority\n")
		t := &Table{Header: []string{"host", "prio", "PFC frames rx", "XOFF rx", "paused us"}, Right: []bool{false, true, true, true, true}}
		for _, row := range rows {
			t.Add(row...)
		}
		t.Write(ew)
	}

	if rows := hostErrorRows(r); len(rows) > 0 {
		fmt.Fprintf(ew, "\nHosts: receive errors and storm XOFFs sent\n")
		t := &Table{Header: []string{"host", "ICRC errors", "VCRC errors", "malformed", "out of order", "storm XOFF tx", "IB credit overrun"},
			Right: []bool{false, true, true, true, true, true, true}}
		for _, row := range rows {
			t.Add(row...)
		}
		t.Write(ew)
	}

	if links := busiest(spec, r, 8); len(links) > 0 {
		what := "frames with their preamble, FCS and inter-frame gap"
		if spec.Fabric == lab.FabricIB {
			what = "packets"
		}
		fmt.Fprintf(ew, "\nBusiest link directions (share of the run spent on %s)\n", what)
		t := &Table{Header: []string{"from", "to", "rate", "busy", "data frames", "link drops"}, Right: []bool{false, false, true, true, true, true}}
		for _, l := range links {
			t.Add(l...)
		}
		t.Write(ew)
	}

	if d := r.Deadlock; d != nil {
		fmt.Fprintf(ew, "\nDEADLOCK: no data frame moved from %v; detected at %v (window %v)", d.Since, d.DetectedAt, d.Window)
		if d.ResolvedAt > 0 {
			fmt.Fprintf(ew, "; resolved at %v", d.ResolvedAt)
		} else {
			fmt.Fprintf(ew, "; still stuck at the end of the run")
		}
		fmt.Fprintf(ew, "\n")
		t := &Table{Header: []string{"queue", "towards", "prio", "bytes", "paused by peer"}, Right: []bool{false, false, true, true, false}}
		for _, q := range d.Queues {
			port := q.Switch + ":" + strconv.Itoa(q.Port)
			peer := ""
			if n := spec.Node(q.Switch); n != nil && q.Port < len(n.Ports) {
				port = n.Ports[q.Port].String()
				if p := n.Ports[q.Port].Peer; p != nil {
					peer = p.String()
				}
			}
			t.Add(port, peer, strconv.Itoa(q.Prio), strconv.Itoa(q.Bytes), strconv.FormatBool(q.Paused))
		}
		t.Write(ew)
	}
	return ew.err
}

func timeOrDash(t clock.Time) string {
	if t == 0 {
		return "-"
	}
	return t.String()
}

func usec(ps int64) string {
	return strconv.FormatFloat(float64(ps)/float64(clock.Microsecond), 'f', 1, 64)
}

// MaxRows bounds the rows of the flow and port tables; the CSV files have
// every row.
const MaxRows = 40

// portScore orders port rows by how much they tell: drops first, then
// pauses, then queueing.
type portScore struct {
	drops, pauses uint64
	queue         int
}

// mostInteresting marks the n highest-scoring rows.
func mostInteresting(score []portScore, n int) []bool {
	idx := make([]int, len(score))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := score[idx[a]], score[idx[b]]
		if x.drops != y.drops {
			return x.drops > y.drops
		}
		if x.pauses != y.pauses {
			return x.pauses > y.pauses
		}
		return x.queue > y.queue
	})
	keep := make([]bool, len(score))
	for i := 0; i < n && i < len(idx); i++ {
		keep[idx[i]] = true
	}
	return keep
}

// portRows returns one row per switch port and priority that saw anything,
// with each row's score.
func portRows(spec *lab.Spec, r *sim.Results) ([][]string, []portScore) {
	var rows [][]string
	var scores []portScore
	for i := range r.Ports {
		p := &r.Ports[i]
		for prio := 0; prio < switchcore.NumPriorities; prio++ {
			c := &p.Prio[prio]
			drops := c.TotalDrops()
			if c.RxPackets == 0 && c.TxPackets == 0 && c.RxPause == 0 && c.TxPause == 0 && c.ECNMarked == 0 && drops == 0 && c.QueueWatermark == 0 {
				continue
			}
			rows = append(rows, []string{
				p.Switch + ":" + p.Name, peerName(spec, p), strconv.Itoa(prio),
				strconv.FormatUint(c.RxPackets, 10), strconv.FormatUint(c.TxPackets, 10),
				strconv.FormatUint(c.RxPause, 10), strconv.FormatUint(c.TxPause, 10),
				usec(c.RxPauseDurationPs), usec(c.TxPauseDurationPs),
				strconv.FormatUint(c.ECNMarked, 10), strconv.FormatUint(drops, 10),
				Bytes(uint64(c.QueueWatermark)), Bytes(uint64(c.PGHeadroomWatermark)),
			})
			scores = append(scores, portScore{drops, c.RxPause + c.TxPause, c.QueueWatermark})
		}
	}
	return rows, scores
}

func hostRows(r *sim.Results) [][]string {
	var rows [][]string
	for _, h := range r.Hosts {
		st := &h.Stats
		for prio := 0; prio < 8; prio++ {
			if st.RxPFC[prio] == 0 && st.PausedTime[prio] == 0 {
				continue
			}
			rows = append(rows, []string{h.Name, strconv.Itoa(prio), strconv.FormatUint(st.RxPFC[prio], 10),
				strconv.FormatUint(st.RxXoff[prio], 10), usec(int64(st.PausedTime[prio]))})
		}
	}
	return rows
}

func hostErrorRows(r *sim.Results) [][]string {
	var rows [][]string
	for _, h := range r.Hosts {
		st := &h.Stats
		if st.ICRCErrors+st.VCRCErrors+st.Malformed+st.OutOfOrder+st.TxPFC+st.CreditOverrun == 0 {
			continue
		}
		rows = append(rows, []string{h.Name, strconv.FormatUint(st.ICRCErrors, 10), strconv.FormatUint(st.VCRCErrors, 10),
			strconv.FormatUint(st.Malformed, 10), strconv.FormatUint(st.OutOfOrder, 10), strconv.FormatUint(st.TxPFC, 10),
			strconv.FormatUint(st.CreditOverrun, 10)})
	}
	return rows
}

func busiest(spec *lab.Spec, r *sim.Results, n int) [][]string {
	type dir struct {
		from, to string
		rate     uint64
		st       sim.LinkStats
	}
	var dirs []dir
	for _, l := range r.Links {
		a, b := refName(spec, r, l.A), refName(spec, r, l.B)
		dirs = append(dirs, dir{a, b, l.Rate, l.Dir[0]}, dir{b, a, l.Rate, l.Dir[1]})
	}
	sort.SliceStable(dirs, func(i, j int) bool { return dirs[i].st.Busy > dirs[j].st.Busy })
	var rows [][]string
	for _, d := range dirs {
		if len(rows) == n || d.st.Busy == 0 || r.End == 0 {
			break
		}
		var drops uint64
		for _, v := range d.st.Drops {
			drops += v
		}
		rows = append(rows, []string{d.from, d.to, lab.FormatRate(d.rate),
			fmt.Sprintf("%.1f%%", 100*float64(d.st.Busy)/float64(r.End)),
			strconv.FormatUint(d.st.DataFrames, 10), strconv.FormatUint(drops, 10)})
	}
	return rows
}

// refName names a link end "node:port" using the switch port names.
func refName(spec *lab.Spec, r *sim.Results, p sim.PortRef) string {
	if n := spec.Node(p.Node); n != nil && p.Port < len(n.Ports) {
		return n.Ports[p.Port].String()
	}
	if pr := r.Port(p.Node, p.Port); pr != nil {
		return p.Node + ":" + pr.Name
	}
	if r.Host(p.Node) != nil {
		return p.Node
	}
	return p.Node + ":" + strconv.Itoa(p.Port)
}

// errWriter keeps the first write error so the report code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, nil
}
