// Package nic is an RDMA NIC (RNIC) for RoCEv2, I/O-free and
// clock-injected: it sits between a host and the wire, as a ConnectX card
// does, and is driven by the simulator or by the real-time daemon through
// four calls (Receive a frame from the wire, SendHost a frame from the host
// kernel, Transmit on the port it is attached to, deliver frames up to the
// host) and the timers of an injected clock.Clock.
//
// Inside:
//
//   - a verbs-shaped API (verbs.go, mr.go, cq.go, qp.go, qpstate.go):
//     protection domains, memory regions over caller memory, completion
//     queues, RC/UC/UD queue pairs with the IBA state machine and ModifyQP
//     attribute masks, PostSend/PostRecv/PollCQ, work completions with
//     libibverbs names;
//   - the transport, as three state machines in the manner of Linux rxe:
//     the requester (req.go) turns send WQEs into packets, the completer
//     (comp.go) matches ACKs, NAKs and responses against them and
//     retransmits go-back-N, the responder (resp.go) checks and executes
//     requests and answers them;
//   - the datapath (datapath.go, classify.go, pfc.go, ratelimit.go):
//     classification by DSCP or PCP, eight priority queues honouring
//     received PFC, per-QP pacing driven by a cc.Algorithm (DCQCN), CNP
//     generation (notification point) and handling (reaction point), ICRC
//     verification;
//   - counters with mlx5 hw_counters and ethtool names (counters.go).
//
// A NIC is not safe for concurrent use: one goroutine, or the one
// simulator, drives it.
package nic

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

// PortTx is the transmit side of the NIC's port, implemented by the driver
// (a simulated link end, a real-time socket). It has the shape of
// switchcore.PortTx: Transmit is called at the frame's start time with
// f.TailAt set to when its last bit leaves, and takes ownership.
type PortTx interface{ Transmit(f *frame.Frame) }

// NIC is one RDMA NIC with one Ethernet port.
type NIC struct {
	cfg  Config
	clk  clock.Clock
	pool *frame.Pool
	tx   PortTx
	host func(f *frame.Frame)

	dscp2prio [64]uint8
	pfcHonour [8]bool
	ip4       bool
	ip        netip.Addr
	np        *cc.NP

	// Egress: MAC control frames first, then strict priority 7..0 over
	// per-priority queues of frames (host, CNP) and active QPs.
	macCtl    fifo
	q         [8]txQueue
	busyUntil clock.Time
	portTimer clock.Timer
	linkDown  bool
	txHeld    bool // SetTxHeld: the driver's transport is full

	// Engine.
	qps      []*QP // by QP number
	mrs      []*MR // by key >> 8
	nextPD   uint32
	nextVA   uint64
	mrKeyGen uint8
	ipID     uint16

	// Native IB link layer (ib.go, iblink.go, ipoib.go).
	ibl      ibLink
	ipoibPSN uint32
	sma      *sma // QP0's agent, nil without one (sma.go)
	// QP1, the GSI (gsi.go).
	gsiPSN     uint32
	gsiBuf     [256]byte
	gmpDeliver func(m mad.MAD, slid uint16)

	// Scratch reused frame after frame (the hot path allocates nothing).
	ibf    bth.IBFields
	ibpkt  bth.IBPacket
	pkt    bth.Packet
	grh    [grhSize]byte
	rf     bth.RoCEFields
	mc     wire.MACControl
	mcTx   wire.MACControl // a PFC frame sent (assertXoff)
	gather [4096]byte

	trace func(qpn uint32, machine, state string)

	cnt  [numCounters]uint64
	prio [8]PrioCounters
	port PortCounters
}

// New returns a NIC for cfg (defaults filled in, then validated), driven by
// clk, making its frames from pool.
func New(cfg *Config, clk clock.Clock, pool *frame.Pool) (*NIC, error) {
	c := *cfg
	if c.DCQCN != nil {
		d := *c.DCQCN
		c.DCQCN = &d
	}
	c.fill()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n := &NIC{cfg: c, clk: clk, pool: pool, nextVA: mrVABase}
	n.ip = c.IP.Unmap()
	n.ip4 = n.ip.Is4()
	n.dscp2prio = defaultDSCP2Prio()
	if c.DSCP2Prio != nil {
		n.dscp2prio = *c.DSCP2Prio
	}
	for p := range 8 {
		n.pfcHonour[p] = c.PFC == nil || c.PFC[p]
	}
	if !c.NPDisabled {
		n.np = cc.NewNP(*c.DCQCN)
	}
	n.portTimer = clk.NewTimer(n.kick)
	if c.Fabric == FabricIB {
		n.ibl.fcTimer = clk.NewTimer(n.fcTick)
		n.ibl.wd = clk.NewTimer(n.watchdog)
		if c.SMA != nil {
			n.newSMA(c.SMA)
		}
	}
	return n, nil
}

// Config returns the NIC's configuration with defaults filled in.
func (n *NIC) Config() Config { return n.cfg }

