package switchcore

import (
	"net/netip"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

func TestLPM(t *testing.T) {
	c := testConfig(4, 100e9)
	c.Routes = []Route{
		{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Ports: []int{0}},
		{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: []int{1}},
		{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Ports: []int{2}},
		{Prefix: netip.MustParsePrefix("10.1.2.0/24"), Ports: []int{3}},
		{Prefix: netip.MustParsePrefix("10.1.2.7/32"), Ports: []int{0, 1}},
		{Prefix: netip.MustParsePrefix("2001:db8::/32"), Ports: []int{1}},
		{Prefix: netip.MustParsePrefix("2001:db8:1::/48"), Ports: []int{2}},
	}
	s, _, _ := newTestSwitch(t, c)
	for _, tc := range []struct {
		addr string
		want string
	}{
		{"192.168.1.1", "0.0.0.0/0"}, {"10.9.9.9", "10.0.0.0/8"}, {"10.1.9.9", "10.1.0.0/16"},
		{"10.1.2.9", "10.1.2.0/24"}, {"10.1.2.7", "10.1.2.7/32"},
		{"2001:db8:2::1", "2001:db8::/32"}, {"2001:db8:1::5", "2001:db8:1::/48"}, {"2001:db9::1", ""},
	} {
		p, _, ok := s.Lookup(netip.MustParseAddr(tc.addr))
		if got := ""; ok {
			got = p.String()
			if got != tc.want {
				t.Errorf("%s -> %s, want %s", tc.addr, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%s: no route, want %s", tc.addr, tc.want)
		}
	}
	c.Routes = append(c.Routes, Route{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Ports: []int{1}})
	if _, err := New(c, &manualClock{}, s.pool); err == nil {
		t.Error("duplicate route accepted")
	}
}

// TestECMPSpreadAndDeterminism: flows differing only in the UDP source port
// spread evenly over the next hops; the choice depends only on the 5-tuple
// and the per-switch seed.
func TestECMPSpreadAndDeterminism(t *testing.T) {
	mk := func(seed uint64) *Switch {
		c := testConfig(5, 100e9)
		c.L2 = nil
		c.ECMPSeed = seed
		c.Routes = []Route{{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: []int{1, 2, 3, 4}}}
		s, _, _ := newTestSwitch(t, c)
		return s
	}
	a, a2, b := mk(1), mk(1), mk(2)
	const flows = 8000
	var count [5]int
	differ := 0
	for i := range flows {
		k := flowKey{proto: wire.IPProtoUDP, sport: 0xC000 + uint16(i), dport: wire.RoCEv2Port, v4: true}
		k.src[10], k.src[11], k.dst[10], k.dst[11] = 0xFF, 0xFF, 0xFF, 0xFF
		copy(k.src[12:], []byte{10, 0, 0, 1})
		copy(k.dst[12:], []byte{10, 0, 1, 1})
		l2 := wire.L2{Dst: macB}
		pa, _ := a.forward(0, &l2, true, &k)
		pa2, _ := a2.forward(0, &l2, true, &k)
		pb, _ := b.forward(0, &l2, true, &k)
		if pa != pa2 {
			t.Fatal("same seed, different path")
		}
		if pa != pb {
			differ++
		}
		count[pa]++
	}
	for p := 1; p <= 4; p++ {
		if count[p] < flows/4*9/10 || count[p] > flows/4*11/10 {
			t.Errorf("port %d got %d of %d flows (want %d +-10%%)", p, count[p], flows, flows/4)
		}
	}
	if differ < flows/2 {
		t.Errorf("seeds 1 and 2 agree on %d of %d flows: seed not mixed in", flows-differ, flows)
	}
}

// TestL2Learning: the source MAC is learned on its ingress port and used
// for frames towards it; unknown destinations are dropped (no flooding).
func TestL2Learning(t *testing.T) {
	c := testConfig(3, 100e9)
	c.L2 = []L2Entry{{MAC: macB, Port: 1}}
	s, clk, pool := newTestSwitch(t, c)
	outs := make([]*sink, 3)
	for i := range outs {
		outs[i] = &sink{clk: clk}
		s.Attach(i, outs[i])
	}
	// Unknown destination macA: dropped, counted.
	r := roce(0)
	r.dst, r.src = macA, macC
	deliver(s, clk, 2, r.build(pool)) // also teaches macC -> port 2
	if s.Counters(2).Drops[DropNoRoute] != 1 {
		t.Fatal("unknown unicast not counted as no_route")
	}
	// macA speaks from port 0, towards macC: learned macC is on port 2.
	r.dst, r.src = macC, macA
	deliver(s, clk, 0, r.build(pool))
	// Now frames to macA go to port 0.
	r.dst, r.src = macA, macB
	deliver(s, clk, 1, r.build(pool))
	clk.runUntil(clk.now + clock.Microsecond)
	if len(outs[2].frames) != 1 || len(outs[0].frames) != 1 {
		t.Fatalf("learned forwarding: port0 %d frames, port2 %d frames", len(outs[0].frames), len(outs[2].frames))
	}
	// A static entry is not overwritten by learning.
	r.dst, r.src = macA, macB
	deliver(s, clk, 2, r.build(pool))
	if e := s.fdb.m[macB]; !e.static || e.port != 1 {
		t.Error("static entry overwritten")
	}
}

// TestCutThroughTiming: a cut-through switch starts egress when the headers
// are in, a store-and-forward switch when the tail is in; the per-hop
// difference is ser(len) - ser(HeadBytes) (issue 3 check h).
func TestCutThroughTiming(t *testing.T) {
	const size = 4096
	for _, tc := range []struct {
		ct            bool
		inBps, outBps uint64
	}{{true, 100e9, 100e9}, {false, 100e9, 100e9}, {true, 100e9, 25e9}, {true, 25e9, 100e9}} {
		c := testConfig(2, tc.inBps)
		c.Ports[1].Speed = tc.outBps
		c.Ports[0].MTU, c.Ports[1].MTU = 4200, 4200
		c.CutThrough = tc.ct
		s, clk, pool := newTestSwitch(t, c)
		out := &sink{clk: clk}
		s.Attach(1, out)
		t0 := 10 * clock.Microsecond // first bit arrives
		head := s.HeadBytes()
		if head == 0 {
			head = size
		}
		if tc.ct && head != DefaultHeadBytes {
			t.Fatalf("HeadBytes %d", head)
		}
		r := roce(0)
		r.size = size
		f := r.build(pool)
		f.HeadAt = t0 + clock.SerializationTime(head, tc.inBps)
		f.TailAt = t0 + clock.SerializationTime(size, tc.inBps)
		clk.now = f.HeadAt
		s.Receive(0, f)
		clk.runUntil(t0 + 10*clock.Microsecond)
		if len(out.frames) != 1 {
			t.Fatal("not forwarded")
		}
		got := out.frames[0]
		wantStart := t0 + clock.SerializationTime(size, tc.inBps) // SAF, or CT into a slower port
		if tc.ct && tc.outBps >= tc.inBps {
			wantStart = t0 + clock.SerializationTime(DefaultHeadBytes, tc.inBps)
		}
		wantTail := max(wantStart+clock.SerializationTime(size, tc.outBps), t0+clock.SerializationTime(size, tc.inBps))
		if got.start != wantStart || got.tail != wantTail {
			t.Errorf("%+v: start %v tail %v, want %v %v", tc, got.start-t0, got.tail-t0, wantStart-t0, wantTail-t0)
		}
	}
	// The difference at equal speeds, stated once more as the issue does.
	ser := clock.SerializationTime(size, 100e9) - clock.SerializationTime(DefaultHeadBytes, 100e9)
	if ser != 322560*clock.Picosecond {
		t.Errorf("ser(4096)-ser(64) at 100G = %v", ser)
	}
}

// TestClassification: DSCP and PCP trust through the SONiC maps.
func TestClassification(t *testing.T) {
	def := DefaultDSCPToTC()
	az := AzureDSCPToTC()
	for _, tc := range []struct{ dscp, def, azure uint8 }{
		{26, 3, 1}, {48, 6, 6}, {46, 5, 5}, {3, 0, 3}, {4, 0, 4}, {5, 0, 2}, {8, 1, 0}, {0, 0, 1}, {24, 3, 1},
	} {
		if def[tc.dscp] != tc.def || az[tc.dscp] != tc.azure {
			t.Errorf("DSCP %d: default TC %d azure TC %d, want %d %d", tc.dscp, def[tc.dscp], az[tc.dscp], tc.def, tc.azure)
		}
	}
	for _, trust := range []Trust{TrustDSCP, TrustPCP} {
		c := testConfig(2, 100e9)
		c.Trust = trust
		c.TCToQueue = [8]uint8{0, 1, 2, 3, 4, 5, 6, 6}
		s, clk, pool := newTestSwitch(t, c)
		out := &sink{clk: clk}
		s.Attach(1, out)
		r := roce(26)
		r.tagged, r.pcp = true, 7
		deliver(s, clk, 0, r.build(pool))
		r.tagged = false
		deliver(s, clk, 0, r.build(pool))
		clk.runUntil(clk.now + clock.Microsecond)
		wantTagged, wantUntagged := uint8(3), uint8(3)
		if trust == TrustPCP {
			wantTagged, wantUntagged = 7, 0
		}
		if out.frames[0].prio != wantTagged || out.frames[1].prio != wantUntagged {
			t.Errorf("trust %d: TCs %d %d, want %d %d", trust, out.frames[0].prio, out.frames[1].prio, wantTagged, wantUntagged)
		}
		if trust == TrustPCP && out.frames[0].class != 6 {
			t.Errorf("TC_TO_QUEUE_MAP 7->6 not applied: queue %d", out.frames[0].class)
		}
		if c := s.Counters(0); c.Prio[wantTagged].RxPackets == 0 {
			t.Error("rx_prio counter not updated")
		}
	}
}

// TestIPv6Routed: an IPv6 RoCEv2 frame is classified by its traffic class
// DSCP, routed by LPM and loses one hop.
func TestIPv6Routed(t *testing.T) {
	c := testConfig(2, 100e9)
	c.L2 = nil
	c.DecrementTTL = true
	c.Routes = []Route{{Prefix: netip.MustParsePrefix("2001:db8::/32"), Ports: []int{1}}}
	s, clk, pool := newTestSwitch(t, c)
	out := &sink{clk: clk, keep: true}
	s.Attach(1, out)
	const size = 200
	f := pool.Get(size)
	clear(f.Data)
	n := wire.EncodeEthernet(f.Data, &wire.EthernetFields{Dst: macB, Src: macA, EtherType: wire.EtherTypeIPv6})
	wire.IPv6(f.Data[n:]).Encode(&wire.IPv6Fields{DSCP: 26, ECN: wire.ECNECT0, PayloadLength: uint16(size - n - 40),
		NextHeader: wire.IPProtoUDP, HopLimit: 64, Src: netip.MustParseAddr("2001:db8::1").As16(),
		Dst: netip.MustParseAddr("2001:db8:5::2").As16()})
	wire.UDP(f.Data[n+40:]).Encode(&wire.UDPFields{SrcPort: 0xC123, DstPort: wire.RoCEv2Port, Length: uint16(size - n - 40)})
	deliver(s, clk, 0, f)
	clk.runUntil(clock.Microsecond)
	if len(out.frames) != 1 || out.frames[0].prio != 3 {
		t.Fatalf("IPv6 frame: %d forwarded, TC %v", len(out.frames), out.frames)
	}
	if hl := wire.IPv6(out.frames[0].data[n:]).HopLimit(); hl != 63 {
		t.Errorf("hop limit %d", hl)
	}
}

// TestECMPSkipsDownMembers: with a next hop's link down, its flows are
// spread over the others and no other flow moves; back up, every flow
// takes its old path again. (Before, a down member kept its share of the
// flows, dropped as link_down.)
func TestECMPSkipsDownMembers(t *testing.T) {
	c := testConfig(5, 100e9)
	c.L2 = nil
	c.Routes = []Route{{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: []int{1, 2, 3, 4}}}
	s, _, _ := newTestSwitch(t, c)
	const flows = 4000
	paths := func() []int {
		out := make([]int, flows)
		for i := range flows {
			k := flowKey{proto: wire.IPProtoUDP, sport: 0xC000 + uint16(i), dport: wire.RoCEv2Port, v4: true}
			k.src[10], k.src[11], k.dst[10], k.dst[11] = 0xFF, 0xFF, 0xFF, 0xFF
			copy(k.src[12:], []byte{10, 0, 0, 1})
			copy(k.dst[12:], []byte{10, 0, 1, 1})
			l2 := wire.L2{Dst: macB}
			out[i], _ = s.forward(0, &l2, true, &k)
		}
		return out
	}
	before := paths()
	s.SetPortUp(2, false)
	during := paths()
	moved := 0
	for i := range flows {
		switch {
		case during[i] == 2:
			t.Fatalf("flow %d still hashed to the down port 2", i)
		case before[i] == 2:
			moved++
		case during[i] != before[i]:
			// Modulo hashing over a smaller group may move others too;
			// what matters is that all of them reach a live member.
		}
	}
	if moved == 0 {
		t.Fatal("no flow was on port 2 before: the test proves nothing")
	}
	s.SetPortUp(2, true)
	after := paths()
	for i := range flows {
		if after[i] != before[i] {
			t.Fatalf("flow %d: port %d after the link came back, %d before", i, after[i], before[i])
		}
	}
	// Every member down: the route's own ports, so the frame is counted
	// as a link_down drop where it meets the cut.
	for p := 1; p <= 4; p++ {
		s.SetPortUp(p, false)
	}
	if got := paths()[0]; got < 1 || got > 4 {
		t.Errorf("all members down: port %d", got)
	}
}

// TestECMPHashesTCPPorts: TCP connections between the same two hosts
// spread over the next hops as UDP flows do (the hash used to see TCP as
// its addresses alone: every connection on one path); fragments hash on
// the addresses, so a datagram's fragments stay together.
func TestECMPHashesTCPPorts(t *testing.T) {
	ip := func(proto uint8, sport uint16, flags uint16) []byte {
		b := make([]byte, 40)
		h := wire.IPv4(b)
		h.Encode(&wire.IPv4Fields{TotalLength: 40, TTL: 64, Protocol: proto, Src: [4]byte{10, 0, 0, 1}, Dst: [4]byte{10, 0, 1, 1}})
		b[6], b[7] = byte(flags>>8), byte(flags)
		b[10], b[11] = 0, 0
		c := h.CalculateChecksum()
		b[10], b[11] = byte(c>>8), byte(c)
		b[20], b[21] = byte(sport>>8), byte(sport)
		b[22], b[23] = 0x14, 0x51 // 5201
		return b
	}
	seen := map[uint16]bool{}
	for i := range 64 {
		var k flowKey
		if !parseFlow(wire.EtherTypeIPv4, wire.EthernetSize, ip(wire.IPProtoTCP, 40000+uint16(i), 0), &k) {
			t.Fatal("TCP packet not parsed")
		}
		if k.sport != 40000+uint16(i) || k.dport != 5201 {
			t.Fatalf("TCP ports %d %d", k.sport, k.dport)
		}
		seen[uint16(ecmpHash(1, &k)%4)] = true
	}
	if len(seen) != 4 {
		t.Errorf("64 TCP connections used %d of 4 paths", len(seen))
	}
	var k flowKey
	if !parseFlow(wire.EtherTypeIPv4, wire.EthernetSize, ip(wire.IPProtoUDP, 40000, 0x2000), &k) || k.sport != 0 || k.dport != 0 {
		t.Errorf("a first fragment (MF) hashed with ports %d %d", k.sport, k.dport)
	}
}

// TestFDBForgetsDownPort: entries learned on a port whose link goes down
// are flushed (802.1Q 8.8.3), static ones stay; a host that moved is
// found through its new port at once.
func TestFDBForgetsDownPort(t *testing.T) {
	c := testConfig(3, 100e9)
	c.L2 = []L2Entry{{MAC: macB, Port: 1}}
	s, _, _ := newTestSwitch(t, c)
	s.Learn(1, macA)
	s.Learn(2, macC)
	s.SetPortUp(1, false)
	if _, ok := s.fdb.m[macA]; ok {
		t.Error("an entry learned on the down port survived")
	}
	if e, ok := s.fdb.m[macB]; !ok || e.port != 1 {
		t.Error("the static entry on the down port was removed")
	}
	if e, ok := s.fdb.m[macC]; !ok || e.port != 2 {
		t.Error("an entry on another port was removed")
	}
}

// TestForwardsIPv4Fragments: a fragmented IPv4 datagram (a ping larger
// than the MTU, a large UDP datagram) is forwarded, first and later
// fragments alike. The switch used the RoCE decoder's header check, which
// refuses fragments, and dropped them as malformed: `ping -s 6000` across
// a 4200-byte lab lost every reply.
func TestForwardsIPv4Fragments(t *testing.T) {
	s, clk, pool := newTestSwitch(t, testConfig(2, 100e9))
	out := &sink{clk: clk, keep: true}
	s.Attach(1, out)
	for _, frag := range []uint16{0x2000, 0x00B9, 0x20B9} { // MF; offset 185; MF and offset
		f := roce(0).build(pool)
		ip := wire.IPv4(f.Data[wire.EthernetSize:])
		ip[6], ip[7] = byte(frag>>8), byte(frag)
		ip[10], ip[11] = 0, 0
		c := ip.CalculateChecksum()
		ip[10], ip[11] = byte(c>>8), byte(c)
		deliver(s, clk, 0, f)
	}
	clk.runUntil(clk.now + clock.Microsecond)
	if len(out.frames) != 3 || s.Counters(0).TotalDrops() != 0 {
		t.Errorf("%d of 3 fragments forwarded, drops %+v", len(out.frames), s.Counters(0).Drops)
	}
}

// TestCountFloodedByPriority: a frame its owner floods counts in the
// port's priority counters as well as its MAC counters, so that the
// priorities add up to the port (they used to miss every ARP).
func TestCountFloodedByPriority(t *testing.T) {
	s, _, pool := newTestSwitch(t, testConfig(2, 100e9))
	arp := make([]byte, 60)
	wire.EncodeEthernet(arp, &wire.EthernetFields{Dst: wire.MAC{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, Src: macA, EtherType: 0x0806})
	s.CountFlooded(0, false, arp)
	f := roce(26).build(pool) // DSCP 26: priority 3 under the default DSCP trust
	s.CountFlooded(1, true, f.Data)
	c0, c1 := s.Counters(0), s.Counters(1)
	if c0.RxPacketsPhy != 1 || c0.Prio[0].RxPackets != 1 || c0.Prio[0].RxBytes != 60 {
		t.Errorf("rx: phy %d, prio0 %d packets %d bytes", c0.RxPacketsPhy, c0.Prio[0].RxPackets, c0.Prio[0].RxBytes)
	}
	if c1.TxPacketsPhy != 1 || c1.Prio[3].TxPackets != 1 || c1.Prio[3].TxBytes != uint64(len(f.Data)) {
		t.Errorf("tx: phy %d, prio3 %d packets", c1.TxPacketsPhy, c1.Prio[3].TxPackets)
	}
}
