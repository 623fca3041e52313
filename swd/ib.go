package swd

import (
	"fmt"
	"strconv"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/switchcore"
	"github.com/emufabric/emufabric/wire"
)

// Native InfiniBand (a lab of fabric ib).
//
// The engine (switchcore in IB mode, configured by sim.SwitchConfig as
// in the simulator) forwards by DLID through its linear forwarding
// table, maps SL to VL, arbitrates VLs and never sends a data packet
// without credit from the peer. The daemon around it changes in these
// ways:
//
//   - Transport: one seqpacket message (or UDP datagram) is one IB packet
//     exactly as on the wire, LRH [GRH] BTH ... ICRC VCRC, or one 6-byte
//     link packet (wire.IBLink), never Ethernet. A TAP is an Ethernet
//     device: New refuses TAP ports.
//   - Link flow control: when a peer connects the port's flow-control
//     state starts from 0 (switchcore.ResetIBFlowControl), the engine
//     sends one flow-control packet per data VL (FCTBS 0, FCCL = the VL's
//     buffer in 64-byte blocks), another whenever it frees buffer, and
//     all of them again every credit period (ibCreditPeriod). It sends
//     data on a VL only after the peer's first flow-control packet for
//     that VL.
//   - Forwarding: without a subnet manager the LFT holds every NIC's
//     static LID from the lab file (its explicit routes first, else the
//     shortest paths, spread by LID over equal ports as the simulator and
//     OpenSM's min-hop do). With ib.sm the switch gets a subnet
//     management agent and an empty LFT, and the SM (on a NIC) programs
//     it with SMPs on VL15, as in `emulab sim`.
//   - No flooding: an IB switch forwards by LID only; --no-flood is
//     accepted (emulab up passes it for any lab with a cycle) and has no
//     effect.
//   - The emulated wire never drops for lack of room (rt.DelayLine.Lossless):
//     what a port sends is bounded by the peer's credits.
//   - Loss and corruption: see corruptIB.
//   - Captures are ERF records in pcapng (capture.go).

// ibCreditPeriodWall is the least wall time between the periodic
// flow-control packets of a port. IBA wants one at least every 65536
// symbol times (a few microseconds at 100 Gb/s) and the lab's
// credit_update defaults to 4 us, which the simulator keeps; in real time
// that would be a quarter of a million packets a second per VL and port
// through the sockets, for nothing: the engine also sends a flow-control
// packet whenever it frees buffer, so the period only repairs a packet
// lost or corrupted on an emulated lossy wire. A tenth of a second repairs
// that soon enough; a millisecond cost every daemon of an idle lab 20-40 %
// of a core in wake-ups (measured: 5 emunic and 2 emuswitch, 2 cores).
const ibCreditPeriodWall = 100 * clock.Millisecond

// ibCreditUpdateMin is the least lab time between two flow-control packets
// of a VL: the Mellanox model's credMinTime (cc-anchors §5).
const ibCreditUpdateMin = 4096 * clock.Nanosecond

// configureIB completes the switch's IB configuration from the lab file.
func (d *Daemon) configureIB(spec *lab.Spec, cfg *switchcore.Config) {
	d.vls = cfg.IB.DataVLs
	period := ibCreditPeriodWall / clock.Time(d.clk.Dilation())
	if cfg.IB.CreditUpdateInterval < period {
		cfg.IB.CreditUpdateInterval = period
	}
	// Buffer freed within ibCreditUpdateMin of a VL's last flow-control
	// packet waits for the next one instead of sending its own: in real
	// time each packet is a ring record and may wake the peer's process,
	// and a switch forwarding a burst released its buffer packet by
	// packet (one flow-control packet per data packet toward the sender).
	cfg.IB.CreditUpdateMin = ibCreditUpdateMin
	if spec.IB != nil && spec.IB.SM != nil {
		return // the subnet manager programs the LFT (enableSMA)
	}
	for _, nic := range spec.NICs() {
		via := spec.NextHops(d.node, nic)
		if len(via) == 0 || nic.LID == 0 {
			continue
		}
		lft := cfg.IB.LFT
		for len(lft) <= int(nic.LID) {
			lft = append(lft, -1)
		}
		if lft[nic.LID] < 0 {
			lft[nic.LID] = via[int(nic.LID)%len(via)]
		}
		cfg.IB.LFT = lft
	}
}

