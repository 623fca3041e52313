// Package nicd is the emunic daemon: one emulated RDMA NIC (package nic)
// in real time, between a host namespace's kernel and an emulated link.
//
//	netns h1 kernel (ping, TCP, rxe)
//	   | TAP IFNAME (created and owned here, vnet header: TSO/GSO segmented to the link MTU)
//	   v  nic.SendHost: classify (trust dscp|pcp), priority queues, PFC honouring
//	nic.NIC on an rt.Loop  +  the built-in RDMA engine, driven over the control socket
//	   | link port: unix SOCK_SEQPACKET or UDP (rt transports)
//	   v  peer NIC or switch
//
// Frames that are not for the engine go up to the TAP (nic.SetHostDeliver).
// One goroutine, the loop's, owns the NIC; the control socket's handlers
// post their work to it. Local programs use the engine as they would an
// RNIC: their buffers are memfds passed over the control socket
// (SCM_RIGHTS) and mapped by the daemon, so the engine reads and writes the
// program's memory in place, as an RNIC's DMA does (see Client).
package nicd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/sm"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Options configure a daemon (the emunic command line).
type Options struct {
	Spec *lab.Spec // the parsed lab file
	Node string    // the NIC node
	// TAP is IFNAME@NETNS: the host interface to create. Empty runs the
	// NIC without a host (frames for the host are counted as rx_no_host).
	TAP string
	// Port is the link URI (ParsePortURI). Link, if set, is an already
	// connected link used instead (in-process wiring, tests).
	Port string
	Link rt.Link
	// DialTimeout bounds how long seqpacket-dial retries; default 30 s.
	DialTimeout time.Duration
	// Control is the control socket path ("" none). It must not exist.
	Control string
	// Metrics is the listen address of the Prometheus endpoint ("" none).
	Metrics string
	// MetricsNetns is the network namespace the endpoint listens in (a
	// /proc/PID/ns/net or /run/netns/NAME file; "" the daemon's own).
	MetricsNetns string
	// TimeDilation N >= 1 runs the emulated link N times slower than the
	// wall clock (rt.Clock); 0 takes the lab file's time_dilation.
	TimeDilation int
	// Log receives the daemon's log lines; nil discards them.
	Log *log.Logger
}

// Link states reported by status.
const (
	LinkWaiting = "waiting" // listening, no peer yet
	LinkUp      = "up"
	LinkDown    = "down" // the peer went away or the transport failed
)

// Daemon is a running emunic.
type Daemon struct {
	opts  Options
	cfg   *NodeConfig
	log   *log.Logger
	loop  *rt.Loop
	clk   *rt.Clock
	nic   *nic.NIC
	start time.Time

	tapSpec TAPSpec
	tap     *rt.TAP
	tapPort *rt.Port
	uri     PortURI

	// Loop goroutine only.
	linkPort *rt.Port
	attaches int // links attached so far: after the first, a peer came back
	gate     *txGate
	// The lab's subnet manager when it runs here (sm.go).
	smr       *sm.Runner
	smStarted bool
	smLogged  int
	// perfquery's requests waiting for their answer, by TID (loop).
	gmpWait   map[uint64]chan gmpResult
	gmpTID    uint64
	sessions  map[*session]struct{}
	storm     clock.Timer
	caps      []*capSub
	adminDown bool              // the link op set the link down
	wire      *inWire           // the wire from a NIC at the link's other end, or nil
	sched     *lab.LinkSchedule // the link's schedule (link op), loop goroutine

	rxAdminDown   atomic.Uint64 // frames dropped while administratively down
	captureDrops  atomic.Uint64 // capture records lost to slow capture clients (capture.go)
	adminDownFlag atomic.Bool   // adminDown, for status
	rateBps       atomic.Uint64 // the port's rate now (the lab file's, or a link op's), for status
	// peerDownFlag: the port across a ring or UDP link announced it was
	// set down, or went silent (any goroutine); stateLink is that link
	// (loop goroutine), for announcing our own state the other way.
	peerDownFlag   atomic.Bool
	peerSilentFlag atomic.Bool // of peerDownFlag: a UDP peer went silent
	stateLink      rt.StateLink

	mu        sync.Mutex // guards linkState, listener and the carrier fields
	linkState string
	// carrierTAP is the host's TAP once it is attached (syncCarrier).
	carrierTAP *rt.TAP
	linkErr    error
	listener   *rt.SeqpacketListener
	pubLink    *rt.Port // linkPort, for readers of its atomic counters
	// linkBase accumulates the counters of link ports that went away (a
	// redialled or re-accepted link: each dial is a new rt.Port), so the
	// link's transport totals never go back while the daemon runs.
	linkBase linkStats

	ctl         *controlServer
	metrics     *http.Server
	metricsAddr string

	closeOnce sync.Once
	closing   chan struct{} // closed when Close starts: waiting requests give up
	done      chan struct{}
}

