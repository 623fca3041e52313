package switchcore

import (
	"fmt"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/mad"
)

// EachCounter calls fn for every counter of port that exists on the
// switch's fabric: PortCounters.Each on Ethernet, PortCounters.EachIB
// (its data VLs only) on InfiniBand.
func (s *Switch) EachCounter(port int, fn func(name string, v uint64)) {
	c := s.Counters(port)
	if s.cfg.Fabric == FabricIB {
		c.EachIB(s.cfg.IB.DataVLs, fn)
		return
	}
	c.Each(fn)
}

// Each calls fn for every counter of an Ethernet (RoCE) port with its
// SONiC / mlx5 ethtool name, in a fixed order (ethtool -S shape). Pause
// durations are in microseconds as mlx5 reports them. IB's counters are
// EachIB's: a RoCE port has no VL, credit or flow-control packet.
// It allocates the names; it is for dumps, not the per-frame path.
func (c *PortCounters) Each(fn func(name string, v uint64)) {
	fn("rx_packets_phy", c.RxPacketsPhy)
	fn("rx_bytes_phy", c.RxBytesPhy)
	fn("tx_packets_phy", c.TxPacketsPhy)
	fn("tx_bytes_phy", c.TxBytesPhy)
	fn("rx_pause_ctrl_phy", c.RxPauseCtrlPhy)
	fn("link_state_rx", c.LinkStateRx)
	fn("link_state_tx", c.LinkStateTx)
	fn("link_state_refused", c.LinkStateRefused)
	fn("link_state_mismatch", c.LinkStateMismatch)
	fn("tx_pause_ctrl_phy", c.TxPauseCtrlPhy)
	fn("rx_global_pause", c.RxGlobalPause)
	fn("rx_global_pause_duration", uint64(c.RxGlobalPauseDurationPs/int64(clock.Microsecond)))
	fn("link_down_events_phy", c.LinkDownEvents)
	for r := DropMalformed; r < NumDropReasons; r++ {
		if r != DropHeadroomOverflow {
			fn("drop_"+r.String(), c.Drops[r])
		}
	}
	// Admitted beyond the headroom, not dropped: no drop_ prefix.
	fn("headroom_overflow", c.Drops[DropHeadroomOverflow])
	for i := range NumPriorities {
		p := &c.Prio[i]
		n := func(f string) string { return fmt.Sprintf(f, i) }
		fn(n("rx_prio%d_packets"), p.RxPackets)
		fn(n("rx_prio%d_bytes"), p.RxBytes)
		fn(n("tx_prio%d_packets"), p.TxPackets)
		fn(n("tx_prio%d_bytes"), p.TxBytes)
		fn(n("rx_prio%d_pause"), p.RxPause)
		fn(n("rx_prio%d_pause_duration"), uint64(p.RxPauseDurationPs/int64(clock.Microsecond)))
		fn(n("rx_prio%d_pause_transition"), p.RxPauseTransition)
		fn(n("tx_prio%d_pause"), p.TxPause)
		fn(n("tx_prio%d_pause_duration"), uint64(p.TxPauseDurationPs/int64(clock.Microsecond)))
		fn(n("tx_prio%d_ecn_marked"), p.ECNMarked)
		fn(n("pg%d_shared_watermark"), uint64(p.PGSharedWatermark))
		fn(n("pg%d_headroom_watermark"), uint64(p.PGHeadroomWatermark))
		fn(n("pg%d_headroom_overflow"), p.HeadroomOverflow)
		fn(n("queue%d_watermark"), uint64(p.QueueWatermark))
		for r := DropMalformed; r < NumDropReasons; r++ {
			if r != DropHeadroomOverflow { // pgN_headroom_overflow above
				fn(fmt.Sprintf("prio%d_drop_%s", i, r), p.Drops[r])
			}
		}
		fn(n("pfcwd_prio%d_storm_detected"), p.PFCWDStormDetected)
		fn(n("pfcwd_prio%d_storm_restored"), p.PFCWDStormRestored)
		fn(n("pfcwd_prio%d_tx_ok"), p.PFCWDTxOK)
		fn(n("pfcwd_prio%d_tx_drop"), p.PFCWDTxDrop)
		fn(n("pfcwd_prio%d_rx_ok"), p.PFCWDRxOK)
		fn(n("pfcwd_prio%d_rx_drop"), p.PFCWDRxDrop)
	}
}

