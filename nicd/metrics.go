package nicd

import (
	"bufio"
	"fmt"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/emufabric/emufabric/internal/metricsrv"
	"github.com/emufabric/emufabric/rt"
)

// Prometheus metrics of the NIC, in the text exposition format, named as
// emuswitch names its own (swd/metrics.go) and the project's conventions
// ask: the emu_ prefix, base units (seconds, bytes), counters ending in
// _total, the priority as a label. Where the switch has the same counter
// the NIC uses the switch's family, so one query covers both ends of a
// link (emu_pfc_pause_frames_received_total{priority="3"} is a PFC frame
// received by either). The NIC's other ethtool counters follow
// node_exporter's ethtool collector (rx and tx spelled out as received and
// transmitted) under emu_nic_, its RDMA hw_counters node_exporter's
// infiniband collector under emu_nic_rdma_, and its transport's counters
// emu_nic_transport_.

// serveMetrics serves /metrics on addr.
func (d *Daemon) serveMetrics(addr, nsPath string) error {
	ln, err := rt.ListenTCP(nsPath, addr)
	if err != nil {
		return fmt.Errorf("--metrics %s: %w", addr, err)
	}
	d.metricsAddr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", d.handleMetrics)
	d.metrics = metricsrv.Server(mux)
	go d.metrics.Serve(metricsrv.Limit(ln, metricsrv.MaxConns))
	return nil
}

// MetricsAddr is the address the metrics endpoint listens on ("" none).
func (d *Daemon) MetricsAddr() string { return d.metricsAddr }

func (d *Daemon) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	resp, err := d.opCounters()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	state, _ := d.LinkState()
	up := state == LinkUp && !d.peerDownFlag.Load()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	WriteMetrics(bw, MetricsInfo{
		Lab: d.cfg.Lab, Node: d.cfg.NIC.Name, Port: d.cfg.Port,
		Up: up, Uptime: d.uptime(), Dilation: d.clk.Dilation(), Lag: d.clk.Lag(),
	}, resp)
	bw.Flush()
}

// MetricsInfo is what WriteMetrics says besides the counters.
type MetricsInfo struct {
	Lab, Node, Port string
	Up              bool // the port's link is up (emu_port_up)
	Uptime          time.Duration
	Dilation        int
	Lag             rt.Lag // how late the daemon's loop ran (emu_loop_*)
}

// loopCounters are the loop's lag as the counters carry it (loopLag),
// exported once in rt.Lag's families instead: a maximum in nanoseconds
// is not a counter, and the lag is the daemon's, not its port's.
var loopCounters = map[string]bool{"loop_lag_max_ns": true, "loop_late": true, "loop_lag_dropped": true}

// backlogCounters are the transmit hold's (gate.go), which the response
// carries twice, among the port's ethtool counters and the transport's:
// exported once, from the port's. link_tx_backlog_max is the most bytes
// the switch had not read yet, a high-water mark as the switch's
// emu_queue_watermark_bytes, so a gauge in bytes, not a counter.
var backlogCounters = map[string]bool{"link_tx_backlog_max": true, "link_tx_backlog_holds": true}

// backlogMax is link_tx_backlog_max's family.
const backlogMax = "emu_nic_link_transmitted_backlog_max_bytes"

// metricName is the family a counter goes to: its name, help, and the
// factor that turns the counter into the family's unit.
type metricName struct {
	name, help string
	scale      float64 // 0: 1
}

// Counters the switch exports too: the switch's family names.
var portMetrics = map[string]metricName{
	"rx_packets_phy":       {"emu_port_received_packets_total", "Frames received by the NIC's port, control frames included (rx_packets_phy).", 0},
	"rx_bytes_phy":         {"emu_port_received_bytes_total", "Bytes received by the NIC's port (rx_bytes_phy).", 0},
	"tx_packets_phy":       {"emu_port_transmitted_packets_total", "Frames transmitted by the NIC's port (tx_packets_phy).", 0},
	"tx_bytes_phy":         {"emu_port_transmitted_bytes_total", "Bytes transmitted by the NIC's port (tx_bytes_phy).", 0},
	"link_down_events_phy": {"emu_port_link_down_events_total", "Times the port's link went down after it had come up (link_down_events_phy).", 0},
	"rx_pause_ctrl_phy":    {"emu_pause_frames_received_total", "MAC Control frames (PFC and PAUSE) received (rx_pause_ctrl_phy).", 0},
	"tx_pause_ctrl_phy":    {"emu_pause_frames_transmitted_total", "PFC frames transmitted (tx_pause_ctrl_phy).", 0},
	"capture_drop":         {"emu_capture_dropped_records_total", "Capture records a slow capture client lost.", 0},
}

