package nic

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// Data integrity (issue test a): WRITE, READ and SEND of 1 B to 16 MiB,
// several messages in flight, over a clean link, 1% loss, 1% corruption
// (dropped by the ICRC check and counted) and 1% reordering. Every
// destination byte must equal its source, and completions come in posting
// order with IBV_WC_SUCCESS.
func TestDataIntegrity(t *testing.T) {
	sizes := []int{1, 3, 4095, 4096, 4097, 65539, 1 << 20, 16 << 20}
	conds := []struct {
		name                   string
		loss, corrupt, reorder float64
	}{
		{"clean", 0, 0, 0},
		{"loss1pct", 0.01, 0, 0},
		{"corrupt1pct", 0, 0.01, 0},
		{"reorder1pct", 0, 0, 0.01},
	}
	ops := []WROpcode{IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_SEND}
	total := 0
	offs := make([]int, len(sizes))
	for i, s := range sizes {
		offs[i] = total
		total += (s + 4095) &^ 4095
	}
	if testing.Short() {
		sizes = sizes[:len(sizes)-1]
	}
	for ci, cond := range conds {
		for _, op := range ops {
			t.Run(fmt.Sprintf("%s/%v", cond.name, op), func(t *testing.T) {
				p := newPair(t, pairOpts{seed: uint64(ci*10) + uint64(op)})
				for _, k := range []*link{p.ab, p.ba} {
					k.loss, k.corrupt, k.reorder = cond.loss, cond.corrupt, cond.reorder
				}
				a, b := setupRC(t, p, qpOpts{bufSize: total, retry: 7, timeout: 10})
				rng := rand.New(rand.NewPCG(uint64(ci), uint64(op)))
				src, dst := a, b // data flows src -> dst
				if op == IBV_WR_RDMA_READ {
					src, dst = b, a
				}
				for i := range src.buf {
					src.buf[i] = byte(rng.Uint32())
				}
				clear(dst.buf)
				for i, s := range sizes {
					off := uint64(offs[i])
					wr := &SendWR{WRID: uint64(i + 1), Opcode: op, SendFlags: IBV_SEND_SIGNALED,
						SGList: []SGE{{Addr: a.mr.Addr() + off, Length: uint32(s), LKey: a.mr.LKey()}}}
					wr.RDMA.RemoteAddr, wr.RDMA.RKey = b.mr.Addr()+off, b.mr.RKey()
					if op == IBV_WR_SEND {
						if err := b.qp.PostRecv(&RecvWR{WRID: uint64(100 + i), SGList: []SGE{{Addr: b.mr.Addr() + off, Length: uint32(s), LKey: b.mr.LKey()}}}); err != nil {
							t.Fatal(err)
						}
					}
					if err := a.qp.PostSend(wr); err != nil {
						t.Fatal(err)
					}
				}
				var wcs, rwcs []WC
				done := func() bool {
					wcs = append(wcs, poll(a.scq)...)
					rwcs = append(rwcs, poll(b.rcq)...)
					return len(wcs) == len(sizes)
				}
				if !p.l.run(20*clock.Second, 1<<26, done) {
					t.Fatalf("%d of %d completions by %v (%d events); a=%v b=%v", len(wcs), len(sizes), p.l.now, p.l.events, counters(p.a), counters(p.b))
				}
				for i, wc := range wcs {
					if wc.WRID != uint64(i+1) || wc.Status != IBV_WC_SUCCESS || wc.Opcode != wcOpcodeOf(op) || wc.ByteLen != uint32(sizes[i]) {
						t.Errorf("completion %d: %+v, want wr_id %d, %v, %v, %d bytes", i, wc, i+1, IBV_WC_SUCCESS, wcOpcodeOf(op), sizes[i])
					}
				}
				if op == IBV_WR_SEND {
					p.l.run(p.l.now+clock.Millisecond, 1<<20, nil)
					rwcs = append(rwcs, poll(b.rcq)...)
					if len(rwcs) != len(sizes) {
						t.Fatalf("%d receive completions, want %d", len(rwcs), len(sizes))
					}
					for i, wc := range rwcs {
						if wc.WRID != uint64(100+i) || wc.Status != IBV_WC_SUCCESS || wc.Opcode != IBV_WC_RECV || wc.ByteLen != uint32(sizes[i]) {
							t.Errorf("receive completion %d: %+v", i, wc)
						}
					}
				}
				for i, s := range sizes {
					o := offs[i]
					if !bytes.Equal(src.buf[o:o+s], dst.buf[o:o+s]) {
						t.Errorf("message %d (%d bytes): destination differs from source", i, s)
					}
				}
				p.l.run(p.l.now+clock.Millisecond, 1<<20, nil) // let frames in flight land
				// The ICRC masks BTH byte 4 (FECN, BECN, reserved): a flip there
				// keeps the ICRC valid and is caught as reserved bits set.
				icrc := p.a.Count(RxICRCErr) + p.b.Count(RxICRCErr)
				malformed := p.a.Count(RxMalformed) + p.b.Count(RxMalformed)
				if corrupted := p.ab.corrupted + p.ba.corrupted; icrc+malformed != corrupted {
					t.Errorf("rx_icrc_errors %d + rx_malformed_roce %d, link corrupted %d frames", icrc, malformed, corrupted)
				}
				if cond.corrupt > 0 && icrc == 0 {
					t.Error("no corrupted frame was caught by the ICRC check")
				}
				if cond.loss+cond.corrupt+cond.reorder > 0 && p.a.Count(RoCEAdpRetrans)+p.b.Count(RoCEAdpRetrans) == 0 {
					t.Error("faults injected but nothing was retransmitted")
				}
				if p.pool.Outstanding != 0 {
					t.Errorf("%d frames not returned to the pool", p.pool.Outstanding)
				}
				t.Logf("%v: %d events, sim time %v, retrans a=%d b=%d, NAKs seq=%d, timeouts=%d, icrc drops=%d",
					op, p.l.events, p.l.now, p.a.Count(RoCEAdpRetrans), p.b.Count(RoCEAdpRetrans),
					p.a.Count(PacketSeqErr)+p.b.Count(PacketSeqErr), p.a.Count(LocalAckTimeoutErr)+p.b.Count(LocalAckTimeoutErr), icrc)
			})
		}
	}
}

