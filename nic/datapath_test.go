package nic

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// A lone atomic whose ACK is lost: nothing implies the loss, so the local
// ACK timer resends it and the responder replays the saved value.
func TestAtomicReplayAfterTimeout(t *testing.T) {
	p := newPair(t, pairOpts{seed: 16})
	a, b := setupRC(t, p, qpOpts{retry: 7, timeout: 4})
	binary.LittleEndian.PutUint64(b.buf, 10)
	dropped := false
	p.ba.drop = func(f *frame.Frame) bool {
		if !dropped && opcodeOf(f) == bth.RCAtomicAcknowledge {
			dropped = true
			return true
		}
		return false
	}
	wr := &SendWR{WRID: 1, Opcode: IBV_WR_ATOMIC_FETCH_AND_ADD, SendFlags: IBV_SEND_SIGNALED,
		SGList: []SGE{{Addr: a.mr.Addr(), Length: 8, LKey: a.mr.LKey()}}}
	wr.Atomic.RemoteAddr, wr.Atomic.RKey, wr.Atomic.CompareAdd = b.mr.Addr(), b.mr.RKey(), 1
	if err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	w := runUntilWC(t, p, a.scq, 1, clock.Second)
	if len(w) != 1 || w[0].Status != IBV_WC_SUCCESS || binary.LittleEndian.Uint64(a.buf) != 10 || binary.LittleEndian.Uint64(b.buf) != 11 {
		t.Fatalf("%+v local %d remote %d", w, binary.LittleEndian.Uint64(a.buf), binary.LittleEndian.Uint64(b.buf))
	}
	if p.a.Count(LocalAckTimeoutErr) != 1 || p.b.Count(DuplicateRequest) != 1 {
		t.Errorf("%s / %s", counters(p.a), counters(p.b))
	}
}

func ipv4Frame(dscp uint8, tagged bool, pcp uint8) []byte {
	b := make([]byte, 64)
	l3 := wire.EncodeEthernet(b, &wire.EthernetFields{Dst: wire.MAC{2}, Src: wire.MAC{4}, Tagged: tagged, PCP: pcp, EtherType: wire.EtherTypeIPv4})
	wire.IPv4(b[l3:]).Encode(&wire.IPv4Fields{DSCP: dscp, TotalLength: 28, TTL: 64, Protocol: 1, Src: [4]byte{10, 0, 0, 9}, Dst: [4]byte{10, 0, 0, 2}})
	return b
}

// Classification in mlnx_qos terms.
func TestClassify(t *testing.T) {
	custom := defaultDSCP2Prio()
	custom[10] = 5
	cases := []struct {
		name  string
		trust Trust
		m     *[64]uint8
		frame []byte
		want  uint8
	}{
		{"dscp 26", TrustDSCP, nil, ipv4Frame(26, false, 0), 3},
		{"dscp 48 (CNP)", TrustDSCP, nil, ipv4Frame(48, false, 0), 6},
		{"dscp 0", TrustDSCP, nil, ipv4Frame(0, false, 0), 0},
		{"dscp tagged ignores pcp", TrustDSCP, nil, ipv4Frame(26, true, 7), 3},
		{"dscp2prio set 10,5", TrustDSCP, &custom, ipv4Frame(10, false, 0), 5},
		{"dscp non-IP", TrustDSCP, nil, make([]byte, 60), 0},
		{"pcp tagged", TrustPCP, nil, ipv4Frame(26, true, 5), 5},
		{"pcp untagged", TrustPCP, nil, ipv4Frame(26, false, 0), 0},
		{"runt", TrustDSCP, nil, []byte{1, 2, 3}, 0},
	}
	for _, c := range cases {
		n, err := New(&Config{IP: netip.MustParseAddr("10.0.0.1"), Rate: 1e9, Trust: c.trust, DSCP2Prio: c.m}, &loop{}, frame.NewPool())
		if err != nil {
			t.Fatal(err)
		}
		if got := n.classify(c.frame); got != c.want {
			t.Errorf("%s: priority %d, want %d", c.name, got, c.want)
		}
	}
}

