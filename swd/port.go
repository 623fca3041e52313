package swd

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/wire"
)

// swPort is one switch port: its binding, the wire behind it (delay
// lines, loss, corruption), the transport currently attached and the
// daemon's own counters. Everything but the constant fields is touched on
// the loop goroutine only.
type swPort struct {
	d    *Daemon
	idx  int
	name string
	bind *PortBind // nil: the port is not bound (kept down)
	// both is set when the daemon emulates both directions of the wire (a
	// TAP port, whose other side is the kernel, or a link to an emunic,
	// which paces at the link rate but adds no delay, loss or corruption),
	// so the wire's delay, rate, loss and corruption also apply host ->
	// switch. On links to other emuswitches each end emulates its own
	// egress.
	both bool
	// nicPeer is set when the other end is an emunic: its frames come
	// paced at the link rate already (after the machine's scheduling, which
	// may hold megabytes in the socket between the processes), so the
	// ingress wire adds only delay, loss and corruption, and the frame's
	// tail is timed from its release at the port speed (fromPeer).
	nicPeer bool
	// swPeer is set when the other end is an emuswitch (txhold.go bounds
	// the link's ring backlog toward it).
	swPeer bool
	// noFlood leaves the port out of broadcast/multicast flooding: outside
	// the spanning tree of the lab's switches as the links are now
	// (linkstate.go), or named by --no-flood.
	noFlood bool
	// noFloodFlag is --no-flood: out of flooding whatever the tree.
	noFloodFlag bool
	// autoPGs are the lossless PGs whose headroom the built-in sizing
	// decides: a new rate or delay re-sizes them (sim.BuiltinHeadroomPGs).
	autoPGs uint8

	tr  *rt.Port // current transport port, nil while not connected
	tap *rt.TAP
	// direct is set for TAP ports: the loop goroutine writes frames to the
	// TAP itself instead of handing them to the port's writer goroutine.
	// A TAP write never blocks (the kernel queues or drops), and one
	// goroutine hand-off less per frame is a wake-up less of latency and
	// CPU on a 2-core machine (see bench/). The TAP merges consecutive
	// segments of a flow into one GSO write; tapQueued says it may hold
	// a train that flushTAPs (taptx.go) writes after the loop's event.
	direct    bool
	tapQueued bool
	connected bool
	adminUp   bool
	// peerDown: the far end of a ring or UDP link announced it was set
	// down (an emunic's link op) or went silent (a UDP peer's keepalives
	// stopped): the cable is as good as pulled. stateLink is the current
	// transport when it carries link state, for announcing our own the
	// other way.
	peerDown   bool
	peerSilent bool // of peerDown: a UDP peer went silent (rt.PeerLoser)
	stateLink  rt.StateLink
	sched      *lab.LinkSchedule // the link's schedule (link op), nil when none was set

	speed     uint64 // the switch port's speed (lab file)
	rate      uint64 // the wire's rate (link rate; default the port speed)
	delay     clock.Time
	loss      float64
	corrupt   float64
	headBytes int // the peer's cut-through point (0: whole frame)

	out *rt.DelayLine // switch -> peer
	in  *rt.DelayLine // peer -> switch, TAP ports only

	st   portStats
	hold txHold // back-pressure from a socket transport (txhold.go)
	// trBase accumulates the transport counters of transports that went
	// away (a reconnecting seqpacket peer), so totals never go back.
	trBase trStats

	caps []*captureSub
}

// portStats are the daemon's own per-port counters (the switch engine
// counts everything it sees in switchcore.PortCounters).
type portStats struct {
	LinkLossTx, LinkLossRx       uint64 // frames lost by the emulated wire
	LinkCorruptTx, LinkCorruptRx uint64 // frames corrupted by the emulated wire
	NotConnected                 uint64 // frames for a port whose peer is not connected
	FloodRx, FloodTx             uint64 // broadcast/multicast frames flooded from / to this port
	CaptureDrops                 uint64 // capture records dropped: a slow capture client
	// FloodBlocked counts broadcast/multicast frames that arrived on a
	// --no-flood port and were dropped instead of flooded: the peer floods
	// on a link this end blocks (a peer started with another tree).
	FloodBlocked uint64
}

// trStats are a transport's counters, over the transports a port had.
type trStats = rt.PortTotals

