package nic

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

// ibPair is two IB HCAs back to back, LIDs 1 and 2, with a small receive
// buffer so that credits, not the link, pace a long transfer.
func ibPair(t *testing.T, blocks, vls int) *pair {
	t.Helper()
	cfg := func(lid uint16) func(*Config) {
		return func(c *Config) {
			c.Fabric, c.LID, c.IBBlocksPerVL, c.IBDataVLs = FabricIB, lid, blocks, vls
		}
	}
	return newPair(t, pairOpts{seed: 7, cfgA: cfg(1), cfgB: cfg(2)})
}

// wireCheck validates every packet one direction carries: a 6-byte link
// packet with a good LPCRC, or an IB data packet that decodes with good
// ICRC and VCRC, from srcLID. It also checks the sender never exceeds the
// receiver's advertised limit, as a receiver with that buffer would see.
type wireCheck struct {
	t       *testing.T
	srcLID  uint16
	data    int
	fc      int
	blocks  [8]int
	maxUsed [8]int
}

func (w *wireCheck) tap(f *frame.Frame) {
	b := f.Data
	if len(b) == wire.IBLinkSize {
		if err := wire.IBLink(b).Validate(0); err != nil {
			w.t.Errorf("link packet: %v", err)
		}
		w.fc++
		return
	}
	var p bth.IBPacket
	if err := p.Decode(b, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
		w.t.Errorf("data packet % x: %v", b[:min(len(b), 32)], err)
		return
	}
	if p.LRH.SLID() != w.srcLID {
		w.t.Errorf("SLID %d, want %d", p.LRH.SLID(), w.srcLID)
	}
	w.data++
	w.blocks[p.LRH.VL()] += wire.CreditBlocks(len(b))
}