// Host frames share the port: they are classified, counted per priority
// and delivered up at the peer; a RoCEv2 frame from the host stack gets
// ECT(0).
func TestHostPath(t *testing.T) {
	p := newPair(t, pairOpts{})
	var got [][]byte
	p.b.SetHostDeliver(func(f *frame.Frame) { got = append(got, bytes.Clone(f.Data)); f.Put() })
	f := p.pool.Get(64)
	copy(f.Data, ipv4Frame(46, false, 0))
	p.a.SendHost(f)
	// A RoCEv2 frame for a QP the engine does not have (the kernel's).
	p.a.SendHost(udSendToQP777(t, p, "kernel rxe"))
	p.l.run(clock.Millisecond, 1<<10, nil)
	if len(got) != 2 {
		t.Fatalf("host got %d frames", len(got))
	}
	if p.a.Prio(5).TxPackets != 1 || p.a.Prio(3).TxPackets != 1 || p.b.Prio(5).RxPackets != 1 {
		t.Errorf("per-priority counters: a tx5 %d tx3 %d, b rx5 %d", p.a.Prio(5).TxPackets, p.a.Prio(3).TxPackets, p.b.Prio(5).RxPackets)
	}
	var pkt bth.Packet
	if err := pkt.Decode(got[1], bth.VerifyICRC); err != nil || pkt.IPv4.ECN() != wire.ECNECT0 {
		t.Errorf("host RoCE frame: %v, ECN %d", err, pkt.IPv4.ECN())
	}
	if p.pool.Outstanding != 0 {
		t.Errorf("%d frames outstanding", p.pool.Outstanding)
	}
}

func pfcFrame(pool *frame.Pool, enable uint8, prio int, quanta uint16) *frame.Frame {
	f := pool.Get(wire.MACControlFrameSize)
	var times [8]uint16
	times[prio] = quanta
	wire.EncodePFC(f.Data, wire.MAC{0x02, 0, 0, 0, 0, 9}, enable, &times)
	return f
}

