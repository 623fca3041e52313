package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/switchcore"
)

// maxChartLines bounds the series one chart shows; the rest are named in
// the chart's note and are all in the CSV files.
const maxChartLines = 10

// WriteFiles writes the CSV time series, summary CSVs and SVG charts of a
// run into dir (created if needed) and returns the paths written. Files of
// these names that this run does not write (rdma_qps.csv of an earlier
// RDMA run) are removed; other files in dir are left alone.
//
//	flows.csv          one row per flow: bytes, throughput, FCT (IB: and FECN, BECN, CCTI)
//	rdma_qps.csv       one row per QP of the RDMA flows: throughput, FCT, CNPs, retransmissions
//	nic_counters.csv   one row per NIC and counter (hw_counters, per-priority ethtool)
//	ports.csv          one row per switch port and priority: every counter (IB: per data VL, credits and FECN)
//	queues.csv         time series: queue bytes, paused, xoff per port/priority (IB: per VL, credits)
//	flow_rates.csv     time series: received Gb/s per flow
//	host_pause.csv     time series: paused state per host/priority
//	queues.svg         queue depth over time (the deepest queues)
//	throughput.svg     per-flow throughput over time
//	pause.svg          when each queue was paused by PFC or asserted XOFF (IB: short of credit)
func WriteFiles(dir string, spec *lab.Spec, r *sim.Results) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	put := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		written = append(written, p)
		return nil
	}
	files := []fileOut{
		{"flows.csv", func(r *sim.Results) ([]byte, error) { return flowsCSV(spec, r) }},
		{"ports.csv", func(r *sim.Results) ([]byte, error) { return portsCSV(spec, r) }},
	}
	ib := spec.Fabric == lab.FabricIB
	if len(r.RDMA) > 0 {
		files = append(files, []fileOut{
			{"rdma_qps.csv", rdmaQPsCSV},
			{"nic_counters.csv", nicCountersCSV},
		}...)
	}
	if r.Series != nil && len(r.Series.Times) > 0 {
		files = append(files, []fileOut{
			{"queues.csv", func(r *sim.Results) ([]byte, error) { return queuesCSV(r, ib) }},
			{"flow_rates.csv", flowRatesCSV},
			{"host_pause.csv", hostPauseCSV},
			{"queues.svg", func(r *sim.Results) ([]byte, error) { return queuesSVG(r, ib) }},
			{"throughput.svg", throughputSVG},
			{"pause.svg", func(r *sim.Results) ([]byte, error) { return pauseSVG(r, ib) }},
		}...)
	}
	for _, f := range files {
		data, err := f.fn(r)
		if err != nil {
			return written, fmt.Errorf("%s: %w", f.name, err)
		}
		if err := put(f.name, data); err != nil {
			return written, err
		}
	}
	// A directory reused from another run (an RDMA lab's, one with a time
	// series) would keep that run's files beside this one's, which a reader
	// of the directory takes for this run's: remove those of our names this
	// run does not write, and nothing else.
	for _, name := range outputNames {
		if !slices.ContainsFunc(files, func(f fileOut) bool { return f.name == name }) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return written, err
			}
		}
	}
	return written, nil
}

// outputNames are every file WriteFiles may write.
var outputNames = []string{"flows.csv", "ports.csv", "rdma_qps.csv", "nic_counters.csv",
	"queues.csv", "flow_rates.csv", "host_pause.csv", "queues.svg", "throughput.svg", "pause.svg"}

type fileOut struct {
	name string
	fn   func(*sim.Results) ([]byte, error)
}

func writeCSV(rows [][]string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(rows); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }
func us(t clock.Time) string {
	return strconv.FormatFloat(float64(t)/float64(clock.Microsecond), 'f', -1, 64)
}
func ff(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }

// usSet is us for a time that is 0 until it happens (an FCT): empty
// until then, so a CSV reader does not take 0 for a measurement.
func usSet(t clock.Time) string {
	if t == 0 {
		return ""
	}
	return us(t)
}

