package nicd

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/rt"
)

// txGate is the NIC's PortTx on a real transport. The NIC serializes at
// the emulated link rate, which may be faster than the machine moves
// frames between processes (a 100 Gb/s link on a laptop), and the real-
// time clock replays late timers in bursts. A real NIC never drops on its
// own egress: when the transport's queue holds more than gateHigh frames
// the gate holds the NIC's transmitter (nic.SetTxHeld: frames and QPs
// wait, RC timers keep running, the link stays up for the SMA and the
// peer) and polls until the writer has drained below gateLow. So the engine's RDMA traffic slows to what the
// machine can carry instead of losing frames to the port queue (which
// would cost go-back-N retransmissions), and kernel traffic sees the NIC's
// own per-priority queues fill, as behind a slower wire.
//
// The gate also holds the NIC while the link's backlog (the bytes the
// switch has not read yet: in the port writer's queue and in the ring,
// rt.Port.TxBacklog) is above
// rt.MaxBacklog of the link's rate, and releases it at half that. Without
// that bound a switch that runs late, as one does on a busy machine, finds
// up to the ring's 4 MiB waiting when it wakes: at 2 Gb/s 17 ms of the
// link, all of it sent before the switch could see it and send XOFF. An
// incast then overran the lossless PG's 40 KiB headroom by megabytes per
// sender, the egress queue grew past 70 ms and RC's 67 ms ACK timeout
// (perftest's -u 14) fired until the QPs failed with retry exceeded. Held,
// the NIC loses the link time the switch lost instead: its frames wait in
// its own queues, behind PFC, where a real NIC's would be. Loop goroutine
// only.
type txGate struct {
	nic   *nic.NIC
	port  *rt.Port
	clk   *rt.Clock
	timer clock.Timer
	poll  clock.Time
	sent  uint64 // frames handed to the port
	up    bool   // the link is connected
	admin bool   // the link is administratively up (the link op)
	// peer: the far end (a switch port) has not announced it was set
	// down: the cable is as good as pulled while it is.
	peer  bool
	held  bool   // the gate holds the NIC back
	holds uint64 // times the gate closed, for status
	// backlogHolds counts the holds for the link's backlog (the peer
	// reading late), of holds.
	backlogHolds uint64
	backlogMax   int // the largest backlog seen, bytes
	tap          func(f *frame.Frame, tx bool)
	dead         bool // replaced by the gate of a new connection
}

const (
	gateHigh = linkTxQueue * 3 / 4
	gateLow  = linkTxQueue / 4
	// gatePoll is the wall time between checks while held: at 10 Gb/s
	// the writer moves about 60 frames of 4 KiB in it, well inside
	// gateHigh - gateLow.
	gatePollWall = 20 * clock.Microsecond
)

func newTxGate(n *nic.NIC, p *rt.Port, clk *rt.Clock) *txGate {
	g := &txGate{nic: n, port: p, clk: clk, admin: true, peer: true, poll: max(gatePollWall/clock.Time(clk.Dilation()), clock.Nanosecond)}
	g.timer = clk.NewTimer(g.check)
	return g
}

var _ nic.PortTx = (*txGate)(nil)

// inflight is the number of frames handed to the port that the writer has
// not finished with (written, refused or dropped).
func (g *txGate) inflight() uint64 {
	c := &g.port.Counters
	done := c.TxFrames.Load() + c.TxQueueDrops.Load() + c.TxErrors.Load()
	if done >= g.sent {
		return 0
	}
	return g.sent - done
}

// Transmit implements nic.PortTx.
func (g *txGate) Transmit(f *frame.Frame) {
	if g.tap != nil {
		g.tap(f, true)
	}
	g.port.Transmit(f)
	g.sent++
	if g.held {
		return
	}
	b := g.port.TxBacklog()
	g.backlogMax = max(g.backlogMax, b)
	over := b >= rt.MaxBacklog(g.nic.Rate())
	if over || g.inflight() >= gateHigh {
		g.held = true
		g.holds++
		if over {
			g.backlogHolds++
		}
		g.apply()
		g.timer.Reset(g.clk.Now() + g.poll)
	}
}

// poke re-checks a held gate when the loop runs anyway (a batch of frames
// arrived): the clock's alarm fires tens of microseconds late, long enough for
// the writer to drain its queue and leave the link idle.
func (g *txGate) poke() {
	if g != nil && g.held {
		g.check()
	}
}

func (g *txGate) check() {
	if g.dead {
		return
	}
	select {
	case <-g.port.Done():
		// The link is gone: the frames its writer had not written stay
		// counted in flight and in the backlog, which then never drain,
		// and re-arming would wake the loop every poll until a peer comes
		// back, which may be never. The NIC stays held, its link down
		// (attachLink), until the next connection's gate replaces this one.
		g.timer.Stop()
		return
	default:
	}
	if g.inflight() > gateLow || g.port.TxBacklog() > rt.MaxBacklog(g.nic.Rate())/2 {
		g.timer.Reset(g.clk.Now() + g.poll)
		return
	}
	g.held = false
	g.apply()
}

func (g *txGate) setUp(up bool) {
	g.up = up
	g.apply()
}

func (g *txGate) apply() {
	if !g.dead {
		g.nic.SetLinkUp(g.up && g.admin && g.peer)
		g.nic.SetTxHeld(g.held)
	}
}

// retire stops a gate whose connection is gone, so it never touches the
// NIC's link state again.
func (g *txGate) retire() {
	g.dead = true
	g.timer.Stop()
}
