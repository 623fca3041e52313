package swd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/internal/ctlline"
	"github.com/emufabric/emufabric/internal/ctlsock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/switchcore"
	"golang.org/x/sys/unix"
)

// The control protocol: newline-delimited JSON over a unix stream socket
// (mode 0600). One request per line, one response line each:
//
//	{"op":"counters"[,"port":"p1"]}  -> {"ok":true,"ports":[{"port":"p1","counters":{...}}]}
//	{"op":"status"}                  -> {"ok":true,"node":"sw1","lab":"x","uptime_seconds":1.5,"ports":[...]}
//	{"op":"link","port":"p1","state":"down"|"up"}
//	{"op":"link","port":"p1","rate":"10G"|"delay":"1us"|"loss":0.01|"corrupt":0.001}
//	{"op":"link","port":"p1","schedule":[{"after":"1s","state":"down"},{"after":"2s","state":"up"}]}
//	                                 -> {"ok":true,"port":{...status of p1...}}
//	{"op":"capture","ports":["p1"]}  -> {"ok":true,"ports":["p1"]} then pcapng until the client closes;
//	                                    a half-close ends it with the queued records and statistics blocks
//	                                    (IB: ERF records; "pad_links":true pads link packets, capture.go)
//
// Failures answer {"ok":false,"error":"..."} and keep the connection.
//
// An IB switch's per-priority counters (rx_prioN_packets, tx_prioN_bytes,
// ...) count VL N; its counters leave out the flood counters (it never
// floods) and add, per data VL, vlN_tx_credits (64-byte blocks the port may still
// send before the peer grants more) and vlN_rx_free_blocks (free receive
// buffer); with a subnet management agent, sma_* (switch-wide, on every
// port). Its status gives each port's IBA logical state (ib_state) when
// the switch has an agent.

// Request is one control request.
type Request struct {
	Op      string   `json:"op"`
	Port    string   `json:"port,omitempty"`
	Ports   []string `json:"ports,omitempty"`
	State   string   `json:"state,omitempty"`
	Rate    string   `json:"rate,omitempty"`
	Delay   string   `json:"delay,omitempty"`
	Loss    *float64 `json:"loss,omitempty"`
	Corrupt *float64 `json:"corrupt,omitempty"`
	// Schedule (link) replaces the port's link schedule: state changes at
	// times counted from now (the lab file's link schedule, which `emulab
	// up` sends once the lab is up); an empty list cancels the pending
	// steps.
	Schedule []lab.ScheduleStep `json:"schedule"` // not omitempty: [] (cancel) differs from null (no change)
	// PadLinks (capture, IB switch) pads link packets to 64 bytes for
	// Wireshark 4.0's dissector.
	PadLinks bool `json:"pad_links,omitempty"`
}

// Response is one control response. Ports holds []PortCounters for
// counters, []PortStatus for status and the port names for capture; a
// client decodes into CountersResponse or StatusResponse.
type Response struct {
	OK            bool        `json:"ok"`
	Error         string      `json:"error,omitempty"`
	Node          string      `json:"node,omitempty"`
	Lab           string      `json:"lab,omitempty"`
	UptimeSeconds float64     `json:"uptime_seconds,omitempty"`
	TimeDilation  int         `json:"time_dilation,omitempty"` // status: the clock's factor N
	Ports         any         `json:"ports,omitempty"`
	Port          *PortStatus `json:"port,omitempty"`
	// LinkState (status, a RoCE switch): what link-state routing knows.
	LinkState *LinkStateStatus `json:"link_state,omitempty"`
}

// LinkStateStatus is a switch's link-state routing view: every origin's
// advertised down ports, and the lab links its routes avoid. A fabric has
// converged when every switch holds the same advertisements and, with
// every link up, routes around none.
type LinkStateStatus struct {
	Down         map[string][]string `json:"down"`
	RoutedAround []string            `json:"routed_around"`
	// Mismatched: switches whose advertisements describe another fabric
	// (their lab file differs from this one's).
	Mismatched []string `json:"mismatched,omitempty"`
}

// CountersResponse is the client's view of a counters response.
type CountersResponse struct {
	OK    bool           `json:"ok"`
	Error string         `json:"error"`
	Ports []PortCounters `json:"ports"`
}

