package nic

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

// ibFuzzPair is two IB HCAs with IPoIB, an RC and a UD QP each; with sma,
// b also has a subnet management agent, whose port the SMPs of an SM one
// hop away make Armed and then Active (a port in Init takes SMPs only).
func ibFuzzPair(t testing.TB, sma bool) (*pair, *endpoint, *endpoint) {
	return ibSMAPair(t, sma, sma)
}

// ibSMAPair is ibFuzzPair with b's port left in Init (no SM) unless active.
func ibSMAPair(t testing.TB, sma, active bool) (*pair, *endpoint, *endpoint) {
	cfg := func(lid uint16, peer uint16, sma bool) func(*Config) {
		return func(c *Config) {
			c.Fabric, c.LID = FabricIB, lid
			c.IPoIB = &IPoIB{Neighbours: []IPoIBNeighbour{{IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(peer)}), MAC: wire.MAC{2, 0, 0, 0, 0, byte(peer)}, LID: peer}}}
			if sma {
				c.SMA = &SMAConfig{NodeGUID: 0x0002c90300001200, Description: "b HCA-1"}
			}
		}
	}
	p := newPair(t, pairOpts{seed: 5, cfgA: cfg(1, 2, false), cfgB: cfg(2, 1, sma)})
	p.a.SetHostDeliver(func(f *frame.Frame) { f.Put() })
	p.b.SetHostDeliver(func(f *frame.Frame) { f.Put() })
	a, b := setupRC(t, p, qpOpts{mtu: IBV_MTU_256, retry: 1, timeout: 2})
	_ = b.qp.PostRecv(&RecvWR{WRID: 1, SGList: []SGE{{Addr: b.mr.Addr(), Length: 1024, LKey: b.mr.LKey()}}})
	o := qpOpts{typ: IBV_QPT_UD}
	o.fill()
	ua, ub := newTestEndpoint(t, p.a, &o), newTestEndpoint(t, p.b, &o)
	connect(t, ua, ub, &o)
	_ = ub.qp.PostRecv(&RecvWR{WRID: 2, SGList: []SGE{{Addr: ub.mr.Addr(), Length: 1024, LKey: ub.mr.LKey()}}})
	if active {
		for _, st := range []uint8{mad.PortStateArmed, mad.PortStateActive} {
			p.b.Receive(setPortStateSMP(t, p, st))
		}
		if got := p.b.SMA().PortState(1); got != mad.PortStateActive {
			t.Fatalf("b's port state %d after the SM's SMPs, want Active", got)
		}
	}
	return p, a, b
}

// setPortStateSMP is a directed-route Set PortInfo from an SM one hop away
// that moves the port to state, keeping LID 2.
func setPortStateSMP(t testing.TB, p *pair, state uint8) *frame.Frame {
	f := mad.SMPFields{Method: mad.MethodSet, AttributeID: mad.AttrPortInfo, AttrModifier: 1, TransactionID: uint64(state)}
	mad.DRPath(&f, []uint8{1})
	mad.PortInfo(f.Data[:mad.PortInfoSize]).Encode(&mad.PortInfoFields{LID: 2, MasterSMLID: 1, PortState: state})
	smp := make(mad.SMP, mad.Size)
	smp.Encode(&f)
	fr := p.pool.Get(mad.PacketSize)
	if _, err := mad.EncodePacket(fr.Data, &mad.PacketFields{DLID: mad.PermissiveLID, SLID: mad.PermissiveLID}, smp); err != nil {
		t.Fatal(err)
	}
	return fr
}

