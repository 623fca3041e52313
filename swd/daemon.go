// Package swd is the emuswitch daemon: one switchcore.Switch in real time.
// An rt.Loop owns the engine; each switch port is bound to a transport (a
// unix SOCK_SEQPACKET link to a NIC or another switch, a UDP link to a
// switch on another machine, or a TAP device in a host's namespace) behind
// an emulated wire (rate, delay, loss, corruption; linkemu.go). A control
// socket serves counters, status, run-time link changes and live pcapng
// capture (control.go, capture.go); an optional HTTP listener serves
// Prometheus metrics (metrics.go).
//
// A lab of fabric ib runs the same engine in native InfiniBand mode
// (ib.go): every transport message is one raw IB packet, LRH through VCRC,
// or one 6-byte link (flow-control) packet; there is no Ethernet, so no
// TAP ports and no flooding, and captures are ERF records.
//
// cmd/emuswitch only turns flags into Options and calls Run.
package swd

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/switchcore"
	"github.com/emufabric/emufabric/wire"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// DialTimeout bounds how long a seqpacket-dial port retries before the
// daemon gives up starting.
var DialTimeout = 30 * time.Second

// txQueue is a socket transport's writer queue. When the peer (or the
// machine) cannot keep up with the emulated port, the engine's transmitter
// for the port is held before the queue fills (txhold.go), so frames wait
// in the switch's egress queues under PFC and ECN instead of being
// dropped; a frame that still finds the queue full is dropped and counted
// (transport_tx_queue_drop). TAP ports are written by the loop itself (see
// swPort.direct): a TAP write never blocks.
const txQueue = 1024

// Daemon is a running emuswitch.
type Daemon struct {
	opts Options
	spec *lab.Spec
	node *lab.Node
	// static is the lab file's own routes, which link-state routing keeps
	// (linkstate.go).
	static    []switchcore.Route
	lsEnabled bool    // link-state routing runs (a RoCE switch)
	cutKey    *string // the links down the routes were last computed without (nil: never)
	// everUp and loggedCut: what logCut has seen (linkstate.go).
	everUp    map[*lab.Link]bool
	loggedCut string
	log       *log.Logger

	loop *rt.Loop
	clk  *rt.Clock
	sw   *switchcore.Switch
	rng  *rand.Rand // loop goroutine: wire loss and corruption

	ports     []*swPort
	headBytes int
	// ib is set for a lab of fabric ib (ib.go); vls is then the number
	// of data VLs the switch runs.
	ib  bool
	vls int

	// Capture state, loop goroutine.
	capturing bool
	cur       *frame.Frame // the frame inside sw.Receive, for trace notes
	curNote   string
	held      []heldRecord // capture records made during sw.Receive of cur

	started time.Time

	ctl         net.Listener
	httpSrv     *http.Server
	metricsAddr string
	listeners   []*rt.SeqpacketListener

	quit      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	rtLog     *rt.Logger
}

// New builds the switch of opts.Node from the lab file, binds every port,
// and opens the control socket and the metrics listener. The loop is not
// running yet: Start runs it. Errors name the flag and value at fault.
func New(opts Options, logw io.Writer) (*Daemon, error) {
	return NewContext(context.Background(), opts, logw)
}