// StatusResponse is the client's view of a status or link response.
type StatusResponse struct {
	OK            bool             `json:"ok"`
	Error         string           `json:"error"`
	Node          string           `json:"node"`
	Lab           string           `json:"lab"`
	UptimeSeconds float64          `json:"uptime_seconds"`
	TimeDilation  int              `json:"time_dilation"`
	Ports         []PortStatus     `json:"ports"`
	Port          *PortStatus      `json:"port"`
	LinkState     *LinkStateStatus `json:"link_state"`
}

// PortCounters is one port's counters by name: the engine's (mlx5
// ethtool -S names, switchcore.PortCounters.Each) and the daemon's
// (wire and transport).
type PortCounters struct {
	Port     string            `json:"port"`
	Counters map[string]uint64 `json:"counters"`
}

// PortStatus describes a port and its wire.
type PortStatus struct {
	Port      string `json:"port"`
	URI       string `json:"uri,omitempty"`
	Transport string `json:"transport"`
	Connected bool   `json:"connected"`
	AdminUp   bool   `json:"admin_up"`
	// PeerDown: the far end (an emunic) set its end of the link down, or
	// (PeerSilent too) a UDP link's peer sent nothing, not even a
	// keepalive, for rt.UDPDeadAfter.
	PeerDown   bool    `json:"peer_down,omitempty"`
	PeerSilent bool    `json:"peer_silent,omitempty"`
	Up         bool    `json:"up"`
	Speed      string  `json:"speed"`
	Rate       string  `json:"rate"`
	Delay      string  `json:"delay"`
	Loss       float64 `json:"loss"`
	Corrupt    float64 `json:"corrupt"`
	OnWire     int     `json:"frames_on_wire"`
	// NoFlood: the port is left out of broadcast/multicast flooding
	// (--no-flood, outside the switches' spanning tree).
	NoFlood bool `json:"no_flood,omitempty"`
	// IBState is the port's IBA logical state (Down, Initialize, Armed,
	// Active) on an IB switch with a subnet management agent.
	IBState string `json:"ib_state,omitempty"`
	// SchedulePending is the number of link schedule steps still to run.
	SchedulePending int `json:"schedule_pending,omitempty"`
}

// listenControl creates the control socket, mode 0600.
func (d *Daemon) listenControl() error {
	if ctlsock.Live(d.opts.Control) {
		return fmt.Errorf("--control %s: %w", d.opts.Control, ctlsock.LiveError(d.opts.Control))
	}
	removeStaleSocket(d.opts.Control)
	// Created with no permissions for others from the start (a chmod
	// after bind leaves a moment at the umask's mode), then exactly 0600.
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: d.opts.Control, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return fmt.Errorf("--control %s: %w", d.opts.Control, ctlsock.BindError(d.opts.Control, err))
	}
	// Counters, link changes and captures of the lab: the owner only.
	if err := os.Chmod(d.opts.Control, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("--control %s: %w", d.opts.Control, err)
	}
	ln.SetUnlinkOnClose(true)
	d.ctl = ln
	return nil
}

func (d *Daemon) serveControl() {
	defer d.wg.Done()
	for {
		c, err := d.ctl.Accept()
		if err != nil {
			return
		}
		d.wg.Add(1)
		go d.handleConn(c)
	}
}

// shutdownWrite is how long a control connection's writes may still take
// once the daemon stops.
const shutdownWrite = time.Second

func (d *Daemon) handleConn(c net.Conn) {
	defer d.wg.Done()
	// When the daemon stops, a read deadline in the past unblocks the
	// reader, and writes get shutdownWrite to finish (a capture's last
	// records and statistics blocks) before they fail: a client that
	// reads nothing cannot hold Close up.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-d.quit:
			c.SetReadDeadline(time.Now())
			c.SetWriteDeadline(time.Now().Add(shutdownWrite))
		case <-stop:
		}
	}()
	defer c.Close()
	br := bufio.NewReader(c)
	enc := json.NewEncoder(c)
	for {
		line, err := ctlline.Read(br)
		if err != nil {
			if errors.Is(err, ctlline.ErrTooLong) {
				_ = enc.Encode(Response{Error: err.Error()})
			}
			return
		}
		var req Request
		if jerr := json.Unmarshal(line, &req); jerr != nil {
			if enc.Encode(Response{Error: "bad request: " + jerr.Error()}) != nil {
				return
			}
			continue
		}
		if req.Op == "capture" {
			d.handleCapture(c, br, enc, &req)
			return
		}
		if enc.Encode(d.Do(&req)) != nil {
			return
		}
	}
}

