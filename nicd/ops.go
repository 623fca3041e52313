package nicd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/rt"
)

// The control requests that are not the engine's (session.go) or a
// capture (capture.go).

// handle answers one request.
func (d *Daemon) handle(s *session, req *Request, fr *fdReader) *Response {
	var resp *Response
	var err error
	switch req.Op {
	case "status":
		resp, err = d.opStatus()
	case "counters":
		resp, err = d.opCounters()
	case "link":
		resp, err = d.opLink(req)
	case "perfquery":
		resp, err = d.opPerfQuery(req)
	case "sm":
		var sb strings.Builder
		var werr error
		if err = d.Do(func() { werr = d.smText(&sb, req.What, req.Node) }); err == nil {
			err = werr
		}
		resp = &Response{Text: sb.String()}
	case "mlnx_qos":
		var sb strings.Builder
		var werr error
		if err = d.Do(func() { werr = d.nic.WriteMlnxQos(&sb) }); err == nil {
			err = werr
		}
		resp = &Response{Text: sb.String()}
	case "reg_mr":
		resp, err = s.regMR(req, fr.takeFD())
	case "dereg_mr":
		resp, err = s.deregMR(req)
	case "create_cq":
		resp, err = s.createCQ(req)
	case "create_qp":
		resp, err = s.createQP(req)
	case "connect":
		resp, err = s.connect(req)
	case "destroy_qp":
		resp, err = s.destroyQP(req)
	case "post_send":
		resp, err = s.postSend(req)
	case "post_recv":
		resp, err = s.postRecv(req)
	case "poll_cq":
		resp, err = s.pollCQ(req)
	case "perf_bw":
		resp, err = s.perfBW(req)
	case "perf_lat":
		resp, err = s.perfLat(req)
	case "perf_recv":
		resp, err = s.perfRecv(req)
	case "perf_pong":
		resp, err = s.perfPong(req)
	case "":
		err = errors.New(`request without "op"`)
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		if resp == nil {
			resp = &Response{}
		}
		resp.OK = false
		resp.Error = err.Error()
		return resp
	}
	resp.OK = true
	return resp
}

func (d *Daemon) opStatus() (*Response, error) {
	st := &Status{
		Lab: d.cfg.Lab, Node: d.cfg.NIC.Name, Pid: pid, UptimeS: d.uptime().Seconds(),
		MAC: d.cfg.NIC.MAC.String(), IP: d.cfg.NIC.IP.String(),
		Port: d.cfg.Port, Transport: d.portName(),
		RateBps: d.rateBps.Load(), LinkMTU: d.cfg.Link.MTU, PortMTU: d.cfg.NIC.PortMTU,
		TAP: d.TAPName(), Netns: d.tapSpec.Netns, TimeDilation: d.clk.Dilation(), Trust: d.cfg.NIC.Trust.String(),
	}
	state, lerr := d.LinkState()
	st.Link = state
	if state == LinkUp && d.peerDownFlag.Load() {
		st.Link = "down (peer)" // the switch port was set down
		if d.peerSilentFlag.Load() {
			st.Link = "down (peer silent)" // a UDP peer's keepalives stopped
		}
	}
	st.AdminDown = d.adminDownFlag.Load()
	if lerr != nil {
		st.LinkError = lerr.Error()
	}
	err := d.Do(func() {
		st.GID = d.nic.GID().String()
		st.Sessions = len(d.sessions)
		for s := range d.sessions {
			st.QPs += len(s.qps)
		}
		if d.gate != nil {
			st.GateHolds = d.gate.holds
		}
		st.SchedulePending = d.sched.Pending()
		st.LID = d.nic.LID()
		if a := d.nic.SMA(); a != nil {
			st.IBState = mad.PortStateName(a.PortState(1))
		}
		st.SM = d.smStatus()
		if w := d.wire; w != nil {
			st.Wire = &WireStatus{Delay: lab.FormatTime(w.delay), Loss: w.loss, Corrupt: w.corrupt}
		}
	})
	return &Response{Status: st}, err
}