// Start builds the NIC, creates the TAP, binds the link and the control
// socket, and runs the loop. When it returns without error the daemon is
// ready: the TAP is up and the port is bound (a listening port accepts its
// peer in the background; the link is down until then).
func Start(o Options) (*Daemon, error) {
	return StartContext(context.Background(), o)
}

// StartContext is Start, given up when ctx is done: a seqpacket-dial port
// retries for up to DialTimeout while its peer is not listening yet, and
// a SIGTERM in that time must stop the daemon at once. The error then
// wraps ctx.Err(), and what was created so far (the TAP) is gone.
func StartContext(ctx context.Context, o Options) (_ *Daemon, err error) {
	if o.Spec == nil {
		return nil, errors.New("nicd: no lab spec")
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 30 * time.Second
	}
	d := &Daemon{opts: o, log: o.Log, start: time.Now(), sessions: map[*session]struct{}{}, done: make(chan struct{}), closing: make(chan struct{}), linkState: LinkWaiting}
	if d.log == nil {
		d.log = log.New(io.Discard, "", 0)
	}
	port := ""
	if o.TAP != "" {
		if d.tapSpec, err = ParseTAP(o.TAP); err != nil {
			return nil, err
		}
		port = d.tapSpec.Name
		if o.Spec.Node(o.Node) != nil && o.Spec.Node(o.Node).Port(port) == nil {
			port = "" // the host interface need not be named like the lab port
		}
	}
	if d.cfg, err = NICConfig(o.Spec, o.Node, port); err != nil {
		return nil, err
	}
	for _, n := range d.cfg.Notes {
		d.log.Printf("config: %s", n)
	}
	if o.Link == nil {
		if d.uri, err = ParsePortURI(o.Port); err != nil {
			return nil, err
		}
	}
	d.clk = rt.NewClock(o.Spec.Dilation(o.TimeDilation))
	if d.cfg.NIC.Fabric == nic.FabricIB {
		// The IB link timing is wall time, as emuswitch's (swd/ib.go):
		// in dilated time it is that many times shorter.
		dil := clock.Time(d.clk.Dilation())
		d.cfg.NIC.IBFCRefresh = max(d.cfg.NIC.IBFCRefresh/dil, clock.Millisecond)
		// Silence means a lost link only after ten of the peer's
		// refreshes: a switch refreshes every max(credit_update, 100 ms
		// wall), an HCA every max(100 ms wall, 1 ms).
		peer := max(d.cfg.NIC.IBFCRefresh, ibFCRefreshWall/dil)
		if ib := o.Spec.IB; ib != nil {
			peer = max(peer, ib.CreditUpdate)
		}
		d.cfg.NIC.IBLinkTimeout = max(d.cfg.NIC.IBLinkTimeout/dil, 10*peer)
	}
	d.rateBps.Store(d.cfg.NIC.Rate)
	d.loop = rt.NewLoop(d.clk)
	if d.nic, err = nic.New(&d.cfg.NIC, d.clk, d.loop.Pool()); err != nil {
		return nil, err
	}
	if d.cfg.PeerNIC {
		d.wire = d.newInWire()
	}
	d.newSM()
	d.initGSI()
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if o.TAP != "" {
		if err = d.openTAP(); err != nil {
			return nil, err
		}
	}
	if err = d.openLink(ctx); err != nil {
		return nil, err
	}
	d.setupStorm()
	go d.loop.Run()
	if o.Control != "" {
		if d.ctl, err = listenControl(d, o.Control); err != nil {
			return nil, err
		}
	}
	if o.Metrics != "" {
		if err = d.serveMetrics(o.Metrics, o.MetricsNetns); err != nil {
			return nil, err
		}
	}
	d.log.Printf("%v: ready (tap %q, port %s, rate %d b/s, link mtu %d, port mtu %d, time dilation %d)",
		d.nic, o.TAP, d.portName(), d.cfg.NIC.Rate, d.cfg.Link.MTU, d.cfg.NIC.PortMTU, d.clk.Dilation())
	return d, nil
}

func (d *Daemon) portName() string {
	if d.opts.Link != nil {
		return "(in-process link)"
	}
	return d.uri.String()
}

