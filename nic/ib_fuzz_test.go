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
// b also has a subnet management agent (and so holds its own data until
// an SM makes it Active, which none does here).
func ibFuzzPair(t testing.TB, sma bool) (*pair, *endpoint, *endpoint) {
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
	return p, a, b
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