// transport is the transport counters so far.
func (p *swPort) transport() trStats {
	s := p.trBase
	if p.tr != nil {
		s.Add(p.tr)
	}
	if p.tap != nil {
		// Written by the loop itself (direct), counted by the TAP.
		c := &p.tap.Counters
		s.TxFrames += c.TxFrames.Load()
		s.TxBytes += c.TxBytes.Load()
		s.TxErrors += c.TxErrors.Load()
	}
	return s
}

// setPeer records the far end's state as its link shows it.
func (p *swPort) setPeer(st rt.PeerState) {
	p.peerDown, p.peerSilent = !st.Up, !st.Up && st.Silent
}

// up is the state the switch engine sees: administratively up and a peer
// attached.
func (p *swPort) up() bool { return p.adminUp && p.connected && !p.peerDown }

// setAdmin sets the port up or down by hand (the link op, a schedule) and
// tells the far end of a ring link, whose carrier goes with it.
func (p *swPort) setAdmin(up bool) {
	p.adminUp = up
	p.syncUp()
	if p.stateLink != nil {
		if err := p.stateLink.SetState(up); err != nil {
			p.d.log.Printf("port %s: telling the peer the link is %s: %v", p.name, lab.StateWord(up), err)
		}
	}
}

func (p *swPort) syncUp() {
	up := p.up()
	if !up {
		p.out.Flush()
		if p.in != nil {
			p.in.Flush()
		}
	}
	p.d.sw.SetPortUp(p.idx, up)
	if p.tap != nil {
		// The host behind a TAP port sees the link as a NIC's PHY would
		// show it: NO-CARRIER while the port is set down.
		if err := p.tap.SetCarrier(up); err != nil {
			p.d.log.Printf("port %s: tap carrier: %v", p.name, err)
		}
	}
}

// Transmit implements switchcore.PortTx: the engine starts f on this port
// now. The frame is captured as the switch sent it, then crosses the wire.
func (p *swPort) Transmit(f *frame.Frame) {
	d := p.d
	now := d.clk.Now()
	lost := p.loss > 0 && d.rng.Float64() < p.loss
	if len(p.caps) > 0 {
		note := f.Note
		switch {
		case d.ib && isIBLink(f.Data):
			note = joinNote(note, wire.IBLinkNote(f.Data, "sent"))
		case !d.ib && isMACControl(f.Data):
			note = joinNote(pfcNote(f.Data, "sent"), note) // then why (an XOFF's or XON's PG)
		case !d.ib && isLinkState(f.Data):
			note = joinNote(note, linkStateNote(f.Data, "sent"))
		}
		if lost {
			note = joinNote(note, "lost on the emulated link")
		}
		d.capture(p, dirTx, f.Data, note)
	}
	if lost {
		p.st.LinkLossTx++
		f.Put()
		return
	}
	if p.corrupt > 0 && d.rng.Float64() < p.corrupt {
		d.corrupt(f)
		p.st.LinkCorruptTx++
	}
	f.Note = ""
	p.out.Push(now, f, f.TailAt)
}

// toPeer is the egress wire's sink: the frame reached the peer's end.
func (p *swPort) toPeer(f *frame.Frame, _, _ clock.Time) {
	if p.tr == nil {
		p.st.NotConnected++
		f.Put()
		return
	}
	if p.direct {
		// The headroom takes the vnet header of a frame written on its
		// own; a failed write is counted by the TAP (TxErrors).
		f.Prepend(rt.VnetHdrLen)
		p.tap.Queue(f.Data, rt.VnetHdrLen)
		p.tapQueued = true
		f.Put()
		return
	}
	p.sendTransport(f)
}

// deliver is the transport's Deliver: a batch arrived from the peer.
func (p *swPort) deliver(fs []*frame.Frame) {
	d := p.d
	if p.in == nil {
		// The peer emulated the wire; its pacer released the frame at our
		// cut-through point, so the tail is still arriving.
		for _, f := range fs {
			if hb := d.headBytes; hb > 0 && f.Len() > hb {
				f.TailAt = f.HeadAt + clock.SerializationTime(f.Len()-hb, p.speed)
			}
			p.ingress(f)
		}
		return
	}
	now := d.clk.Now()
	for _, f := range fs {
		if p.loss > 0 && d.rng.Float64() < p.loss {
			p.st.LinkLossRx++
			if len(p.caps) > 0 {
				d.capture(p, dirRx, f.Data, "lost on the emulated link")
			}
			f.Put()
			continue
		}
		if p.corrupt > 0 && d.rng.Float64() < p.corrupt {
			d.corrupt(f)
			p.st.LinkCorruptRx++
		}
		p.in.Push(now, f, 0)
	}
}

