package switchcore

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// ibPkt builds a native IB packet: LRH (LNH local), a 12-byte BTH, zero
// payload and ICRC bytes, VCRC; n is the LRH..ICRC length (multiple of 4).
func ibPkt(pool *frame.Pool, vl, sl uint8, dlid uint16, n int) *frame.Frame {
	f := pool.Get(n + wire.VCRCSize)
	clear(f.Data)
	wire.LRH(f.Data).Encode(&wire.LRHFields{VL: vl, SL: sl, LNH: wire.LNHLocal, DLID: dlid, SLID: 9, PktLen: wire.PktLenFor(n)})
	f.Data[8] = 0x04 // BTH: RC SEND ONLY
	f.Data[10], f.Data[11] = 0xFF, 0xFF
	wire.PutVCRC(f.Data)
	return f
}

func fcPkt(pool *frame.Pool, vl uint8, fctbs, fccl uint16) *frame.Frame {
	f := pool.Get(wire.IBLinkSize)
	wire.IBLink(f.Data).Encode(&wire.IBLinkFields{Op: wire.IBLinkOpNormal, FCTBS: fctbs, VL: vl, FCCL: fccl})
	return f
}

func ibConfig(n int) *Config {
	c := DefaultConfig("ibsw", n, 100e9)
	c.Fabric = FabricIB
	c.L2 = nil
	c.IB.LFT = []int{-1, 0, 1, 2}[:min(n+1, 4)]
	c.IB.BufferBlocks = 2048
	return c
}

const ibLen = 252 // LRH..ICRC; 254 bytes on the wire = 4 credits

// ibSink records IB data packets and flow-control packets separately and
// checks, at every transmission, that the switch never went beyond credit.
type ibSink struct {
	t    *testing.T
	s    *Switch
	port int
	clk  *manualClock
	data []sent
	fc   []wire.IBLinkFields
}

func (k *ibSink) Transmit(f *frame.Frame) {
	if f.Len() == wire.IBLinkSize {
		var fl wire.IBLinkFields
		wire.IBLink(f.Data).Fields(&fl)
		k.fc = append(k.fc, fl)
	} else {
		if err := wire.CheckVCRC(f.Data, 0); err != nil {
			k.t.Errorf("bad VCRC on egress: %v", err)
		}
		vl := int(wire.LRH(f.Data).VL())
		if avail, ok := k.s.Credits(k.port, vl); vl != 15 && (!ok || avail < 0) {
			k.t.Errorf("port %d VL %d sent without credit (avail %d, advertised %v)", k.port, vl, avail, ok)
		}
		k.data = append(k.data, sent{start: k.clk.now, tail: f.TailAt, class: uint8(vl)})
	}
	f.Put()
}

func newIB(t *testing.T, c *Config) (*Switch, *manualClock, *frame.Pool, []*ibSink) {
	s, clk, pool := newTestSwitch(t, c)
	sinks := make([]*ibSink, len(c.Ports))
	for i := range sinks {
		sinks[i] = &ibSink{t: t, s: s, port: i, clk: clk}
		s.Attach(i, sinks[i])
	}
	return s, clk, pool, sinks
}

// TestIBForwardLFT: DLID -> port by the LFT, SL -> VL rewrite with a fresh
// VCRC, credits advertised with real flow-control packets.
func TestIBForwardLFT(t *testing.T) {
	c := ibConfig(3)
	c.IB.SL2VL[1] = 2
	s, clk, pool, sinks := newIB(t, c)
	clk.runUntil(clock.Microsecond)
	// At attach every port advertised its buffers on every VL: FCCL = 2048.
	if len(sinks[0].fc) != 8 || sinks[0].fc[0].FCCL != 2048 || sinks[0].fc[0].FCTBS != 0 {
		t.Fatalf("initial flow control: %+v", sinks[0].fc)
	}
	deliver(s, clk, 1, fcPkt(pool, 2, 0, 100)) // the peer on port 1 gives 100 credits on VL 2
	deliver(s, clk, 0, ibPkt(pool, 0, 1, 2, ibLen))
	deliver(s, clk, 0, ibPkt(pool, 0, 1, 7, ibLen)) // no LFT entry
	clk.runUntil(2 * clock.Microsecond)
	if len(sinks[1].data) != 1 || sinks[1].data[0].class != 2 {
		t.Fatalf("LFT forwarding: port 1 got %+v", sinks[1].data)
	}
	if s.Counters(0).Drops[DropNoRoute] != 1 {
		t.Error("LFT miss not counted")
	}
	// Releasing the forwarded packet's 4 blocks on VL 0 sends a credit
	// update: ABR 8 (two packets received) + 2048 free.
	last := sinks[0].fc[len(sinks[0].fc)-1]
	if last.VL != 0 || last.FCCL != wire.AddBlocks(8, 2048) {
		t.Errorf("credit update after release: %+v", last)
	}
	if avail, _ := s.Credits(1, 2); avail != 96 {
		t.Errorf("credits left on port 1 VL 2: %d, want 96", avail)
	}
}

