package nic

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

func opcodeOf(f *frame.Frame) bth.Opcode {
	var p bth.Packet
	if p.Decode(f.Data, 0) != nil {
		return 0xFF
	}
	return p.BTH.OpCode()
}

// Atomics execute once: when the atomic ACK is lost the requester times
// out and resends, and the responder replays the saved original value
// instead of adding again (responder resources).
func TestAtomicsReplay(t *testing.T) {
	p := newPair(t, pairOpts{seed: 11})
	a, b := setupRC(t, p, qpOpts{retry: 7, timeout: 4})
	binary.LittleEndian.PutUint64(b.buf[64:], 1000)
	dropped := false
	p.ba.drop = func(f *frame.Frame) bool {
		if !dropped && opcodeOf(f) == bth.RCAtomicAcknowledge {
			dropped = true
			return true
		}
		return false
	}
	fa := &SendWR{WRID: 1, Opcode: IBV_WR_ATOMIC_FETCH_AND_ADD, SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr(), Length: 8, LKey: a.mr.LKey()}}}
	fa.Atomic.RemoteAddr, fa.Atomic.RKey, fa.Atomic.CompareAdd = b.mr.Addr()+64, b.mr.RKey(), 5
	cs := &SendWR{WRID: 2, Opcode: IBV_WR_ATOMIC_CMP_AND_SWP, SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr() + 8, Length: 8, LKey: a.mr.LKey()}}}
	cs.Atomic.RemoteAddr, cs.Atomic.RKey, cs.Atomic.CompareAdd, cs.Atomic.Swap = b.mr.Addr()+64, b.mr.RKey(), 1005, 77
	miss := &SendWR{WRID: 3, Opcode: IBV_WR_ATOMIC_CMP_AND_SWP, SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr() + 16, Length: 8, LKey: a.mr.LKey()}}}
	miss.Atomic.RemoteAddr, miss.Atomic.RKey, miss.Atomic.CompareAdd, miss.Atomic.Swap = b.mr.Addr()+64, b.mr.RKey(), 1, 2
	for _, wr := range []*SendWR{fa, cs, miss} {
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	wcs := runUntilWC(t, p, a.scq, 3, clock.Second)
	if len(wcs) != 3 {
		t.Fatalf("%+v", wcs)
	}
	for i, op := range []WCOpcode{IBV_WC_FETCH_ADD, IBV_WC_COMP_SWAP, IBV_WC_COMP_SWAP} {
		if wcs[i].Status != IBV_WC_SUCCESS || wcs[i].Opcode != op || wcs[i].ByteLen != 8 {
			t.Errorf("completion %d: %+v", i, wcs[i])
		}
	}
	got := []uint64{binary.LittleEndian.Uint64(a.buf), binary.LittleEndian.Uint64(a.buf[8:]), binary.LittleEndian.Uint64(a.buf[16:])}
	if got[0] != 1000 || got[1] != 1005 || got[2] != 77 {
		t.Errorf("original values %v, want [1000 1005 77]", got)
	}
	if v := binary.LittleEndian.Uint64(b.buf[64:]); v != 77 {
		t.Errorf("target %d, want 77 (added once, then swapped)", v)
	}
	// The next atomic ACK implies the lost one (implied_nak_seq_err): the
	// requester resends and the responder answers from its resources.
	if !dropped || p.b.Count(DuplicateRequest) == 0 || p.a.Count(ImpliedNakSeqErr)+p.a.Count(LocalAckTimeoutErr) == 0 || p.b.Count(RxAtomicRequests) != 3 {
		t.Errorf("replay not exercised: %s / %s", counters(p.a), counters(p.b))
	}
	// A misaligned atomic is an invalid request.
	bad := *fa
	bad.WRID = 4
	bad.Atomic.RemoteAddr++
	if err := a.qp.PostSend(&bad); err != nil {
		t.Fatal(err)
	}
	if w := runUntilWC(t, p, a.scq, 1, 2*clock.Second); len(w) != 1 || w[0].Status != IBV_WC_REM_INV_REQ_ERR {
		t.Errorf("misaligned atomic: %+v", w)
	}
}