// fromPeer is the ingress wire's sink (TAP ports): the frame's head
// reached the switch at release, its tail arrives at tail.
func (p *swPort) fromPeer(f *frame.Frame, release, tail clock.Time) {
	if p.nicPeer {
		// As deliver does for a peer that emulated the wire itself: the
		// release is the cut-through point, the tail still arriving.
		tail = release
		if hb := p.d.headBytes; hb > 0 && f.Len() > hb {
			tail = release + clock.SerializationTime(f.Len()-hb, p.speed)
		}
	}
	f.HeadAt, f.TailAt = release, max(tail, release)
	p.ingress(f)
}

// ingress hands a frame to the switch, flooding broadcast and multicast.
//
// The switch engine never floods (unknown unicast flooding on a lossless
// fabric is a known cause of PFC deadlocks); unicast is forwarded by the
// static entries and routes built from the lab file. ARP and IPv6
// neighbour discovery still need broadcast and multicast to reach the
// other hosts, so the daemon copies group-addressed frames to every other
// connected port, as a plain L2 switch does, outside the engine's queues.
// IEEE 802.1 reserved addresses (01:80:C2:00:00:0x: PFC, PAUSE, LLDP,
// STP) are link-local and go to the engine, never flooded.
//
// Ports marked noFlood are outside the spanning tree of the lab's
// switches: flooding neither sends on them nor floods what arrives on
// them, as a port in the Discarding state of IEEE 802.1D-2004 (R)STP does,
// so a flood never circulates round a cycle of switches. Unicast still
// uses them (routes, ECMP).
//
// An IB switch never floods (ib.go).
func (p *swPort) ingress(f *frame.Frame) {
	d := p.d
	b := f.Data
	if !d.ib && len(b) >= wire.EthernetSize && b[0]&1 != 0 && !linkLocal(b) {
		d.sw.CountFlooded(p.idx, false, b)
		if p.noFlood {
			if len(p.caps) > 0 {
				d.capture(p, dirRx, b, "not flooded: arrived on a --no-flood port")
			}
			p.st.FloodBlocked++
			f.Put()
			return
		}
		if len(p.caps) > 0 {
			d.capture(p, dirRx, b, "flooded (broadcast/multicast)")
		}
		p.st.FloodRx++
		// The engine learns the sender as if it had taken the frame:
		// the answer to an ARP request is unicast to it.
		d.sw.Learn(p.idx, wire.MAC(b[6:12]))
		now := d.clk.Now()
		for _, q := range d.ports {
			if q == p || q.noFlood || !q.up() {
				continue
			}
			c := f.Clone()
			q.st.FloodTx++
			d.sw.CountFlooded(q.idx, true, b)
			if len(q.caps) > 0 {
				d.capture(q, dirTx, c.Data, "flooded (broadcast/multicast)")
			}
			q.out.Push(now, c, 0)
		}
		f.Put()
		return
	}
	if len(p.caps) == 0 && !d.capturing {
		d.sw.Receive(p.idx, f)
		return
	}
	d.receiveCaptured(p, f)
}

// linkLocal reports whether an Ethernet frame goes to an IEEE 802.1
// reserved address 01:80:C2:00:00:00..0F.
func linkLocal(b []byte) bool {
	return b[0] == 0x01 && b[1] == 0x80 && b[2] == 0xC2 && b[3] == 0 && b[4] == 0 && b[5] <= 0x0F
}

// corrupt damages f as a bit error on the emulated wire.
func (d *Daemon) corrupt(f *frame.Frame) {
	rt.Corrupt(f, d.ib)
}

// isMACControl reports whether an Ethernet frame is a MAC Control frame
// (PFC, PAUSE).
func isMACControl(b []byte) bool {
	return len(b) >= wire.EthernetSize && b[12] == 0x88 && b[13] == 0x08
}

// emunicPeer reports whether the port's other end is an emunic, which
// paces its frames at the link rate itself. A lab's `kind: nic` host
// behind a TAP (`emulab up --hosts tap`) is the host's kernel instead: it
// sends as fast as the machine lets it, so the switch must pace what it
// sends (the ingress wire at the link rate) and a `link set ... rate`
// must reach that wire too. Taking the node's kind alone left a TAP
// host's transmit unpaced at any rate.
func emunicPeer(bind *PortBind, peer *lab.Port) bool {
	if bind != nil && bind.Kind == TAPLink {
		return false
	}
	return peer != nil && peer.Node.Kind == lab.KindNIC
}