// TestIBNeverWithoutCredit: the switch sends only what the peer's FCCL
// allows and resumes when new credit arrives; nothing is dropped.
func TestIBNeverWithoutCredit(t *testing.T) {
	s, clk, pool, sinks := newIB(t, ibConfig(2))
	deliver(s, clk, 1, fcPkt(pool, 0, 0, 10))
	for range 20 {
		deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
	}
	clk.runUntil(10 * clock.Microsecond)
	if len(sinks[1].data) != 2 {
		t.Fatalf("sent %d packets on 10 credits of 4-block packets, want 2", len(sinks[1].data))
	}
	if s.Counters(1).Prio[0].CreditStalls == 0 {
		t.Error("credit stall not counted")
	}
	deliver(s, clk, 1, fcPkt(pool, 0, 0, 10+72))
	clk.runUntil(20 * clock.Microsecond)
	if len(sinks[1].data) != 20 {
		t.Fatalf("after new credit: %d of 20", len(sinks[1].data))
	}
	if avail, _ := s.Credits(1, 0); avail != 2 {
		t.Errorf("credits left %d, want 2", avail)
	}
	if s.Counters(1).Prio[0].XmitWaitPs <= 0 || s.Counters(0).TotalDrops() != 0 {
		t.Error("port_xmit_wait not accumulated or drops")
	}
	// The dump reports the wait in PortXmitWait's ticks (microseconds),
	// as emunic's PMA does, not in nanoseconds.
	m := map[string]uint64{}
	s.EachCounter(1, func(n string, v uint64) { m[n] = v })
	if ps := s.Counters(1).PortXmitWaitPs; m["port_xmit_wait"] != uint64(ps/int64(clock.Microsecond)) || m["vl0_xmit_wait"] != m["port_xmit_wait"] || m["port_xmit_wait"] == 0 {
		t.Errorf("port_xmit_wait %d vl0_xmit_wait %d, want %d ticks of 1 us", m["port_xmit_wait"], m["vl0_xmit_wait"], ps/int64(clock.Microsecond))
	}
	// Wrap-around: FCCL/FCTBS are mod 4096; many rounds of credit keep working.
	fccl := uint16(82)
	for round := range 200 {
		fccl = wire.AddBlocks(fccl, 40)
		deliver(s, clk, 1, fcPkt(pool, 0, 0, fccl))
		for range 10 {
			deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
		}
		clk.runUntil(clk.now + 10*clock.Microsecond)
		if want := 20 + 10*(round+1); len(sinks[1].data) != want {
			t.Fatalf("round %d: %d sent, want %d", round, len(sinks[1].data), want)
		}
	}
}

// TestIBVLArbitrationWeights: two backlogged VLs in the low table with
// weights 4 and 12 (64-byte units) share the port 1:3 in blocks.
func TestIBVLArbitrationWeights(t *testing.T) {
	c := ibConfig(2)
	c.IB.VLArbLow = []VLArbEntry{{VL: 0, Weight: 4}, {VL: 1, Weight: 12}}
	s, clk, pool, sinks := newIB(t, c)
	for range 100 {
		deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
		deliver(s, clk, 0, ibPkt(pool, 1, 1, 2, ibLen))
	}
	deliver(s, clk, 1, fcPkt(pool, 0, 0, 2000))
	deliver(s, clk, 1, fcPkt(pool, 1, 0, 2000))
	clk.runUntil(clk.now + 80*clock.SerializationTime(ibLen+2, 100e9) + 100*clock.Nanosecond)
	var n [2]int
	for _, x := range sinks[1].data[:80] {
		n[x.class]++
	}
	if n[0] != 20 || n[1] != 60 {
		t.Errorf("VL0:VL1 = %d:%d, want 20:60", n[0], n[1])
	}
}