// msgFCTs are the msg_fct_mean/p50/p99/max_us cells: empty without a
// completed message.
func msgFCTs(m sim.FCTStats) []string {
	if m.Count == 0 {
		return []string{"", "", "", ""}
	}
	return []string{us(m.Mean), us(m.P50), us(m.P99), us(m.Max)}
}

func flowsCSV(spec *lab.Spec, r *sim.Results) ([]byte, error) {
	head := []string{"flow", "src", "dst", "priority", "messages_sent", "messages_done", "tx_frames", "tx_bytes", "rx_frames", "rx_bytes",
		"psn_gaps", "start_us", "first_rx_us", "last_rx_us", "fct_us", "throughput_gbps", "goodput_gbps", "msg_fct_mean_us", "msg_fct_p50_us", "msg_fct_p99_us", "msg_fct_max_us"}
	ib := spec.Fabric == lab.FabricIB
	if ib {
		// The summary's "IB congestion control per flow" table. The CCT
		// columns are empty for a flow whose source has no reaction point.
		head = append(head, "fecn_rx", "becn_rx", "ccti_end", "ccti_max", "cc_delay_end_us")
	}
	rows := [][]string{head}
	for _, f := range r.Flows {
		dst := ""
		for i, d := range f.Dst {
			if i > 0 {
				dst += " "
			}
			dst += d
		}
		// Times that do not exist yet are empty, not 0: no packet
		// received, the flow not finished, no message completed.
		firstRx, lastRx := "", ""
		if f.RxFrames > 0 {
			firstRx, lastRx = us(f.FirstRx), us(f.LastRx)
		}
		row := []string{f.Name, f.Src, dst, strconv.Itoa(f.Priority), strconv.Itoa(f.MessagesSent), strconv.Itoa(f.MessagesDone),
			u(f.TxFrames), u(f.TxBytes), u(f.RxFrames), u(f.RxBytes), u(f.PSNGaps),
			us(f.Start), firstRx, lastRx, usSet(f.FCT), ff(f.Throughput / 1e9), ff(f.Goodput / 1e9)}
		row = append(row, msgFCTs(f.Msg)...)
		if ib {
			c := f.IBCC
			switch {
			case c == nil:
				row = append(row, "0", "0", "", "", "")
			case !c.Reacting:
				row = append(row, u(c.FECNRx), u(c.BECNRx), "", "", "")
			default:
				row = append(row, u(c.FECNRx), u(c.BECNRx), strconv.Itoa(int(c.CCTI)), strconv.Itoa(int(c.MaxCCTI)), us(c.Delay))
			}
		}
		rows = append(rows, row)
	}
	return writeCSV(rows)
}

func portsCSV(spec *lab.Spec, r *sim.Results) ([]byte, error) {
	if spec.Fabric == lab.FabricIB {
		return ibPortsCSV(spec, r)
	}
	head := []string{"switch", "port", "port_name", "peer", "priority", "rx_packets", "rx_bytes", "tx_packets", "tx_bytes",
		"rx_pause", "tx_pause", "rx_pause_duration_us", "tx_pause_duration_us", "ecn_marked",
		"pg_shared_watermark", "pg_headroom_watermark", "queue_watermark", "pg_headroom_overflow",
		"pfcwd_storm_detected", "pfcwd_storm_restored", "pfcwd_tx_drop", "pfcwd_rx_drop", "port_xmit_wait_us", "credit_stalls"}
	head = append(head, dropHeads()...)
	rows := [][]string{head}
	for _, p := range r.Ports {
		for prio := 0; prio < switchcore.NumPriorities; prio++ {
			c := &p.Prio[prio]
			row := []string{p.Switch, strconv.Itoa(p.Port), p.Name, peerName(spec, &p), strconv.Itoa(prio),
				u(c.RxPackets), u(c.RxBytes), u(c.TxPackets), u(c.TxBytes), u(c.RxPause), u(c.TxPause),
				us(clock.Time(c.RxPauseDurationPs)), us(clock.Time(c.TxPauseDurationPs)), u(c.ECNMarked),
				strconv.Itoa(c.PGSharedWatermark), strconv.Itoa(c.PGHeadroomWatermark), strconv.Itoa(c.QueueWatermark), u(c.HeadroomOverflow),
				u(c.PFCWDStormDetected), u(c.PFCWDStormRestored), u(c.PFCWDTxDrop), u(c.PFCWDRxDrop),
				us(clock.Time(c.XmitWaitPs)), u(c.CreditStalls)}
			rows = append(rows, append(row, dropCells(c)...))
		}
	}
	return writeCSV(rows)
}