// opCounters snapshots the NIC's counters on the loop and the transports'
// from their atomics.
func (d *Daemon) opCounters() (*Response, error) {
	var eth, hw strings.Builder
	var werr error
	hwc := map[string]uint64{}
	var backlogMax, backlogHolds uint64
	err := d.Do(func() {
		if d.gate != nil {
			backlogMax, backlogHolds = uint64(d.gate.backlogMax), d.gate.backlogHolds
		}
		// Every RDMA counter for programs (the map, complete: both
		// fabrics'), and what `rdma statistic show link` prints for
		// people (this fabric's, in mlx5's order).
		d.nic.EachCounter(func(name string, v uint64) { hwc[name] = v })
		werr = errors.Join(d.nic.WriteEthtool(&eth), d.nic.WriteRdmaStatistic(&hw, d.rdmaDevice()))
	})
	if d.tapPort != nil {
		// Frames for the host that its TAP queue had no room for: the
		// host took them too slowly, as an mlx5 receive queue without
		// buffers posted counts them.
		fmt.Fprintf(&eth, "     rx_out_of_buffer: %d\n", d.tapPort.Counters.TxQueueDrops.Load())
	}
	if w := d.wire; w != nil {
		// The wire from the NIC across (wire.go): not mlx5's, the
		// emulator's, named as emuswitch's port counters.
		fmt.Fprintf(&eth, "     link_loss_rx: %d\n     link_corrupt_rx: %d\n     link_queue_drop: %d\n",
			w.lossRx.Load(), w.corruptRx.Load(), w.queueDrops.Load())
	}
	// Capture records a slow capture client lost (capture.go): the
	// emulator's, named as emuswitch's port counter.
	fmt.Fprintf(&eth, "     capture_drop: %d\n", d.captureDrops.Load())
	// The real time's toll (the emulator's): how late the daemon's loop
	// ran (rt.Lag), the most the switch had not read from the link yet and
	// how often that held the NIC back (gate.go).
	lag := d.clk.Lag()
	fmt.Fprintf(&eth, "     loop_lag_max_ns: %d\n     loop_late: %d\n     loop_lag_dropped: %d\n     link_tx_backlog_max: %d\n     link_tx_backlog_holds: %d\n",
		lag.Max/clock.Nanosecond, lag.Late, lag.Dropped, backlogMax, backlogHolds)
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	tr := d.transportCounters()
	tr["link_tx_backlog_max"], tr["link_tx_backlog_holds"] = backlogMax, backlogHolds
	resp := &Response{
		Ports:      []PortCounters{{Port: d.cfg.Port, Counters: parseEthtool(eth.String())}},
		HWCounters: hwc,
		Transport:  tr,
		Ethtool:    eth.String(),
		RDMA:       hw.String(),
	}
	return resp, nil
}

// transportCounters are the rt ports' and the TAP's counters, with the
// emu_ names of the metrics endpoint minus the prefix.
func (d *Daemon) transportCounters() map[string]uint64 {
	m := map[string]uint64{}
	if d.tapPort != nil {
		c := &d.tapPort.Counters
		m["tap_rx_frames"] = c.RxFrames.Load()
		m["tap_rx_bytes"] = c.RxBytes.Load()
		m["tap_tx_frames"] = c.TxFrames.Load()
		m["tap_tx_bytes"] = c.TxBytes.Load()
		m["tap_tx_queue_drops"] = c.TxQueueDrops.Load()
		m["tap_tx_errors"] = c.TxErrors.Load()
		t := &d.tap.Counters
		m["tap_tx_gso_writes"] = t.TxGSOWrites.Load()
		m["tap_tx_gso_segments"] = t.TxGSOSegments.Load()
		m["tap_gso_frames"] = t.GSOFrames.Load()
		m["tap_gso_segments"] = t.Segments.Load()
		m["tap_csum_completed"] = t.CsumPartial.Load()
		m["tap_malformed"] = t.Malformed.Load()
		m["tap_unsupported_gso"] = t.Unsupported.Load()
		m["tap_too_large"] = t.TooLarge.Load()
	}
	// Cumulative over re-dials: a restarted switch's new connection is a
	// new rt.Port whose counters start at 0 (linkCounters).
	if c, ok := d.linkCounters(); ok {
		m["link_rx_frames"] = c.RxFrames
		m["link_rx_bytes"] = c.RxBytes
		m["link_tx_frames"] = c.TxFrames
		m["link_tx_bytes"] = c.TxBytes
		m["link_tx_direct"] = c.TxDirect
		m["link_tx_queue_drops"] = c.TxQueueDrops
		m["link_tx_errors"] = c.TxErrors
		m["link_rx_too_large"] = c.RxTooLarge
		m["link_rx_link_errors"] = c.RxLinkErrors
		if c.Rings {
			m["link_rx_ring_sleeps"], m["link_tx_ring_full"] = c.RxSleeps, c.TxFull
		}
	}
	m["link_rx_admin_down"] = d.rxAdminDown.Load()
	loopLag(d.clk.Lag(), m)
	if w := d.wire; w != nil {
		// The emulated wire from the NIC across the link (wire.go), named
		// as emuswitch's port counters.
		m["link_loss_rx"] = w.lossRx.Load()
		m["link_corrupt_rx"] = w.corruptRx.Load()
		m["link_queue_drop"] = w.queueDrops.Load()
	}
	return m
}

// parseEthtool turns the `ethtool -S` text into a map.
func parseEthtool(s string) map[string]uint64 {
	m := map[string]uint64{}
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ": ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			m[k] = n
		}
	}
	return m
}

// rdmaDevice is the NIC's RDMA device name, as `rdma statistic` and
// perftest's banner name it: emu_<port> (conventions: emu_<netdev>, never
// mlx5_ or rxe).
func (d *Daemon) rdmaDevice() string { return "emu_" + d.cfg.Port }