// Received PFC stops the paused priority's new frames for the quanta at
// link speed; XON resumes; counters and pause duration follow mlx5.
func TestPFCHonour(t *testing.T) {
	p := newPair(t, pairOpts{})
	a, b := setupRC(t, p, qpOpts{bufSize: 4 << 20, retry: 7, timeout: 14})
	var dataAt []clock.Time
	p.ab.tap = func(f *frame.Frame) {
		if f.Priority == 3 && len(f.Data) > 1000 {
			dataAt = append(dataAt, p.l.now)
		}
	}
	if err := a.qp.PostSend(writeWR(a, b, 1, 4<<20)); err != nil {
		t.Fatal(err)
	}
	p.l.run(10*clock.Microsecond, 1<<20, nil)
	pauseAt := p.l.now
	p.a.Receive(pfcFrame(p.pool, 1<<3, 3, 0xFFFF)) // 335.5 µs at 100 Gb/s
	quanta := wire.QuantaToTime(0xFFFF, 100e9)
	n0 := len(dataAt)
	p.l.run(pauseAt+100*clock.Microsecond, 1<<20, nil)
	if !p.a.Paused(3) || p.a.Paused(4) {
		t.Fatal("priority 3 should be paused, 4 not")
	}
	// At most the frame on the wire at the pause finishes.
	if len(dataAt) > n0+1 {
		t.Errorf("%d data frames started during the pause", len(dataAt)-n0)
	}
	xonAt := p.l.now
	p.a.Receive(pfcFrame(p.pool, 1<<3, 3, 0))
	p.l.run(xonAt+20*clock.Microsecond, 1<<20, nil)
	if len(dataAt) < n0+10 {
		t.Errorf("no resume after XON: %d frames", len(dataAt)-n0)
	}
	pc := p.a.Prio(3)
	if pc.RxPause != 1 || pc.RxPauseTransition != 1 {
		t.Errorf("rx_prio3_pause %d transition %d", pc.RxPause, pc.RxPauseTransition)
	}
	if d := p.a.PauseDuration(3); d != xonAt-pauseAt {
		t.Errorf("pause duration %v, want %v", d, xonAt-pauseAt)
	}
	// A pause that expires on its own.
	at := p.l.now
	p.a.Receive(pfcFrame(p.pool, 1<<3, 3, 0xFFFF))
	p.l.run(at+quanta+50*clock.Microsecond, 1<<20, nil)
	if p.a.Paused(3) {
		t.Error("still paused after the quanta ran out")
	}
	if d := p.a.PauseDuration(3); d != xonAt-pauseAt+quanta {
		t.Errorf("pause duration %v, want %v", d, xonAt-pauseAt+quanta)
	}
	// PFC disabled for priority 3 (mlnx_qos --pfc 0,0,0,0,...): ignored.
	noPFC := [8]bool{}
	q := newPair(t, pairOpts{cfgA: func(c *Config) { c.PFC = &noPFC }})
	q.a.Receive(pfcFrame(q.pool, 1<<3, 3, 0xFFFF))
	if q.a.Paused(3) {
		t.Error("paused although PFC is off for priority 3")
	}
	var sb strings.Builder
	if err := p.a.WriteEthtool(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, line := range []string{"NIC statistics:\n", "     rx_prio3_pause: 2\n", "     rx_pause_ctrl_phy: 3\n", "     tx_prio3_packets: "} {
		if !strings.Contains(out, line) {
			t.Errorf("ethtool output lacks %q:\n%s", line, out)
		}
	}
}

// SendPFC emits a real PFC frame, ahead of data, counted tx_prioN_pause.
func TestSendPFC(t *testing.T) {
	p := newPair(t, pairOpts{})
	var mc wire.MACControl
	seen := 0
	p.ab.tap = func(f *frame.Frame) {
		if wire.DecodeMACControl(f.Data, &mc) == nil && mc.Paused(3) {
			seen++
		}
	}
	var times [8]uint16
	times[3] = 0xFFFF
	p.a.SendPFC(1<<3, &times)
	p.l.run(clock.Microsecond*10, 100, nil)
	if seen != 1 || p.a.Prio(3).TxPause != 1 || !p.b.Paused(3) {
		t.Errorf("seen %d, tx_prio3_pause %d, peer paused %v", seen, p.a.Prio(3).TxPause, p.b.Paused(3))
	}
}

// A NIC whose link is down sends no PFC frame and keeps none for later:
// a storm over a pulled cable neither grows a queue nor bursts out stale
// PFC frames when the link is back.
func TestSendPFCLinkDown(t *testing.T) {
	p := newPair(t, pairOpts{})
	seen := 0
	p.ab.tap = func(f *frame.Frame) {
		if len(f.Data) >= wire.EthernetSize && f.Data[12] == 0x88 && f.Data[13] == 0x08 {
			seen++
		}
	}
	var times [8]uint16
	times[3] = 0xFFFF
	p.a.SetLinkUp(false)
	for range 1000 {
		p.a.SendPFC(1<<3, &times)
	}
	if n := p.a.macCtl.n; n != 0 {
		t.Errorf("%d PFC frames queued on a link that is down", n)
	}
	p.a.SetLinkUp(true)
	p.l.run(clock.Microsecond*10, 100, nil)
	if seen != 0 || p.a.Prio(3).TxPause != 0 || p.b.Paused(3) {
		t.Errorf("after the link came back: %d PFC frames sent, tx_prio3_pause %d, peer paused %v; want none",
			seen, p.a.Prio(3).TxPause, p.b.Paused(3))
	}
}

func TestCounterNames(t *testing.T) {
	seen := map[string]bool{}
	for i := range numCounters {
		n := Counter(i).String()
		if n == "" || seen[n] {
			t.Errorf("counter %d: name %q empty or duplicate", i, n)
		}
		seen[n] = true
		if c, ok := CounterByName(n); !ok || c != Counter(i) {
			t.Errorf("CounterByName(%q) = %d, %v", n, c, ok)
		}
	}
	for _, n := range []string{"np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored", "np_ecn_marked_roce_packets",
		"out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "rnr_nak_retry_err", "duplicate_request",
		"implied_nak_seq_err", "req_remote_access_errors", "resp_remote_access_errors", "req_transport_retries_exceeded"} {
		if !seen[n] {
			t.Errorf("missing mlx5 counter %s", n)
		}
	}
	var sb strings.Builder
	p := newPair(t, pairOpts{})
	if err := p.a.WriteHWCounters(&sb); err != nil || !strings.HasPrefix(sb.String(), "np_cnp_sent 0\n") {
		t.Errorf("hw_counters output %q, %v", sb.String()[:min(40, sb.Len())], err)
	}
}

// TestSetRate: a rate set while the NIC runs times the frames from then
// on: a 1500-byte frame takes 120 ns at 100 Gb/s and 12 us at 1 Gb/s on
// the wire, and the SMA reports the new speed.
func TestSetRate(t *testing.T) {
	p := newPair(t, pairOpts{})
	var onWire []clock.Time // serialization time of each frame seen
	p.ab.tap = func(f *frame.Frame) { onWire = append(onWire, f.TailAt-p.l.Now()) }
	send := func() {
		f := p.pool.Get(1500)
		clear(f.Data)
		copy(f.Data, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00})
		p.a.SendHost(f)
		p.l.run(p.l.Now()+100*clock.Microsecond, 1000, nil)
	}
	send()
	p.a.SetRate(1e9)
	send()
	p.a.SetRate(0) // ignored
	send()
	want := []clock.Time{clock.SerializationTime(1500, 100e9), clock.SerializationTime(1500, 1e9), clock.SerializationTime(1500, 1e9)}
	if len(onWire) != 3 || onWire[0] != want[0] || onWire[1] != want[1] || onWire[2] != want[2] {
		t.Errorf("frame times on the wire %v, want %v", onWire, want)
	}
	if p.a.Config().Rate != 1e9 {
		t.Errorf("rate %d after SetRate(1e9) and SetRate(0)", p.a.Config().Rate)
	}
}