// enableSMA gives the switch a subnet management agent when the lab has a
// subnet manager, with the node GUID and description the simulator gives
// the same switch, so an SM sees the same fabric in both drivers.
func (d *Daemon) enableSMA(spec *lab.Spec) error {
	if spec.IB == nil || spec.IB.SM == nil {
		return nil
	}
	a, err := d.sw.EnableSMA(switchcore.SMAConfig{Agent: mad.AgentConfig{
		NodeGUID: sim.IBGUID(d.node.Name), Description: d.node.Name, DeviceID: 0x5A5A,
		PortLink: func(p int) (width, speed, speedExt uint8) {
			if p < 1 || p > len(d.ports) || d.node.Ports[p-1].Link == nil {
				return 0, 0, 0
			}
			return mad.LinkFor(d.ports[p-1].speed)
		},
	}})
	if err != nil {
		return err
	}
	// The switch reports the lab's LID, which an SM keeps when it is free
	// (sm/lid.go), as the HCAs do: the hosts' IPoIB neighbour tables,
	// written from the lab's LIDs, stay right.
	a.SetLID(d.node.LID)
	d.log.Printf("fabric ib: subnet manager on %s: SMA enabled (LID %d reported), forwarding table empty until the SM programs it", spec.IB.SM.Host, d.node.LID)
	return nil
}

// isIBLink reports whether an IB transport message is a link packet: the
// only 6-byte packet (a data packet has an 8-byte LRH and a VCRC).
func isIBLink(b []byte) bool { return len(b) == wire.IBLinkSize }

// eachIBCounter reports an IB port's credit state and the switch's
// management counters; loop goroutine.
func (d *Daemon) eachIBCounter(p *swPort, fn func(name string, v uint64)) {
	for vl := range d.vls {
		avail, ok := d.sw.Credits(p.idx, vl)
		if !ok || avail < 0 {
			avail = 0
		}
		fn(fmt.Sprintf("vl%d_tx_credits", vl), uint64(avail))
		fn(fmt.Sprintf("vl%d_rx_free_blocks", vl), uint64(max(d.sw.RxFreeBlocks(p.idx, vl), 0)))
	}
	if d.sw.SMA() != nil {
		st := d.sw.SMAStats()
		fn("sma_consumed", st.Consumed)
		fn("sma_malformed", st.Malformed)
		fn("sma_sent", st.Sent)
		fn("sma_no_route", st.NoRoute)
		fn("sma_link_down", st.LinkDown)
	}
}

// ibMetrics adds an IB port's per-VL families; loop goroutine. pl is the
// port's rendered labels without braces.
func (d *Daemon) ibMetrics(p *swPort, pl string, add func(name, typ, help, labels string, v float64)) {
	c := d.sw.Counters(p.idx)
	add("emu_port_transmit_wait_seconds_total", "counter", "Time the port had data to send and no credit on its VL (IB PortXmitWait, port_xmit_wait).", "{"+pl+"}", seconds(clock.Time(c.PortXmitWaitPs)))
	for vl := range d.vls {
		vc := &c.Prio[vl]
		ql := "{" + pl + `,vl="` + strconv.Itoa(vl) + `"}`
		ctr := func(name, help string, v float64) { add(name, "counter", help, ql, v) }
		gauge := func(name, help string, v float64) { add(name, "gauge", help, ql, v) }
		ctr("emu_vl_received_packets_total", "Data packets received on the VL.", float64(vc.RxPackets))
		ctr("emu_vl_received_bytes_total", "Bytes of data packets received on the VL (LRH through VCRC).", float64(vc.RxBytes))
		ctr("emu_vl_transmitted_packets_total", "Data packets transmitted on the VL.", float64(vc.TxPackets))
		ctr("emu_vl_transmitted_bytes_total", "Bytes of data packets transmitted on the VL (LRH through VCRC).", float64(vc.TxBytes))
		ctr("emu_vl_transmit_wait_seconds_total", "Time the VL had a packet to send and no credit (vlN_xmit_wait).", seconds(clock.Time(vc.XmitWaitPs)))
		ctr("emu_vl_credit_stalls_total", "Times the VL had a packet and no credit (vlN_credit_stalls).", float64(vc.CreditStalls))
		ctr("emu_vl_flow_control_packets_received_total", "Flow-control link packets received for the VL.", float64(vc.FCRx))
		ctr("emu_vl_flow_control_packets_transmitted_total", "Flow-control link packets sent for the VL.", float64(vc.FCTx))
		ctr("emu_vl_fecn_marked_packets_total", "Packets sent on the VL with FECN newly set (IB congestion control).", float64(vc.FECNMarked))
		ctr("emu_vl_credit_overrun_packets_total", "Packets the peer sent beyond the credit advertised on the VL (kept; a peer's protocol error).", float64(vc.HeadroomOverflow))
		gauge("emu_vl_queue_depth_bytes", "Bytes queued at the port's egress for the VL.", float64(d.sw.QueueDepth(p.idx, vl)))
		gauge("emu_vl_queue_watermark_bytes", "Highest egress queue occupancy seen on the VL.", float64(vc.QueueWatermark))
		avail, ok := d.sw.Credits(p.idx, vl)
		if !ok || avail < 0 {
			avail = 0
		}
		gauge("emu_vl_transmit_credit_blocks", "64-byte blocks the port may still send on the VL before the peer grants more.", float64(avail))
		gauge("emu_vl_receive_free_blocks", "Free 64-byte blocks of the port's receive buffer for the VL.", float64(max(d.sw.RxFreeBlocks(p.idx, vl), 0)))
	}
}