// opLink sets the link administratively down or up, as pulling and
// plugging the NIC's cable: down, the NIC sends nothing (its queues and
// QPs wait, RC timers run) and frames from the wire are dropped
// (link_rx_admin_down). A rate is the NIC's transmitter's (the switch
// port's is set by emuswitch's link op: emulab sets both ends). Delay,
// loss and corruption are the wire's: a switch port emulates them, so an
// emunic takes them only when a NIC is at the link's other end, for the
// wire toward itself (wire.go; emulab sets both ends).
func (d *Daemon) opLink(req *Request) (*Response, error) {
	wireChange := req.Delay != "" || req.Loss != nil || req.Corrupt != nil
	if wireChange && d.wire == nil {
		return nil, errors.New("link: emunic sets state and rate; delay, loss and corruption are set on the switch port (emuswitch) of the link")
	}
	var rate uint64
	if req.Rate != "" {
		var err error
		if rate, err = lab.ParseRate(req.Rate); err != nil {
			return nil, fmt.Errorf("link: %w", err) // it names the value
		}
		if err := lab.CheckLinkRate(rate); err != nil {
			return nil, fmt.Errorf("link: rate %q: %w", req.Rate, err)
		}
	}
	var delay clock.Time
	if req.Delay != "" {
		var err error
		if delay, err = lab.ParseTime(req.Delay); err != nil {
			return nil, fmt.Errorf("link: delay %w", err) // it names the value
		}
	}
	for _, v := range []struct {
		name string
		p    *float64
	}{{"loss", req.Loss}, {"corrupt", req.Corrupt}} {
		if v.p != nil && !(*v.p >= 0 && *v.p <= 1) {
			return nil, fmt.Errorf("link: %s %v: a probability in [0, 1]", v.name, *v.p)
		}
	}
	switch {
	case req.State == "up", req.State == "down":
	case req.State == "" && (req.Schedule != nil || rate != 0 || wireChange): // a schedule, a rate or the wire alone
	default:
		return nil, fmt.Errorf("link: state %q: want up or down", req.State)
	}
	if req.Port != "" && req.Port != d.cfg.Port {
		return nil, fmt.Errorf("link: port %q: this NIC's port is %q", req.Port, d.cfg.Port)
	}
	var sched []lab.LinkEvent
	if req.Schedule != nil {
		var err error
		if sched, err = lab.ParseSchedule(req.Schedule); err != nil {
			return nil, fmt.Errorf("link: %w", err)
		}
	}
	err := d.Do(func() {
		if rate != 0 {
			d.nic.SetRate(rate)
			d.rateBps.Store(rate)
			d.log.Printf("link %s: rate %s", d.cfg.Port, lab.FormatRate(rate))
		}
		if w := d.wire; w != nil {
			if req.Delay != "" {
				w.delay = delay
				w.line.SetDelay(delay)
			}
			if req.Loss != nil {
				w.loss = *req.Loss
			}
			if req.Corrupt != nil {
				w.corrupt = *req.Corrupt
			}
			if wireChange {
				d.log.Printf("link %s: the wire from the NIC across: delay %s, loss %g, corrupt %g",
					d.cfg.Port, lab.FormatTime(w.delay), w.loss, w.corrupt)
			}
		}
		if req.State != "" {
			d.setAdminDown(req.State == "down")
		}
		var note string
		d.sched, note = d.sched.Change(d.clk, sched, req.State != "", func(up bool) {
			d.setAdminDown(!up)
			d.log.Printf("link %s: %s", d.cfg.Port, d.sched.StepNote(up))
		})
		if note != "" {
			d.log.Printf("link %s: %s", d.cfg.Port, note)
		}
	})
	if err != nil {
		return nil, err
	}
	return &Response{}, nil
}

// setAdminDown takes the link down or up as the link op does. Loop
// goroutine.
func (d *Daemon) setAdminDown(down bool) {
	d.adminDown = down
	if down && d.wire != nil {
		// What was on the wire when the cable was pulled is gone.
		d.rxAdminDown.Add(uint64(d.wire.line.Flush()))
	}
	if d.gate != nil {
		d.gate.admin = !down
		d.gate.apply()
	}
	d.adminDownFlag.Store(down)
	d.syncCarrier()
	if d.stateLink != nil {
		// The switch port's end sees its carrier go (or come back).
		if err := d.stateLink.SetState(!down); err != nil {
			d.log.Printf("link %s: telling the switch: %v", d.cfg.Port, err)
		}
	}
}

// loopLag adds the daemon loop's real-time lag (rt.Lag) to m: how late it
// ran its timers at worst (ns of the lab's time), how many times it ran
// LagOver or more late, and how many of those it could not replay.
func loopLag(l rt.Lag, m map[string]uint64) {
	m["loop_lag_max_ns"] = uint64(l.Max / clock.Nanosecond)
	m["loop_late"] = l.Late
	m["loop_lag_dropped"] = l.Dropped
}