// TestIBStarvedVLDoesNotBlock: a VL without credit does not hold up another.
func TestIBStarvedVLDoesNotBlock(t *testing.T) {
	s, clk, pool, sinks := newIB(t, ibConfig(2))
	deliver(s, clk, 1, fcPkt(pool, 1, 0, 400)) // credits for VL 1 only
	for range 10 {
		deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
		deliver(s, clk, 0, ibPkt(pool, 1, 1, 2, ibLen))
	}
	clk.runUntil(clk.now + 10*clock.Microsecond)
	if len(sinks[1].data) != 10 {
		t.Fatalf("VL 1 sent %d of 10 while VL 0 starved", len(sinks[1].data))
	}
	for _, x := range sinks[1].data {
		if x.class != 1 {
			t.Fatal("starved VL 0 sent")
		}
	}
	if _, ok := s.Credits(1, 0); ok || s.Counters(1).Prio[0].CreditStalls != 1 {
		t.Error("VL 0 stall not recorded")
	}
	if s.QueueDepth(1, 0) != 10*(ibLen+2) {
		t.Errorf("VL 0 queue %d", s.QueueDepth(1, 0))
	}
}

// TestIBHighLimit: with HighLimit 1 (4 KiB), a low-priority VL gets one
// packet after every 4 KiB or more of high-priority data.
func TestIBHighLimit(t *testing.T) {
	c := ibConfig(2)
	c.IB.VLArbHigh = []VLArbEntry{{VL: 1, Weight: 255}}
	c.IB.VLArbLow = []VLArbEntry{{VL: 0, Weight: 255}}
	c.IB.HighLimit = 1
	s, clk, pool, sinks := newIB(t, c)
	for range 100 {
		deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
		deliver(s, clk, 0, ibPkt(pool, 1, 1, 2, ibLen))
	}
	deliver(s, clk, 1, fcPkt(pool, 0, 0, 2000))
	deliver(s, clk, 1, fcPkt(pool, 1, 0, 2000))
	clk.runUntil(clk.now + 100*clock.Microsecond)
	// ceil(4096/254) = 17 high packets, then one low.
	for i, x := range sinks[1].data[:90] {
		want := uint8(1)
		if i%18 == 17 {
			want = 0
		}
		if x.class != want {
			t.Fatalf("packet %d on VL %d, want VL %d", i, x.class, want)
		}
	}
}

// TestIBVL15AndSL2VLDrop: VL15 (subnet management) is forwarded without
// credits ahead of data; an SL mapped to VL15 is dropped (IBA).
func TestIBVL15AndSL2VLDrop(t *testing.T) {
	c := ibConfig(2)
	c.IB.SL2VL[5] = 15
	s, clk, pool, sinks := newIB(t, c)
	deliver(s, clk, 0, ibPkt(pool, 15, 0, 2, 64)) // no credits anywhere
	deliver(s, clk, 0, ibPkt(pool, 0, 5, 2, ibLen))
	clk.runUntil(clk.now + clock.Microsecond)
	if len(sinks[1].data) != 1 || sinks[1].data[0].class != 15 {
		t.Fatalf("VL15 packet not forwarded: %+v", sinks[1].data)
	}
	if s.Counters(0).Drops[DropVL15] != 1 {
		t.Error("SL -> VL15 not dropped")
	}
	if s.RxFreeBlocks(0, 0) != c.IB.BufferBlocks {
		t.Error("dropped packet's blocks not released")
	}
}

// TestIBABRResync: a flow-control packet from the peer resynchronises our
// ABR to its FCTBS, so blocks lost on the link are not lost credit.
func TestIBABRResync(t *testing.T) {
	s, clk, pool, sinks := newIB(t, ibConfig(2))
	clk.runUntil(clock.Microsecond)
	// The peer says it has sent 40 blocks on VL 0; we received none (lost).
	deliver(s, clk, 0, fcPkt(pool, 0, 40, 0))
	clk.runUntil(clk.now + 10*clock.Microsecond) // periodic update goes out
	last := sinks[0].fc[len(sinks[0].fc)-8]      // VL 0 of the last round
	if last.VL != 0 || last.FCCL != 40+2048 {
		t.Errorf("after resync FCCL %d on VL %d, want %d", last.FCCL, last.VL, 40+2048)
	}
}

