package swd

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/internal/metricsrv"
	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/switchcore"
)

// Prometheus metrics in the text exposition format (version 0.0.4),
// written by hand: the daemon exports a fixed set of counters and gauges
// that it snapshots on its loop goroutine, which needs none of
// client_golang's registry, collectors or concurrency, and keeps the
// module's dependencies as they are.
//
// Naming follows the project conventions: the emu_ prefix, base units
// (seconds, bytes), counters ending in _total, and labels lab, node, port
// and priority instead of names with the priority baked in
// (rx_prio3_pause => emu_pfc_pause_frames_received_total{priority="3"}).
//
// An IB switch has no PFC, ECN, priority groups or flooding: instead of
// those families it exports per data VL, with a vl label, what IB's
// port counters and credits show (emu_vl_*, port_xmit_wait as
// emu_port_transmit_wait_seconds_total) and its SMA's SMP counts. Its
// emu_port_*_packets_total count the wire's packets, link packets
// included, as RoCE's and emunic's do: not IBA's PortCounters, which
// exclude them (ibMetrics says where they are).

// metricsContentType is the text exposition format's media type.
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

type family struct {
	name, help, typ string
	samples         []sample
}

type sample struct {
	labels string // rendered {…}
	value  float64
}

// metricsText renders every metric; loop goroutine.
func (d *Daemon) metricsText() []byte {
	var fams []*family
	index := map[string]*family{}
	add := func(name, typ, help, labels string, v float64) {
		f := index[name]
		if f == nil {
			f = &family{name: name, help: help, typ: typ}
			index[name] = f
			fams = append(fams, f)
		}
		f.samples = append(f.samples, sample{labels, v})
	}
	base := `lab="` + escLabel(d.spec.Name) + `",node="` + escLabel(d.opts.Node) + `"`
	add("emu_build_info", "gauge", "Build information of the emulator daemon (value 1).",
		"{"+base+`,daemon="emuswitch",goversion="`+escLabel(runtime.Version())+`"}`, 1)
	add("emu_uptime_seconds", "gauge", "Seconds since the daemon started.", "{"+base+"}", d.Uptime().Seconds())
	add("emu_time_dilation", "gauge", "N: the daemon's clock runs N times slower than the wall clock (the lab file's time_dilation; 1 is real time); its rates and times are in that clock.",
		"{"+base+"}", float64(d.clk.Dilation()))
	// How late the loop ran (rt.Lag): the daemon's, not a port's.
	d.clk.Lag().Metrics(func(name, typ, help string, v float64) { add(name, typ, help, "{"+base+"}", v) })
	for _, p := range d.ports {
		pl := base + `,port="` + escLabel(p.name) + `"`
		c := d.sw.Counters(p.idx)
		ctr := func(name, help string, v uint64) { add(name, "counter", help, "{"+pl+"}", float64(v)) }
		up := 0.0
		if p.up() {
			up = 1
		}
		add("emu_port_up", "gauge", "1 when the port's link is up: administratively up, a peer connected, and the peer's end neither set down nor silent.", "{"+pl+"}", up)
		silent := 0.0
		if p.peerSilent {
			silent = 1
		}
		add("emu_port_peer_silent", "gauge", "1 while a UDP link's peer has sent nothing, not even a keepalive, for a second: the port is down.", "{"+pl+"}", silent)
		add("emu_link_rate_bytes_per_second", "gauge", "Rate of the emulated wire behind the port.", "{"+pl+"}", float64(p.rate)/8)
		add("emu_link_delay_seconds", "gauge", "One-way propagation delay of the emulated wire.", "{"+pl+"}", seconds(p.delay))
		if d.ib {
			// The wire's packets, as on RoCE and as emunic's emu_port_*
			// count them, so that one query covers both ends of a link
			// of either fabric. IBA's PortCounters (port_xmit_packets,
			// port_rcv_packets of the control socket, perfquery's
			// PortXmitPkts) exclude link packets (16.1.3.5): the
			// difference is emu_vl_flow_control_packets_*_total.
			ctr("emu_port_received_packets_total", "Packets received by the switch port, link (flow-control) packets included (rx_packets_phy); IBA's PortRcvPkts (port_rcv_packets) excludes them: they are emu_vl_flow_control_packets_received_total.", c.RxPacketsPhy)
			ctr("emu_port_received_bytes_total", "Bytes of every packet received by the switch port, link packets and VCRC included (rx_bytes_phy).", c.RxBytesPhy)
			ctr("emu_port_transmitted_packets_total", "Packets transmitted by the switch port, link (flow-control) packets included (tx_packets_phy); IBA's PortXmitPkts (port_xmit_packets) excludes them: they are emu_vl_flow_control_packets_transmitted_total.", c.TxPacketsPhy)
			ctr("emu_port_transmitted_bytes_total", "Bytes of every packet transmitted by the switch port, link packets and VCRC included (tx_bytes_phy).", c.TxBytesPhy)
		} else {
			ctr("emu_port_received_packets_total", "Frames received by the switch port, control frames included (rx_packets_phy).", c.RxPacketsPhy)
			ctr("emu_port_received_bytes_total", "Bytes received by the switch port (rx_bytes_phy).", c.RxBytesPhy)
			ctr("emu_port_transmitted_packets_total", "Frames transmitted by the switch port (tx_packets_phy).", c.TxPacketsPhy)
			ctr("emu_port_transmitted_bytes_total", "Bytes transmitted by the switch port (tx_bytes_phy).", c.TxBytesPhy)
		}
		ctr("emu_port_link_down_events_total", "Times the port's link went down after it had come up (link_down_events_phy).", c.LinkDownEvents)
		if !d.ib {
			ctr("emu_pause_frames_received_total", "MAC Control frames (PFC and PAUSE) received (rx_pause_ctrl_phy).", c.RxPauseCtrlPhy)
			ctr("emu_pause_frames_transmitted_total", "PFC frames transmitted (tx_pause_ctrl_phy).", c.TxPauseCtrlPhy)
		}
		for r := switchcore.DropMalformed; r < switchcore.NumDropReasons; r++ {
			if r != switchcore.DropHeadroomOverflow {
				add("emu_port_dropped_packets_total", "counter", "Frames the switch dropped, by reason.",
					"{"+pl+`,reason="`+r.String()+`"}`, float64(c.Drops[r]))
			}
		}
		ctr("emu_pg_headroom_overflow_packets_total", "Lossless frames admitted beyond their priority group's headroom (not dropped: the sender reacted to XOFF later than the buffer profile allows for).", c.Drops[switchcore.DropHeadroomOverflow])
		dir := func(name, help string, tx, rx uint64) {
			add(name, "counter", help, "{"+pl+`,direction="transmit"}`, float64(tx))
			add(name, "counter", help, "{"+pl+`,direction="receive"}`, float64(rx))
		}
		dir("emu_link_lost_packets_total", "Frames lost by the emulated wire (link loss).", p.st.LinkLossTx, p.st.LinkLossRx)
		dir("emu_link_corrupted_packets_total", "Frames corrupted by the emulated wire.", p.st.LinkCorruptTx, p.st.LinkCorruptRx)
		if !d.ib {
			dir("emu_link_state_advertisements_total", "Link-state advertisements of the switches' routing sent and taken on the port (link_state_tx, link_state_rx).", c.LinkStateTx, c.LinkStateRx)
			ctr("emu_link_state_refused_total", "Link-state advertisements refused: not from a switch of the lab, or on a port to a host (link_state_refused).", c.LinkStateRefused)
			ctr("emu_link_state_mismatch_total", "Link-state advertisements from a switch whose lab file describes another fabric (topology digest differs; link_state_mismatch).", c.LinkStateMismatch)
			dir("emu_flooded_packets_total", "Broadcast and multicast frames flooded by the daemon.", p.st.FloodTx, p.st.FloodRx)
			ctr("emu_flood_blocked_packets_total", "Broadcast and multicast frames received on a port left out of flooding (--no-flood) and dropped.", p.st.FloodBlocked)
		}
		qd := p.out.Drops()
		if p.in != nil {
			qd += p.in.Drops()
		}
		ctr("emu_link_queue_dropped_packets_total", "Frames dropped because the emulated wire held too many (a wire slower than its port).", qd)
		ctr("emu_link_not_connected_dropped_packets_total", "Frames for a port whose peer was not connected.", p.st.NotConnected)
		t := p.transport()
		ctr("emu_transport_transmitted_queue_dropped_packets_total", "Frames dropped because the transport writer's queue was full.", t.TxQueueDrops)
		ctr("emu_transport_transmitted_ring_full_total", "Times the shared-memory ring toward the port's peer was full and the writer waited for the peer to read (a peer that fell behind).", t.TxFull)
		ctr("emu_transport_received_ring_sleeps_total", "Times the port's reader found its shared-memory ring empty and slept until the peer wrote.", t.RxSleeps)
		ctr("emu_transport_transmitted_holds_total", "Times the port's transmitter was held because the transport writer fell behind (frames waited in the egress queues).", p.hold.holds)
		ctr("emu_transport_transmitted_backlog_holds_total", "Of the holds, those for the link's ring backlog: the peer switch had not read MaxBacklog (2 ms of the link) yet.", p.hold.backlogHolds)
		ctr("emu_capture_dropped_records_total", "Capture records a slow capture client lost.", p.st.CaptureDrops)
		if d.ib {
			d.ibMetrics(p, pl, add)
			continue
		}
		for prio := range switchcore.NumPriorities {
			pc := &c.Prio[prio]
			ql := "{" + pl + `,priority="` + strconv.Itoa(prio) + `"}`
			pctr := func(name, help string, v float64) { add(name, "counter", help, ql, v) }
			pgauge := func(name, help string, v float64) { add(name, "gauge", help, ql, v) }
			pctr("emu_priority_received_packets_total", "Frames received, by priority (rx_prioN_packets).", float64(pc.RxPackets))
			pctr("emu_priority_received_bytes_total", "Bytes received, by priority (rx_prioN_bytes).", float64(pc.RxBytes))
			pctr("emu_priority_transmitted_packets_total", "Frames transmitted, by priority (tx_prioN_packets).", float64(pc.TxPackets))
			pctr("emu_priority_transmitted_bytes_total", "Bytes transmitted, by priority (tx_prioN_bytes).", float64(pc.TxBytes))
			pctr("emu_pfc_pause_frames_received_total", "PFC frames received pausing this priority (rx_prioN_pause).", float64(pc.RxPause))
			pctr("emu_pfc_pause_frames_transmitted_total", "PFC XOFF frames sent for this priority (tx_prioN_pause).", float64(pc.TxPause))
			pctr("emu_pfc_pause_received_seconds_total", "Time this priority's egress was paused by received PFC (rx_prioN_pause_duration).", seconds(clock.Time(pc.RxPauseDurationPs)))
			pctr("emu_pfc_pause_transmitted_seconds_total", "Time the switch asserted XOFF for this priority (tx_prioN_pause_duration).", seconds(clock.Time(pc.TxPauseDurationPs)))
			pctr("emu_ecn_marked_packets_total", "Frames CE-marked by WRED/ECN in this queue.", float64(pc.ECNMarked))
			pctr("emu_pfcwd_storms_detected_total", "PFC watchdog storms detected.", float64(pc.PFCWDStormDetected))
			pctr("emu_pfcwd_storms_restored_total", "PFC watchdog storms restored.", float64(pc.PFCWDStormRestored))
			pgauge("emu_queue_depth_bytes", "Bytes queued at the egress queue.", float64(d.sw.QueueDepth(p.idx, prio)))
			pgauge("emu_queue_watermark_bytes", "Highest egress queue occupancy seen.", float64(pc.QueueWatermark))
			// An ingress priority group is not a priority (the
			// PFC_PRIORITY_TO_PRIORITY_GROUP_MAP maps several to one): its
			// families carry pg="N", as the pgN_ counters are named.
			pgl := "{" + pl + `,pg="` + strconv.Itoa(prio) + `"}`
			pg := func(name, help string, v float64) { add(name, "gauge", help, pgl, v) }
			shared, hdrm := d.sw.PGOccupancy(p.idx, prio)
			pg("emu_pg_shared_bytes", "Ingress priority group occupancy, shared buffer.", float64(shared))
			pg("emu_pg_headroom_bytes", "Ingress priority group occupancy, headroom.", float64(hdrm))
			pg("emu_pg_shared_watermark_bytes", "Highest shared-buffer occupancy of the priority group.", float64(pc.PGSharedWatermark))
			pg("emu_pg_headroom_watermark_bytes", "Highest headroom occupancy of the priority group.", float64(pc.PGHeadroomWatermark))
			pgauge("emu_pfc_paused", "1 while received PFC pauses this egress priority.", b2f(d.sw.Paused(p.idx, prio)))
			pgauge("emu_pfc_xoff_asserted", "1 while the switch asserts XOFF for this priority to its peer.", b2f(d.sw.XoffSent(p.idx, prio)))
		}
	}
	if a := d.sw.SMA(); a != nil {
		st := d.sw.SMAStats()
		for _, r := range []struct {
			result string
			v      uint64
		}{{"consumed", st.Consumed}, {"malformed", st.Malformed}, {"sent", st.Sent}, {"no_route", st.NoRoute}, {"link_down", st.LinkDown}} {
			add("emu_sma_packets_total", "counter", "Subnet management packets of the switch's SMA: consumed (addressed to it), malformed, sent (responses and forwarded SMPs), and responses dropped for no_route or link_down.",
				"{"+base+`,result="`+r.result+`"}`, float64(r.v))
		}
	}
	var b bytes.Buffer
	for _, f := range fams {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for _, s := range f.samples {
			b.WriteString(f.name)
			b.WriteString(s.labels)
			b.WriteByte(' ')
			b.WriteString(strconv.FormatFloat(s.value, 'g', -1, 64))
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func seconds(t clock.Time) float64 { return float64(t) / float64(clock.Second) }

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// escLabel escapes a label value (backslash, double quote, newline).
func escLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// serveMetrics listens on --metrics and serves /metrics.
func (d *Daemon) serveMetrics() error {
	ln, err := rt.ListenTCP(d.opts.MetricsNetns, d.opts.Metrics)
	if err != nil {
		return fmt.Errorf("--metrics %s: %w", d.opts.Metrics, err)
	}
	d.metricsAddr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if !d.onLoop(func() { body = d.metricsText() }) {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", metricsContentType)
		w.Write(body)
	})
	d.httpSrv = metricsrv.Server(mux)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.httpSrv.Serve(metricsrv.Limit(ln, metricsrv.MaxConns)); err != nil && err != http.ErrServerClosed {
			d.log.Printf("metrics: %v", err)
		}
	}()
	return nil
}

// MetricsAddr is the metrics listener's address ("" without one), for a
// --metrics of port 0.
func (d *Daemon) MetricsAddr() string {
	return d.metricsAddr
}
