package nic

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// fuzzSeeds records real frames of a short exchange: RDMA WRITE, READ and
// SEND packets, ACKs, READ responses, atomics, a NAK, a CNP, PFC.
func fuzzSeeds(t testing.TB) [][]byte {
	p := newPair(t, pairOpts{seed: 99})
	var seeds [][]byte
	rec := func(f *frame.Frame) {
		if len(seeds) < 64 {
			seeds = append(seeds, bytes.Clone(f.Data))
		}
	}
	p.ab.tap, p.ba.tap = rec, rec
	a, b := setupRC(t, p, qpOpts{mtu: IBV_MTU_256, retry: 7})
	_ = b.qp.PostRecv(&RecvWR{WRID: 1, SGList: []SGE{{Addr: b.mr.Addr(), Length: 1024, LKey: b.mr.LKey()}}})
	_ = a.qp.PostSend(writeWR(a, b, 1, 600))
	rd := writeWR(a, b, 2, 600)
	rd.Opcode = IBV_WR_RDMA_READ
	_ = a.qp.PostSend(rd)
	_ = a.qp.PostSend(&SendWR{WRID: 3, Opcode: IBV_WR_SEND_WITH_IMM, SGList: []SGE{{Addr: a.mr.Addr(), Length: 300, LKey: a.mr.LKey()}}})
	at := &SendWR{WRID: 4, Opcode: IBV_WR_ATOMIC_CMP_AND_SWP, SGList: []SGE{{Addr: a.mr.Addr(), Length: 8, LKey: a.mr.LKey()}}}
	at.Atomic.RemoteAddr, at.Atomic.RKey = b.mr.Addr(), b.mr.RKey()
	_ = a.qp.PostSend(at)
	bad := writeWR(a, b, 5, 10)
	bad.RDMA.RKey++
	_ = a.qp.PostSend(bad)
	var times [8]uint16
	times[3] = 7
	p.a.SendPFC(1<<3, &times)
	p.l.run(clock.Millisecond, 1<<20, nil)
	// A CNP.
	p.b.rf.BTH = cnpBTH(a.qp.QPN())
	f := p.b.emit(p.a.cfg.MAC, p.a.ip, 48, 0, 6, 0xC000, 0, b.qp.QPN(), nil)
	seeds = append(seeds, bytes.Clone(f.Data))
	f.Put()
	return seeds
}

// FuzzReceive feeds arbitrary bytes to a NIC with live RC and UD QPs: it
// never panics, and every frame is either processed or a counted drop.
func FuzzReceive(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Add([]byte{}, false)
	f.Add(make([]byte, 14), false)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if len(data) > frame.MaxFrame {
			data = data[:frame.MaxFrame]
		}
		p := newPair(t, pairOpts{seed: 1})
		a, b := setupRC(t, p, qpOpts{mtu: IBV_MTU_256, retry: 1, timeout: 2})
		_ = a
		_ = b.qp.PostRecv(&RecvWR{WRID: 1, SGList: []SGE{{Addr: b.mr.Addr(), Length: 1024, LKey: b.mr.LKey()}}})
		o := qpOpts{typ: IBV_QPT_UD}
		o.fill()
		ua, ub := newTestEndpoint(t, p.a, &o), newTestEndpoint(t, p.b, &o)
		connect(t, ua, ub, &o)
		_ = ub.qp.PostRecv(&RecvWR{WRID: 2, SGList: []SGE{{Addr: ub.mr.Addr(), Length: 1024, LKey: ub.mr.LKey()}}})
		fr := p.pool.Get(len(data))
		copy(fr.Data, data)
		if fix {
			fixChecksums(fr.Data)
		}
		before := counterSum(p.b)
		p.b.Receive(fr)
		// Every frame is accounted for: a drop counter, the engine's
		// rdma_rx_packets, or the MAC control counter moved.
		if counterSum(p.b) == before && p.b.port.RxPauseCtrlPhy == 0 {
			t.Fatalf("frame neither processed nor counted: % x", data[:min(len(data), 64)])
		}
		p.l.run(10*clock.Millisecond, 1<<16, nil)
		if p.b.port.RxPacketsPhy != 1 {
			t.Fatalf("rx_packets_phy %d", p.b.port.RxPacketsPhy)
		}
		if p.pool.Outstanding != 0 {
			t.Fatalf("%d frames leaked", p.pool.Outstanding)
		}
	})
}

func cnpBTH(qpn uint32) bth.BTHFields { return bth.CNPFields(qpn, 0xFFFF) }

// fixChecksums recomputes the IPv4 header checksum and the ICRC of a
// mutated RoCEv2 frame so that the mutation reaches the transport engine
// instead of stopping at the integrity checks.
func fixChecksums(b []byte) {
	l3, ok := roceL3(b)
	if !ok || b[l3]>>4 != 4 {
		return
	}
	ip := wire.IPv4(b[l3:])
	hl := ip.HeaderLen()
	end := l3 + int(ip.TotalLength())
	if hl < wire.IPv4MinSize || l3+hl > len(b) || end > len(b) || end < l3+hl+wire.UDPSize+bth.ICRCSize {
		return
	}
	binary.BigEndian.PutUint16(b[l3+10:], 0)
	binary.BigEndian.PutUint16(b[l3+10:], wire.IPv4(b[l3:l3+hl]).CalculateChecksum())
	if crc, ok := bth.ICRCRoCE(b[l3 : end-bth.ICRCSize]); ok {
		bth.PutICRC(b[end-bth.ICRCSize:], crc)
	}
}

func counterSum(n *NIC) (s uint64) {
	for _, v := range n.cnt {
		s += v
	}
	return s
}