// TestIBCreditUpdateMin: with CreditUpdateMin, buffer freed within the
// interval of a VL's last flow-control packet is granted by one packet at
// its end instead of one per released packet, and that packet's FCCL
// covers everything freed: the sender loses no credit, only chatter.
func TestIBCreditUpdateMin(t *testing.T) {
	for _, gap := range []clock.Time{0, 4096 * clock.Nanosecond} {
		c := ibConfig(2)
		c.IB.CreditUpdateMin = gap
		c.IB.CreditUpdateInterval = clock.Second // no periodic update in the window
		s, clk, pool, sinks := newIB(t, c)
		clk.runUntil(clock.Microsecond)
		deliver(s, clk, 1, fcPkt(pool, 0, 0, 2048))
		before := len(sinks[0].fc)
		// 20 packets of 254 bytes at 100 Gb/s: released about 20 ns
		// apart, all within 4 us.
		for range 20 {
			deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
		}
		clk.runUntil(20 * clock.Microsecond)
		if len(sinks[1].data) != 20 {
			t.Fatalf("gap %v: forwarded %d of 20", gap, len(sinks[1].data))
		}
		fc := sinks[0].fc[before:]
		want := wire.AddBlocks(20*4, 2048) // ABR 80 + every block free again
		if len(fc) == 0 || fc[len(fc)-1].FCCL != want {
			t.Fatalf("gap %v: last credit update %+v, want FCCL %d", gap, fc, want)
		}
		switch {
		case gap == 0 && len(fc) != 20:
			t.Errorf("no gap: %d flow-control packets for 20 releases, want 20", len(fc))
		case gap > 0 && len(fc) > 3:
			t.Errorf("gap %v: %d flow-control packets for 20 releases within it, want at most 3", gap, len(fc))
		}
		if uint64(len(fc)) != s.Counters(0).Prio[0].FCTx-1 { // 1: VL 0's advertisement at attach
			t.Errorf("gap %v: FCTx %d, %d packets seen", gap, s.Counters(0).Prio[0].FCTx, len(fc))
		}
	}
}

// TestIBCounterNames: an IB port's dump lists its data VLs' counters and
// none of Ethernet's (PFC, ECN, priority groups, PFC watchdog, headroom);
// an Ethernet port's lists no VL's.
func TestIBCounterNames(t *testing.T) {
	c := ibConfig(2)
	c.IB.DataVLs = 2
	for sl := range c.IB.SL2VL {
		c.IB.SL2VL[sl] = uint8(sl % 2)
	}
	c.IB.VLArbLow = c.IB.VLArbLow[:2]
	s, _, _, _ := newIB(t, c)
	var names []string
	s.EachCounter(0, func(n string, _ uint64) { names = append(names, n) })
	all := " " + strings.Join(names, " ") + " "
	for _, n := range []string{"rx_packets_phy", "port_xmit_wait", "vl1_rx_packets", "vl1_fc_tx", "vl1_credit_stalls", "vl1_drop_no_route", "drop_vl15_drop", "excessive_buffer_overrun_errors"} {
		if !strings.Contains(all, " "+n+" ") {
			t.Errorf("IB counter %s missing: %s", n, all)
		}
	}
	for _, n := range []string{"prio", "pause", "pfcwd", "pg", "_ecn", "headroom", "wred", "lossy", "vl2_", "link_state"} {
		if strings.Contains(all, n) {
			t.Errorf("IB port lists %q: %s", n, all)
		}
	}
	e, _, _ := newTestSwitch(t, testConfig(1, 100e9))
	names = names[:0]
	e.EachCounter(0, func(n string, _ uint64) { names = append(names, n) })
	if all := strings.Join(names, " "); strings.Contains(all, "vl0_") || strings.Contains(all, "port_xmit_wait") {
		t.Errorf("Ethernet port lists IB counters: %s", all)
	}
}