// Do executes one request other than capture (which streams) and returns
// its response.
func (d *Daemon) Do(req *Request) Response {
	var resp Response
	var run func()
	switch req.Op {
	case "counters":
		run = func() { resp = d.counters(req.Port) }
	case "status":
		run = func() { resp = d.status() }
	case "link":
		run = func() { resp = d.link(req) }
	case "":
		return Response{Error: `missing "op" (counters, status, link, capture)`}
	default:
		return Response{Error: fmt.Sprintf("unknown op %q (counters, status, link, capture)", req.Op)}
	}
	if !d.onLoop(run) {
		return Response{Error: "daemon is shutting down"}
	}
	return resp
}

// onLoop runs fn on the loop goroutine and waits for it.
func (d *Daemon) onLoop(fn func()) bool {
	done := make(chan struct{})
	if !d.loop.Post(func() { fn(); close(done) }) {
		return false
	}
	select {
	case <-done:
		return true
	case <-d.loop.Done():
		return false
	}
}

func (d *Daemon) portByName(name string) (*swPort, error) {
	for _, p := range d.ports {
		if p.name == name {
			return p, nil
		}
	}
	names := make([]string, len(d.ports))
	for i, p := range d.ports {
		names[i] = p.name
	}
	return nil, fmt.Errorf("no port %q on %s (ports: %s)", name, d.opts.Node, strings.Join(names, ", "))
}

// counters snapshots one or all ports; loop goroutine.
func (d *Daemon) counters(port string) Response {
	ports := d.ports
	if port != "" {
		p, err := d.portByName(port)
		if err != nil {
			return Response{Error: err.Error()}
		}
		ports = []*swPort{p}
	}
	out := make([]PortCounters, 0, len(ports))
	for _, p := range ports {
		m := map[string]uint64{}
		d.eachCounter(p, func(name string, v uint64) { m[name] = v })
		out = append(out, PortCounters{Port: p.name, Counters: m})
	}
	return Response{OK: true, Ports: out}
}

// eachCounter reports every counter of p: the engine's of the lab's
// fabric (no PFC or ECN counter on an IB port, no VL one on a RoCE port),
// then the daemon's wire and transport counters. Loop goroutine.
func (d *Daemon) eachCounter(p *swPort, fn func(name string, v uint64)) {
	d.sw.EachCounter(p.idx, fn)
	st := &p.st
	fn("link_loss_tx", st.LinkLossTx)
	fn("link_loss_rx", st.LinkLossRx)
	fn("link_corrupt_tx", st.LinkCorruptTx)
	fn("link_corrupt_rx", st.LinkCorruptRx)
	qd := p.out.Drops()
	if p.in != nil {
		qd += p.in.Drops()
	}
	fn("link_queue_drop", qd)
	fn("not_connected_drop", st.NotConnected)
	if d.ib {
		d.eachIBCounter(p, fn)
	} else {
		fn("flood_rx", st.FloodRx)
		fn("flood_tx", st.FloodTx)
		fn("flood_blocked_rx", st.FloodBlocked)
	}
	fn("capture_drop", st.CaptureDrops)
	t := p.transport()
	fn("transport_rx_frames", t.RxFrames)
	fn("transport_rx_bytes", t.RxBytes)
	fn("transport_tx_frames", t.TxFrames)
	fn("transport_tx_bytes", t.TxBytes)
	fn("transport_tx_direct", t.TxDirect)
	fn("transport_tx_ring_full", t.TxFull)
	fn("transport_rx_ring_sleeps", t.RxSleeps)
	fn("transport_rx_too_large", t.RxTooLarge)
	fn("transport_rx_link_errors", t.RxLinkErrors)
	fn("transport_tx_queue_drop", t.TxQueueDrops)
	fn("transport_tx_hold", p.hold.holds)
	fn("transport_tx_backlog_holds", p.hold.backlogHolds)
	fn("transport_tx_backlog_max", uint64(p.hold.backlogMax))
	fn("transport_tx_errors", t.TxErrors)
	// The daemon's loop, the same on every port: a switch that ran late
	// sent its XOFFs late (rt.Lag).
	l := d.clk.Lag()
	fn("loop_lag_max_ns", uint64(l.Max/clock.Nanosecond))
	fn("loop_late", l.Late)
	fn("loop_lag_dropped", l.Dropped)
}

