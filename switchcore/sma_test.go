package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

// smpSink keeps a copy of every VL15 packet a port sends, and the time.
type smpSink struct {
	clk  *manualClock
	pkts [][]byte
	at   []clock.Time
	data int
}

func (k *smpSink) Transmit(f *frame.Frame) {
	if f.Len() > wire.IBLinkSize {
		if wire.LRH(f.Data).VL() == 15 {
			k.pkts = append(k.pkts, append([]byte(nil), f.Data...))
			k.at = append(k.at, k.clk.now)
		} else {
			k.data++
		}
	}
	f.Put()
}

func smpFrame(t *testing.T, pool *frame.Pool, dlid, slid uint16, f *mad.SMPFields) *frame.Frame {
	t.Helper()
	smp := make(mad.SMP, mad.Size)
	smp.Encode(f)
	fr := pool.Get(mad.PacketSize)
	if _, err := mad.EncodePacket(fr.Data, &mad.PacketFields{DLID: dlid, SLID: slid}, smp); err != nil {
		t.Fatal(err)
	}
	return fr
}

func drFields(method uint8, attr uint16, am uint32, path ...uint8) *mad.SMPFields {
	f := &mad.SMPFields{Method: method, AttributeID: attr, AttrModifier: am, TransactionID: 5}
	mad.DRPath(f, path)
	return f
}

func decodeSMP(t *testing.T, pkt []byte) *mad.Packet {
	t.Helper()
	var p mad.Packet
	if err := mad.DecodePacket(pkt, &p, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
		t.Fatalf("switch sent a bad SMP packet: %v", err)
	}
	return &p
}