// TestIBInitPortDropsData: a port with an SMA that no SM has armed drops
// data packets (counted) and answers nothing: here a FECN-marked READ
// request, whose CN would have waited for ever behind the transmitter held
// until Active (found by FuzzReceiveIB: a leaked frame). Armed, it takes
// them.
func TestIBInitPortDropsData(t *testing.T) {
	p, _, _ := ibSMAPair(t, true, false)
	p.l.run(10*clock.Microsecond, 1<<16, nil)
	send := func() {
		fr := p.pool.Get(42)
		copy(fr.Data, "\x002\x00\x020\n00\f\x00\xff\xff\x80\x00\x00\x02\x800000000000000000000000000")
		if err := bth.FinishIBPacket(fr.Data); err != nil {
			t.Fatal(err)
		}
		p.b.Receive(fr)
		p.l.run(10*clock.Millisecond, 1<<16, nil)
	}
	send()
	if got := p.b.Count(IBPortStateDrop); got != 1 || p.b.Count(NPCNPSent) != 0 {
		t.Fatalf("in Init: ib_port_state_drop %d, CNs sent %d; want 1, 0", got, p.b.Count(NPCNPSent))
	}
	if p.pool.Outstanding != 0 {
		t.Fatalf("%d frames held", p.pool.Outstanding)
	}
	p.b.Receive(setPortStateSMP(t, p, mad.PortStateArmed))
	send()
	if got := p.b.Count(IBPortStateDrop); got != 1 || p.b.Count(NPFECNMarkedPackets) != 1 {
		t.Fatalf("Armed: ib_port_state_drop %d, FECN-marked packets %d; want 1, 1", got, p.b.Count(NPFECNMarkedPackets))
	}
}

// ibFuzzSeeds records the packets of a short IB exchange: WRITE, READ,
// SEND, ACKs, READ responses, flow-control packets, a FECN answer (CN), an
// IPoIB packet.
func ibFuzzSeeds(t testing.TB) [][]byte {
	p, a, b := ibFuzzPair(t, false)
	var seeds [][]byte
	rec := func(f *frame.Frame) {
		if len(seeds) < 64 {
			seeds = append(seeds, bytes.Clone(f.Data))
		}
	}
	p.ab.tap, p.ba.tap = rec, rec
	p.ab.mangle = func(f *frame.Frame) {
		if len(f.Data) > 100 {
			bth.BTH(f.Data[wire.LRHSize:]).SetFECN(true)
			wire.PutVCRC(f.Data)
		}
	}
	_ = a.qp.PostSend(writeWR(a, b, 1, 600))
	rd := writeWR(a, b, 2, 600)
	rd.Opcode = IBV_WR_RDMA_READ
	_ = a.qp.PostSend(rd)
	_ = a.qp.PostSend(&SendWR{WRID: 3, Opcode: IBV_WR_SEND_WITH_IMM, SGList: []SGE{{Addr: a.mr.Addr(), Length: 300, LKey: a.mr.LKey()}}})
	h := p.pool.Get(14 + 60)
	copy(h.Data, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45})
	p.a.SendHost(h)
	p.l.run(clock.Millisecond, 1<<20, nil)
	// SMPs: a directed-route Get NodeInfo and Set PortInfo from an SM one
	// hop away.
	for _, f := range []mad.SMPFields{
		{Method: mad.MethodGet, AttributeID: mad.AttrNodeInfo, TransactionID: 1},
		{Method: mad.MethodSet, AttributeID: mad.AttrPortInfo, AttrModifier: 1, TransactionID: 2},
	} {
		mad.DRPath(&f, []uint8{1})
		smp := make(mad.SMP, mad.Size)
		smp.Encode(&f)
		pkt := make([]byte, mad.PacketSize)
		if _, err := mad.EncodePacket(pkt, &mad.PacketFields{DLID: mad.PermissiveLID, SLID: mad.PermissiveLID}, smp); err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, pkt)
	}
	return seeds
}

// FuzzReceiveIB feeds arbitrary bytes to an IB HCA with live RC, UD,
// IPoIB and a subnet management agent: it never panics, every packet is processed or a counted drop,
// and no frame leaks.
func FuzzReceiveIB(f *testing.F) {
	for _, s := range ibFuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Add([]byte{}, false)
	f.Add(make([]byte, wire.IBLinkSize), false)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if len(data) > frame.MaxFrame {
			data = data[:frame.MaxFrame]
		}
		p, _, _ := ibFuzzPair(t, true)
		p.l.run(10*clock.Microsecond, 1<<16, nil) // initial credits
		fr := p.pool.Get(len(data))
		copy(fr.Data, data)
		if fix {
			// Past the CRCs, so the mutation reaches the engine.
			_ = bth.FinishIBPacket(fr.Data)
		}
		before := counterSum(p.b)
		p.b.Receive(fr)
		if counterSum(p.b) == before {
			t.Fatalf("packet neither processed nor counted: % x", data[:min(len(data), 64)])
		}
		p.l.run(10*clock.Millisecond, 1<<16, nil)
		if p.pool.Outstanding != 0 {
			t.Fatalf("%d frames leaked", p.pool.Outstanding)
		}
	})
}
