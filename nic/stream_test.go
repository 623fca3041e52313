package nic

import (
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// Connect + Stream, the way a driver (the simulator's traffic section)
// uses the NIC: throughput near the line rate for WRITE, READ and SEND
// streams, FCTs per message, and UD datagrams.
func TestStream(t *testing.T) {
	cases := []struct {
		op   WROpcode
		typ  QPType
		size int
	}{
		{IBV_WR_RDMA_WRITE, IBV_QPT_RC, 64 << 10},
		{IBV_WR_RDMA_READ, IBV_QPT_RC, 64 << 10},
		{IBV_WR_SEND, IBV_QPT_RC, 64 << 10},
		{IBV_WR_RDMA_WRITE_WITH_IMM, IBV_QPT_UC, 64 << 10},
		{IBV_WR_SEND, IBV_QPT_UD, 4096},
	}
	for _, c := range cases {
		t.Run(c.typ.String()+"/"+c.op.String(), func(t *testing.T) {
			p := newPair(t, pairOpts{})
			a, b, err := Connect(p.a, p.b, ConnectOpts{Type: c.typ, BufSize: c.size + 40})
			if err != nil {
				t.Fatal(err)
			}
			st, err := NewStream(a, b, StreamConfig{Op: c.op, Size: c.size, Count: 200, Depth: 8, Start: 10 * clock.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			p.l.run(clock.Second, 1<<24, func() bool { return st.Stats().Done })
			s := st.Stats()
			if !s.Done || s.Completed != 200 || s.Failed != 0 || len(s.FCT) != 200 || s.FirstPost != 10*clock.Microsecond {
				t.Fatalf("%+v", s)
			}
			gbps := s.Throughput() / 1e9
			if gbps < 85 || gbps > 100 {
				t.Errorf("throughput %.2f Gb/s", gbps)
			}
			if c.typ != IBV_QPT_RC {
				// Nothing acknowledges UC/UD; the receiver must have got them.
				if got := b.QP.Stats.RxPackets; got == 0 {
					t.Error("receiver saw nothing")
				}
			}
			t.Logf("%.2f Gb/s, FCT first %v last %v", gbps, s.FCT[0], s.FCT[len(s.FCT)-1])
		})
	}
}

func TestLinkDown(t *testing.T) {
	p := newPair(t, pairOpts{})
	a, b, err := Connect(p.a, p.b, ConnectOpts{Timeout: 4, RetryCnt: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStream(a, b, StreamConfig{Op: IBV_WR_RDMA_WRITE, Size: 4096, Count: 1000})
	if err != nil {
		t.Fatal(err)
	}
	p.l.run(20*clock.Microsecond, 1<<20, nil)
	p.a.SetLinkUp(false)
	sent := p.a.port.TxPacketsPhy
	p.l.run(p.l.now+30*clock.Microsecond, 1<<20, nil)
	if p.a.port.TxPacketsPhy != sent {
		t.Error("sent while the link was down")
	}
	p.a.SetLinkUp(true)
	p.l.run(clock.Second, 1<<24, func() bool { return st.Stats().Done })
	if s := st.Stats(); s.Completed != 1000 {
		t.Errorf("%d completed after the link came back (%v)", s.Completed, s.FirstError)
	}
}

// Two QPs on one priority share the port round robin; a QP on a higher
// priority goes first (strict priority between the eight queues).
func TestSchedulerSharing(t *testing.T) {
	p := newPair(t, pairOpts{})
	mk := func(tc uint8) *Stream {
		a, b, err := Connect(p.a, p.b, ConnectOpts{TrafficClass: tc, BufSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewStream(a, b, StreamConfig{Op: IBV_WR_RDMA_WRITE, Size: 64 << 10, Stop: 2 * clock.Millisecond, Depth: 4})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s1, s2 := mk(26<<2), mk(26<<2)
	p.l.run(clock.Millisecond, 1<<24, nil)
	r1, r2 := float64(s1.Stats().Bytes), float64(s2.Stats().Bytes)
	if r1 == 0 || r2 == 0 || r1/r2 < 0.95 || r1/r2 > 1.05 {
		t.Errorf("same priority: %v vs %v bytes", r1, r2)
	}
	hi := mk(40 << 2) // DSCP 40 -> priority 5
	if hi.src.QP.Priority() != 5 {
		t.Fatalf("priority %d", hi.src.QP.Priority())
	}
	b1, b2 := s1.Stats().Bytes, s2.Stats().Bytes
	p.l.run(1800*clock.Microsecond, 1<<24, nil)
	low := s1.Stats().Bytes - b1 + s2.Stats().Bytes - b2
	if hi.Stats().Bytes == 0 || low > hi.Stats().Bytes/10 {
		t.Errorf("strict priority: high %d bytes, low %d bytes", hi.Stats().Bytes, low)
	}
}

// TestStreamFullQueue: a stream whose depth is its send queue's size keeps
// it full: the completion that frees a slot is seen, and the next message
// posted from it, after the slot is free. Before, the CQ's notify ran
// with the slot still taken, the post found the queue full, and the
// stream stopped at its depth (16 of 100 messages in the simulator).
func TestStreamFullQueue(t *testing.T) {
	p := newPair(t, pairOpts{})
	a, b, err := Connect(p.a, p.b, ConnectOpts{Type: IBV_QPT_RC, BufSize: 4096, SendWR: 16})
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStream(a, b, StreamConfig{Op: IBV_WR_RDMA_WRITE, Size: 4096, Count: 100, Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	p.l.run(clock.Second, 1<<24, func() bool { return st.Stats().Done })
	if s := st.Stats(); !s.Done || s.Completed != 100 || s.Posted != 100 {
		t.Fatalf("a stream as deep as its send queue: %d posted, %d completed of 100 (%+v)", s.Posted, s.Completed, s)
	}
}

// TestStreamFullQueueAckLoss: a stream as deep as its send queue, every
// third ACK lost, at a PSN in the upper half of the space. A cumulative
// ACK completes the WQEs it covers, one after another; the completion of
// the first lets the stream post into its slot at once, and the next
// comparison must use the completed WQE's last PSN, not the new one's
// (PSN 0 before it is set up: every ACK past 2^23 then completed one WQE
// and the rest waited for the ACK timer).
func TestStreamFullQueueAckLoss(t *testing.T) {
	for _, psn := range []uint32{0x100, 0x900000} {
		p := newPair(t, pairOpts{})
		a, b, err := Connect(p.a, p.b, ConnectOpts{Type: IBV_QPT_RC, BufSize: 4096, SendWR: 16, PSN: psn})
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		p.ba.drop = func(f *frame.Frame) bool {
			if opcodeOf(f) == bth.RCAcknowledge {
				k++
				return k%3 == 0
			}
			return false
		}
		st, err := NewStream(a, b, StreamConfig{Op: IBV_WR_RDMA_WRITE, Size: 4096, Count: 1000, Depth: 16})
		if err != nil {
			t.Fatal(err)
		}
		p.l.run(100*clock.Second, 1<<26, func() bool { return st.Stats().Done })
		if s := st.Stats(); !s.Done || s.Completed != 1000 {
			t.Fatalf("PSN %#x: %d of 1000 completed", psn, s.Completed)
		}
		if n := a.QP.Stats.Timeouts; n != 0 {
			t.Errorf("PSN %#x: %d ACK timeouts with every third ACK lost: a later ACK covers them", psn, n)
		}
	}
}

// TestSetRateMidFrame: a frame started at 1 kb/s sends the rest of its
// bits at the rate set while it is on the wire: the transmitter starts
// its next frame microseconds after a change to 100 Gb/s at 1 ms, not when
// the first would have ended at 1 kb/s (most of a second later).
func TestSetRateMidFrame(t *testing.T) {
	// Without congestion control: a DCQCN QP keeps pacing at the rate its
	// reaction point had reached (1 kb/s) until it raises it.
	noCC := func(c *Config) { c.CC = "none" }
	p := newPair(t, pairOpts{rate: 1e3, cfgA: noCC, cfgB: noCC})
	a, b := setupRC(t, p, qpOpts{bufSize: 64, timeout: 20})
	var starts []clock.Time
	p.ab.tap = func(*frame.Frame) { starts = append(starts, p.l.now) }
	for i := range 2 {
		wr := &SendWR{WRID: uint64(i), Opcode: IBV_WR_RDMA_WRITE,
			SGList: []SGE{{Addr: a.mr.Addr(), Length: 64, LKey: a.mr.LKey()}}}
		wr.RDMA.RemoteAddr, wr.RDMA.RKey = b.mr.Addr(), b.mr.RKey()
		if err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	p.l.NewTimer(func() { p.a.SetRate(100e9) }).Reset(clock.Millisecond)
	p.l.run(10*clock.Millisecond, 1<<20, func() bool { return len(starts) >= 2 })
	if len(starts) < 2 || starts[1] > clock.Millisecond+clock.Microsecond {
		t.Fatalf("frame starts %v: the second should start just after the change at 1 ms", starts)
	}
}