// NewContext is New, given up when ctx is done: a seqpacket-dial port
// retries for up to DialTimeout while its peer is not listening yet, and
// a SIGTERM in that time must stop the daemon at once, not after the
// retries. The error then wraps ctx.Err(), and whatever was created so
// far (listening sockets, TAPs) is gone.
func NewContext(ctx context.Context, opts Options, logw io.Writer) (*Daemon, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if logw == nil {
		logw = os.Stderr
	}
	d := &Daemon{opts: opts, log: log.New(logw, "emuswitch "+opts.Node+": ", log.LstdFlags|log.Lmicroseconds), quit: make(chan struct{}), started: time.Now()}
	d.rtLog = &rt.Logger{Errorf: d.log.Printf}
	spec, err := lab.Load(opts.Lab)
	if err != nil {
		return nil, fmt.Errorf("--lab %s: %w", opts.Lab, err)
	}
	d.spec = spec
	d.node = spec.Node(opts.Node)
	if d.node == nil {
		return nil, fmt.Errorf("--node %s: no such node in %s", opts.Node, opts.Lab)
	}
	if d.node.Kind != lab.KindSwitch {
		return nil, fmt.Errorf("--node %s: node is a %s, not a switch", opts.Node, d.node.Kind)
	}
	d.ib = spec.Fabric == lab.FabricIB
	binds := make(map[string]*PortBind, len(opts.Ports))
	for i := range opts.Ports {
		b := &opts.Ports[i]
		if d.node.Port(b.Port) == nil {
			return nil, fmt.Errorf("--port %s=%s: switch %s has no port %s", b.Port, b.URI, opts.Node, b.Port)
		}
		if d.ib && b.Kind == TAPLink {
			return nil, fmt.Errorf("--port %s=%s: fabric ib: a TAP is an Ethernet device and an IB switch port carries IB packets (LRH ... VCRC); bind %s with seqpacket-listen, seqpacket-dial or udp", b.Port, b.URI, b.Port)
		}
		binds[b.Port] = b
	}
	noFlood := make(map[string]bool, len(opts.NoFlood))
	for _, name := range opts.NoFlood {
		if d.node.Port(name) == nil {
			return nil, fmt.Errorf("--no-flood %s: switch %s has no port %s", name, opts.Node, name)
		}
		if !d.ib {
			noFlood[name] = true
		}
	}
	if d.ib && len(opts.NoFlood) > 0 {
		d.log.Printf("fabric ib: --no-flood %v has no effect: an IB switch never floods (it forwards by DLID through its LFT)", opts.NoFlood)
	}
	cfg, err := sim.SwitchConfig(spec, d.node, spec.Sim.Seed)
	if err != nil {
		return nil, fmt.Errorf("--node %s: %w", opts.Node, err)
	}
	d.clk = rt.NewClock(spec.Dilation(opts.Dilation)) // before configureIB, which scales by it
	if d.ib {
		d.configureIB(spec, cfg)
	} else {
		d.static = slices.Clone(cfg.Routes) // the file's own, before the NICs' (linkstate.go)
		addHostForwarding(spec, d.node, cfg)
	}

	d.loop = rt.NewLoop(d.clk)
	d.loop.SetAfterEvent(d.afterEvent)
	d.sw, err = switchcore.New(cfg, d.clk, d.loop.Pool())
	if err != nil {
		return nil, fmt.Errorf("--node %s: %w", opts.Node, err)
	}
	d.headBytes = d.sw.HeadBytes()
	h := fnv.New64a()
	h.Write([]byte(opts.Node))
	seed := spec.Sim.Seed ^ h.Sum64()
	d.rng = rand.New(rand.NewPCG(seed, seed^0x5851F42D4C957F2D))
	d.sw.SetTrace(d.trace)
	if d.ib {
		if err := d.enableSMA(spec); err != nil {
			return nil, fmt.Errorf("--node %s: %w", opts.Node, err)
		}
	}

	// Ports outside the spanning tree of the lab's switches do not flood
	// (lab.FloodBlocked); link-state routing recomputes the tree when
	// links go down and come back (linkstate.go). IB switches never flood.
	var tree map[*lab.Node][]string
	if !d.ib {
		tree = lab.FloodBlocked(spec, nil)
	}
	for i, lp := range d.node.Ports {
		p := &swPort{d: d, idx: i, name: lp.Name, bind: binds[lp.Name], adminUp: true, speed: d.sw.PortSpeed(i),
			noFloodFlag: noFlood[lp.Name], noFlood: noFlood[lp.Name] || slices.Contains(tree[d.node], lp.Name),
			autoPGs: sim.BuiltinHeadroomPGs(cfg, d.node, i)}
		p.rate = p.speed
		if lp.Link != nil {
			p.delay, p.loss, p.corrupt = lp.Link.Delay, lp.Link.Loss, lp.Link.Corrupt
			if lp.Link.Rate > 0 {
				p.rate = lp.Link.Rate
			}
		}
		if lp.Peer != nil && lp.Peer.Node.Kind == lab.KindSwitch && lp.Peer.Node.CutThrough {
			p.headBytes = lp.Peer.Node.HeaderBytes
			if p.headBytes <= 0 {
				p.headBytes = switchcore.DefaultHeadBytes
			}
		}
		// The switch emulates the wire both ways where the other end does
		// not: a TAP (the host's kernel) and an emunic, whose engine times
		// its frames at the link rate but adds no propagation delay, loss
		// or corruption. Between two emuswitches each end emulates its own
		// egress.
		p.nicPeer = emunicPeer(p.bind, lp.Peer)
		p.swPeer = lp.Peer != nil && lp.Peer.Node.Kind == lab.KindSwitch
		p.both = p.bind != nil && (p.bind.Kind == TAPLink || p.nicPeer)
		// The wire is free for the next frame its per-frame overhead
		// (preamble, FCS, inter-frame gap) after a tail, as the engine's
		// egress and the simulator's links count it.
		ovh := wire.Overhead(d.ib)
		p.out = rt.NewDelayLine(d.clk, rt.PacerConfig{Rate: p.rate, Delay: p.delay, HeadBytes: p.headBytes, Overhead: ovh}, p.toPeer)
		p.out.Lossless = d.ib
		if p.both {
			in := rt.PacerConfig{Rate: p.rate, Delay: p.delay, HeadBytes: d.headBytes, Overhead: ovh}
			if p.nicPeer {
				in = rt.PacerConfig{Rate: rt.Unpaced, Delay: p.delay}
			}
			p.in = rt.NewDelayLine(d.clk, in, p.fromPeer)
			p.in.Lossless = d.ib
		}
		d.ports = append(d.ports, p)
		// Down until a peer connects (syncUp then brings it up): a port
		// with nothing behind it is down, and has lost no link yet. An IB
		// port starts its link flow control (ResetIBFlowControl, then the
		// engine's first flow-control packets) when it does, not into the
		// void.
		d.sw.StartPortDown(i)
		d.sw.Attach(i, p)
	}
	d.enableLinkState()
	if err := d.bindAll(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.listenControl(); err != nil {
		d.Close()
		return nil, err
	}
	if opts.Metrics != "" {
		if err := d.serveMetrics(); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// addHostForwarding adds what the lab file implies for the NICs: a route
// to each NIC's IPv4 /32 along its shortest paths (ECMP where several),
// unless the file routes it, and a static FDB entry for the MAC of each
// directly attached NIC (whose TAP the daemon creates with that MAC).
func addHostForwarding(spec *lab.Spec, sw *lab.Node, cfg *switchcore.Config) {
	for _, nic := range spec.NICs() {
		via := spec.NextHops(sw, nic)
		if len(via) == 0 {
			continue
		}
		a := netip.AddrFrom4(nic.IPv4)
		covered := false
		for _, r := range cfg.Routes {
			if r.Prefix.Contains(a) {
				covered = true
				break
			}
		}
		if !covered {
			cfg.Routes = append(cfg.Routes, switchcore.Route{Prefix: netip.PrefixFrom(a, 32), Ports: via})
		}
		for _, p := range sw.Ports {
			if p.Peer != nil && p.Peer.Node == nic {
				cfg.L2 = append(cfg.L2, switchcore.L2Entry{MAC: nic.MAC, Port: p.Index})
			}
		}
	}
}

// bindAll creates every port's transport. Listening ports count as bound
// once they listen (their peer may start later); dialing ports retry until
// DialTimeout or until ctx is done.
func (d *Daemon) bindAll(ctx context.Context) error {
	for _, p := range d.ports {
		b := p.bind
		if b == nil {
			continue
		}
		flag := fmt.Sprintf("--port %s=%s", b.Port, b.URI)
		switch b.Kind {
		case TAPLink:
			tap, err := d.createTAP(p)
			if err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
			p.tap = tap
			if err := d.attach(p, tap); err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
		case UDPLink:
			u, err := rt.DialUDP(b.Local, b.Remote)
			if err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
			if err := d.attach(p, u); err != nil {
				u.Close()
				return fmt.Errorf("%s: %w", flag, err)
			}
		case SeqpacketListen:
			removeStaleSocket(b.Path)
			ln, err := rt.ListenSeqpacket(b.Path)
			if err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
			d.listeners = append(d.listeners, ln)
			d.wg.Add(1)
			go d.acceptLoop(p, ln)
		case SeqpacketDial:
			d.log.Printf("port %s: dialling %s", p.name, b.Path)
			sp, err := d.dial(ctx, b, DialTimeout)
			if err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
			if err := d.attach(p, sp); err != nil {
				sp.Close()
				return fmt.Errorf("%s: %w", flag, err)
			}
		}
	}
	return nil
}

// createTAP creates a port's TAP in its namespace, with the lab's MTU and,
// when the peer is a NIC of the lab, the NIC's MAC address (the static FDB
// entry and the other hosts' view of it depend on it).
func (d *Daemon) createTAP(p *swPort) (*rt.TAP, error) {
	b := p.bind
	ns := netns.None()
	if b.NetNS != "" {
		h, err := netns.GetFromName(b.NetNS)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", b.NetNS, err)
		}
		defer h.Close()
		ns = h
	}
	lp := d.node.Ports[p.idx]
	mtu := 0
	if lp.Link != nil {
		mtu = lp.Link.MTU
	}
	tap, err := rt.CreateTAP(rt.TAPConfig{Name: b.IfName, NetNS: ns, MTU: mtu})
	if err != nil {
		return nil, err
	}
	// No carrier until the port is up (syncUp): the carrier then comes on
	// as an event, which makes the host's operstate UP; a TAP created
	// with its carrier on stays UNKNOWN.
	if err := tap.SetCarrier(false); err != nil {
		tap.Close()
		return nil, err
	}
	nl, err := nlHandle(ns)
	if err != nil {
		tap.Close()
		return nil, err
	}
	defer nl.Close()
	l, err := nl.LinkByName(tap.Name())
	if err != nil {
		tap.Close()
		return nil, fmt.Errorf("TAP %s: %w", tap.Name(), err)
	}
	if lp.Peer != nil && lp.Peer.Node.Kind == lab.KindNIC {
		mac := lp.Peer.Node.MAC
		if err := nl.LinkSetHardwareAddr(l, net.HardwareAddr(mac[:])); err != nil {
			tap.Close()
			return nil, fmt.Errorf("TAP %s: set MAC: %w", tap.Name(), err)
		}
	}
	if err := nl.LinkSetUp(l); err != nil {
		tap.Close()
		return nil, fmt.Errorf("TAP %s: up: %w", tap.Name(), err)
	}
	return tap, nil
}

func nlHandle(ns netns.NsHandle) (*netlink.Handle, error) {
	if ns > 0 {
		return netlink.NewHandleAt(ns)
	}
	return netlink.NewHandle()
}

// removeStaleSocket removes a socket file nobody listens on (left by a
// killed daemon), so a restarted daemon can listen again. Anything else at
// the path is left for ListenSeqpacket to fail on.
func removeStaleSocket(path string) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return
	}
	if c, err := net.Dial("unixpacket", path); err == nil {
		c.Close()
		return
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return
	}
	os.Remove(path)
}

