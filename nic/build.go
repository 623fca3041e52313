package nic

import (
	"net/netip"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// emit builds a RoCEv2 frame from n.rf.BTH and n.rf.Ext (set by the
// caller) and the given addressing, in a frame from the pool. The engine
// only builds opcodes and lengths the encoder accepts, so a refusal is a
// programming error and panics.
func (n *NIC) emit(dmac wire.MAC, dip netip.Addr, dscp, ecn, prio uint8, sport uint16, flowLabel, srcQP uint32, payload []byte) *frame.Frame {
	rf := &n.rf
	rf.Ethernet = wire.EthernetFields{Dst: dmac, Src: n.cfg.MAC, Tagged: n.cfg.Tagged, PCP: prio, VID: n.cfg.VID}
	rf.Src, rf.Dst = n.ip, dip
	rf.DSCP, rf.ECN = dscp, ecn
	rf.TTL = 0
	n.ipID++
	rf.ID = n.ipID
	rf.FlowLabel = flowLabel
	rf.SrcPort = sport
	rf.SrcQP = srcQP
	rf.Payload = payload
	l := rf.FrameLen()
	if l < 0 {
		panic("nic: engine built an undecodable opcode " + rf.BTH.OpCode.String())
	}
	f := n.pool.Get(l)
	if _, err := bth.EncodeRoCE(f.Data, rf); err != nil {
		panic("nic: " + err.Error())
	}
	f.Priority = prio
	n.cnt[RdmaTxPackets]++
	n.cnt[RdmaTxBytes] += uint64(l)
	return f
}

// ecnData is the ECN codepoint of the engine's RoCE frames.
func (n *NIC) ecnData() uint8 {
	if n.cfg.NotECT {
		return wire.ECNNotECT
	}
	return wire.ECNECT0
}