// Per-priority counters the switch exports too, by the name's part after
// rx_prioN_ / tx_prioN_.
var prioMetrics = map[string]metricName{
	"rx_packets":        {"emu_priority_received_packets_total", "Frames received, by priority (rx_prioN_packets).", 0},
	"rx_bytes":          {"emu_priority_received_bytes_total", "Bytes received, by priority (rx_prioN_bytes).", 0},
	"tx_packets":        {"emu_priority_transmitted_packets_total", "Frames transmitted, by priority (tx_prioN_packets).", 0},
	"tx_bytes":          {"emu_priority_transmitted_bytes_total", "Bytes transmitted, by priority (tx_prioN_bytes).", 0},
	"rx_pause":          {"emu_pfc_pause_frames_received_total", "PFC frames received pausing this priority (rx_prioN_pause).", 0},
	"tx_pause":          {"emu_pfc_pause_frames_transmitted_total", "PFC XOFF frames sent for this priority (tx_prioN_pause).", 0},
	"rx_pause_duration": {"emu_pfc_pause_received_seconds_total", "Time this priority's transmitter was paused by received PFC (rx_prioN_pause_duration).", 1e-6},
	"tx_pause_duration": {"emu_pfc_pause_transmitted_seconds_total", "Time the NIC asserted XOFF for this priority (tx_prioN_pause_duration).", 1e-6},
}

// RDMA hw_counters with a name in the project's conventions.
var hwMetrics = map[string]metricName{
	"np_cnp_sent":     {"emu_cnp_sent_total", "CNPs the NIC sent as a notification point (np_cnp_sent).", 0},
	"rp_cnp_handled":  {"emu_cnp_handled_total", "CNPs that made the NIC's reaction point cut a rate (rp_cnp_handled).", 0},
	"out_of_sequence": {"emu_psn_out_of_sequence_total", "Packets the responder received out of PSN sequence (out_of_sequence).", 0},
	// Named as mlx5's counter, counting something else (nic/counters.go).
	"roce_adp_retrans": {"emu_nic_rdma_roce_adp_retrans_total", "Packets the requester sent again, every go-back-N/go-back-0 resend (roce_adp_retrans; mlx5's counts adaptive-retransmission events, not resent packets).", 0},
}

// WriteMetrics writes a counters response as Prometheus text.
func WriteMetrics(w *bufio.Writer, info MetricsInfo, c *Response) {
	base := fmt.Sprintf(`lab=%q,node=%q`, info.Lab, info.Node)
	pl := fmt.Sprintf(`%s,port=%q`, base, info.Port)
	type sample struct {
		labels string
		value  float64
	}
	type fam struct {
		help, typ string
		samples   []sample
	}
	fams := map[string]*fam{}
	add := func(name, typ, help, labels string, v float64) {
		f := fams[name]
		if f == nil {
			f = &fam{help: help, typ: typ}
			fams[name] = f
		}
		f.samples = append(f.samples, sample{labels, v})
	}
	ctr := func(m metricName, labels string, v uint64) {
		x := float64(v)
		if m.scale != 0 {
			x *= m.scale
		}
		add(m.name, "counter", m.help, labels, x)
	}
	add("emu_build_info", "gauge", "Build information of the emulator daemon (value 1).",
		fmt.Sprintf(`%s,daemon="emunic",goversion=%q`, base, runtime.Version()), 1)
	add("emu_uptime_seconds", "gauge", "Seconds since the daemon started.", base, info.Uptime.Seconds())
	add("emu_time_dilation", "gauge", "N: the daemon's clock runs N times slower than the wall clock (the lab file's time_dilation; 1 is real time); its rates and times are in that clock.", base, float64(info.Dilation))
	info.Lag.Metrics(func(name, typ, help string, v float64) { add(name, typ, help, base, v) })
	up := 0.0
	if info.Up {
		up = 1
	}
	add("emu_port_up", "gauge", "1 when the port's link is up: the NIC's link connected and set up, and the far end not set down.", pl, up)
	if len(c.Ports) > 0 {
		for k, v := range c.Ports[0].Counters {
			if loopCounters[k] {
				continue
			}
			if k == "link_tx_backlog_max" {
				add(backlogMax, "gauge", "The most bytes the NIC had written toward its switch that the switch had not read yet (link_tx_backlog_max); the NIC holds its transmitter at 2 ms of the link.", pl, float64(v))
				continue
			}
			if m, ok := portMetrics[k]; ok {
				ctr(m, pl, v)
				continue
			}
			if rest, vl, ok := splitVL(k); ok {
				if m, ok := vlMetrics[rest]; ok {
					ctr(m, pl+`,vl="`+strconv.Itoa(vl)+`"`, v)
					continue
				}
			}
			if rest, prio, ok := splitPrio(k); ok {
				ql := pl + `,priority="` + strconv.Itoa(prio) + `"`
				if m, ok := prioMetrics[rest]; ok {
					ctr(m, ql, v)
				} else {
					ctr(ethtoolMetric(rest, strings.Replace(rest, "_", "_prio<N>_", 1)+", by priority"), ql, v)
				}
				continue
			}
			ctr(ethtoolMetric(k, k), pl, v)
		}
	}
	for k, v := range c.HWCounters {
		m, ok := hwMetrics[k]
		if !ok {
			m = metricName{"emu_nic_rdma_" + promWords(strings.TrimPrefix(k, "rdma_")) + "_total", "The RDMA hw_counter " + k + " (rdma statistic).", 0}
		}
		ctr(m, pl, v)
	}
	for k, v := range c.Transport {
		if loopCounters[k] || backlogCounters[k] {
			continue
		}
		ctr(metricName{"emu_nic_transport_" + promWords(k) + "_total", "The emunic's transport counter " + k + " (its link's socket or rings, its TAP).", 0}, pl, v)
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := fams[n]
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", n, f.help, n, f.typ)
		sort.Slice(f.samples, func(i, j int) bool { return f.samples[i].labels < f.samples[j].labels })
		for _, s := range f.samples {
			fmt.Fprintf(w, "%s{%s} %s\n", n, s.labels, strconv.FormatFloat(s.value, 'g', -1, 64))
		}
	}
}