// ibPortsCSV is ports.csv of an IB lab: the summary's "Switch ports per
// VL" columns, one row per data VL of the switch. An IB link has no PFC,
// ECN, priority groups or PFC watchdog, so those columns are left out;
// congestion marks are FECN (fecn_marked), and fc_tx / fc_rx count the
// flow-control packets that carry the credits.
func ibPortsCSV(spec *lab.Spec, r *sim.Results) ([]byte, error) {
	head := []string{"switch", "port", "port_name", "peer", "vl", "rx_packets", "rx_bytes", "tx_packets", "tx_bytes",
		"credit_stalls", "port_xmit_wait_us", "fc_tx", "fc_rx", "fecn_marked", "queue_watermark"}
	head = append(head, dropHeads()...)
	rows := [][]string{head}
	for _, p := range r.Ports {
		vls := switchcore.NumPriorities
		if n := spec.Node(p.Switch); n != nil {
			if c := spec.IBConfigOf(n); c != nil && c.MaxVLs > 0 {
				vls = min(c.MaxVLs, vls)
			}
		}
		for vl := 0; vl < vls; vl++ {
			c := &p.Prio[vl]
			row := []string{p.Switch, strconv.Itoa(p.Port), p.Name, peerName(spec, &p), strconv.Itoa(vl),
				u(c.RxPackets), u(c.RxBytes), u(c.TxPackets), u(c.TxBytes),
				u(c.CreditStalls), us(clock.Time(c.XmitWaitPs)), u(c.FCTx), u(c.FCRx), u(c.FECNMarked),
				strconv.Itoa(c.QueueWatermark)}
			rows = append(rows, append(row, dropCells(c)...))
		}
	}
	return writeCSV(rows)
}

// dropHeads and dropCells are the drop_<reason> columns of ports.csv
// (headroom_overflow is not a drop: RoCE has it as pg_headroom_overflow).
func dropHeads() []string {
	var out []string
	for k := 1; k < int(switchcore.NumDropReasons); k++ {
		if switchcore.DropReason(k) != switchcore.DropHeadroomOverflow {
			out = append(out, "drop_"+switchcore.DropReason(k).String())
		}
	}
	return out
}

func dropCells(c *switchcore.PrioCounters) []string {
	var out []string
	for k := 1; k < int(switchcore.NumDropReasons); k++ {
		if switchcore.DropReason(k) != switchcore.DropHeadroomOverflow {
			out = append(out, u(c.Drops[k]))
		}
	}
	return out
}

// queuesCSV is the queue time series. An IB lab's has a vl column and the
// VL's credits (64-byte blocks it may still send) and credit starvation
// instead of PFC's paused and xoff, which an IB link never has.
func queuesCSV(r *sim.Results, ib bool) ([]byte, error) {
	rows := [][]string{{"time_us", "switch", "port", "port_name", "priority", "queue_bytes", "paused", "xoff"}}
	if ib {
		rows = [][]string{{"time_us", "switch", "port", "port_name", "vl", "queue_bytes", "credits", "credit_starved"}}
	}
	for _, q := range r.Series.Queues {
		name := portName(r, q.Switch, q.Port)
		for i, t := range r.Series.Times {
			row := []string{us(t), q.Switch, strconv.Itoa(q.Port), name, strconv.Itoa(q.Prio), strconv.Itoa(at(q.Bytes, i))}
			if ib {
				row = append(row, strconv.Itoa(at(q.Credits, i)), b01(atB(q.Starved, i)))
			} else {
				row = append(row, b01(atB(q.Paused, i)), b01(atB(q.Xoff, i)))
			}
			rows = append(rows, row)
		}
	}
	return writeCSV(rows)
}