// dial connects a seqpacket port (and joins its rings, shm-dial),
// retrying until timeout, Close or ctx is done.
func (d *Daemon) dial(ctx context.Context, b *PortBind, timeout time.Duration) (rt.Link, error) {
	path := b.Path
	deadline := time.Now().Add(timeout)
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-d.quit:
			return nil, rt.ErrClosed
		case <-retry.C:
		}
		sp, err := rt.DialSeqpacket(path)
		if err == nil {
			if !b.Shm {
				return sp, nil
			}
			var s *rt.Shm
			stop, release := d.stopOn(ctx)
			s, err = rt.ShmOver(sp, false, stop)
			release()
			if err == nil {
				return s, nil
			}
			d.log.Printf("dial %s: %v", path, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no peer listening after %v: %w", timeout, err)
		}
		retry.Reset(50 * time.Millisecond)
	}
}

// stopOn returns a channel closed when ctx is done or the daemon closes,
// whichever comes first (a ring setup gives up then), and the function
// that releases it once the setup is over.
func (d *Daemon) stopOn(ctx context.Context) (<-chan struct{}, func()) {
	if ctx.Done() == nil {
		return d.quit, func() {}
	}
	c, over := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			close(c)
		case <-d.quit:
			close(c)
		case <-over:
		}
	}()
	return c, func() { close(over) }
}

