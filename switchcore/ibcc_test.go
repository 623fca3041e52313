package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// ibccPkt builds a real native IB packet (valid ICRC and VCRC) to DLID 3:
// RC RDMA WRITE MIDDLE with payload bytes of zeros.
func ibccPkt(t *testing.T, pool *frame.Pool, payload int, op bth.Opcode) *frame.Frame {
	t.Helper()
	f := &bth.IBFields{
		LRH:     wire.LRHFields{VL: 0, SL: 0, DLID: 3, SLID: 9},
		BTH:     bth.BTHFields{OpCode: op, PKey: bth.DefaultPKey, DestQP: 0x20001, PSN: 7},
		Payload: make([]byte, payload),
	}
	fr := pool.Get(f.PacketLen())
	if _, err := bth.EncodeIB(fr.Data, f); err != nil {
		t.Fatal(err)
	}
	return fr
}

// cnPkt builds an IB CN packet (opcode 0x80): LRH, BTH with BECN, ICRC, VCRC.
func cnPkt(pool *frame.Pool) *frame.Frame {
	fr := pool.Get(wire.LRHSize + bth.BTHSize + bth.ICRCSize + wire.VCRCSize)
	b := fr.Data
	wire.LRH(b).Encode(&wire.LRHFields{LNH: wire.LNHLocal, DLID: 3, SLID: 9, PktLen: wire.PktLenFor(len(b) - wire.VCRCSize)})
	bth.BTH(b[wire.LRHSize:]).Encode(&bth.BTHFields{OpCode: bth.IBCNOpcode, PKey: bth.DefaultPKey, BECN: true, DestQP: 0x10001})
	crc, _ := bth.ICRCIBLocal(b[:wire.LRHSize+bth.BTHSize])
	bth.PutICRC(b[wire.LRHSize+bth.BTHSize:], crc)
	wire.PutVCRC(b)
	return fr
}

// fecnSink keeps a copy of every data packet a port sends.
type fecnSink struct {
	t    *testing.T
	pkts [][]byte
}

func (k *fecnSink) Transmit(f *frame.Frame) {
	if f.Len() != wire.IBLinkSize {
		k.pkts = append(k.pkts, append([]byte(nil), f.Data...))
	}
	f.Put()
}

// fecn decodes every packet with both CRCs verified and returns which ones
// carry FECN.
func (k *fecnSink) fecn() []bool {
	out := make([]bool, len(k.pkts))
	for i, b := range k.pkts {
		if wire.CheckVCRC(b, 0) != nil {
			k.t.Fatalf("packet %d: VCRC does not match after marking", i)
		}
		h := bth.BTH(b[wire.LRHSize:])
		if h.OpCode() == bth.IBCNOpcode {
			crc, _ := bth.ICRCIBLocal(b[:wire.LRHSize+bth.BTHSize])
			if crc != bth.WireICRC(b[wire.LRHSize+bth.BTHSize:]) {
				k.t.Fatalf("CN packet %d: ICRC mismatch", i)
			}
		} else {
			var p bth.IBPacket
			if err := p.Decode(b, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
				k.t.Fatalf("packet %d: %v (FECN must not break the ICRC: BTH byte 4 is masked)", i, err)
			}
		}
		out[i] = h.FECN()
	}
	return out
}

func ibccSwitch(t *testing.T, cc IBCCConfig) (*Switch, *manualClock, *frame.Pool, *fecnSink) {
	c := ibConfig(3)
	c.IB.CC = cc
	s, clk, pool := newTestSwitch(t, c)
	out := &fecnSink{t: t}
	for i := range 3 {
		if i == 2 {
			s.Attach(i, out)
		} else {
			s.Attach(i, &fecnSink{t: t})
		}
	}
	clk.runUntil(clock.Microsecond)
	return s, clk, pool, out
}

const ibccPayload = 1024 // 1050 bytes on the wire, 17 credits

// TestIBCCMarking: 20 packets arrive at once for port 2, whose peer has
// granted plenty of credit (a root of congestion). The first leaves an
// empty queue; each later one is marked while more than the threshold
// (15: 1/16 of 2048 credits = 8 KiB) is queued behind it: packets 2..12.
// Marking_Rate 2 marks one eligible packet in three; Packet_Size above the
// packet's 17 credits marks none; threshold 0 marks none.
func TestIBCCMarking(t *testing.T) {
	for _, c := range []struct {
		name   string
		cc     IBCCConfig
		marked []int // 1-based packet numbers
	}{
		{"every eligible", IBCCConfig{Enabled: true, Threshold: 15}, []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"marking_rate 2", IBCCConfig{Enabled: true, Threshold: 15, MarkingRate: 2}, []int{2, 5, 8, 11}},
		{"packet_size 17 credits", IBCCConfig{Enabled: true, Threshold: 15, PacketSize: 17}, []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"packet_size 18 credits", IBCCConfig{Enabled: true, Threshold: 15, PacketSize: 18}, nil},
		{"threshold 14", IBCCConfig{Enabled: true, Threshold: 14}, []int{2, 3, 4}}, // above 16 KiB
		{"threshold 0", IBCCConfig{Enabled: true}, nil},
		{"disabled", IBCCConfig{Threshold: 15}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, clk, pool, out := ibccSwitch(t, c.cc)
			deliver(s, clk, 2, fcPkt(pool, 0, 0, 2000))
			for range 20 {
				deliver(s, clk, 0, ibccPkt(t, pool, ibccPayload, bth.RCWriteMiddle))
			}
			clk.runUntil(clk.now + 20*clock.Microsecond)
			got := out.fecn()
			if len(got) != 20 {
				t.Fatalf("sent %d of 20", len(got))
			}
			want := make([]bool, 20)
			for _, n := range c.marked {
				want[n-1] = true
			}
			th := c.cc.ThresholdBytes(2048)
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("packet %d: FECN %v, want %v (depth behind it %d, threshold %d)", i+1, got[i], want[i], (19-i)*1050, th)
				}
			}
			if m := s.Counters(2).Prio[0].FECNMarked; m != uint64(len(c.marked)) {
				t.Errorf("vl0_fecn_marked = %d, want %d", m, len(c.marked))
			}
			if s.Counters(2).TotalDrops() != 0 {
				t.Error("drops")
			}
		})
	}
}