// ibDropReasons are the reasons an IB port drops for (ib.go, sma.go): IB
// has no lossy class, WRED, PFC watchdog, TTL or Ethernet FCS (a corrupted
// packet fails its VCRC: malformed).
var ibDropReasons = []DropReason{DropMalformed, DropNoRoute, DropLinkDown, DropMTUExceeded, DropVL15}

// EachIB calls fn for every counter of an InfiniBand port, in a fixed
// order (ethtool -S shape): the port's (the _phy ones count every packet
// on the wire, link packets included; port_xmit_packets ... port_rcv_data
// are IBA's PortCounters, which exclude them, data in 4-octet words as
// sysfs and perfquery show it), then those of its vls data VLs,
// named vlN_... (PrioCounters index = VL). An IB port has no PFC, PAUSE,
// ECN, priority groups, headroom or PFC watchdog: none of their counters
// is listed. port_xmit_wait and vlN_xmit_wait are in PortXmitWait's ticks
// (mad.XmitWaitTick, a microsecond), as emunic's PMA reports it.
// It allocates the names; it is for dumps, not the per-frame path.
func (c *PortCounters) EachIB(vls int, fn func(name string, v uint64)) {
	fn("rx_packets_phy", c.RxPacketsPhy)
	fn("rx_bytes_phy", c.RxBytesPhy)
	fn("tx_packets_phy", c.TxPacketsPhy)
	fn("tx_bytes_phy", c.TxBytesPhy)
	fn("link_down_events_phy", c.LinkDownEvents)
	fn("port_xmit_packets", c.XmitPkts)
	fn("port_rcv_packets", c.RcvPkts)
	fn("port_xmit_data", c.XmitData/4)
	fn("port_rcv_data", c.RcvData/4)
	fn("port_xmit_wait", mad.XmitWaitTicks(clock.Time(c.PortXmitWaitPs)))
	fn("port_xmit_discards", c.XmitDiscards)
	fn("port_rcv_switch_relay_errors", c.RcvSwitchRelayErrors)
	// A packet beyond the credit the port granted is kept (IB does not
	// drop); the engine counts it where Ethernet counts headroom overflow.
	fn("excessive_buffer_overrun_errors", c.Drops[DropHeadroomOverflow])
	for _, r := range ibDropReasons {
		fn("drop_"+r.String(), c.Drops[r])
	}
	for vl := range min(max(vls, 0), NumPriorities) {
		p := &c.Prio[vl]
		n := func(f string) string { return fmt.Sprintf(f, vl) }
		fn(n("vl%d_rx_packets"), p.RxPackets)
		fn(n("vl%d_rx_bytes"), p.RxBytes)
		fn(n("vl%d_tx_packets"), p.TxPackets)
		fn(n("vl%d_tx_bytes"), p.TxBytes)
		fn(n("vl%d_xmit_wait"), mad.XmitWaitTicks(clock.Time(p.XmitWaitPs)))
		fn(n("vl%d_credit_stalls"), p.CreditStalls)
		fn(n("vl%d_fc_tx"), p.FCTx)
		fn(n("vl%d_fc_rx"), p.FCRx)
		fn(n("vl%d_fecn_marked"), p.FECNMarked)
		fn(n("vl%d_credit_overrun"), p.HeadroomOverflow)
		fn(n("vl%d_queue_watermark"), uint64(p.QueueWatermark))
		for _, r := range ibDropReasons[1:] { // malformed is known before any VL is
			fn(fmt.Sprintf("vl%d_drop_%s", vl, r), p.Drops[r])
		}
	}
}

// TotalDrops is the sum of real drops (headroom_overflow is not a drop).
func (c *PortCounters) TotalDrops() uint64 { return realDrops(&c.Drops) }

// TotalDrops is the sum of the priority's real drops (headroom_overflow is
// not a drop).
func (c *PrioCounters) TotalDrops() uint64 { return realDrops(&c.Drops) }

func realDrops(d *[NumDropReasons]uint64) uint64 {
	var t uint64
	for r := DropMalformed; r < NumDropReasons; r++ {
		if r != DropHeadroomOverflow {
			t += d[r]
		}
	}
	return t
}