// acceptLoop accepts the port's peer, and again whenever it goes away.
func (d *Daemon) acceptLoop(p *swPort, ln *rt.SeqpacketListener) {
	defer d.wg.Done()
	for {
		acc, err := ln.Accept()
		if err != nil {
			select {
			case <-d.quit:
			default:
				d.log.Printf("port %s: accept: %v", p.name, err)
			}
			return
		}
		var sp rt.Link = acc
		if p.bind.Shm {
			if sp, err = rt.ShmOver(acc, true, d.quit); err != nil {
				// The peer left before taking the rings (or was not an
				// emufabric daemon): wait for the next one.
				d.log.Printf("port %s: %v", p.name, err)
				continue
			}
		}
		done := make(chan *rt.Port, 1)
		if !d.loop.Post(func() {
			tp, err := d.attachLoop(p, sp)
			if err != nil {
				d.log.Printf("port %s: %v", p.name, err)
				sp.Close()
			}
			done <- tp
		}) {
			sp.Close()
			return
		}
		tp := <-done
		if tp == nil {
			continue
		}
		d.log.Printf("port %s: peer connected on %s", p.name, ln.Path())
		if !d.waitGone(p, tp) {
			return
		}
	}
}

// redialLoop reconnects a seqpacket-dial port whose peer went away.
func (d *Daemon) redialLoop(p *swPort, tp *rt.Port) {
	defer d.wg.Done()
	for {
		if !d.waitGone(p, tp) {
			return
		}
		sp, err := d.dial(context.Background(), p.bind, 365*24*time.Hour)
		if err != nil {
			return // closing
		}
		done := make(chan *rt.Port, 1)
		if !d.loop.Post(func() {
			t, err := d.attachLoop(p, sp)
			if err != nil {
				d.log.Printf("port %s: %v", p.name, err)
				sp.Close()
			}
			done <- t
		}) {
			sp.Close()
			return
		}
		if tp = <-done; tp == nil {
			return
		}
		d.log.Printf("port %s: reconnected to %s", p.name, p.bind.Path)
	}
}