func flowRatesCSV(r *sim.Results) ([]byte, error) {
	rows := [][]string{{"time_us", "flow", "gbps"}}
	for _, f := range r.Series.Flows {
		for i, t := range r.Series.Times {
			v := 0.0
			if i < len(f.Bps) {
				v = f.Bps[i]
			}
			rows = append(rows, []string{us(t), f.Flow, ff(v / 1e9)})
		}
	}
	return writeCSV(rows)
}

func hostPauseCSV(r *sim.Results) ([]byte, error) {
	rows := [][]string{{"time_us", "host", "priority", "paused"}}
	for _, h := range r.Series.Hosts {
		for i, t := range r.Series.Times {
			rows = append(rows, []string{us(t), h.Host, strconv.Itoa(h.Prio), b01(atB(h.Paused, i))})
		}
	}
	return writeCSV(rows)
}

func at(v []int, i int) int {
	if i < len(v) {
		return v[i]
	}
	return 0
}

func atB(v []bool, i int) bool { return i < len(v) && v[i] }

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func portName(r *sim.Results, sw string, port int) string {
	if p := r.Port(sw, port); p != nil {
		return p.Name
	}
	return strconv.Itoa(port)
}

func timesUS(r *sim.Results) []float64 {
	x := make([]float64, len(r.Series.Times))
	for i, t := range r.Series.Times {
		x[i] = float64(t) / float64(clock.Microsecond)
	}
	return x
}

func queuesSVG(r *sim.Results, ib bool) ([]byte, error) {
	class := "prio"
	if ib {
		class = "VL"
	}
	x := timesUS(r)
	type cand struct {
		line Line
		peak int
	}
	var cs []cand
	for _, q := range r.Series.Queues {
		peak := 0
		y := make([]float64, len(x))
		for i := range x {
			v := at(q.Bytes, i)
			peak = max(peak, v)
			y[i] = float64(v) / 1024
		}
		if peak > 0 {
			cs = append(cs, cand{Line{Name: fmt.Sprintf("%s:%s %s %d", q.Switch, portName(r, q.Switch, q.Port), class, q.Prio), X: x, Y: y}, peak})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].peak > cs[j].peak })
	c := &Chart{Title: "Egress queue depth", XLabel: "time (µs)", YLabel: "queue (KiB)", Step: true}
	for i, cd := range cs {
		if i == maxChartLines {
			c.Note = fmt.Sprintf("the %d deepest of %d non-empty queues; all are in queues.csv", maxChartLines, len(cs))
			break
		}
		c.Lines = append(c.Lines, cd.line)
	}
	if len(cs) == 0 {
		c.Note = "no queue held bytes at any sample"
	}
	var b bytes.Buffer
	err := c.WriteSVG(&b)
	return b.Bytes(), err
}

func throughputSVG(r *sim.Results) ([]byte, error) {
	x := timesUS(r)
	type cand struct {
		line  Line
		total float64
	}
	// Samples a few packets long are all-or-nothing; a moving average over
	// about 2% of the run shows the rate. flow_rates.csv keeps the raw samples.
	win := max(1, len(x)/50)
	var cs []cand
	for _, f := range r.Series.Flows {
		raw := make([]float64, len(x))
		total := 0.0
		for i := range x {
			if i < len(f.Bps) {
				raw[i] = f.Bps[i] / 1e9
				total += f.Bps[i]
			}
		}
		cs = append(cs, cand{Line{Name: f.Flow, X: x, Y: movingAverage(raw, win)}, total})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].total > cs[j].total })
	c := &Chart{Title: "Per-flow throughput (received)", XLabel: "time (µs)", YLabel: "Gb/s", Step: win == 1}
	if win > 1 {
		c.Note = fmt.Sprintf("moving average over %d samples (%v)", win, r.Series.Interval*clock.Time(win))
	}
	for i, cd := range cs {
		if i == maxChartLines {
			c.Note += fmt.Sprintf("; the %d busiest of %d flows, all are in flow_rates.csv", maxChartLines, len(cs))
			break
		}
		c.Lines = append(c.Lines, cd.line)
	}
	var b bytes.Buffer
	err := c.WriteSVG(&b)
	return b.Bytes(), err
}