func (d *Daemon) portStatus(p *swPort) PortStatus {
	s := PortStatus{
		Port: p.name, Transport: "none", Connected: p.connected, AdminUp: p.adminUp, PeerDown: p.peerDown, PeerSilent: p.peerSilent, Up: p.up(),
		Speed: lab.FormatRate(p.speed), Rate: lab.FormatRate(p.rate), Delay: lab.FormatTime(p.delay),
		Loss: p.loss, Corrupt: p.corrupt, OnWire: p.out.Held(), NoFlood: p.noFlood,
		SchedulePending: p.sched.Pending(),
	}
	if p.in != nil {
		s.OnWire += p.in.Held()
	}
	if p.bind != nil {
		s.URI, s.Transport = p.bind.URI, p.bind.Scheme()
	}
	if a := d.sw.SMA(); a != nil {
		s.IBState = mad.PortStateName(a.PortState(p.idx + 1))
	}
	return s
}

func (d *Daemon) status() Response {
	r := Response{OK: true, Node: d.opts.Node, Lab: d.spec.Name, UptimeSeconds: d.Uptime().Seconds(), TimeDilation: d.clk.Dilation()}
	ps := make([]PortStatus, 0, len(d.ports))
	for _, p := range d.ports {
		ps = append(ps, d.portStatus(p))
	}
	r.Ports = ps
	if d.lsEnabled {
		r.LinkState = &LinkStateStatus{Down: d.sw.LinkStateDB(), RoutedAround: []string{}, Mismatched: d.sw.LinkStateMismatched()}
		if d.cutKey != nil && *d.cutKey != "" {
			r.LinkState.RoutedAround = strings.Fields(*d.cutKey)
		}
	}
	return r
}

// link applies a run-time link change; loop goroutine. A request may set
// several parameters; it is checked whole before anything changes.
func (d *Daemon) link(req *Request) Response {
	p, err := d.portByName(req.Port)
	if err != nil {
		return Response{Error: err.Error()}
	}
	var rate uint64
	var delay clock.Time
	if req.State != "" && req.State != "up" && req.State != "down" {
		return Response{Error: fmt.Sprintf("state %q: up or down", req.State)}
	}
	if req.Rate != "" {
		if rate, err = lab.ParseRate(req.Rate); err == nil {
			err = lab.CheckLinkRate(rate)
		}
		if err != nil {
			return Response{Error: fmt.Sprintf("rate %q: %v", req.Rate, err)}
		}
	}
	if req.Delay != "" {
		if delay, err = lab.ParseTime(req.Delay); err != nil || delay < 0 {
			return Response{Error: fmt.Sprintf("delay %q: %v", req.Delay, errOr(err, "must be >= 0"))}
		}
	}
	for _, v := range []struct {
		name string
		p    *float64
	}{{"loss", req.Loss}, {"corrupt", req.Corrupt}} {
		if v.p != nil && !(*v.p >= 0 && *v.p <= 1) {
			return Response{Error: fmt.Sprintf("%s %v: a probability in [0, 1]", v.name, *v.p)}
		}
	}
	var sched []lab.LinkEvent
	if req.Schedule != nil {
		if sched, err = lab.ParseSchedule(req.Schedule); err != nil {
			return Response{Error: "link: " + err.Error()}
		}
	}
	if req.State == "" && req.Rate == "" && req.Delay == "" && req.Loss == nil && req.Corrupt == nil && req.Schedule == nil {
		return Response{Error: `link: give "state", "rate", "delay", "loss", "corrupt" or "schedule"`}
	}
	if req.Rate != "" {
		// The port runs at the link's new rate: the engine serializes at
		// it, so its queues, PFC and ECN see the slower (or faster) link.
		// Only the wire behind a port paced by the engine at the old speed
		// would hold the difference in a drop-tail queue that knows no
		// priority: a lossless priority would lose frames.
		if err := d.sw.SetPortSpeed(p.idx, rate); err != nil {
			return Response{Error: fmt.Sprintf("rate %q: %v", req.Rate, err)}
		}
		p.speed = rate
	}
	var note string
	p.sched, note = p.sched.Change(d.clk, sched, req.State != "", func(up bool) { d.scheduledState(p, up) })
	if note != "" {
		note = " (" + note + ")"
	}
	if req.State != "" {
		p.setAdmin(req.State == "up")
	}
	if req.Rate != "" {
		p.rate = rate
		p.out.SetRate(rate)
		if p.in != nil && !p.nicPeer {
			p.in.SetRate(rate)
		}
	}
	if req.Delay != "" {
		p.delay = delay
		p.out.SetDelay(delay)
		if p.in != nil {
			p.in.SetDelay(delay)
		}
	}
	if req.Rate != "" || req.Delay != "" {
		d.resizeHeadroom(p)
	}
	if req.Loss != nil {
		p.loss = *req.Loss
	}
	if req.Corrupt != nil {
		p.corrupt = *req.Corrupt
	}
	d.log.Printf("link %s: %s%s", p.name, describeLink(req), note)
	s := d.portStatus(p)
	return Response{OK: true, Port: &s}
}

