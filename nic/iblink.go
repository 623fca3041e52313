package nic

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// IB link-level flow control (IBA Vol 1 §7.9.4), per data VL. As a sender
// the port counts the 64-byte blocks it sent (FCTBS) and may start a packet
// only while the receiver's last credit limit (FCCL) covers it; a packet
// that does not fit waits whole in held[vl], so the VL is blocked and the
// others are not. As a receiver it counts the blocks received (ABR) and
// grants ABR + its buffer in flow-control packets: the engine consumes a
// packet as it arrives, so the buffer is always free again at once.

// ibLink is the flow-control state of the port's data VLs.
type ibLink struct {
	fctbs     [8]uint16 // blocks sent per VL, mod 4096
	fccl      [8]uint16 // the peer's last credit limit
	fcclKnown [8]bool   // fccl holds a limit; until the first flow-control packet nothing may be sent
	held      [8]*frame.Frame
	stalled   [8]bool
	waitSince [8]clock.Time // when the stalled VL's packet found no credit
	waitTotal clock.Time    // completed credit waits, all VLs (PortXmitWait)

	abr     [8]uint16 // blocks received per VL
	advABR  [8]uint16 // ABR as of the last flow-control packet sent
	fcLast  [8]clock.Time
	fcDue   uint8 // VLs whose flow-control packet is owed
	fcTimer clock.Timer

	// Link integrity (Config.IBLinkTimeout): the peer sends flow-control
	// packets at least every refresh, so silence for longer than the
	// timeout means the link is gone although the cable (the socket) is
	// still there, as when the switch's port is disabled.
	lastRx clock.Time
	wd     clock.Timer
	lost   bool
}

// fcUpdate is the least interval between two flow-control packets of a VL
// triggered by arrivals; the refresh timer (Config.IBFCRefresh) sends the
// rest and keeps credits alive if an update is lost.
const fcUpdate = clock.Microsecond

// ibStart grants the initial credits of every data VL: at link up each
// end owes the other its first flow-control packets (IBA 7.9.4.1, the
// LinkInitialize exchange, reduced to its outcome).
// attach is true when the port is first attached: until the peer's first
// flow-control packet nothing may be sent. A link that comes back keeps
// the limits it had; the FCTBS in both ends' next packets resynchronise.
func (n *NIC) ibStart(attach bool) {
	l := &n.ibl
	for vl := range n.cfg.IBDataVLs {
		l.fcDue |= 1 << vl
		if attach {
			l.fcclKnown[vl] = false
		}
	}
	n.wake()
}

// ibCredit reports whether f, to go out on vl, fits the peer's credit
// limit now; a packet that does not stays held and counts one wait
// (ib_credit_waits) whose time, once it ends, goes to PortXmitWait, as the
// switch counts its own (switchcore ibWaitEnded).
func (n *NIC) ibCredit(vl uint8, f *frame.Frame) bool {
	l := &n.ibl
	if l.fcclKnown[vl] && wire.CanSend(l.fccl[vl], l.fctbs[vl], wire.CreditBlocks(len(f.Data))) {
		if l.stalled[vl] {
			l.stalled[vl] = false
			l.waitTotal += n.clk.Now() - l.waitSince[vl]
		}
		return true
	}
	if !l.stalled[vl] {
		l.stalled[vl] = true
		l.waitSince[vl] = n.clk.Now()
		n.cnt[IBCreditWaits]++
	}
	return false
}

// xmitWait is PortXmitWait's time at now: the waits that ended, and the
// time so far of those still going on (a VL stalled for good shows its
// stall, not 0), as the switch reads its own (switchcore accrueIBWaits).
func (l *ibLink) xmitWait(now clock.Time) clock.Time {
	t := l.waitTotal
	for vl, s := range l.stalled {
		if s {
			t += now - l.waitSince[vl]
		}
	}
	return t
}

// ibSent accounts a data packet's blocks on its VL.
func (n *NIC) ibSent(vl uint8, f *frame.Frame) {
	n.ibl.fctbs[vl] = wire.AddBlocks(n.ibl.fctbs[vl], wire.CreditBlocks(len(f.Data)))
}

// receiveLinkPacket takes a flow-control packet: the peer's new limit for
// a VL, and its FCTBS, to which our ABR resynchronises (IBA 7.9.4.3: that
// recovers blocks of packets lost on the link).
func (n *NIC) receiveLinkPacket(b []byte) {
	lp := wire.IBLink(b)
	if lp.Validate(0) != nil {
		n.cnt[IBLinkErr]++
		return
	}
	n.cnt[IBFCRx]++
	vl := lp.VL()
	if int(vl) >= n.cfg.IBDataVLs {
		return // a VL we do not run: nothing to send on it
	}
	l := &n.ibl
	l.fccl[vl], l.fcclKnown[vl] = lp.FCCL(), true
	if lp.Op() == wire.IBLinkOpNormal && l.abr[vl] != lp.FCTBS() {
		// Blocks were lost on the way: the sender's count is the truth,
		// and the limit we advertise moves with it now, not at the next
		// refresh (which may be 100 ms away in real time).
		l.abr[vl] = lp.FCTBS()
		l.fcDue |= 1 << vl
	}
	n.wake()
}