// pauseSVG draws, per queue that was ever paused (egress paused by received
// PFC) or asserting XOFF, and per host priority ever paused, when it was.
// An IB link never pauses: for an IB lab it draws when each switch VL was
// short of credit with bytes queued.
func pauseSVG(r *sim.Results, ib bool) ([]byte, error) {
	x := timesUS(r)
	interval := float64(r.Series.Interval) / float64(clock.Microsecond)
	spans := func(v []bool) []Interval {
		var out []Interval
		for i := 0; i < len(x); i++ {
			if !atB(v, i) {
				continue
			}
			j := i
			for j+1 < len(x) && atB(v, j+1) {
				j++
			}
			out = append(out, Interval{From: x[i], To: x[j] + interval})
			i = j
		}
		return out
	}
	t := &Timeline{Title: "PFC pause state (sampled)", XLabel: "time (µs)", XMin: 0, XMax: float64(r.End) / float64(clock.Microsecond)}
	const maxRows = 40
	var rows []Row
	if ib {
		t.Title = "IB VLs short of credit (sampled)"
		t.Note = "on: bytes queued and fewer credits than one full-size packet"
		for _, q := range r.Series.Queues {
			if s := spans(q.Starved); len(s) > 0 {
				rows = append(rows, Row{Name: fmt.Sprintf("%s:%s VL %d", q.Switch, portName(r, q.Switch, q.Port), q.Prio), On: s})
			}
		}
		if len(rows) > maxRows {
			t.Note += fmt.Sprintf("; %d of %d rows, all are in queues.csv (credit_starved)", maxRows, len(rows))
			rows = rows[:maxRows]
		}
		if len(rows) == 0 {
			t.Note = "no VL was short of credit at any sample"
		}
		t.Rows = rows
		var b bytes.Buffer
		err := t.WriteSVG(&b)
		return b.Bytes(), err
	}
	for _, q := range r.Series.Queues {
		name := fmt.Sprintf("%s:%s p%d", q.Switch, portName(r, q.Switch, q.Port), q.Prio)
		if s := spans(q.Paused); len(s) > 0 {
			rows = append(rows, Row{Name: name + " paused", On: s})
		}
		if s := spans(q.Xoff); len(s) > 0 {
			rows = append(rows, Row{Name: name + " XOFF", On: s})
		}
	}
	for _, h := range r.Series.Hosts {
		if s := spans(h.Paused); len(s) > 0 {
			rows = append(rows, Row{Name: fmt.Sprintf("%s p%d paused", h.Host, h.Prio), On: s})
		}
	}
	if len(rows) > maxRows {
		t.Note = fmt.Sprintf("%d of %d rows; all are in queues.csv and host_pause.csv", maxRows, len(rows))
		rows = rows[:maxRows]
	}
	if len(rows) == 0 {
		t.Note = "nothing was paused at any sample"
	}
	t.Rows = rows
	var b bytes.Buffer
	err := t.WriteSVG(&b)
	return b.Bytes(), err
}

// peerName names the far end of a switch port as the lab file does
// ("h1:eth0"), falling back to the simulator's name.
func peerName(spec *lab.Spec, p *sim.PortResult) string {
	if n := spec.Node(p.Switch); n != nil && p.Port < len(n.Ports) && n.Ports[p.Port].Peer != nil {
		return n.Ports[p.Port].Peer.String()
	}
	return p.Peer
}

// movingAverage returns the trailing mean of the last win values at each
// point (summed afresh: no drift below zero from running subtraction).
func movingAverage(v []float64, win int) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		lo := max(0, i-win+1)
		sum := 0.0
		for _, x := range v[lo : i+1] {
			sum += x
		}
		out[i] = sum / float64(i+1-lo)
	}
	return out
}