// scheduledState is a link schedule's step: the port's link goes down or
// up as by a link op. Loop goroutine.
func (d *Daemon) scheduledState(p *swPort, up bool) {
	p.setAdmin(up)
	d.log.Printf("link %s: %s", p.name, p.sched.StepNote(up))
}

func errOr(err error, s string) any {
	if err != nil {
		return err
	}
	return errors.New(s)
}

func describeLink(r *Request) string {
	b, _ := json.Marshal(struct {
		State    string             `json:"state,omitempty"`
		Rate     string             `json:"rate,omitempty"`
		Delay    string             `json:"delay,omitempty"`
		Loss     *float64           `json:"loss,omitempty"`
		Corrupt  *float64           `json:"corrupt,omitempty"`
		Schedule []lab.ScheduleStep `json:"schedule,omitempty"`
	}{r.State, r.Rate, r.Delay, r.Loss, r.Corrupt, r.Schedule})
	return string(b)
}

// handleCapture answers a capture request and streams pcapng on c until
// the client closes its end (or the daemon stops).
func (d *Daemon) handleCapture(c net.Conn, br *bufio.Reader, enc *json.Encoder, req *Request) {
	names := req.Ports
	if len(names) == 0 && req.Port != "" {
		names = []string{req.Port}
	}
	if len(names) == 0 {
		for _, p := range d.ports {
			names = append(names, p.name)
		}
	}
	var idx []int
	for _, n := range names {
		p, err := d.portByName(n)
		if err != nil {
			enc.Encode(Response{Error: err.Error()})
			return
		}
		if slices.Contains(idx, p.idx) {
			enc.Encode(Response{Error: fmt.Sprintf("port %s named twice", n)})
			return
		}
		idx = append(idx, p.idx)
	}
	var sub *captureSub
	if !d.onLoop(func() { sub = d.subscribe(idx, req.PadLinks) }) {
		enc.Encode(Response{Error: "daemon is shutting down"})
		return
	}
	defer d.onLoop(func() { d.unsubscribe(sub) })
	if enc.Encode(Response{OK: true, Ports: names}) != nil {
		return
	}
	// The client ends the capture by closing (or half-closing) its end.
	clientGone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, br)
		close(clientGone)
		d.loop.Post(func() { d.unsubscribe(sub) })
	}()
	if err := d.streamCapture(c, sub, idx); err != nil {
		select {
		case <-clientGone:
		default:
			d.log.Printf("capture %v: %v", names, err)
		}
	}
}

// resizeHeadroom gives the port's lossless PGs the headroom of its link
// as it is now, after a run-time change of rate or delay, as SONiC's
// buffer manager makes a new lossless profile when a port's speed or cable
// length changes: sized for the lab file's link, a faster or longer one
// overflowed it. Only the PGs the built-in sizing decides; a lab file's own
// profile is left as written.
func (d *Daemon) resizeHeadroom(p *swPort) {
	if p.autoPGs == 0 || d.ib {
		return
	}
	mtu := 0
	if l := d.node.Ports[p.idx].Link; l != nil {
		mtu = l.MTU
	}
	xoff, _ := sim.BuiltinHeadroom(p.speed, p.delay, mtu)
	for pg := range switchcore.NumPriorities {
		if p.autoPGs&(1<<pg) != 0 {
			if err := d.sw.SetPGHeadroom(p.idx, pg, xoff); err != nil {
				d.log.Printf("port %s: headroom: %v", p.name, err)
			}
		}
	}
	d.log.Printf("port %s: lossless headroom %d bytes for %s and %v", p.name, xoff, lab.FormatRate(p.speed), p.delay)
}