// waitGone waits until transport port tp stops (peer left or link failed)
// and marks the switch port disconnected; false when the daemon closes.
func (d *Daemon) waitGone(p *swPort, tp *rt.Port) bool {
	select {
	case <-tp.Done():
	case <-d.quit:
		return false
	}
	if err := tp.Err(); err != nil && !errors.Is(err, rt.ErrClosed) {
		d.log.Printf("port %s: link stopped: %v", p.name, err)
	} else {
		d.log.Printf("port %s: peer went away", p.name)
	}
	tp.Close()
	return d.loop.Post(func() {
		if p.tr == tp {
			p.trBase.Add(tp)
			p.tr = nil
			p.resetHold()
			p.connected = false
			p.syncUp()
		}
	})
}

// attach attaches a transport before the loop runs.
func (d *Daemon) attach(p *swPort, link rt.Link) error {
	tp, err := d.attachLoop(p, link)
	if err != nil {
		return err
	}
	if p.bind.Kind == SeqpacketDial {
		d.wg.Add(1)
		go d.redialLoop(p, tp)
	}
	return nil
}

// attachLoop attaches link as p's transport; before Run or on the loop
// goroutine.
func (d *Daemon) attachLoop(p *swPort, link rt.Link) (*rt.Port, error) {
	cfg := rt.PortConfig{Index: p.idx, Name: d.opts.Node + ":" + p.name, Log: d.rtLog, Deliver: p.deliver}
	cfg.TxQueue = txQueue
	tp, err := d.loop.Attach(link, cfg)
	if err != nil {
		return nil, err
	}
	p.tr = tp
	p.resetHold()
	p.direct = p.bind.Kind == TAPLink
	p.connected = true
	p.stateLink = nil
	p.setPeer(rt.PeerState{Up: true})
	if sl, ok := link.(rt.StateLink); ok {
		// The far end's link state (an emunic set down by hand, a UDP
		// peer gone silent) and ours travel on the link, as a cable's
		// carrier: a ring link's socket, a UDP link's keepalives. On IB
		// the port then goes Down and, back, Init at once (the SMA sees
		// it: switchcore SetPortUp), and the subnet manager activates it.
		// The callback first, then the state: no change falls between.
		p.stateLink = sl
		sl.OnPeerState(func(st rt.PeerState) {
			d.loop.Post(func() {
				if p.tr == tp {
					p.setPeer(st)
					p.syncUp()
					d.log.Printf("port %s: %s", p.name, rt.PeerStateWords(st))
				}
			})
		})
		p.setPeer(sl.PeerState())
		if !p.adminUp {
			sl.SetState(false)
		}
	}
	if d.ib {
		// A new peer (a restarted emunic, a redialled switch) counts its
		// blocks from 0: so do we (IBA 7.9.4, LinkInitialize).
		d.sw.ResetIBFlowControl(p.idx)
	}
	p.syncUp()
	return tp, nil
}

// Start runs the loop. Every port is bound when New returned, so the
// caller prints readiness after Start.
func (d *Daemon) Start() {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.loop.Run()
	}()
	if d.ctl != nil {
		d.wg.Add(1)
		go d.serveControl()
	}
}

// Close stops everything: the control socket and metrics listener, the
// accept and redial goroutines, the loop and every transport (which
// unblocks their readers); socket files the daemon created are removed.
// The TAPs disappear with their descriptors.
func (d *Daemon) Close() error {
	d.closeOnce.Do(func() {
		close(d.quit)
		if d.ctl != nil {
			d.ctl.Close() // removes the socket file
		}
		if d.httpSrv != nil {
			d.httpSrv.Close()
		}
		for _, ln := range d.listeners {
			ln.Close() // unblocks Accept, removes the socket file
		}
		if d.loop != nil {
			d.loop.Close()
		}
		d.wg.Wait()
	})
	return nil
}

// Uptime is how long the daemon has run.
func (d *Daemon) Uptime() time.Duration { return time.Since(d.started) }