// WRITE with immediate, SEND with immediate and SEND with invalidate give
// the receiver the completion fields verbs programs read.
func TestImmediateAndInvalidate(t *testing.T) {
	p := newPair(t, pairOpts{seed: 12})
	a, b := setupRC(t, p, qpOpts{retry: 7})
	inv, err := b.pd.RegMR(make([]byte, 4096), IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_WRITE)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := b.qp.PostRecv(&RecvWR{WRID: uint64(10 + i), SGList: []SGE{{Addr: b.mr.Addr() + 8192, Length: 8192, LKey: b.mr.LKey()}}}); err != nil {
			t.Fatal(err)
		}
	}
	copy(a.buf, bytes.Repeat([]byte("0123456789"), 600))
	w1 := writeWR(a, b, 1, 5000)
	w1.Opcode, w1.ImmData = IBV_WR_RDMA_WRITE_WITH_IMM, 0xdeadbeef
	w2 := &SendWR{WRID: 2, Opcode: IBV_WR_SEND_WITH_IMM, ImmData: 42, SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr(), Length: 100, LKey: a.mr.LKey()}}}
	w3 := &SendWR{WRID: 3, Opcode: IBV_WR_SEND_WITH_INV, InvalidateRKey: inv.RKey(), SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr(), Length: 7, LKey: a.mr.LKey()}}}
	for _, wr := range []*SendWR{w1, w2, w3} {
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	if w := runUntilWC(t, p, a.scq, 3, clock.Second); len(w) != 3 {
		t.Fatalf("%+v", w)
	}
	r := poll(b.rcq)
	if len(r) != 3 {
		t.Fatalf("receive completions %+v", r)
	}
	want := []WC{
		{WRID: 10, Opcode: IBV_WC_RECV_RDMA_WITH_IMM, ByteLen: 5000, ImmData: 0xdeadbeef, WCFlags: IBV_WC_WITH_IMM},
		{WRID: 11, Opcode: IBV_WC_RECV, ByteLen: 100, ImmData: 42, WCFlags: IBV_WC_WITH_IMM},
		{WRID: 12, Opcode: IBV_WC_RECV, ByteLen: 7, InvalidatedRKey: inv.RKey(), WCFlags: IBV_WC_WITH_INV},
	}
	for i, w := range want {
		g := r[i]
		if g.WRID != w.WRID || g.Opcode != w.Opcode || g.ByteLen != w.ByteLen || g.ImmData != w.ImmData ||
			g.WCFlags != w.WCFlags || g.InvalidatedRKey != w.InvalidatedRKey || g.Status != IBV_WC_SUCCESS || g.QPNum != b.qp.QPN() {
			t.Errorf("receive %d: %+v, want %+v", i, g, w)
		}
	}
	if !bytes.Equal(b.buf[:5000], a.buf[:5000]) {
		t.Error("WRITE with immediate: data differs")
	}
	if inv.Valid() {
		t.Error("SEND with invalidate left the region valid")
	}
	// The invalidated key no longer works.
	w4 := writeWR(a, b, 4, 10)
	w4.RDMA.RemoteAddr, w4.RDMA.RKey = inv.Addr(), inv.RKey()
	if err := a.qp.PostSend(w4); err != nil {
		t.Fatal(err)
	}
	if w := runUntilWC(t, p, a.scq, 1, clock.Second); len(w) != 1 || w[0].Status != IBV_WC_REM_ACCESS_ERR {
		t.Errorf("write to invalidated key: %+v", w)
	}
}