// TestSMA: directed-route SMPs at their hop are answered by the switch's
// agent (port 0 semantics: LocalPortNum = arrival port) or forwarded along
// the path; a Set of PortInfo gives the switch its LID, a Set of the LFT
// and LinearFDBTop reprograms data forwarding; LID-routed SMPs to the
// switch's LID are answered through the LFT, others forwarded as before.
func TestSMA(t *testing.T) {
	c := ibConfig(3)
	s, clk, pool := newTestSwitch(t, c)
	sinks := make([]*smpSink, 3)
	for i := range sinks {
		sinks[i] = &smpSink{clk: clk}
		s.Attach(i, sinks[i])
	}
	a, err := s.EnableSMA(SMAConfig{Agent: mad.AgentConfig{NodeGUID: 0x77, Description: "sw"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.LFTEntry(1) != -1 || s.SMA() != a || a.NumPorts() != 3 {
		t.Fatal("the SMA does not own an empty LFT")
	}
	// Get NodeInfo, one hop: the switch is the destination, reached on its
	// IBA port 2 (index 1).
	deliver(s, clk, 1, smpFrame(t, pool, mad.PermissiveLID, mad.PermissiveLID, drFields(mad.MethodGet, mad.AttrNodeInfo, 0, 1)))
	arrived := clk.now
	clk.runUntil(clk.now + 5*clock.Microsecond)
	if len(sinks[1].pkts) != 1 {
		t.Fatalf("no response on the arrival port: %d", len(sinks[1].pkts))
	}
	if sinks[1].at[0] < arrived+DefaultSMADelay {
		t.Errorf("response at %v, before the SMA delay after %v", sinks[1].at[0], arrived)
	}
	p := decodeSMP(t, sinks[1].pkts[0])
	ni := mad.NodeInfo(p.SMP.Data())
	if !p.SMP.Direction() || p.SMP.MAD().Method() != mad.MethodGetResp || ni.NodeType() != mad.NodeTypeSwitch ||
		ni.NodeGUID() != 0x77 || ni.LocalPortNum() != 2 || ni.NumPorts() != 3 || p.IB.LRH.DLID() != mad.PermissiveLID {
		t.Fatalf("response D %v method 0x%x NodeInfo %+v", p.SMP.Direction(), p.SMP.MAD().Method(), ni.Fields())
	}
	// A two-hop SMP arriving on IBA port 1 leaves through port 3.
	deliver(s, clk, 0, smpFrame(t, pool, mad.PermissiveLID, mad.PermissiveLID, drFields(mad.MethodGet, mad.AttrNodeInfo, 0, 1, 3)))
	clk.runUntil(clk.now + 5*clock.Microsecond)
	if len(sinks[2].pkts) != 1 {
		t.Fatal("not forwarded out port 3")
	}
	p = decodeSMP(t, sinks[2].pkts[0])
	if p.SMP.HopPointer() != 2 || p.SMP.ReturnPath()[1] != 1 || p.SMP.Direction() {
		t.Fatalf("forwarded hp %d ReturnPath[1] %d", p.SMP.HopPointer(), p.SMP.ReturnPath()[1])
	}
	// Program: LID 5 on port 0, LID 9 -> port 3, top 9.
	pi := drFields(mad.MethodSet, mad.AttrPortInfo, 0, 1)
	mad.PortInfo(pi.Data[:]).Encode(&mad.PortInfoFields{LID: 5, MasterSMLID: 9})
	lft := drFields(mad.MethodSet, mad.AttrLinearFwdTable, 0, 1)
	for i := range lft.Data {
		lft.Data[i] = mad.LFTNoPort
	}
	lft.Data[9], lft.Data[5] = 3, 0
	si := drFields(mad.MethodSet, mad.AttrSwitchInfo, 0, 1)
	mad.SwitchInfo(si.Data[:]).Encode(&mad.SwitchInfoFields{LinearFDBTop: 9})
	for _, f := range []*mad.SMPFields{pi, lft, si} {
		deliver(s, clk, 0, smpFrame(t, pool, mad.PermissiveLID, mad.PermissiveLID, f))
	}
	clk.runUntil(clk.now + 10*clock.Microsecond)
	if len(sinks[0].pkts) != 3 {
		t.Fatalf("%d responses to 3 Sets", len(sinks[0].pkts))
	}
	for _, pkt := range sinks[0].pkts {
		if p := decodeSMP(t, pkt); p.SMP.Status() != 0 {
			t.Fatalf("Set %s: status 0x%x", mad.AttrName(p.SMP.MAD().AttributeID()), p.SMP.Status())
		}
	}
	if a.LID() != 5 || s.LFTEntry(9) != 2 || s.LFTEntry(5) != -1 || s.LFTEntry(1) != -1 {
		t.Fatalf("LID %d, LFT[9] %d LFT[5] %d", a.LID(), s.LFTEntry(9), s.LFTEntry(5))
	}
	// Data to LID 9 is routed out port index 2 (the peer there grants
	// credit on VL 0), but the ports are still in Init: dropped.
	deliver(s, clk, 2, fcPkt(pool, 0, 0, 100))
	deliver(s, clk, 0, ibPkt(pool, 0, 0, 9, ibLen))
	clk.runUntil(clk.now + 5*clock.Microsecond)
	if sinks[2].data != 0 || s.Counters(0).Drops[DropLinkDown] != 1 {
		t.Fatalf("data through Init ports: %d sent, %d link_down drops", sinks[2].data, s.Counters(0).Drops[DropLinkDown])
	}
	// Arm and activate IBA ports 1 and 3; now it goes through.
	for _, state := range []uint8{mad.PortStateArmed, mad.PortStateActive} {
		for _, port := range []uint32{1, 3} {
			f := drFields(mad.MethodSet, mad.AttrPortInfo, port, 1)
			mad.PortInfo(f.Data[:]).Encode(&mad.PortInfoFields{PortState: state})
			deliver(s, clk, 0, smpFrame(t, pool, mad.PermissiveLID, mad.PermissiveLID, f))
		}
		clk.runUntil(clk.now + 5*clock.Microsecond)
	}
	if a.PortState(1) != mad.PortStateActive || a.PortState(3) != mad.PortStateActive || a.PortState(2) != mad.PortStateInit {
		t.Fatalf("port states %d %d %d", a.PortState(1), a.PortState(2), a.PortState(3))
	}
	deliver(s, clk, 0, ibPkt(pool, 0, 0, 9, ibLen))
	clk.runUntil(clk.now + 5*clock.Microsecond)
	if sinks[2].data != 1 {
		t.Fatalf("data to LID 9: %d packets out port 3", sinks[2].data)
	}
	// LID-routed Get NodeDescription from LID 9 to our LID 5: answered back
	// towards LID 9 through the LFT.
	lr := &mad.SMPFields{MgmtClass: mad.ClassSubnLID, Method: mad.MethodGet, AttributeID: mad.AttrNodeDescription, TransactionID: 8}
	deliver(s, clk, 2, smpFrame(t, pool, 5, 9, lr))
	// ... and one to LID 9 is forwarded by the LFT, untouched.
	deliver(s, clk, 0, smpFrame(t, pool, 9, 5, lr))
	clk.runUntil(clk.now + 5*clock.Microsecond)
	if len(sinks[2].pkts) != 3 {
		t.Fatalf("port 3 sent %d SMPs, want 3", len(sinks[2].pkts))
	}
	var answered, passed bool
	for _, pkt := range sinks[2].pkts[1:] {
		p := decodeSMP(t, pkt)
		switch {
		case p.SMP.MAD().Method() == mad.MethodGetResp && p.IB.LRH.DLID() == 9 && p.IB.LRH.SLID() == 5 &&
			mad.NodeDescription(p.SMP.Data()).String() == "sw":
			answered = true
		case p.SMP.MAD().Method() == mad.MethodGet && p.IB.LRH.DLID() == 9:
			passed = true
		}
	}
	if !answered || !passed {
		t.Fatalf("LID-routed: answered %v, forwarded %v", answered, passed)
	}
	if st := s.SMAStats(); st.Consumed != 10 || st.Sent != 10 || st.Malformed != 0 {
		t.Fatalf("SMA stats %+v", st)
	}
	// A VL15 packet that is not an SMP is dropped as malformed.
	bad := ibPkt(pool, 15, 0, mad.PermissiveLID, 64)
	deliver(s, clk, 0, bad)
	clk.runUntil(clk.now + 5*clock.Microsecond)
	if s.SMAStats().Malformed != 1 || s.Counters(0).Drops[DropMalformed] != 1 {
		t.Fatalf("malformed VL15: %+v", s.SMAStats())
	}
	// Link state reaches the agent: port 2 down shows in PortInfo.
	s.SetPortUp(1, false)
	deliver(s, clk, 0, smpFrame(t, pool, mad.PermissiveLID, mad.PermissiveLID, drFields(mad.MethodGet, mad.AttrPortInfo, 2, 1)))
	clk.runUntil(clk.now + 5*clock.Microsecond)
	p = decodeSMP(t, sinks[0].pkts[len(sinks[0].pkts)-1])
	if st := mad.PortInfo(p.SMP.Data()).PortState(); st != mad.PortStateDown {
		t.Fatalf("port 2 after link down: state %d", st)
	}
}

func TestSMANeedsIB(t *testing.T) {
	s, _, _ := newTestSwitch(t, testConfig(2, 100e9))
	if _, err := s.EnableSMA(SMAConfig{}); err == nil {
		t.Fatal("an Ethernet switch accepted an SMA")
	}
	if s.SMA() != nil || s.SMAStats() != (SMAStats{}) {
		t.Fatal("SMA state without an SMA")
	}
}

// FuzzSMA wraps arbitrary 256-byte SMPs in valid QP0 packets (permissive
// or the switch's LID) and hands them to a switch with an SMA: no panic,
// and every frame is answered, forwarded, dropped or queued: none leaks.
func FuzzSMA(f *testing.F) {
	for _, fl := range []*mad.SMPFields{
		drFields(mad.MethodGet, mad.AttrNodeInfo, 0, 1),
		drFields(mad.MethodGet, mad.AttrPortInfo, 2, 1, 3),
		drFields(mad.MethodSet, mad.AttrLinearFwdTable, 0, 1),
		{MgmtClass: mad.ClassSubnLID, Method: mad.MethodGet, AttributeID: mad.AttrSwitchInfo},
	} {
		smp := make(mad.SMP, mad.Size)
		smp.Encode(fl)
		f.Add([]byte(smp), uint8(0), true)
	}
	f.Fuzz(func(t *testing.T, in0 []byte, in uint8, permissive bool) {
		// Any input is an SMP, cut or zero-padded to its 256 bytes (see
		// mad's FuzzAgent).
		smp := make([]byte, mad.Size)
		copy(smp, in0)
		s, clk, pool := newTestSwitch(t, ibConfig(3))
		for i := range 3 {
			s.Attach(i, &sink{clk: clk})
		}
		if _, err := s.EnableSMA(SMAConfig{Agent: mad.AgentConfig{NodeGUID: 1}}); err != nil {
			t.Fatal(err)
		}
		dlid := uint16(mad.PermissiveLID)
		if !permissive {
			dlid = 0
		}
		fr := pool.Get(mad.PacketSize)
		if _, err := mad.EncodePacket(fr.Data, &mad.PacketFields{DLID: dlid, SLID: 3}, smp); err != nil {
			t.Fatal(err)
		}
		deliver(s, clk, int(in%3), fr)
		clk.runUntil(clk.now + 50*clock.Microsecond)
		if got := pool.Outstanding; got != s.queued() {
			t.Fatalf("%d frames outstanding, %d queued", got, s.queued())
		}
	})
}

// TestSMAPortFlap: a port that goes down and up between two SMPs is seen
// by the SMA at once: Down, then Init (not back to Active behind the SM's
// back), with SwitchInfo.PortStateChange raised for the SM's light sweep.
func TestSMAPortFlap(t *testing.T) {
	c := ibConfig(2)
	s, clk, _ := newTestSwitch(t, c)
	for i := range 2 {
		s.Attach(i, &smpSink{clk: clk})
	}
	a, err := s.EnableSMA(SMAConfig{Agent: mad.AgentConfig{NodeGUID: 0x78, Description: "sw"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.PortState(2); got != mad.PortStateInit {
		t.Fatalf("port 2 starts in state %d, want Init", got)
	}
	a.ClearPortStateChange()
	s.SetPortUp(1, false)
	if got := a.PortState(2); got != mad.PortStateDown {
		t.Errorf("port 2 after its link went down: state %d, want Down", got)
	}
	s.SetPortUp(1, true)
	if got := a.PortState(2); got != mad.PortStateInit {
		t.Errorf("port 2 after its link came back: state %d, want Init", got)
	}
	if !a.PortStateChange() {
		t.Error("PortStateChange not raised")
	}
}