// counters renders the non-zero counters, for failure messages.
func counters(n *NIC) string {
	s := ""
	n.EachCounter(func(name string, v uint64) {
		if v != 0 {
			s += fmt.Sprintf("%s=%d ", name, v)
		}
	})
	return s
}

// RoCEv2 over IPv6: WRITE, READ and SEND with loss; frames carry IPv6
// with the flow label the QPs derive, and GIDs are IPv6 addresses.
func TestIPv6(t *testing.T) {
	p := newPair(t, pairOpts{seed: 6, v6: true})
	p.ab.loss, p.ba.loss = 0.01, 0.01
	v6 := 0
	var pkt bth.Packet
	p.ab.tap = func(f *frame.Frame) {
		if pkt.Decode(f.Data, bth.VerifyICRC) == nil && pkt.IPVersion == 6 && pkt.IPv6.FlowLabel() != 0 {
			v6++
		}
	}
	a, b := setupRC(t, p, qpOpts{bufSize: 1 << 20, retry: 7})
	for i := range a.buf {
		a.buf[i] = byte(i * 7)
	}
	if err := b.qp.PostRecv(&RecvWR{WRID: 1, SGList: []SGE{{Addr: b.mr.Addr() + 1<<19, Length: 1 << 19, LKey: b.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	w := writeWR(a, b, 1, 1<<19)
	s := &SendWR{WRID: 2, Opcode: IBV_WR_SEND, SendFlags: IBV_SEND_SIGNALED, SGList: []SGE{{Addr: a.mr.Addr() + 1<<19, Length: 1 << 19, LKey: a.mr.LKey()}}}
	for _, wr := range []*SendWR{w, s} {
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	wcs := runUntilWC(t, p, a.scq, 2, clock.Second)
	if len(wcs) != 2 || wcs[0].Status != IBV_WC_SUCCESS || wcs[1].Status != IBV_WC_SUCCESS {
		t.Fatalf("%+v", wcs)
	}
	if !bytes.Equal(a.buf, b.buf) {
		t.Error("data differs")
	}
	if v6 == 0 || p.a.Count(RoCEAdpRetrans) == 0 {
		t.Errorf("%d IPv6 frames seen, %d resent", v6, p.a.Count(RoCEAdpRetrans))
	}
}
