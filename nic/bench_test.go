package nic

import (
	"fmt"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// BenchmarkEngineWrite measures the engine: 4 KiB-MTU RDMA WRITEs of 1 MiB
// between two NICs in the test loop at 100 Gb/s, four messages in flight.
// One op is one data frame sent by the requester; everything it causes
// (building with ICRC, the link, receive with ICRC check and placement,
// coalesced ACKs, the completer) is inside the op. frames/s is per wall
// second on one core.
func BenchmarkEngineWrite(b *testing.B) {
	for _, mtu := range []MTU{IBV_MTU_4096, IBV_MTU_1024, IBV_MTU_256} {
		b.Run(fmt.Sprintf("mtu%d", mtu.Bytes()), func(b *testing.B) { benchWrite(b, mtu) })
	}
}

func benchWrite(b *testing.B, mtu MTU) {
	p := newPair(b, pairOpts{})
	const msg = 1 << 20
	a, r := setupRC(b, p, qpOpts{bufSize: msg, sendWR: 16, mtu: mtu})
	wr := &SendWR{Opcode: IBV_WR_RDMA_WRITE, SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr(), Length: msg, LKey: a.mr.LKey()}}}
	wr.RDMA.RemoteAddr, wr.RDMA.RKey = r.mr.Addr(), r.mr.RKey()
	var wc [8]WC
	var posted, completed uint64
	post := func() {
		wr.WRID = posted
		if err := a.qp.PostSend(wr); err != nil {
			b.Fatal(err)
		}
		posted++
	}
	a.scq.SetNotify(func(cq *CQ) {
		for k := cq.PollCQ(wc[:]); k > 0; k = cq.PollCQ(wc[:]) {
			for _, w := range wc[:k] {
				if w.Status != IBV_WC_SUCCESS {
					b.Fatalf("completion %+v", w)
				}
			}
			completed += uint64(k)
			for range k {
				post()
			}
		}
	})
	for range 4 {
		post()
	}
	// Warm up pools and rings, then measure.
	p.l.run(clock.Never, 1<<62, func() bool { return completed >= 8 })
	start := p.a.port.TxPacketsPhy
	b.ReportAllocs()
	b.ResetTimer()
	target := start + uint64(b.N)
	p.l.run(clock.Never, 1<<62, func() bool { return p.a.port.TxPacketsPhy >= target })
	b.StopTimer()
	sec := b.Elapsed().Seconds()
	if sec > 0 {
		b.ReportMetric(float64(b.N)/sec, "frames/s")
	}
	b.ReportMetric(float64(p.l.events)/float64(b.N+1), "events/frame")
}
