package zoo

import (
	"fmt"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/wire"
)

// ibPacket describes a native IB data packet of the zoo.
type ibPacket struct {
	name    string
	global  bool // LNH 3: a GRH follows the LRH
	vl, sl  uint8
	op      bth.Opcode
	payload int
}

// ibData returns native IB data packets, without a GRH (LNH 2, subnet-local)
// and with one (LNH 3), on data VLs only: VL15 carries subnet management,
// whose payload would have to be a MAD.
func ibData() []Entry {
	pkts := []ibPacket{
		{name: "RC_SEND_ONLY", vl: 0, sl: 0, op: bth.RCSendOnly, payload: 30},
		{name: "RC_RDMA_WRITE_FIRST", vl: 1, sl: 1, op: bth.RCWriteFirst, payload: 256},
		{name: "RC_ACKNOWLEDGE", vl: 0, sl: 0, op: bth.RCAcknowledge},
		{name: "UD_SEND_ONLY_WITH_IMMEDIATE", vl: 2, sl: 2, op: bth.UDSendOnlyWithImmediate, payload: 33},
		{name: "RC_SEND_ONLY", global: true, vl: 0, sl: 0, op: bth.RCSendOnly, payload: 30},
		{name: "RC_RDMA_READ_RESPONSE_ONLY", global: true, vl: 3, sl: 3, op: bth.RCReadResponseOnly, payload: 64},
		{name: "UD_SEND_ONLY", global: true, vl: 1, sl: 1, op: bth.UDSendOnly, payload: 100},
	}
	z := make([]Entry, 0, len(pkts))
	for i, p := range pkts {
		z = append(z, ibEntry(i, p))
	}
	return z
}

func ibEntry(i int, p ibPacket) Entry {
	f := base(4) // only its transport fields are used
	opcodeFields(&f, p.op, p.op.Info())
	f.Payload = payload(p.payload, byte(0x40+i))
	f.BTH.PSN = 0x300000 + uint32(i)
	bf := f.BTH
	bf.PadCount = bth.PadFor(len(f.Payload))

	ib := bth.IBFields{
		LRH:    wire.LRHFields{VL: p.vl, SL: p.sl, DLID: LIDB, SLID: LIDA},
		Global: p.global,
		GRH:    wire.GRHFields{FlowLabel: 0x00abc, HopLmt: 64, SGID: GIDA, DGID: GIDB},
		BTH:    f.BTH, Ext: f.Ext, Payload: f.Payload,
	}
	if info := p.op.Info(); info.Flags.Has(bth.Response) || info.Flags.Has(bth.Ack) {
		ib.LRH.DLID, ib.LRH.SLID = ib.LRH.SLID, ib.LRH.DLID
		ib.GRH.SGID, ib.GRH.DGID = ib.GRH.DGID, ib.GRH.SGID
	}
	b := make([]byte, ib.PacketLen())
	if _, err := bth.EncodeIB(b, &ib); err != nil {
		panic(fmt.Sprintf("zoo: IB %s: %v", p.name, err))
	}
	// What EncodeIB derives: LNH, PktLen (LRH through ICRC, in words) and,
	// with a GRH, PayLen (after the GRH through the ICRC) and NxtHdr.
	end := len(b) - wire.VCRCSize
	lrh := ib.LRH
	lrh.LNH, lrh.PktLen = wire.LNHLocal, wire.PktLenFor(end)
	var grh *wire.GRHFields
	if p.global {
		lrh.LNH = wire.LNHGlobal
		g := ib.GRH
		g.PayLen, g.NxtHdr = uint16(end-wire.LRHSize-wire.GRHSize), wire.GRHNxtHdrIBA
		grh = &g
	}

	name := "IB local (LRH) " + p.name
	if p.global {
		name = "IB global (LRH+GRH) " + p.name
	}
	return Entry{Name: name, Link: LinkIB, Data: b, Want: Want{
		BTH: &bf, Ext: f.Ext, PayloadLen: len(f.Payload), LRH: &lrh, GRH: grh,
	}}
}

// ibLinks returns IB link flow-control packets (IBA 7.9.4): the init packets
// a port sends in LinkInitialize, then normal credit updates on data VLs.
// Credits count 64-byte blocks, modulo 4096.
func ibLinks() []Entry {
	links := []struct {
		name string
		f    wire.IBLinkFields
	}{
		{"IB link flow control init VL0", wire.IBLinkFields{Op: wire.IBLinkOpInit, VL: 0, FCTBS: 0, FCCL: 128}},
		{"IB link flow control init VL1", wire.IBLinkFields{Op: wire.IBLinkOpInit, VL: 1, FCTBS: 0, FCCL: 64}},
		{"IB link flow control normal VL0", wire.IBLinkFields{Op: wire.IBLinkOpNormal, VL: 0, FCTBS: 37, FCCL: 165}},
		{"IB link flow control normal VL3, counters wrapped", wire.IBLinkFields{Op: wire.IBLinkOpNormal, VL: 3, FCTBS: 4090, FCCL: 122}},
	}
	z := make([]Entry, 0, len(links))
	for _, l := range links {
		b := make([]byte, wire.IBLinkSize)
		wire.IBLink(b).Encode(&l.f)
		f := l.f
		z = append(z, Entry{Name: l.name, Link: LinkIBFlowControl, Data: b, Want: Want{IBLink: &f}})
	}
	return z
}