// TestIBCCVictim: a port whose peer returns credit one packet at a time
// is a victim of congestion further on: it does not mark unless its bit
// is set in the victim mask.
func TestIBCCVictim(t *testing.T) {
	for _, c := range []struct {
		name  string
		mask  []bool
		marks uint64
	}{
		{"no mask", nil, 0},
		{"other port masked", []bool{true, true, false}, 0},
		{"port masked", []bool{false, false, true}, 11},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, clk, pool, out := ibccSwitch(t, IBCCConfig{Enabled: true, Threshold: 15, VictimMask: c.mask})
			fccl := uint16(17)
			deliver(s, clk, 2, fcPkt(pool, 0, 0, fccl))
			for range 20 {
				deliver(s, clk, 0, ibccPkt(t, pool, ibccPayload, bth.RCWriteMiddle))
			}
			for range 25 {
				clk.runUntil(clk.now + clock.Microsecond)
				fccl = wire.AddBlocks(fccl, 17)
				deliver(s, clk, 2, fcPkt(pool, 0, 0, fccl))
			}
			clk.runUntil(clk.now + clock.Microsecond)
			if len(out.fecn()) != 20 {
				t.Fatalf("sent %d of 20", len(out.pkts))
			}
			if m := s.Counters(2).Prio[0].FECNMarked; m != c.marks {
				t.Errorf("marked %d, want %d", m, c.marks)
			}
		})
	}
}

// TestIBCCSkipsCNAndMarked: CN packets (opcode 0x80) and packets already
// carrying FECN are left alone and not counted.
func TestIBCCSkipsCNAndMarked(t *testing.T) {
	s, clk, pool, out := ibccSwitch(t, IBCCConfig{Enabled: true, Threshold: 15})
	deliver(s, clk, 2, fcPkt(pool, 0, 0, 2000))
	for i := range 20 {
		var f *frame.Frame
		switch {
		case i%2 == 1:
			f = cnPkt(pool)
		default:
			f = ibccPkt(t, pool, 2000, bth.RCWriteMiddle)
			if i == 4 {
				bth.BTH(f.Data[wire.LRHSize:]).SetFECN(true) // marked upstream
				wire.PutVCRC(f.Data)
			}
		}
		deliver(s, clk, 0, f)
	}
	clk.runUntil(clk.now + 20*clock.Microsecond)
	fecn := out.fecn()
	var marked uint64
	for i, m := range fecn {
		if bth.BTH(out.pkts[i][wire.LRHSize:]).OpCode() == bth.IBCNOpcode && m {
			t.Errorf("CN packet %d marked", i)
		}
		if m && i != 4 {
			marked++
		}
	}
	if !fecn[4] {
		t.Error("upstream FECN lost")
	}
	if got := s.Counters(2).Prio[0].FECNMarked; got != marked || marked == 0 {
		t.Errorf("counter %d, marked %d", got, marked)
	}
}

func TestIBCCThresholdBytesAndValidate(t *testing.T) {
	for _, c := range []struct {
		cc     IBCCConfig
		blocks int
		want   int
	}{
		{IBCCConfig{Enabled: true, Threshold: 15}, 1024, 4096},
		{IBCCConfig{Enabled: true, Threshold: 1}, 1024, 61440},
		{IBCCConfig{Enabled: true, Threshold: 8}, 2048, 65536},
		{IBCCConfig{Enabled: true, Threshold: 0}, 1024, -1},
		{IBCCConfig{Threshold: 15}, 1024, -1},
	} {
		if got := c.cc.ThresholdBytes(c.blocks); got != c.want {
			t.Errorf("%+v over %d blocks: %d, want %d", c.cc, c.blocks, got, c.want)
		}
	}
	c := ibConfig(3)
	c.IB.CC = IBCCConfig{Enabled: true, Threshold: 16}
	if _, err := New(c, &manualClock{}, frame.NewPool()); err == nil {
		t.Error("threshold 16 accepted")
	}
	c.IB.CC = IBCCConfig{Enabled: true, Threshold: 3, VictimMask: make([]bool, 4)}
	if _, err := New(c, &manualClock{}, frame.NewPool()); err == nil {
		t.Error("victim mask longer than the port list accepted")
	}
}

// BenchmarkIBCCMark: the marking decision and FECN + VCRC rewrite of one
// 4 KiB packet (the VCRC over the whole packet dominates).
func BenchmarkIBCCMark(b *testing.B) {
	b.ReportAllocs()
	t := &testing.T{}
	s, _, pool, _ := ibccSwitch(t, IBCCConfig{Enabled: true, Threshold: 15})
	f := ibccPkt(t, pool, 4096, bth.RCWriteMiddle)
	p := &s.ports[2]
	b.SetBytes(int64(f.Len()))
	for i := 0; i < b.N; i++ {
		f.Data[wire.LRHSize+4] = 0 // clear FECN again
		s.ibMarkFECN(p, 0, f, 1<<20, false)
	}
	if p.c.Prio[0].FECNMarked != uint64(b.N) {
		b.Fatalf("marked %d of %d", p.c.Prio[0].FECNMarked, b.N)
	}
}