// ibArrived accounts the blocks of a data packet received on vl and owes
// the sender their credit back; it reports false for a VL the port does
// not run (counted; the caller drops the packet).
func (n *NIC) ibArrived(vl uint8, size int, now clock.Time) bool {
	if int(vl) >= n.cfg.IBDataVLs {
		n.cnt[IBVLErr]++
		return false
	}
	l := &n.ibl
	blocks := wire.CreditBlocks(size)
	if !wire.CanSend(wire.AddBlocks(l.advABR[vl], n.cfg.IBBlocksPerVL), l.abr[vl], blocks) {
		n.cnt[IBCreditOverrun]++ // the sender ignored our limit
	}
	l.abr[vl] = wire.AddBlocks(l.abr[vl], blocks)
	if now-l.fcLast[vl] >= fcUpdate {
		l.fcDue |= 1 << vl
		n.wake()
		return true
	}
	n.armFC(l.fcLast[vl] + fcUpdate)
	return true
}

func (n *NIC) armFC(at clock.Time) {
	l := &n.ibl
	if w, ok := l.fcTimer.When(); !ok || w > at {
		l.fcTimer.Reset(at)
	}
}

// fcTick owes a flow-control packet on every VL whose ABR moved since its
// last one or whose refresh is due.
func (n *NIC) fcTick() {
	l := &n.ibl
	now := n.clk.Now()
	next := clock.Never
	for vl := range n.cfg.IBDataVLs {
		if l.abr[vl] != l.advABR[vl] && now-l.fcLast[vl] >= fcUpdate || now-l.fcLast[vl] >= n.cfg.IBFCRefresh {
			l.fcDue |= 1 << vl
			continue
		}
		at := l.fcLast[vl] + n.cfg.IBFCRefresh
		if l.abr[vl] != l.advABR[vl] {
			at = l.fcLast[vl] + fcUpdate
		}
		next = min(next, at)
	}
	if next != clock.Never {
		l.fcTimer.Reset(next)
	}
	if l.fcDue != 0 {
		n.wake()
	}
}

// nextFC builds the flow-control packet of the lowest VL owed one. Link
// packets use no credits and go before data (IBA 7.9.4).
func (n *NIC) nextFC() *frame.Frame {
	l := &n.ibl
	vl := 0
	for l.fcDue&(1<<vl) == 0 {
		vl++
	}
	l.fcDue &^= 1 << vl
	now := n.clk.Now()
	l.fcLast[vl] = now
	l.advABR[vl] = l.abr[vl]
	op := uint8(wire.IBLinkOpNormal)
	f := n.pool.Get(wire.IBLinkSize)
	wire.IBLink(f.Data).Encode(&wire.IBLinkFields{Op: op, FCTBS: l.fctbs[vl], VL: uint8(vl),
		FCCL: wire.AddBlocks(l.abr[vl], n.cfg.IBBlocksPerVL)})
	f.Priority = uint8(vl)
	f.Note = "ib fc"
	n.cnt[IBFCTx]++
	n.armFC(now + n.cfg.IBFCRefresh)
	return f
}

// ibHeard notes that a packet arrived at now; a link that was lost is
// back: the SMA sees the port come up (Init) and the SM will sweep it
// again.
func (n *NIC) ibHeard(now clock.Time) {
	l := &n.ibl
	l.lastRx = now
	if l.lost {
		l.lost = false
		n.smaLink(!n.linkDown && n.tx != nil)
		n.wake()
	}
}

// armWatchdog starts link-integrity checking from now.
func (n *NIC) armWatchdog() {
	if n.cfg.IBLinkTimeout <= 0 {
		return
	}
	l := &n.ibl
	l.lastRx = n.clk.Now()
	l.wd.Reset(l.lastRx + n.cfg.IBLinkTimeout)
}

// watchdog fires every IBLinkTimeout at most: silence since the last
// packet for that long takes the port's logical link down (the SMA's port
// goes Down, link_downed counts it) until a packet arrives again.
func (n *NIC) watchdog() {
	l := &n.ibl
	if n.linkDown || n.tx == nil {
		return
	}
	now := n.clk.Now()
	if quiet := now - l.lastRx; quiet < n.cfg.IBLinkTimeout {
		l.wd.Reset(l.lastRx + n.cfg.IBLinkTimeout)
		return
	}
	if !l.lost {
		l.lost = true
		n.cnt[LinkDowned]++
		n.smaLink(false)
	}
	l.wd.Reset(now + n.cfg.IBLinkTimeout)
}
