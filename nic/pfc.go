package nic

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// PFC honouring (IEEE 802.1Qbb, 802.3x Annex 31B). A received PFC frame
// stops the priorities whose class-enable bit is set for time[p] quanta of
// 512 bit times at the link speed; time 0 resumes at once (XON). A frame
// already on the wire finishes; only new starts wait. A PAUSE stops every
// priority. Priorities whose PFC is disabled (mlnx_qos --pfc) ignore PFC,
// as a NIC with PFC off for a priority does.

func (n *NIC) receiveMACControl(f *frame.Frame) {
	n.port.RxPauseCtrlPhy++
	if err := wire.DecodeMACControl(f.Data, &n.mc); err != nil {
		n.cnt[RxMACControlBad]++
		return
	}
	now := n.clk.Now()
	pause := n.mc.Opcode == wire.MACControlOpPause
	for p := range 8 {
		if n.mc.Enable&(1<<p) == 0 || (!pause && !n.pfcHonour[p]) {
			continue
		}
		pc := &n.prio[p]
		if t := n.mc.Time[p]; t != 0 {
			pc.RxPause++
			if pc.pausedUntil <= now {
				// Not paused: a new pause starts now. A pause that ran out
				// on its own is banked here.
				n.bankPause(pc)
				pc.pauseStart = now
			}
			pc.pausedUntil = now + wire.QuantaToTime(t, n.cfg.Rate)
			continue
		}
		if pc.pausedUntil > now {
			pc.pausedTotal += now - pc.pauseStart
			pc.pausedUntil, pc.pauseStart = now, now
			pc.RxPauseTransition++
		}
	}
	n.wake()
}

// bankPause adds an expired pause to the total.
func (n *NIC) bankPause(pc *PrioCounters) {
	if pc.pausedUntil > pc.pauseStart {
		pc.pausedTotal += pc.pausedUntil - pc.pauseStart
		pc.RxPauseTransition++
		pc.pauseStart = pc.pausedUntil
	}
}

// Paused reports whether priority p's egress is paused now.
func (n *NIC) Paused(p int) bool { return n.prio[p&7].pausedUntil > n.clk.Now() }

// PausedUntil is when priority p's pause ends (in the past if not paused).
func (n *NIC) PausedUntil(p int) clock.Time { return n.prio[p&7].pausedUntil }

// SendPFC makes the NIC emit one PFC frame (802.1Qbb) with the given
// class-enable vector and times, ahead of any queued frame. The NIC does
// not generate PFC on its own (its receive side never runs out of buffer);
// this is for scenarios such as a PFC storm from a faulty NIC (Guo et al.,
// SIGCOMM'16 §4.3). A MAC whose link is down (or not attached yet) sends
// no pause frame, and none is kept for later: a storm's frames queued
// while the cable is out would grow without bound and burst out, stale,
// when it is back.
func (n *NIC) SendPFC(enable uint8, times *[8]uint16) {
	if n.tx == nil || n.linkDown {
		return
	}
	f := n.pool.Get(wire.MACControlFrameSize)
	wire.EncodePFC(f.Data, n.cfg.MAC, enable, times)
	for p := range 8 {
		if enable&(1<<p) != 0 {
			n.prio[p].TxPause++
		}
	}
	n.port.TxPauseCtrlPhy++
	n.macCtl.push(f)
	n.wake()
}

// assertXoff accounts for MAC Control frame f sent now: a PFC frame that
// pauses a priority asserts XOFF for it until the quanta it asks for run
// out at the link's rate (a later XOFF extends that), one with time 0
// (XON) ends it (TxPauseDuration).
func (n *NIC) assertXoff(f *frame.Frame, now clock.Time) {
	if wire.DecodeMACControl(f.Data, &n.mcTx) != nil || n.mcTx.Opcode != wire.MACControlOpPFC {
		return
	}
	for p := range 8 {
		if n.mcTx.Enable&(1<<p) == 0 {
			continue
		}
		pc := &n.prio[p]
		if t := n.mcTx.Time[p]; t != 0 {
			if pc.xoffUntil <= now {
				// Not asserted: a new XOFF starts now; one that ran out
				// on its own is banked here.
				if pc.xoffUntil > pc.xoffStart {
					pc.xoffTotal += pc.xoffUntil - pc.xoffStart
				}
				pc.xoffStart = now
			}
			pc.xoffUntil = now + wire.QuantaToTime(t, n.cfg.Rate)
			continue
		}
		n.endXoffPrio(pc, now)
	}
}

// endXoff ends the XOFF asserted for every priority now (the link went
// down).
func (n *NIC) endXoff(now clock.Time) {
	for p := range 8 {
		n.endXoffPrio(&n.prio[p], now)
	}
}

func (n *NIC) endXoffPrio(pc *PrioCounters, now clock.Time) {
	if pc.xoffUntil > now {
		pc.xoffTotal += now - pc.xoffStart
		pc.xoffUntil, pc.xoffStart = now, now
	}
}