// Name is the NIC's name.
func (n *NIC) Name() string { return n.cfg.Name }

// Attach connects the NIC's port to the wire.
func (n *NIC) Attach(tx PortTx) {
	n.tx = tx
	n.smaLink(!n.linkDown)
	if n.ib() {
		n.ibStart(true)
		n.armWatchdog()
	}
	n.wake()
}

// SetLinkUp tells the NIC its link went down or came back; telling it
// what it already knows does nothing. While it is down nothing is
// transmitted: frames and QPs wait, and RC timers keep running, as on a
// NIC whose cable was pulled.
func (n *NIC) SetLinkUp(up bool) {
	if n.linkDown == !up {
		return // no change: in particular no new IB link start-up
	}
	if !up && n.tx != nil {
		// A link that was up (a transmitter attached, not down) lost its
		// carrier: the cable, the far end set down, the far end gone.
		// link_down_events_phy counts it, and link_downed, as rxe counts
		// it on RoCE and IB's LinkDownedCounter on IB, unless the IB
		// watchdog already counted the link lost for silence.
		n.port.LinkDownEventsPhy++
		if !n.ib() || !n.ibl.lost {
			n.cnt[LinkDowned]++
		}
		// No XOFF is asserted on a link that is down.
		n.endXoff(n.clk.Now())
	}
	n.linkDown = !up
	n.smaLink(up && n.tx != nil)
	if up {
		if n.ib() {
			n.ibStart(false)
			n.armWatchdog()
		}
		n.wake()
	}
}

// Rate is the port's line rate (bits per second).
func (n *NIC) Rate() uint64 { return n.cfg.Rate }

// SetRate changes the port's line rate while the NIC runs (a link's rate
// set at run time, as `emulab link set ... rate` does): the frame on the
// wire sends the rest of its bits at it and the next ones are serialized at
// it, PFC pause quanta count at it, the SMA reports it and QPs connected
// from now on start their DCQCN from it; a QP whose DCQCN rate is above it
// sends at line rate. 0 is ignored.
func (n *NIC) SetRate(bps uint64) {
	if bps == 0 {
		return
	}
	if now := n.clk.Now(); n.busyUntil > now && n.cfg.Rate > 0 {
		n.busyUntil = now + clock.Time(float64(n.busyUntil-now)*float64(n.cfg.Rate)/float64(bps))
	}
	n.cfg.Rate = bps
	n.wake()
}

// SetTxHeld holds the transmitter back (held) or releases it, without
// touching the link: a real-time driver whose transport to the wire is
// full uses it, as a NIC's MAC waits for its PHY. Frames and QPs wait, RC
// timers run; the SMA and the peer see no link change.
func (n *NIC) SetTxHeld(held bool) {
	n.txHeld = held
	if !held {
		n.wake()
	}
}

// HeadBytes is 0: a NIC stores and forwards, it acts on whole frames.
func (n *NIC) HeadBytes() int { return 0 }

// SetHostDeliver sets where frames that are not for the RDMA engine go
// (the host's kernel; later the TAP). Without it they are dropped and
// counted (rx_no_host).
func (n *NIC) SetHostDeliver(f func(f *frame.Frame)) { n.host = f }

// SetTrace sets a function called at every step of the requester,
// completer and responder state machines with the QP number, the machine
// ("req", "comp", "resp") and the state's name (as rxe logs them). nil
// turns tracing off; the hot path then pays one nil check per step.
func (n *NIC) SetTrace(f func(qpn uint32, machine, state string)) { n.trace = f }

// QP returns the QP with number qpn, or nil.
func (n *NIC) QP(qpn uint32) *QP {
	if int(qpn) < len(n.qps) {
		return n.qps[qpn]
	}
	return nil
}

// GID returns the NIC's RoCEv2 GID (its IP address, IPv4-mapped for IPv4);
// for an IB port its default GID, the link-local prefix fe80::/64 with the
// port GUID (IBA 4.1.1), the GUID its SMA reports.
func (n *NIC) GID() netip.Addr {
	if n.ib() {
		var g [16]byte
		g[0], g[1] = 0xfe, 0x80
		binary.BigEndian.PutUint64(g[8:], n.PortGUID())
		return netip.AddrFrom16(g)
	}
	if n.ip4 {
		return netip.AddrFrom16(n.ip.As16())
	}
	return n.ip
}

// PortGUID is an IB port's GUID: its SMA's node GUID + 1 (as a one-port
// CA numbers it), or without an SMA the MAC as a modified EUI-64.
func (n *NIC) PortGUID() uint64 {
	if c := n.cfg.SMA; c != nil {
		return c.NodeGUID + 1
	}
	m := n.cfg.MAC
	return binary.BigEndian.Uint64([]byte{m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]})
}

func (n *NIC) String() string { return fmt.Sprintf("nic %s (%v, %v)", n.cfg.Name, n.cfg.MAC, n.ip) }