// ethtoolMetric names an ethtool counter without a family of its own, as
// node_exporter's ethtool collector does (rx_ and tx_ as whole words), as
// a counter: a _duration in microseconds becomes _seconds.
func ethtoolMetric(key, shown string) metricName {
	if stem, ok := strings.CutSuffix(key, "_duration"); ok {
		return metricName{"emu_nic_" + promWords(stem) + "_seconds_total", "The NIC's ethtool -S counter " + shown + " (microseconds there), in seconds.", 1e-6}
	}
	return metricName{"emu_nic_" + promWords(key) + "_total", "The NIC's ethtool -S counter " + shown + ".", 0}
}

// promWords spells out rx and tx as node_exporter does: rx_ring_sleeps =>
// received_ring_sleeps.
func promWords(k string) string {
	parts := strings.Split(k, "_")
	for i, p := range parts {
		switch p {
		case "rx":
			parts[i] = "received"
		case "tx":
			parts[i] = "transmitted"
		}
	}
	return strings.Join(parts, "_")
}

// Per-VL counters of an IB port (vlN_rx_packets ...), in the families the
// IB switch exports them in, with a vl label.
var vlMetrics = map[string]metricName{
	"rx_packets": {"emu_vl_received_packets_total", "Data packets received on the VL.", 0},
	"rx_bytes":   {"emu_vl_received_bytes_total", "Bytes of data packets received on the VL (LRH through VCRC).", 0},
	"tx_packets": {"emu_vl_transmitted_packets_total", "Data packets transmitted on the VL.", 0},
	"tx_bytes":   {"emu_vl_transmitted_bytes_total", "Bytes of data packets transmitted on the VL (LRH through VCRC).", 0},
}

// splitVL turns vl1_rx_packets into (rx_packets, 1).
func splitVL(k string) (string, int, bool) {
	rest, ok := strings.CutPrefix(k, "vl")
	if !ok || len(rest) < 2 || rest[0] < '0' || rest[0] > '7' || rest[1] != '_' {
		return "", 0, false
	}
	return rest[2:], int(rest[0] - '0'), true
}

// splitPrio turns rx_prio3_pause into (rx_pause, 3).
func splitPrio(k string) (string, int, bool) {
	for _, dir := range []string{"rx_prio", "tx_prio"} {
		rest, ok := strings.CutPrefix(k, dir)
		if !ok || len(rest) < 2 || rest[0] < '0' || rest[0] > '7' || rest[1] != '_' {
			continue
		}
		return dir[:3] + rest[2:], int(rest[0] - '0'), true
	}
	return "", 0, false
}
