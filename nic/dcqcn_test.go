package nic

import (
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// DCQCN at the NIC: every data packet A sends arrives CE-marked (a
// congested switch would mark them). B's notification point answers with
// CNPs, at most one per np_min_time_between_cnps (paper: 50 µs), at DSCP
// 48 / priority 6; A's reaction point cuts the QP's rate and the pacer
// holds the QP to it.
func TestDCQCNCNPs(t *testing.T) {
	prof := cc.PaperProfile()
	set := func(c *Config) { c.DCQCN = &prof }
	p := newPair(t, pairOpts{seed: 7, cfgA: set, cfgB: set})
	p.ab.mangle = func(f *frame.Frame) {
		if l3, ok := roceL3(f.Data); ok {
			wire.SetIPECN(f.Data[l3:], wire.ECNCE)
		}
	}
	var cnpAt []clock.Time
	var pkt bth.Packet
	p.ba.tap = func(f *frame.Frame) {
		if pkt.Decode(f.Data, bth.VerifyICRC) != nil || pkt.BTH.OpCode() != bth.CNPOpcode {
			return
		}
		cnpAt = append(cnpAt, p.l.now)
		if d := pkt.IPv4.DSCP(); d != 48 || f.Priority != 6 || pkt.IPv4.ECN() != wire.ECNNotECT {
			t.Errorf("CNP DSCP %d priority %d ECN %d, want 48, 6, Not-ECT", d, f.Priority, pkt.IPv4.ECN())
		}
	}
	const msg = 8 << 20
	a, b := setupRC(t, p, qpOpts{bufSize: msg, retry: 7, timeout: 14})
	if err := a.qp.PostSend(writeWR(a, b, 1, msg)); err != nil {
		t.Fatal(err)
	}
	const span = 2 * clock.Millisecond
	p.l.run(span, 1<<24, nil)
	if len(cnpAt) == 0 {
		t.Fatal("no CNP sent")
	}
	for i := 1; i < len(cnpAt); i++ {
		if gap := cnpAt[i] - cnpAt[i-1]; gap < 50*clock.Microsecond {
			t.Errorf("CNPs %d and %d only %v apart", i-1, i, gap)
		}
	}
	if max := int(span/(50*clock.Microsecond)) + 1; len(cnpAt) > max {
		t.Errorf("%d CNPs in %v, at most %d allowed", len(cnpAt), span, max)
	}
	sent, handled := p.b.Count(NPCNPSent), p.a.Count(RPCNPHandled)
	if sent != uint64(len(cnpAt)) || handled != sent || p.b.Count(NPECNMarkedRoCEPackets) == 0 {
		t.Errorf("np_cnp_sent %d, rp_cnp_handled %d, CNPs on the wire %d, np_ecn_marked %d",
			sent, handled, len(cnpAt), p.b.Count(NPECNMarkedRoCEPackets))
	}
	rate := a.qp.Rate()
	if rate >= 100e9/2 {
		t.Errorf("rate after %d CNPs is %d b/s, want well below the 100 Gb/s line", handled, rate)
	}
	// The pacer holds the QP to the algorithm's rate: far less than line
	// rate was sent.
	if line := uint64(span.Seconds() * 100e9 / 8); p.a.port.TxBytesPhy > line/2 {
		t.Errorf("sent %d bytes in %v, line rate would be %d", p.a.port.TxBytesPhy, span, line)
	}
	t.Logf("%d CNPs in %v; rate now %.3f Gb/s; %d bytes sent", len(cnpAt), span, float64(rate)/1e9, p.a.port.TxBytesPhy)

	// With congestion control off the sender ignores CNPs.
	off := func(c *Config) { c.CC = "none" }
	p2 := newPair(t, pairOpts{seed: 7, cfgA: off})
	p2.ab.mangle = p.ab.mangle
	a2, b2 := setupRC(t, p2, qpOpts{bufSize: 1 << 20, retry: 7})
	if err := a2.qp.PostSend(writeWR(a2, b2, 1, 1<<20)); err != nil {
		t.Fatal(err)
	}
	p2.l.run(clock.Millisecond, 1<<22, nil)
	if p2.a.Count(RPCNPIgnored) == 0 || p2.a.Count(RPCNPHandled) != 0 || a2.qp.Rate() != 100e9 {
		t.Errorf("cc none: %s rate %d", counters(p2.a), a2.qp.Rate())
	}
}

// One CNP frame, paper constants (issue test b at the NIC): the QP's
// rate halves, and without further CNPs five fast-recovery steps of
// rp_time_reset (55 µs) bring it back above 97% of the line rate.
func TestDCQCNSingleCNP(t *testing.T) {
	prof := cc.PaperProfile()
	set := func(c *Config) { c.DCQCN = &prof }
	p := newPair(t, pairOpts{cfgA: set, cfgB: set})
	a, b := setupRC(t, p, qpOpts{})
	p.l.run(10*clock.Microsecond, 1<<10, nil)
	if a.qp.Rate() != 100e9 {
		t.Fatalf("initial rate %d", a.qp.Rate())
	}
	// The CNP B's notification point would send, built the same way.
	p.b.rf.BTH = bth.CNPFields(a.qp.QPN(), 0xFFFF)
	f := p.b.emit(p.a.cfg.MAC, p.a.ip, 48, wire.ECNNotECT, 6, b.qp.sport, 0, b.qp.QPN(), nil)
	p.b.q[6].frames.push(f)
	p.b.wake()
	p.l.run(15*clock.Microsecond, 1<<10, nil)
	if got := a.qp.Rate(); got != 50e9 {
		t.Fatalf("rate after one CNP %d, want 50 Gb/s", got)
	}
	cut := p.l.now
	p.l.run(cut+4*55*clock.Microsecond+clock.Microsecond, 1<<12, nil)
	if r := float64(a.qp.Rate()) / 100e9; r >= 0.97 {
		t.Errorf("after 4 steps already at %.4f of line rate", r)
	}
	p.l.run(cut+5*55*clock.Microsecond+clock.Microsecond, 1<<12, nil)
	if r := float64(a.qp.Rate()) / 100e9; r < 0.97 {
		t.Errorf("after 5 steps (275 µs) at %.4f of line rate, want >= 0.97", r)
	}
	if p.a.Count(RPCNPHandled) != 1 {
		t.Errorf("rp_cnp_handled %d", p.a.Count(RPCNPHandled))
	}
}

// TestCNPForUnknownQP: a CNP naming a QP this NIC does not have (one
// destroyed, or never made) is a frame for an unknown QP, not a CNP the
// reaction point ignored: rp_cnp_ignored counts CNPs a QP without
// congestion control ignores.
func TestCNPForUnknownQP(t *testing.T) {
	p := newPair(t, pairOpts{})
	_, b := setupRC(t, p, qpOpts{})
	p.l.run(10*clock.Microsecond, 1<<10, nil)
	p.b.rf.BTH = bth.CNPFields(0x7777, 0xFFFF)
	f := p.b.emit(p.a.cfg.MAC, p.a.ip, 48, wire.ECNNotECT, 6, b.qp.sport, 0, b.qp.QPN(), nil)
	p.b.q[6].frames.push(f)
	p.b.wake()
	p.l.run(20*clock.Microsecond, 1<<10, nil)
	if p.a.Count(RxUnknownQP) != 1 || p.a.Count(RPCNPIgnored) != 0 || p.a.Count(RPCNPHandled) != 0 {
		t.Errorf("rx_unknown_qp %d, rp_cnp_ignored %d, rp_cnp_handled %d; want 1, 0, 0",
			p.a.Count(RxUnknownQP), p.a.Count(RPCNPIgnored), p.a.Count(RPCNPHandled))
	}
}

// TestPaceCountsWireOverhead: a QP held below the line rate paces its data
// packets on the wire's bytes, the per-frame overhead (preamble, FCS and
// inter-frame gap: 24 bytes on Ethernet) included, so a QP at rate r takes
// r of the link whatever its packet size. Before, a 1000-byte packet at
// 10 Gb/s was followed 800 ns later, 819.2 ns on the wire, and the
// 138-byte packets of 64-byte WRITEs took 17 % more of the link than the
// rate.
func TestPaceCountsWireOverhead(t *testing.T) {
	p := newPair(t, pairOpts{})
	q := &QP{nic: p.a, rp: &cc.Fixed{BPS: 10e9}, lastStart: 5 * clock.Microsecond, lastLen: 1000}
	if got, want := q.paceAt(), 5*clock.Microsecond+clock.SerializationTime(1000+wire.EthernetOverhead, 10e9); got != want {
		t.Errorf("next packet at %v, want %v (1024 wire bytes at 10 Gb/s after the last start)", got, want)
	}
	q.rp = &cc.Fixed{BPS: 100e9}
	if got := q.paceAt(); got != 0 {
		t.Errorf("a QP at the line rate paced to %v: the port's serialization is the limit", got)
	}
}