// TestTruncatedRoCECountedMalformed: a UDP 4791 datagram too short for a
// BTH and an ICRC is malformed (rx_malformed_roce), not corrupted; a
// whole frame with a flipped payload byte fails its ICRC (rx_icrc_errors).
func TestTruncatedRoCECountedMalformed(t *testing.T) {
	p := newPair(t, pairOpts{})
	build := func() *frame.Frame { return udSendToQP777(t, p, "payload") }
	// 5 bytes of UDP payload: the IP and UDP lengths and the IP checksum
	// say so, as a sender that cut it would write them.
	f := build()
	ip := wire.IPv4(f.Data[wire.EthernetSize:])
	udp := f.Data[wire.EthernetSize+ip.HeaderLen():]
	binary.BigEndian.PutUint16(udp[4:], wire.UDPSize+5)
	binary.BigEndian.PutUint16(udp[6:], 0)
	binary.BigEndian.PutUint16(ip[2:], uint16(ip.HeaderLen()+wire.UDPSize+5))
	binary.BigEndian.PutUint16(ip[10:], 0)
	binary.BigEndian.PutUint16(ip[10:], ip.CalculateChecksum())
	f.SetLen(wire.EthernetSize + ip.HeaderLen() + wire.UDPSize + 5)
	p.b.Receive(f)
	if m, c := p.b.Count(RxMalformed), p.b.Count(RxICRCErr); m != 1 || c != 0 {
		t.Errorf("truncated: rx_malformed_roce %d, rx_icrc_errors %d; want 1, 0", m, c)
	}
	g := build()
	g.Data[len(g.Data)-6] ^= 0xFF // a payload byte
	p.b.Receive(g)
	if m, c := p.b.Count(RxMalformed), p.b.Count(RxICRCErr); m != 1 || c != 1 {
		t.Errorf("corrupted: rx_malformed_roce %d, rx_icrc_errors %d; want 1, 1", m, c)
	}
}