func TestIBRCWriteReadSend(t *testing.T) {
	p := ibPair(t, 128, 1) // 8 KiB of buffer: two 4 KiB packets in flight
	ab := &wireCheck{t: t, srcLID: 1}
	ba := &wireCheck{t: t, srcLID: 2}
	p.ab.tap, p.ba.tap = ab.tap, ba.tap
	a, b := setupRC(t, p, qpOpts{bufSize: 1 << 18})
	const n = 64 << 10
	for i := range n {
		a.buf[i] = byte(i*7 + 3)
		b.buf[n+i] = byte(i*13 + 1)
	}
	post := func(e *endpoint, wr *SendWR) {
		t.Helper()
		if err := e.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	// WRITE a[0:n] -> b[0:n]; READ b[n:2n] -> a[n:2n]; SEND a[0:100] -> b's receive buffer at 2n.
	post(a, writeWR(a, b, 1, n))
	r := &SendWR{WRID: 2, Opcode: IBV_WR_RDMA_READ, SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr() + n, Length: n, LKey: a.mr.LKey()}}}
	r.RDMA.RemoteAddr, r.RDMA.RKey = b.mr.Addr()+n, b.mr.RKey()
	post(a, r)
	if err := b.qp.PostRecv(&RecvWR{WRID: 9, SGList: []SGE{{Addr: b.mr.Addr() + 2*n, Length: 4096, LKey: b.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	post(a, &SendWR{WRID: 3, Opcode: IBV_WR_SEND_WITH_IMM, ImmData: 0xfeed, SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr(), Length: 100, LKey: a.mr.LKey()}}})
	p.l.run(10*clock.Millisecond, 1<<22, func() bool { return a.scq.Len() == 3 })
	wcs := poll(a.scq)
	if len(wcs) != 3 {
		t.Fatalf("send completions %+v", wcs)
	}
	for _, wc := range wcs {
		if wc.Status != IBV_WC_SUCCESS {
			t.Errorf("completion %+v", wc)
		}
	}
	if !bytes.Equal(b.buf[:n], a.buf[:n]) {
		t.Error("WRITE: destination memory differs")
	}
	if !bytes.Equal(a.buf[n:2*n], b.buf[n:2*n]) {
		t.Error("READ: destination memory differs")
	}
	p.l.run(p.l.now+clock.Millisecond, 1<<20, nil)
	rw := poll(b.rcq)
	if len(rw) != 1 || rw[0].ImmData != 0xfeed || rw[0].ByteLen != 100 || !bytes.Equal(b.buf[2*n:2*n+100], a.buf[:100]) {
		t.Errorf("SEND: %+v", rw)
	}
	for _, x := range []*NIC{p.a, p.b} {
		if c := x.Count(IBCreditOverrun); c != 0 {
			t.Errorf("%s: ib_credit_overrun %d", x.Name(), c)
		}
		if c := x.Count(IBFCRx); c == 0 {
			t.Errorf("%s: no flow-control packet received", x.Name())
		}
	}
	if p.a.Count(IBCreditWaits) == 0 {
		t.Errorf("a 64 KiB WRITE into 8 KiB of credit never waited")
	}
	if ab.data == 0 || ab.fc == 0 || ba.data == 0 || ba.fc == 0 {
		t.Errorf("wire a->b %d data %d fc, b->a %d data %d fc", ab.data, ab.fc, ba.data, ba.fc)
	}
	if c := p.a.Count(RoCEAdpRetrans) + p.b.Count(RoCEAdpRetrans); c != 0 {
		t.Errorf("%d retransmissions on a lossless link", c)
	}
}

// Without the peer's first flow-control packet an IB port sends nothing;
// the held packet leaves when credit arrives.
func TestIBNoCreditNoData(t *testing.T) {
	p := ibPair(t, 80, 1)
	starve := true
	p.ba.drop = func(f *frame.Frame) bool { return starve && len(f.Data) == wire.IBLinkSize }
	a, b := setupRC(t, p, qpOpts{})
	copy(a.buf, "credit")
	if err := a.qp.PostSend(writeWR(a, b, 1, 8192)); err != nil {
		t.Fatal(err)
	}
	p.l.run(200*clock.Microsecond, 1<<20, nil)
	if got := p.ab.sent - uint64(p.a.Count(IBFCTx)); got != 0 {
		t.Fatalf("%d data packets sent without credit", got)
	}
	if p.a.Count(IBCreditWaits) == 0 {
		t.Error("no credit wait counted")
	}
	starve = false
	p.l.run(p.l.now+20*clock.Millisecond, 1<<22, func() bool { return a.scq.Len() == 1 })
	if wc := poll(a.scq); len(wc) != 1 || wc[0].Status != IBV_WC_SUCCESS || string(b.buf[:6]) != "credit" {
		t.Fatalf("after credit: %+v", wc)
	}
}

// A VL whose credits stop does not block another VL (IBA 7.9.4: flow
// control is per VL).
func TestIBVLIsolation(t *testing.T) {
	p := ibPair(t, 80, 2)
	starveVL1(p)
	o0, o1 := qpOpts{bufSize: 1 << 17, sl: 0}, qpOpts{bufSize: 1 << 17, sl: 1}
	a0, b0 := setupRC(t, p, o0)
	a1, b1 := setupRC(t, p, o1)
	if a0.qp.Priority() != 0 || a1.qp.Priority() != 1 {
		t.Fatalf("VLs %d and %d, want 0 and 1", a0.qp.Priority(), a1.qp.Priority())
	}
	write := func(a, b *endpoint) {
		if err := a.qp.PostSend(writeWR(a, b, 1, 1<<16)); err != nil {
			t.Fatal(err)
		}
	}
	write(a1, b1) // higher VL first: strict priority would serve it first
	write(a0, b0)
	p.l.run(5*clock.Millisecond, 1<<22, func() bool { return a0.scq.Len() == 1 })
	if wc := poll(a0.scq); len(wc) != 1 || wc[0].Status != IBV_WC_SUCCESS {
		t.Fatalf("VL0 write did not complete beside a starved VL1: %+v", wc)
	}
	if a1.scq.Len() != 0 {
		t.Error("VL1 completed without credit")
	}
	if tx := p.a.Prio(1).TxPackets; tx == 0 || tx > 1 {
		// 80 blocks of credit hold one 4 KiB packet: exactly one went.
		t.Errorf("VL1 sent %d packets on one 80-block grant", tx)
	}
	if p.a.Count(IBCreditWaits) == 0 {
		t.Error("ib_credit_waits did not count the starved VL")
	}
}

// A FECN-marked packet is answered with a CN packet; its BECN raises the
// sender's CCT index (IBA Annex A10).
func TestIBFECNBECN(t *testing.T) {
	p := ibPair(t, 1024, 1)
	marked := 0
	p.ab.mangle = func(f *frame.Frame) {
		b := f.Data
		if len(b) < wire.LRHSize+bth.BTHSize || len(b) == wire.IBLinkSize || marked == 3 {
			return
		}
		// A switch sets FECN (masked by the ICRC) and so recomputes
		// the VCRC.
		bth.BTH(b[wire.LRHSize:]).SetFECN(true)
		wire.PutVCRC(b)
		marked++
	}
	a, b := setupRC(t, p, qpOpts{bufSize: 1 << 17})
	if err := a.qp.PostSend(writeWR(a, b, 1, 1<<16)); err != nil {
		t.Fatal(err)
	}
	p.l.run(5*clock.Millisecond, 1<<22, func() bool { return a.scq.Len() == 1 })
	if wc := poll(a.scq); len(wc) != 1 || wc[0].Status != IBV_WC_SUCCESS {
		t.Fatalf("%+v", wc)
	}
	if got := p.b.Count(NPCNPSent); got != 3 {
		t.Errorf("CN packets sent %d, want 3 (one per FECN)", got)
	}
	// The FECN marks count under IB's name, not RoCE's ECN one, and
	// rdma statistic lists only IB's.
	if got, roce := p.b.Count(NPFECNMarkedPackets), p.b.Count(NPECNMarkedRoCEPackets); got != 3 || roce != 0 {
		t.Errorf("np_fecn_marked_packets %d, np_ecn_marked_roce_packets %d; want 3, 0", got, roce)
	}
	var sb strings.Builder
	if err := p.b.WriteRdmaStatistic(&sb, "emu_ib0"); err != nil {
		t.Fatal(err)
	}
	if out := sb.String(); !strings.Contains(out, " np_fecn_marked_packets 3 ") || strings.Contains(out, "roce_packets") {
		t.Errorf("rdma statistic of an IB port: %s", out)
	}
	if got := p.a.Count(RPCNPHandled); got != 3 {
		t.Errorf("BECNs handled %d, want 3", got)
	}
	if r, ok := a.qp.rp.(interface{ CCTI() uint16 }); !ok || r.CCTI() == 0 {
		t.Errorf("reaction point %T did not raise its CCT index", a.qp.rp)
	}
}

func TestIBUD(t *testing.T) {
	p := ibPair(t, 1024, 1)
	o := qpOpts{typ: IBV_QPT_UD}
	o.fill()
	a, b := newTestEndpoint(t, p.a, &o), newTestEndpoint(t, p.b, &o)
	connect(t, a, b, &o)
	if _, err := a.pd.CreateAH(&AHAttr{DLID: 0xC001}); err == nil {
		t.Error("a multicast DLID made a unicast address handle")
	}
	ah, err := a.pd.CreateAH(&AHAttr{DLID: 2, SL: 0})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.qp.PostRecv(&RecvWR{WRID: 1, SGList: []SGE{{Addr: b.mr.Addr(), Length: 4096 + 40, LKey: b.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	copy(a.buf, "ib datagram")
	wr := &SendWR{WRID: 1, Opcode: IBV_WR_SEND, SendFlags: IBV_SEND_SIGNALED, SGList: []SGE{{Addr: a.mr.Addr(), Length: 11, LKey: a.mr.LKey()}}}
	wr.UD.AH, wr.UD.RemoteQPN, wr.UD.RemoteQKey = ah, b.qp.QPN(), 0x11111111
	if err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	p.l.run(clock.Millisecond, 1<<20, nil)
	r := poll(b.rcq)
	if len(r) != 1 || r[0].Status != IBV_WC_SUCCESS || r[0].SLID != 1 || r[0].WCFlags&IBV_WC_GRH != 0 ||
		r[0].SrcQP != a.qp.QPN() || string(b.buf[40:51]) != "ib datagram" {
		t.Fatalf("%+v %q", r, b.buf[40:51])
	}
}

// Corruption on a link is caught by the VCRC (here a header byte the ICRC
// masks), corruption inside a switch that recomputed the VCRC by the ICRC;
// both are counted, and the RC transport repairs the loss.
func TestIBCorruption(t *testing.T) {
	p := ibPair(t, 1024, 1)
	k := 0
	p.ab.mangle = func(f *frame.Frame) {
		b := f.Data
		if len(b) < 200 {
			return
		}
		k++
		switch k {
		case 3:
			// A payload byte corrupted inside a switch, which then
			// computes a good VCRC over it: only the ICRC catches it.
			b[100] ^= 0x40
			wire.PutVCRC(b)
		case 6:
			b[0] ^= 0x10 // the VL nibble: masked by the ICRC, caught by the VCRC
		}
	}
	a, b := setupRC(t, p, qpOpts{bufSize: 1 << 17, retry: 7})
	for i := range 1 << 16 {
		a.buf[i] = byte(i)
	}
	if err := a.qp.PostSend(writeWR(a, b, 1, 1<<16)); err != nil {
		t.Fatal(err)
	}
	p.l.run(50*clock.Millisecond, 1<<22, func() bool { return a.scq.Len() == 1 })
	if wc := poll(a.scq); len(wc) != 1 || wc[0].Status != IBV_WC_SUCCESS {
		t.Fatalf("%+v", wc)
	}
	if !bytes.Equal(a.buf[:1<<16], b.buf[:1<<16]) {
		t.Error("memory differs after recovery")
	}
	if p.b.Count(RxICRCErr) != 1 || p.b.Count(IBVCRCErr) != 1 {
		t.Errorf("rx_icrc_errors %d, ib_vcrc_errors %d, want 1 and 1", p.b.Count(RxICRCErr), p.b.Count(IBVCRCErr))
	}
}

// IPoIB: the host's Ethernet frames cross as UD SENDs to the neighbour's
// IPoIB QP and come out as Ethernet frames again; ARP is answered locally.
func TestIPoIB(t *testing.T) {
	macA, macB := wire.MAC{2, 0, 0, 0, 0, 1}, wire.MAC{2, 0, 0, 0, 0, 2}
	ipA, ipB := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	cfg := func(lid uint16, peer IPoIBNeighbour) func(*Config) {
		return func(c *Config) {
			c.Fabric, c.LID = FabricIB, lid
			c.IPoIB = &IPoIB{Neighbours: []IPoIBNeighbour{peer}}
		}
	}
	p := newPair(t, pairOpts{seed: 3,
		cfgA: cfg(1, IPoIBNeighbour{IP: ipB, MAC: macB, LID: 2}),
		cfgB: cfg(2, IPoIBNeighbour{IP: ipA, MAC: macA, LID: 1})})
	var upA, upB [][]byte
	p.a.SetHostDeliver(func(f *frame.Frame) { upA = append(upA, bytes.Clone(f.Data)); f.Put() })
	p.b.SetHostDeliver(func(f *frame.Frame) { upB = append(upB, bytes.Clone(f.Data)); f.Put() })
	wc := &wireCheck{t: t, srcLID: 1}
	p.ab.tap = wc.tap

	// An IPv4 packet (its contents are not IPoIB's business).
	pkt := make([]byte, 14+1000)
	copy(pkt[0:6], macB[:])
	copy(pkt[6:12], macA[:])
	binary.BigEndian.PutUint16(pkt[12:], wire.EtherTypeIPv4)
	for i := 14; i < len(pkt); i++ {
		pkt[i] = byte(i)
	}
	send := func(b []byte) {
		f := p.pool.Get(len(b))
		copy(f.Data, b)
		p.a.SendHost(f)
	}
	send(pkt)
	// An ARP request from a's kernel for b's address.
	arp := make([]byte, 14+28)
	copy(arp[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(arp[6:12], macA[:])
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	copy(arp[14:], []byte{0, 1, 8, 0, 6, 4, 0, 1})
	copy(arp[22:28], macA[:])
	copy(arp[28:32], ipA.AsSlice())
	copy(arp[38:42], ipB.AsSlice())
	send(arp)
	// A multicast frame: IPoIB here has no multicast group.
	mc := bytes.Clone(pkt)
	copy(mc[0:6], []byte{1, 0, 0x5e, 0, 0, 1})
	send(mc)
	p.l.run(clock.Millisecond, 1<<20, nil)

	if len(upB) != 1 || !bytes.Equal(upB[0][14:], pkt[14:]) || [6]byte(upB[0][0:6]) != macB || [6]byte(upB[0][6:12]) != macA {
		t.Fatalf("b's host got %d frames; first % x", len(upB), upB)
	}
	if len(upA) != 1 || binary.BigEndian.Uint16(upA[0][20:]) != 2 || [6]byte(upA[0][22:28]) != macB || !bytes.Equal(upA[0][28:32], ipB.AsSlice()) {
		t.Fatalf("a's host got %d frames (want one ARP reply): % x", len(upA), upA)
	}
	if wc.data != 1 {
		t.Errorf("%d IPoIB packets on the wire, want 1", wc.data)
	}
	if p.a.Count(IPoIBTxPackets) != 1 || p.b.Count(IPoIBRxPackets) != 1 || p.a.Count(IPoIBNoNeighbour) != 1 || p.a.Count(IPoIBARPReplies) != 1 {
		t.Errorf("ipoib tx %d rx %d no_neighbour %d arp %d", p.a.Count(IPoIBTxPackets), p.b.Count(IPoIBRxPackets),
			p.a.Count(IPoIBNoNeighbour), p.a.Count(IPoIBARPReplies))
	}
}

func TestIBConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  func(*Config)
		want string
	}{
		{func(c *Config) { c.LID = 0 }, "lid 0"},
		{func(c *Config) { c.LID = 0xC000 }, "unicast LID"},
		{func(c *Config) { c.IBDataVLs = 9 }, "data VLs"},
		{func(c *Config) { c.IBBlocksPerVL = 4000 }, "credit window"},
		{func(c *Config) { c.IBBlocksPerVL = 64 }, "largest packet"},
		{func(c *Config) { c.CC = "dcqcn" }, "ibcc or none"},
		{func(c *Config) { c.SL2VL = &[16]uint8{3: 2} }, "sl2vl 3 -> 2"},
	} {
		cfg := &Config{Name: "x", MAC: wire.MAC{2}, IP: netip.MustParseAddr("10.0.0.1"), Rate: 1e9, Fabric: FabricIB, LID: 5}
		c.cfg(cfg)
		_, err := New(cfg, &loop{}, frame.NewPool())
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("want error with %q, got %v", c.want, err)
		}
	}
}

// Link integrity: when the peer falls silent (its port disabled: no data,
// no flow-control packets) for IBLinkTimeout, the port's logical link goes
// down (the SMA reports it Down, link_downed counts it), and it comes back
// (Init, for the SM to sweep) with the peer's next packet.
func TestIBLinkIntegrity(t *testing.T) {
	p := newPair(t, pairOpts{seed: 9,
		cfgA: func(c *Config) {
			c.Fabric, c.LID, c.IBLinkTimeout = FabricIB, 1, 200*clock.Microsecond
			c.SMA = &SMAConfig{NodeGUID: 0x100, Description: "a HCA-1"}
		},
		cfgB: func(c *Config) { c.Fabric, c.LID, c.IBFCRefresh = FabricIB, 2, 50*clock.Microsecond }})
	state := func() string { return mad.PortStateName(p.a.SMA().PortState(1)) }
	p.l.run(clock.Millisecond, 1<<20, nil)
	if state() != "Initializing" || p.a.Count(LinkDowned) != 0 {
		t.Fatalf("with b refreshing every 50 us: a's port %s, link_downed %d", state(), p.a.Count(LinkDowned))
	}
	p.b.SetLinkUp(false) // b's port disabled: silence on the cable
	p.l.run(p.l.now+clock.Millisecond, 1<<20, nil)
	if state() != "Down" || p.a.Count(LinkDowned) != 1 {
		t.Fatalf("after 1 ms of silence: a's port %s, link_downed %d", state(), p.a.Count(LinkDowned))
	}
	p.b.SetLinkUp(true)
	p.l.run(p.l.now+100*clock.Microsecond, 1<<20, nil)
	if state() != "Initializing" || p.a.Count(LinkDowned) != 1 {
		t.Fatalf("b back: a's port %s, link_downed %d", state(), p.a.Count(LinkDowned))
	}
}

// A UD QP's sends take their VL from each address handle: one waiting for
// credit on a starved VL1 must not hold back an RC QP on VL0 (the UD QP
// itself sits on queue 0).
func TestIBUDOtherVLDoesNotBlock(t *testing.T) {
	p := ibPair(t, 80, 2)
	starveVL1(p)
	o := qpOpts{typ: IBV_QPT_UD}
	o.fill()
	ua, ub := newTestEndpoint(t, p.a, &o), newTestEndpoint(t, p.b, &o)
	connect(t, ua, ub, &o)
	ah, err := ua.pd.CreateAH(&AHAttr{DLID: 2, SL: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		_ = ub.qp.PostRecv(&RecvWR{WRID: uint64(i), SGList: []SGE{{Addr: ub.mr.Addr(), Length: 4096 + 40, LKey: ub.mr.LKey()}}})
		wr := &SendWR{WRID: uint64(i), Opcode: IBV_WR_SEND, SGList: []SGE{{Addr: ua.mr.Addr(), Length: 4000, LKey: ua.mr.LKey()}}}
		wr.UD.AH, wr.UD.RemoteQPN, wr.UD.RemoteQKey = ah, ub.qp.QPN(), 0x11111111
		if err := ua.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	a, b := setupRC(t, p, qpOpts{bufSize: 1 << 17})
	if err := a.qp.PostSend(writeWR(a, b, 1, 1<<16)); err != nil {
		t.Fatal(err)
	}
	p.l.run(5*clock.Millisecond, 1<<22, func() bool { return a.scq.Len() == 1 })
	if wc := poll(a.scq); len(wc) != 1 || wc[0].Status != IBV_WC_SUCCESS {
		t.Fatalf("RC WRITE on VL0 behind UD sends waiting on VL1: %+v", wc)
	}
	if got := p.a.Prio(1).TxPackets; got != 1 {
		t.Errorf("VL1 sent %d UD packets on one 80-block grant, want 1", got)
	}
}

// A data packet on a VL the port does not run is counted and dropped, not
// delivered; telling the NIC its link is up again changes nothing.
func TestIBBadVLAndIdempotentLinkUp(t *testing.T) {
	p := ibPair(t, 1024, 1)
	a, b := setupRC(t, p, qpOpts{})
	p.ab.mangle = func(f *frame.Frame) {
		if len(f.Data) > 40 { // the WRITE, not link packets or ACKs
			wire.LRH(f.Data).SetVL(3)
			wire.PutVCRC(f.Data)
		}
	}
	copy(a.buf, "vl3")
	if err := a.qp.PostSend(writeWR(a, b, 1, 3)); err != nil {
		t.Fatal(err)
	}
	p.l.run(100*clock.Microsecond, 1<<20, nil)
	if p.b.Count(IBVLErr) == 0 || p.b.Count(RdmaRxPackets) != 0 || string(b.buf[:3]) == "vl3" {
		t.Errorf("ib_vl_errors %d, rdma_rx_packets %d, memory %q", p.b.Count(IBVLErr), p.b.Count(RdmaRxPackets), b.buf[:3])
	}
	fc := p.a.Count(IBFCTx)
	for range 10 {
		p.a.SetLinkUp(true)
	}
	p.l.run(p.l.now+clock.Microsecond, 1<<20, nil)
	if got := p.a.Count(IBFCTx); got != fc {
		t.Errorf("SetLinkUp(true) on an up link sent %d flow-control packets", got-fc)
	}
}

// QP1: a Get(PortCounters) GMP to a port's GSI is answered with its
// counters (data and packets without link packets); a GMP of a class with
// no agent here is counted and dropped.
func TestIBPerfMgt(t *testing.T) {
	p := ibPair(t, 1024, 1)
	a, b := setupRC(t, p, qpOpts{})
	if err := a.qp.PostSend(writeWR(a, b, 1, 8192)); err != nil {
		t.Fatal(err)
	}
	p.l.run(clock.Millisecond, 1<<20, nil)
	type got struct {
		m    mad.MAD
		slid uint16
	}
	var resps []got
	p.a.SetGMPDeliver(func(m mad.MAD, slid uint16) { resps = append(resps, got{append(mad.MAD(nil), m...), slid}) })
	req := func(tid uint64, class uint8, attr uint16) {
		m := make(mad.MAD, mad.Size)
		m.Encode(&mad.Fields{BaseVersion: 1, MgmtClass: class, ClassVersion: 1, Method: mad.MethodGet, TransactionID: tid, AttributeID: attr})
		m[mad.PerfDataOffset+1] = 1 // PortSelect
		p.a.SendGMP(2, 0, m)
	}
	bRx, bTx := p.b.Port().RxPacketsPhy-p.b.Count(IBFCRx), p.b.Port().TxPacketsPhy-p.b.Count(IBFCTx)
	// PortXmitData: the octets from the LRH through the ICRC of b's data
	// packets, in words: not the link packets, not the 2-byte VCRC.
	xmitData := (p.b.Port().TxBytesPhy - 6*p.b.Count(IBFCTx) - 2*bTx) / 4
	req(7, mad.ClassPerfMgt, mad.AttrPortCounters)
	req(8, mad.ClassPerfMgt, 0x0099)
	req(9, 0x03, 0x0035) // SubnAdm PathRecord: no SA here
	p.l.run(p.l.now+clock.Millisecond, 1<<20, nil)
	if len(resps) != 2 {
		t.Fatalf("%d responses, want 2 (PortCounters, unsupported attribute)", len(resps))
	}
	r := resps[0]
	if r.slid != 2 || r.m.TransactionID() != 7 || r.m.Method() != mad.MethodGetResp || r.m.Status() != 0 {
		t.Fatalf("response %+v from %d", r.m.Fields(), r.slid)
	}
	pc := mad.PortCounters(r.m[mad.PerfDataOffset:]).Fields()
	// b answered after receiving the GMPs (3 more packets in) and before
	// sending its answers.
	if pc.PortSelect != 1 || pc.RcvPkts < bRx+1 || pc.XmitPkts != bTx || pc.RcvData < 8192/4 || pc.RcvErrors != 0 {
		t.Errorf("PortCounters %+v; b had received %d and sent %d data packets", pc, bRx, bTx)
	}
	if pc.XmitData != xmitData {
		t.Errorf("PortXmitData %d words, want %d (LRH through ICRC, no VCRC)", pc.XmitData, xmitData)
	}
	if s := resps[1].m.Status(); s != mad.StatusMethodAttrUnsupp {
		t.Errorf("unknown attribute: status %#x", s)
	}
	if p.b.Count(GSIUnsupported) != 1 || p.b.Count(GSIRx) != 3 || p.b.Count(GSITx) != 2 {
		t.Errorf("b: gsi_rx %d gsi_tx %d gsi_unsupported %d", p.b.Count(GSIRx), p.b.Count(GSITx), p.b.Count(GSIUnsupported))
	}
}

// starveVL1 makes b grant VL1 its first credits only: every later
// flow-control packet of VL1 from b is lost.
func starveVL1(p *pair) {
	granted := false
	p.ba.drop = func(f *frame.Frame) bool {
		if len(f.Data) != wire.IBLinkSize || wire.IBLink(f.Data).VL() != 1 {
			return false
		}
		if granted {
			return true
		}
		granted = true
		return false
	}
}

// TestIBEthtoolNoPriorities: an IB port's ethtool -S lists its data VLs'
// packets, and none of RoCE's PFC or per-priority counters.
func TestIBEthtoolNoPriorities(t *testing.T) {
	p := ibPair(t, 128, 2)
	p.l.run(200*clock.Microsecond, 1<<20, nil)
	var sb strings.Builder
	if err := p.a.WriteEthtool(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, line := range []string{"NIC statistics:\n", "     rx_packets_phy: ", "     vl0_rx_packets: 0\n", "     vl1_tx_bytes: 0\n"} {
		if !strings.Contains(out, line) {
			t.Errorf("ethtool output lacks %q:\n%s", line, out)
		}
	}
	for _, no := range []string{"prio", "pause", "vl2_"} {
		if strings.Contains(out, no) {
			t.Errorf("an IB port with 2 VLs lists %q:\n%s", no, out)
		}
	}
}

// TestIBPortXmitWaitTicks: the PMA's PortXmitWait is the time a VL waited
// for credit in ticks of mad.XmitWaitTick, as the switch reports its
// port_xmit_wait, not the number of waits (ib_credit_waits).
func TestIBPortXmitWaitTicks(t *testing.T) {
	p := ibPair(t, 128, 1)
	p.l.run(100*clock.Microsecond, 1<<20, nil)
	n := p.a
	f := p.pool.Get(256)
	defer f.Put()
	waits := n.cnt[IBCreditWaits]
	n.ibl.fcclKnown[0] = false // as before the peer's first flow-control packet
	if n.ibCredit(0, f) {
		t.Fatal("credit without a limit")
	}
	t0 := p.l.now
	p.l.run(t0+50*clock.Microsecond, 1<<20, nil)
	p.l.now = t0 + 50*clock.Microsecond // run stops at the last event before
	// Read while the VL still waits: the wait so far, not 0.
	if pc := n.portCounters(1); pc.XmitWait != 50 {
		t.Errorf("PortXmitWait %d ticks during a 50 us wait, want 50", pc.XmitWait)
	}
	n.ibl.fcclKnown[0] = true
	n.ibl.fccl[0] = wire.AddBlocks(n.ibl.fctbs[0], 100)
	if !n.ibCredit(0, f) {
		t.Fatal("no credit after the limit came")
	}
	pc := n.portCounters(1)
	if pc.XmitWait != 50 || n.cnt[IBCreditWaits] != waits+1 {
		t.Errorf("PortXmitWait %d ticks (want 50, 1 us each), ib_credit_waits +%d (want +1)", pc.XmitWait, n.cnt[IBCreditWaits]-waits)
	}
}