// UD: Q_Key check, the 40-byte GRH area, source QP; a message larger than
// the MTU fails locally and moves the QP to SQE.
func TestUD(t *testing.T) {
	p := newPair(t, pairOpts{seed: 13})
	o := qpOpts{typ: IBV_QPT_UD}
	o.fill()
	a, b := newTestEndpoint(t, p.a, &o), newTestEndpoint(t, p.b, &o)
	connect(t, a, b, &o)
	ah, err := a.pd.CreateAH(&AHAttr{DMAC: p.b.cfg.MAC, DGID: p.b.GID()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := b.qp.PostRecv(&RecvWR{WRID: uint64(i), SGList: []SGE{{Addr: b.mr.Addr(), Length: 4096 + 40, LKey: b.mr.LKey()}}}); err != nil {
			t.Fatal(err)
		}
	}
	copy(a.buf, "datagram!")
	send := func(id uint64, n uint32, qkey uint32) {
		wr := &SendWR{WRID: id, Opcode: IBV_WR_SEND, SendFlags: IBV_SEND_SIGNALED, SGList: []SGE{{Addr: a.mr.Addr(), Length: n, LKey: a.mr.LKey()}}}
		wr.UD.AH, wr.UD.RemoteQPN, wr.UD.RemoteQKey = ah, b.qp.QPN(), qkey
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	send(1, 9, 0x11111111)
	send(2, 9, 0x22222222) // wrong Q_Key: dropped at the receiver
	send(3, 9, 0x80000000) // high bit: the sender's QP Q_Key
	p.l.run(clock.Millisecond, 1<<20, nil)
	if w := poll(a.scq); len(w) != 3 || w[2].Status != IBV_WC_SUCCESS {
		t.Fatalf("send completions %+v", w)
	}
	r := poll(b.rcq)
	if len(r) != 2 {
		t.Fatalf("receive completions %+v", r)
	}
	for _, w := range r {
		if w.ByteLen != 49 || w.WCFlags&IBV_WC_GRH == 0 || w.SrcQP != a.qp.QPN() || w.Status != IBV_WC_SUCCESS {
			t.Errorf("%+v", w)
		}
	}
	if b.buf[20]>>4 != 4 || string(b.buf[40:49]) != "datagram!" {
		t.Errorf("GRH area % x, payload %q", b.buf[20:24], b.buf[40:49])
	}
	if p.b.Count(RxQKeyViolation) != 1 {
		t.Errorf("rx_qkey_violation %d", p.b.Count(RxQKeyViolation))
	}
	send(4, 4097, 0x11111111)
	send(5, 1, 0x11111111)
	p.l.run(p.l.now+clock.Millisecond, 1<<20, nil)
	if w := poll(a.scq); len(w) != 2 || w[0].Status != IBV_WC_LOC_LEN_ERR || w[1].Status != IBV_WC_WR_FLUSH_ERR {
		t.Errorf("oversized UD send: %+v", w)
	}
	if a.qp.State() != IBV_QPS_SQE {
		t.Errorf("state %v, want SQE", a.qp.State())
	}
	if err := a.qp.ModifyQP(&QPAttr{QPState: IBV_QPS_RTS}, IBV_QP_STATE); err != nil {
		t.Fatal(err)
	}
	send(6, 9, 0x11111111)
	p.l.run(p.l.now+clock.Millisecond, 1<<20, nil)
	if w := poll(a.scq); len(w) != 1 || w[0].Status != IBV_WC_SUCCESS {
		t.Errorf("after SQE -> RTS: %+v", w)
	}
}

// UC: no acknowledgements; a message that loses a packet is dropped
// whole at the responder and the next one gets through.
func TestUC(t *testing.T) {
	p := newPair(t, pairOpts{seed: 14})
	o := qpOpts{typ: IBV_QPT_UC, mtu: IBV_MTU_1024, accessQP: IBV_ACCESS_REMOTE_WRITE}
	a, b := setupRC(t, p, o)
	for i := range 3 {
		if err := b.qp.PostRecv(&RecvWR{WRID: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	p.ab.drop = func(f *frame.Frame) bool { n++; return n == 2 } // the MIDDLE of message 1
	for i := range 3 {
		for j := range 4096 {
			a.buf[i*4096+j] = byte(i + 1)
		}
		wr := writeWR(a, b, uint64(i+1), 4096)
		wr.Opcode, wr.ImmData = IBV_WR_RDMA_WRITE_WITH_IMM, uint32(i)
		wr.SGList[0].Addr += uint64(i * 4096)
		wr.RDMA.RemoteAddr += uint64(i * 4096)
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	p.l.run(clock.Millisecond, 1<<20, nil)
	if w := poll(a.scq); len(w) != 3 {
		t.Fatalf("UC send completions %+v", w)
	}
	r := poll(b.rcq)
	if len(r) != 2 || r[0].ImmData != 1 || r[1].ImmData != 2 {
		t.Fatalf("UC receive completions %+v", r)
	}
	if !bytes.Equal(a.buf[4096:3*4096], b.buf[4096:3*4096]) {
		t.Error("messages 2 and 3 differ")
	}
	if p.b.Count(OutOfSequence) != 1 {
		t.Errorf("out_of_sequence %d, want 1: %s", p.b.Count(OutOfSequence), counters(p.b))
	}
}

// SQD: new WRs wait while the QP drains; back in RTS they go.
func TestSQD(t *testing.T) {
	p := newPair(t, pairOpts{seed: 15})
	a, b := setupRC(t, p, qpOpts{retry: 7})
	if err := a.qp.ModifyQP(&QPAttr{QPState: IBV_QPS_SQD}, IBV_QP_STATE); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(writeWR(a, b, 1, 100)); err != nil {
		t.Fatal(err)
	}
	p.l.run(clock.Millisecond, 1<<20, nil)
	if w := poll(a.scq); len(w) != 0 || !a.qp.SQDrained() {
		t.Fatalf("SQD sent anyway: %+v drained=%v", w, a.qp.SQDrained())
	}
	if err := a.qp.ModifyQP(&QPAttr{QPState: IBV_QPS_RTS}, IBV_QP_STATE); err != nil {
		t.Fatal(err)
	}
	if w := runUntilWC(t, p, a.scq, 1, 2*clock.Millisecond); len(w) != 1 || w[0].Status != IBV_WC_SUCCESS {
		t.Fatalf("%+v", w)
	}
}

// Verbs argument checks that fail at once.
func TestVerbsChecks(t *testing.T) {
	p := newPair(t, pairOpts{})
	pd := p.a.AllocPD()
	if _, err := pd.RegMR(make([]byte, 8), IBV_ACCESS_REMOTE_WRITE); err == nil {
		t.Error("remote write without local write accepted")
	}
	if _, err := pd.RegMR(nil, IBV_ACCESS_LOCAL_WRITE); err == nil {
		t.Error("empty region accepted")
	}
	mr, _ := pd.RegMR(make([]byte, 100), IBV_ACCESS_LOCAL_WRITE)
	for _, c := range []struct {
		va  uint64
		n   uint32
		acc AccessFlags
		ok  mrCheck
	}{
		{mr.Addr(), 100, IBV_ACCESS_LOCAL_WRITE, mrOK},
		{mr.Addr() + 99, 1, 0, mrOK},
		{mr.Addr() + 100, 0, 0, mrOK},
		{mr.Addr() + 99, 2, 0, mrOutOfBand},
		{mr.Addr() - 1, 1, 0, mrOutOfBand},
		{mr.Addr(), 1, IBV_ACCESS_REMOTE_READ, mrNoAccess},
	} {
		if _, _, got := p.a.lookup(pd, mr.LKey(), c.va, c.n, c.acc); got != c.ok {
			t.Errorf("lookup va+%d len %d: %d, want %d", c.va-mr.Addr(), c.n, got, c.ok)
		}
	}
	if _, _, got := p.a.lookup(p.a.AllocPD(), mr.LKey(), mr.Addr(), 1, 0); got != mrBadPD {
		t.Errorf("other PD: %d", got)
	}
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
	if _, _, got := p.a.lookup(pd, mr.LKey(), mr.Addr(), 1, 0); got != mrBadKey {
		t.Errorf("deregistered: %d", got)
	}
	o := qpOpts{}
	o.fill()
	e := newTestEndpoint(t, p.a, &o)
	if err := e.qp.PostSend(&SendWR{Opcode: IBV_WR_SEND}); err == nil {
		t.Error("post_send in RESET accepted")
	}
	if err := e.qp.PostRecv(&RecvWR{SGList: []SGE{{Addr: e.mr.Addr(), Length: 1, LKey: e.mr.LKey() + 1}}}); err == nil {
		t.Error("post_recv with a bad lkey accepted")
	}
	if _, err := p.a.CreateCQ(0); err == nil {
		t.Error("CQ of 0 entries accepted")
	}
}