// udSendToQP777 is a RoCEv2 UD SEND from p.a to QP 0x777 of p.b, which the
// engine does not have, carrying payload.
func udSendToQP777(t *testing.T, p *pair, payload string) *frame.Frame {
	t.Helper()
	return udSendTo(t, p, 0x777, payload)
}

// udSendTo is a RoCEv2 UD SEND from p.a to QP qpn of p.b carrying payload.
func udSendTo(t *testing.T, p *pair, qpn uint32, payload string) *frame.Frame {
	t.Helper()
	var rf bth.RoCEFields
	rf.Ethernet = wire.EthernetFields{Dst: p.b.cfg.MAC, Src: p.a.cfg.MAC}
	rf.Src, rf.Dst, rf.DSCP = p.a.ip, p.b.ip, 26
	rf.BTH = bth.BTHFields{OpCode: bth.UDSendOnly, PKey: 0xFFFF, DestQP: qpn}
	rf.Ext.DETH = bth.DETHFields{QKey: 1, SrcQP: 5}
	rf.Payload = []byte(payload)
	f := p.pool.Get(rf.FrameLen())
	if _, err := bth.EncodeRoCE(f.Data, &rf); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestUnknownQPCountedAndCE: a RoCEv2 frame for a QP the engine does not
// have (destroyed when a perf run was interrupted) is counted in
// rx_unknown_qp whether it goes up to the host's RoCE stack or, without a
// host, is dropped; its CE mark counts in np_ecn_marked_roce_packets, as
// an mlx5 NP counts every CE-marked packet, but makes no CNP: there is no
// QP, so no flow to notify. A CE-marked packet a QP refuses (its state)
// is counted the same way, without a CNP.
func TestUnknownQPCountedAndCE(t *testing.T) {
	p := newPair(t, pairOpts{})
	var up int
	p.b.SetHostDeliver(func(f *frame.Frame) { up++; f.Put() })
	qpn := uint32(0x777)
	ceFrame := func() *frame.Frame {
		f := udSendTo(t, p, qpn, "after the run")
		l3, _ := roceL3(f.Data)
		wire.SetIPECN(f.Data[l3:], wire.ECNCE) // the ICRC masks the ECN bits
		return f
	}
	p.b.Receive(ceFrame())
	if up != 1 || p.b.Count(RxUnknownQP) != 1 || p.b.Count(NPECNMarkedRoCEPackets) != 1 || p.b.Count(NPCNPSent) != 0 {
		t.Errorf("with a host: up %d, rx_unknown_qp %d, np_ecn_marked_roce_packets %d, np_cnp_sent %d; want 1, 1, 1, 0",
			up, p.b.Count(RxUnknownQP), p.b.Count(NPECNMarkedRoCEPackets), p.b.Count(NPCNPSent))
	}
	p.b.SetHostDeliver(nil)
	p.b.Receive(ceFrame())
	if p.b.Count(RxUnknownQP) != 2 || p.b.Count(NPECNMarkedRoCEPackets) != 2 || p.b.Count(NPCNPSent) != 0 {
		t.Errorf("without a host: rx_unknown_qp %d, np_ecn_marked_roce_packets %d, np_cnp_sent %d; want 2, 2, 0",
			p.b.Count(RxUnknownQP), p.b.Count(NPECNMarkedRoCEPackets), p.b.Count(NPCNPSent))
	}
	// A UD QP that exists but is still in RESET refuses the packet.
	q := newTestEndpoint(t, p.b, &qpOpts{typ: IBV_QPT_UD, bufSize: 64, sendWR: 4, recvWR: 4}).qp
	if q.state != IBV_QPS_RESET {
		t.Fatalf("new QP in state %v", q.state)
	}
	qpn = q.QPN()
	p.b.Receive(ceFrame())
	if p.b.Count(RxQPState) != 1 || p.b.Count(RxUnknownQP) != 2 || p.b.Count(NPECNMarkedRoCEPackets) != 3 || p.b.Count(NPCNPSent) != 0 {
		t.Errorf("refused by its QP: rx_qp_state_drop %d, rx_unknown_qp %d, np_ecn_marked_roce_packets %d, np_cnp_sent %d; want 1, 2, 3, 0",
			p.b.Count(RxQPState), p.b.Count(RxUnknownQP), p.b.Count(NPECNMarkedRoCEPackets), p.b.Count(NPCNPSent))
	}
	if p.pool.Outstanding != 0 {
		t.Errorf("%d frames outstanding", p.pool.Outstanding)
	}
}

// TestRdmaStatistic: the port's counters as `rdma statistic show link`
// prints them: one line, "link DEV/1" and name-value pairs, mlx5's in the
// driver's group order first; a RoCE port lists no IB link, IPoIB or
// subnet management counter, an IB port no MAC Control one; every other
// counter is listed once. WriteHWCounters still lists them all.
func TestRdmaStatistic(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *pair
		none []string
	}{
		{"roce", newPair(t, pairOpts{}), []string{"ib_fc_rx", "ipoib_tx_packets", "smp_rx", "gsi_rx", "vl15_dropped", "np_fecn_marked_packets"}},
		{"ib", ibPair(t, 1024, 1), []string{"rx_mac_control_errors", "np_ecn_marked_roce_packets"}},
	} {
		var sb strings.Builder
		if err := tc.p.a.WriteRdmaStatistic(&sb, "emu_eth0"); err != nil {
			t.Fatal(err)
		}
		line := sb.String()
		if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") || !strings.HasPrefix(line, "link emu_eth0/1 rx_write_requests 0 rx_read_requests 0 ") {
			t.Fatalf("%s: %q", tc.name, line)
		}
		f := strings.Fields(line)[2:]
		if len(f)%2 != 0 {
			t.Fatalf("%s: odd number of fields after link DEV/1: %q", tc.name, line)
		}
		pos := map[string]int{}
		for i := 0; i < len(f); i += 2 {
			if _, dup := pos[f[i]]; dup {
				t.Errorf("%s: %s listed twice", tc.name, f[i])
			}
			if _, ok := CounterByName(f[i]); !ok {
				t.Errorf("%s: %s is no counter", tc.name, f[i])
			}
			pos[f[i]] = i / 2
		}
		// mlx5's groups in the driver's order, before any of ours; an IB
		// port's FECN marks where a RoCE port's ECN marks are.
		marked := "np_ecn_marked_roce_packets"
		if tc.name == "ib" {
			marked = "np_fecn_marked_packets"
		}
		groups := [][]string{
			{"rx_write_requests", "rx_read_requests", "rx_atomic_requests", "out_of_buffer", "out_of_sequence"},
			{"duplicate_request", "rnr_nak_retry_err", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err"},
			{"rp_cnp_ignored", "rp_cnp_handled", marked, "np_cnp_sent"},
			{"resp_local_length_error", "resp_cqe_error", "req_cqe_error", "req_remote_invalid_request", "req_remote_access_errors",
				"resp_remote_access_errors", "resp_cqe_flush_error", "req_cqe_flush_error", "req_transport_retries_exceeded", "req_rnr_retries_exceeded"},
			{"roce_adp_retrans"},
			{"rdma_tx_packets", "rdma_tx_bytes", "rdma_rx_packets", "rdma_rx_bytes"},
		}
		i := 0
		for _, g := range groups {
			for _, name := range g {
				if p, ok := pos[name]; !ok || p != i {
					t.Errorf("%s: %s at %d (listed %v), want %d", tc.name, name, p, ok, i)
				}
				i++
			}
		}
		for _, name := range tc.none {
			if _, ok := pos[name]; ok {
				t.Errorf("%s: lists %s", tc.name, name)
			}
		}
		for name := range pos {
			for _, ibOnly := range []string{"ib_", "ipoib_", "smp_", "gsi_"} {
				if tc.name == "roce" && strings.HasPrefix(name, ibOnly) {
					t.Errorf("roce: lists %s", name)
				}
			}
		}
		var all strings.Builder
		tc.p.a.WriteHWCounters(&all)
		if n := strings.Count(all.String(), "\n"); n != int(numCounters) {
			t.Errorf("%s: WriteHWCounters lists %d counters, want all %d", tc.name, n, numCounters)
		}
		if want := int(numCounters) - len(tc.none); tc.name == "ib" && len(pos) != want {
			t.Errorf("ib: %d counters listed, want %d", len(pos), want)
		}
	}
}