// TestIBPortCountersExcludeLinkPackets: IBA's PortRcvPkts/PortXmitPkts
// and the data counters leave link packets out (IBA 16.1.3.5); the _phy
// counters and the VL's fc_rx/fc_tx count them.
func TestIBPortCountersExcludeLinkPackets(t *testing.T) {
	s, clk, pool, sinks := newIB(t, ibConfig(2))
	clk.runUntil(clock.Microsecond)
	deliver(s, clk, 1, fcPkt(pool, 0, 0, 100))
	deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
	clk.runUntil(2 * clock.Microsecond)
	if len(sinks[1].data) != 1 {
		t.Fatalf("port 1 sent %d data packets, want 1", len(sinks[1].data))
	}
	in, out := s.Counters(0), s.Counters(1)
	m := map[string]uint64{}
	s.EachCounter(1, func(n string, v uint64) { m[n] = v })
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"p0 port_rcv_packets", in.RcvPkts, 1},
		{"p0 RcvData octets (LRH..ICRC)", in.RcvData, ibLen},
		{"p0 port_xmit_packets (link packets only)", in.XmitPkts, 0},
		{"p1 port_xmit_packets", out.XmitPkts, 1},
		{"p1 port_rcv_packets (one link packet)", out.RcvPkts, 0},
		{"p1 rx_packets_phy (the link packet)", out.RxPacketsPhy, 1},
		{"p1 tx_packets_phy", out.TxPacketsPhy, uint64(len(sinks[1].fc) + 1)},
		{"p1 dump port_xmit_data (words)", m["port_xmit_data"], ibLen / 4},
		{"p1 dump port_xmit_packets", m["port_xmit_packets"], 1},
		{"p1 dump vl0_fc_rx", m["vl0_fc_rx"], 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestIBDiscardsAtTheSpecsPort: PortRcvSwitchRelayErrors counts at the
// input port what the relay cannot forward (no LFT entry, back out of the
// input port), PortXmitDiscards at the output port what it may not send
// (longer than its MTU, its link down), as IBA 16.1.3.5 defines them and
// perfquery reads them; the drop reasons keep counting where the engine
// dropped (an oversized packet at its ingress).
func TestIBDiscardsAtTheSpecsPort(t *testing.T) {
	c := ibConfig(3)
	c.Ports[1].MTU = 128 // ibLen does not fit
	s, clk, pool, _ := newIB(t, c)
	clk.runUntil(clock.Microsecond)
	for p := range 3 {
		deliver(s, clk, p, fcPkt(pool, 0, 0, 100))
	}
	deliver(s, clk, 0, ibPkt(pool, 0, 0, 1, ibLen))  // LFT: back out of p0
	deliver(s, clk, 0, ibPkt(pool, 0, 0, 40, ibLen)) // no LFT entry
	deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))  // p1's MTU is 128
	s.SetPortUp(2, false)
	deliver(s, clk, 0, ibPkt(pool, 0, 0, 3, ibLen)) // p2 down
	clk.runUntil(2 * clock.Microsecond)
	dump := func(port int) map[string]uint64 {
		m := map[string]uint64{}
		s.EachCounter(port, func(n string, v uint64) { m[n] = v })
		return m
	}
	p0, p1, p2 := dump(0), dump(1), dump(2)
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"p0 port_rcv_switch_relay_errors", p0["port_rcv_switch_relay_errors"], 2},
		{"p0 port_xmit_discards", p0["port_xmit_discards"], 0},
		{"p0 drop_mtu_exceeded (where it was dropped)", p0["drop_mtu_exceeded"], 1},
		{"p1 port_xmit_discards (beyond its MTU)", p1["port_xmit_discards"], 1},
		{"p1 port_rcv_switch_relay_errors", p1["port_rcv_switch_relay_errors"], 0},
		{"p2 port_xmit_discards (down)", p2["port_xmit_discards"], 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// A VL stalled for good shows its wait in PortXmitWait when read, not 0
// until credit comes (it was added only when a wait ended).
func TestIBXmitWaitWhileStalled(t *testing.T) {
	s, clk, pool, _ := newIB(t, ibConfig(2))
	deliver(s, clk, 1, fcPkt(pool, 0, 0, 10))
	for range 5 {
		deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
	}
	clk.runUntil(10 * clock.Microsecond)
	first := s.Counters(1).PortXmitWaitPs
	if first <= 0 {
		t.Fatalf("port_xmit_wait %d ps while VL 0 waits for credit, want > 0", first)
	}
	clk.runUntil(30 * clock.Microsecond)
	c := s.Counters(1)
	if c.PortXmitWaitPs < first+int64(19*clock.Microsecond) || c.Prio[0].XmitWaitPs != c.PortXmitWaitPs {
		t.Errorf("port_xmit_wait %d ps, VL 0 %d, 20 us after %d: the wait was not counted on", c.PortXmitWaitPs, c.Prio[0].XmitWaitPs, first)
	}
}
