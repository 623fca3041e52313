package nicd

import (
	"bufio"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/emufabric/emufabric/rt"
)

// serveMetrics serves Prometheus' text exposition format on addr at
// /metrics: emu_nic_* metrics with the labels lab, node, port and, for
// per-priority counters, priority (the emuswitch conventions).
func (d *Daemon) serveMetrics(addr, nsPath string) error {
	ln, err := rt.ListenTCP(nsPath, addr)
	if err != nil {
		return fmt.Errorf("--metrics %s: %w", addr, err)
	}
	d.metricsAddr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", d.handleMetrics)
	d.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go d.metrics.Serve(ln)
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
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	bw := bufio.NewWriter(w)
	WriteMetrics(bw, d.cfg.Lab, d.cfg.NIC.Name, d.cfg.Port, resp)
	// N: the NIC's clock runs N times slower than the wall clock (the lab
	// file's time_dilation); its rates and times are in that clock.
	fmt.Fprintf(bw, "# HELP emu_nic_time_dilation N: the NIC's clock runs N times slower than the wall clock (the lab file's time_dilation).\n# TYPE emu_nic_time_dilation gauge\nemu_nic_time_dilation{lab=%q,node=%q,port=%q} %d\n",
		d.cfg.Lab, d.cfg.NIC.Name, d.cfg.Port, d.clk.Dilation())
	bw.Flush()
}

// WriteMetrics writes a counters response as Prometheus text: ethtool
// counters rx_prioN_x / tx_prioN_x become emu_nic_rx_prio_x /
// emu_nic_tx_prio_x{priority="N"}, other ethtool counters emu_nic_<name>,
// RDMA hw_counters emu_nic_rdma_<name>, transport counters
// emu_nic_transport_<name>. Every counter is a counter (monotonic).
func WriteMetrics(w *bufio.Writer, lab, node, port string, c *Response) {
	base := fmt.Sprintf(`lab=%q,node=%q,port=%q`, lab, node, port)
	type sample struct{ labels, value string }
	series := map[string][]sample{}
	help := map[string]string{}
	if len(c.Ports) > 0 {
		for k, v := range c.Ports[0].Counters {
			name, prio, ok := splitPrio(k)
			if ok {
				series["emu_nic_"+name] = append(series["emu_nic_"+name], sample{fmt.Sprintf(`%s,priority="%d"`, base, prio), fmt.Sprint(v)})
				help["emu_nic_"+name] = "The NIC's ethtool -S counter " + strings.Replace(name, "_prio_", "_prio<N>_", 1) + ", one series per priority."
				continue
			}
			series["emu_nic_"+k] = append(series["emu_nic_"+k], sample{base, fmt.Sprint(v)})
			help["emu_nic_"+k] = "The NIC's ethtool -S counter " + k + "."
		}
	}
	for k, v := range c.HWCounters {
		series["emu_nic_rdma_"+k] = append(series["emu_nic_rdma_"+k], sample{base, fmt.Sprint(v)})
		help["emu_nic_rdma_"+k] = "The RDMA hw_counter " + k + " (rdma statistic)."
	}
	for k, v := range c.Transport {
		series["emu_nic_transport_"+k] = append(series["emu_nic_transport_"+k], sample{base, fmt.Sprint(v)})
		help["emu_nic_transport_"+k] = "The emunic's transport counter " + k + " (its link's socket or rings, its TAP)."
	}
	names := make([]string, 0, len(series))
	for n := range series {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", n, help[n], n)
		ss := series[n]
		sort.Slice(ss, func(i, j int) bool { return ss[i].labels < ss[j].labels })
		for _, s := range ss {
			fmt.Fprintf(w, "%s{%s} %s\n", n, s.labels, s.value)
		}
	}
}

// splitPrio turns rx_prio3_pause into (rx_prio_pause, 3).
func splitPrio(k string) (string, int, bool) {
	for _, dir := range []string{"rx_prio", "tx_prio"} {
		rest, ok := strings.CutPrefix(k, dir)
		if !ok || len(rest) < 2 || rest[0] < '0' || rest[0] > '7' || rest[1] != '_' {
			continue
		}
		return dir + rest[1:], int(rest[0] - '0'), true
	}
	return "", 0, false
}
