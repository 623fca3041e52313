package mad_test

import (
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/mad"
)

// FuzzDecodePacket checks each input as it is and with its ICRC and VCRC
// rewritten: a mutated packet almost never has valid CRCs, and only the
// rewritten copy reaches the SMP checks behind them (which a hostile
// sender, computing the CRCs, reaches too).
func FuzzDecodePacket(f *testing.F) {
	smp := getSMP(mad.AttrPortInfo, 3, 1, 4)
	f.Add(smpPacket(f, smp, mad.PermissiveLID, 1))
	f.Add(smpPacket(f, getSMP(mad.AttrNodeInfo, 0), 5, 1))
	f.Add([]byte{0xf0, 0x02, 0xff, 0xff, 0x00, 0x06})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkPacket(t, b)
		fixed := append([]byte(nil), b...)
		if bth.FinishIBPacket(fixed) == nil {
			checkPacket(t, fixed)
		}
	})
}

func checkPacket(t *testing.T, b []byte) {
	var p mad.Packet
	if err := mad.DecodePacket(b, &p, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
		if p.SMP != nil {
			t.Fatal("SMP set on error")
		}
		return
	}
	if len(p.SMP) != mad.Size || p.SMP.Validate(0) != nil {
		t.Fatalf("accepted a bad SMP: %d bytes", len(p.SMP))
	}
	var sf mad.SMPFields
	p.SMP.Fields(&sf)
	re := make(mad.SMP, mad.Size)
	re.Encode(&sf)
	var again mad.SMPFields
	re.Fields(&again)
	if again != sf {
		t.Fatalf("fields do not survive a re-encode:\n%+v\n%+v", sf, again)
	}
}

func FuzzSMPValidate(f *testing.F) {
	f.Add([]byte(getSMP(mad.AttrNodeInfo, 0, 1, 2, 3)))
	f.Add([]byte(getSMP(mad.AttrLinearFwdTable, 2)))
	f.Add(make([]byte, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := mad.SMP(b)
		if s.Validate(0) != nil {
			return
		}
		if int(s.HopPointer()) > int(s.HopCount())+1 && s.Directed() {
			t.Fatal("hop pointer beyond hop count accepted")
		}
		_ = s.Data()
		_ = s.Status()
		_ = mad.MethodName(s.MAD().Method()) + mad.AttrName(s.MAD().AttributeID())
	})
}

// FuzzAttributes decodes arbitrary bytes as every attribute: Validate
// never panics, and what validates can be read back.
func FuzzAttributes(f *testing.F) {
	ni := make(mad.NodeInfo, mad.NodeInfoSize)
	ni.Encode(&mad.NodeInfoFields{NodeType: 2, NumPorts: 8})
	f.Add([]byte(ni))
	pi := make(mad.PortInfo, mad.PortInfoSize)
	pi.Encode(&mad.PortInfoFields{LID: 3, PortState: 4, PhysState: 5, MTUCap: 5})
	f.Add([]byte(pi))
	f.Add(make([]byte, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		if mad.NodeInfo(b).Validate(0) == nil {
			x := mad.NodeInfo(b).Fields()
			re := make(mad.NodeInfo, mad.NodeInfoSize)
			re.Encode(&x)
			if re.Fields() != x {
				t.Fatal("NodeInfo round trip")
			}
		}
		if mad.PortInfo(b).Validate(0) == nil {
			x := mad.PortInfo(b).Fields()
			re := make(mad.PortInfo, mad.PortInfoSize)
			re.Encode(&x)
			if re.Fields() != x {
				t.Fatal("PortInfo round trip")
			}
		}
		if mad.SwitchInfo(b).Validate(0) == nil {
			x := mad.SwitchInfo(b).Fields()
			re := make(mad.SwitchInfo, mad.SwitchInfoSize)
			re.Encode(&x)
			if re.Fields() != x {
				t.Fatal("SwitchInfo round trip")
			}
		}
		if mad.NodeDescription(b).Validate(0) == nil {
			_ = mad.NodeDescription(b).String()
		}
		if mad.LFTBlock(b).Validate(0) == nil {
			_ = mad.LFTBlock(b).Port(63)
		}
	})
}

// FuzzAgent feeds arbitrary 256-byte SMPs to a switch agent and a CA
// agent: no panic, a forward goes out of a real port, and the directed
// hop rules keep the hop pointer in range.
func FuzzAgent(f *testing.F) {
	f.Add([]byte(getSMP(mad.AttrNodeInfo, 0, 1, 4)), uint8(2))
	f.Add([]byte(setSMP(mad.AttrLinearFwdTable, 1, []byte{1, 2, 3}, 1)), uint8(1))
	f.Add([]byte(setSMP(mad.AttrPortInfo, 0, make([]byte, 64), 1)), uint8(3))
	f.Fuzz(func(t *testing.T, in0 []byte, in uint8) {
		// Any input is an SMP, cut or zero-padded to its 256 bytes: the
		// mutator's length changes would otherwise all be thrown away.
		b := make([]byte, mad.Size)
		copy(b, in0)
		for _, typ := range []uint8{mad.NodeTypeSwitch, mad.NodeTypeCA} {
			a := mad.NewAgent(mad.AgentConfig{NodeType: typ, NumPorts: 8, NodeGUID: 1, LinearFDBCap: 1024})
			for p := 1; p <= 8; p += 2 {
				a.SetLinkUp(p, true)
			}
			s := append(mad.SMP(nil), b...)
			act := a.Handle(int(in%9), s, in&1 == 1)
			if act.Verdict == mad.SendPort && (act.Port < 1 || act.Port > 8) {
				t.Fatalf("forward out of port %d", act.Port)
			}
			if s.Directed() && int(s.HopPointer()) > int(s.HopCount())+1 && act.Verdict != mad.Drop {
				t.Fatalf("hop pointer %d past count %d", s.HopPointer(), s.HopCount())
			}
			if top := a.LinearFDBTop(); top >= 1024 {
				t.Fatalf("LinearFDBTop %d past the capacity", top)
			}
		}
	})
}