// openTAP creates the host interface in its namespace with the NIC's MAC
// (the kernel's frames and the engine's share one address, as a RoCE
// netdev and its RDMA device do) and the link's MTU, brings it up and
// attaches it to the loop: kernel frames go to SendHost, frames for the
// host come back through the TAP port.
func (d *Daemon) openTAP() error {
	ns := netns.None()
	if d.tapSpec.Netns != "" {
		h, err := netns.GetFromName(d.tapSpec.Netns)
		if err != nil {
			return fmt.Errorf("--tap %s: namespace %s: %w", d.opts.TAP, d.tapSpec.Netns, err)
		}
		defer h.Close()
		ns = h
	}
	tap, err := rt.CreateTAP(rt.TAPConfig{Name: d.tapSpec.Name, NetNS: ns, MTU: d.cfg.HostMTU})
	if err != nil {
		return fmt.Errorf("--tap %s: %w", d.opts.TAP, err)
	}
	d.tap = tap
	var nl *netlink.Handle
	if d.tapSpec.Netns != "" {
		nl, err = netlink.NewHandleAt(ns)
	} else {
		nl, err = netlink.NewHandle()
	}
	if err != nil {
		return fmt.Errorf("--tap %s: netlink: %w", d.opts.TAP, err)
	}
	defer nl.Close()
	l, err := nl.LinkByName(tap.Name())
	if err != nil {
		return fmt.Errorf("--tap %s: %w", d.opts.TAP, err)
	}
	mac := d.cfg.NIC.MAC
	if err := nl.LinkSetHardwareAddr(l, net.HardwareAddr(mac[:])); err != nil {
		return fmt.Errorf("--tap %s: mac %v: %w", d.opts.TAP, mac, err)
	}
	if err := nl.LinkSetUp(l); err != nil {
		return fmt.Errorf("--tap %s: up: %w", d.opts.TAP, err)
	}
	// The kernel's frames are queued by the NIC (bounded per priority);
	// frames up to the kernel may wait for the TAP writer, which never
	// stalls for long: a TAP write does not block.
	d.tapPort, err = d.loop.Attach(tap, rt.PortConfig{Index: 1, Name: d.cfg.NIC.Name + ":" + tap.Name(),
		Log: d.rtLogger(), TxQueue: tapTxQueue, Backpressure: true, Deliver: d.fromHost})
	if err != nil {
		tap.Close()
		d.tap = nil
		return err
	}
	d.nic.SetHostDeliver(d.tapPort.Transmit)
	d.mu.Lock()
	d.carrierTAP = tap
	d.mu.Unlock()
	d.syncCarrier()
	return nil
}

const (
	tapTxQueue  = 512
	linkTxQueue = 512
)

func (d *Daemon) fromHost(fs []*frame.Frame) {
	d.gate.poke()
	for _, f := range fs {
		d.nic.SendHost(f)
	}
}

func (d *Daemon) fromLink(fs []*frame.Frame) {
	d.gate.poke()
	if d.adminDown {
		// A pulled cable: nothing arrives either.
		d.rxAdminDown.Add(uint64(len(fs)))
		for _, f := range fs {
			f.Put()
		}
		return
	}
	if d.wire != nil {
		d.wire.carry(d.clk.Now(), fs)
		return
	}
	for _, f := range fs {
		d.capture(f, false)
		d.nic.Receive(f)
	}
}

func (d *Daemon) rtLogger() *rt.Logger {
	return &rt.Logger{Errorf: d.log.Printf}
}

// NIC is the daemon's NIC: touch it only from a function passed to Do.
func (d *Daemon) NIC() *nic.NIC { return d.nic }

// Config is the NIC configuration taken from the lab file.
func (d *Daemon) Config() *NodeConfig { return d.cfg }

// TAPName is the host interface's name ("" without one).
func (d *Daemon) TAPName() string {
	if d.tap == nil {
		return ""
	}
	return d.tap.Name()
}

// ErrClosed is returned for work posted to a daemon that is shutting down.
var ErrClosed = errors.New("nicd: daemon closed")

// Do runs fn on the loop goroutine, where the NIC lives, and waits for it.
func (d *Daemon) Do(fn func()) error {
	done := make(chan struct{})
	if !d.loop.Post(func() { fn(); close(done) }) {
		return ErrClosed
	}
	select {
	case <-done:
		return nil
	case <-d.loop.Done():
		select {
		case <-done:
			return nil
		default:
			return ErrClosed
		}
	}
}

// Done is closed when the daemon has shut down.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Close shuts the daemon down: the control socket and the metrics server
// stop (the socket file is removed), client sessions are released, the
// loop stops and the ports close (the TAP disappears with its file
// descriptor).
func (d *Daemon) Close() error {
	d.closeOnce.Do(func() {
		close(d.closing)
		if d.ctl != nil {
			d.ctl.close()
		}
		if d.metrics != nil {
			d.metrics.Close()
		}
		d.mu.Lock()
		ln := d.listener
		d.listener = nil
		d.carrierTAP = nil // the TAP goes with the loop's ports
		d.mu.Unlock()
		if ln != nil {
			ln.Close()
		}
		if d.loop != nil {
			// Sessions map client memory: unmap after the engine stopped.
			d.loop.Close()
			for s := range d.sessions {
				s.unmapAll()
			}
		}
		if d.tap != nil && d.tapPort == nil {
			d.tap.Close()
		}
		if d.ctl != nil {
			d.ctl.wait()
		}
		close(d.done)
	})
	return nil
}

// uptime is the time since Start.
func (d *Daemon) uptime() time.Duration { return time.Since(d.start) }

// pid is for status.
var pid = os.Getpid()