// TestLinkDownedOnRoCE: a RoCE port whose link goes down counts it in
// link_downed (rxe's hw counter) as in link_down_events_phy, once per
// loss of a link that was up.
func TestLinkDownedOnRoCE(t *testing.T) {
	p := newPair(t, pairOpts{})
	p.a.SetLinkUp(false)
	p.a.SetLinkUp(false) // no change
	p.a.SetLinkUp(true)
	p.a.SetLinkUp(false)
	if d, e := p.a.Count(LinkDowned), p.a.Port().LinkDownEventsPhy; d != 2 || e != 2 {
		t.Errorf("link_downed %d, link_down_events_phy %d; want 2, 2", d, e)
	}
	var sb strings.Builder
	p.a.WriteRdmaStatistic(&sb, "emu_eth0")
	if !strings.Contains(sb.String(), " link_downed 2") {
		t.Errorf("rdma statistic of a RoCE port: %s", sb.String())
	}
}

// TestTxPauseDuration: tx_prioN_pause_duration is the time the NIC has
// asserted XOFF, as the switch counts its own: it grows while the pause an
// XOFF asked for runs (read at any time), a later XOFF extends it, an XON
// ends it, it stops at the pause's end when no XON comes, and it does not
// grow while the link is down.
func TestTxPauseDuration(t *testing.T) {
	p := newPair(t, pairOpts{})
	us := clock.Microsecond
	at := func(when clock.Time) {
		t.Helper()
		p.l.NewTimer(func() {}).Reset(when)
		p.l.run(when, 1<<20, nil)
		if p.l.now != when {
			t.Fatalf("clock at %v, want %v", p.l.now, when)
		}
	}
	send := func(quanta uint16) {
		var times [8]uint16
		times[3] = quanta
		p.a.SendPFC(1<<3, &times)
	}
	dur := func() clock.Time { return p.a.TxPauseDuration(3) }
	quanta := wire.QuantaToTime(0xFFFF, 100e9) // 335.5 us at 100 Gb/s
	send(0xFFFF)
	at(0)
	for _, step := range []struct {
		at   clock.Time
		do   func()
		want clock.Time
	}{
		{100 * us, nil, 100 * us},                     // live
		{200 * us, func() { send(0xFFFF) }, 200 * us}, // refreshed: runs to 200 us + quanta
		{300 * us, func() { send(0) }, 300 * us},      // XON
		{400 * us, nil, 300 * us},                     // not asserted
		{400 * us, func() { send(0xFFFF) }, 300 * us}, // asserted again
		{450 * us, func() { p.a.SetLinkUp(false) }, 350 * us},
		{700 * us, nil, 350 * us}, // down: no pause on the wire
		{700 * us, func() { p.a.SetLinkUp(true) }, 350 * us},
		{800 * us, func() { send(0xFFFF) }, 350 * us},
		{2000 * us, nil, 350*us + quanta}, // ran out without an XON
	} {
		at(step.at)
		if step.do != nil {
			step.do()
			at(step.at) // the frame goes out now: the port is free
		}
		if got := dur(); got != step.want {
			t.Errorf("at %v: tx_prio3_pause_duration %v, want %v", step.at, got, step.want)
		}
	}
	if d := p.a.TxPauseDuration(4); d != 0 {
		t.Errorf("priority 4, never paused: %v", d)
	}
	var sb strings.Builder
	p.a.WriteEthtool(&sb)
	if want := fmt.Sprintf("     tx_prio3_pause_duration: %d\n", int64((350*us+quanta)/us)); !strings.Contains(sb.String(), want) {
		t.Errorf("ethtool -S lacks %q", want)
	}
}
