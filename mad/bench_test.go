package mad_test

import (
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/mad"
)

func BenchmarkDecodePacket(b *testing.B) {
	pkt := smpPacket(b, getSMP(mad.AttrPortInfo, 3, 1, 4), mad.PermissiveLID, 1)
	var p mad.Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if err := mad.DecodePacket(pkt, &p, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAgentGetPortInfo: one switch SMA answering a directed-route
// Get(PortInfo) in place (re-armed each round).
func BenchmarkAgentGetPortInfo(b *testing.B) {
	a := mad.NewAgent(mad.AgentConfig{NodeType: mad.NodeTypeSwitch, NumPorts: 36, NodeGUID: 1})
	a.SetLinkUp(1, true)
	req := getSMP(mad.AttrPortInfo, 1, 1)
	s := make(mad.SMP, mad.Size)
	b.ReportAllocs()
	for b.Loop() {
		copy(s, req)
		if act := a.Handle(1, s, false); act.Verdict != mad.SendPort {
			b.Fatal(act)
		}
	}
}

func BenchmarkEncodePacket(b *testing.B) {
	smp := getSMP(mad.AttrNodeInfo, 0, 1, 4, 3)
	pkt := make([]byte, mad.PacketSize)
	f := mad.PacketFields{DLID: mad.PermissiveLID, SLID: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := mad.EncodePacket(pkt, &f, smp); err != nil {
			b.Fatal(err)
		}
	}
}
