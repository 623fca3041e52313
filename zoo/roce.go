package zoo

import (
	"fmt"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/wire"
)

// roceEntry builds one RoCEv2 frame and records what it was built from.
func roceEntry(name string, f *bth.RoCEFields) Entry {
	n := f.FrameLen()
	if n < 0 {
		panic(fmt.Sprintf("zoo: %s: opcode %s cannot be encoded", name, f.BTH.OpCode))
	}
	b := make([]byte, n)
	if _, err := bth.EncodeRoCE(b, f); err != nil {
		// The zoo is built from constants: an error is a bug in this
		// package or in bth, and the tests must see it at once.
		panic(fmt.Sprintf("zoo: %s: %v", name, err))
	}
	eth := f.Ethernet
	eth.EtherType = wire.EtherTypeIPv4
	v := uint8(4)
	if f.Src.Is6() {
		eth.EtherType, v = wire.EtherTypeIPv6, 6
	}
	bf := f.BTH
	bf.PadCount = bth.PadFor(len(f.Payload))
	ttl := f.TTL
	if ttl == 0 {
		ttl = bth.DefaultTTL
	}
	sport := f.SrcPort
	if sport == 0 {
		sport = wire.RoCESourcePortForQPs(f.FlowLabel, f.SrcQP, f.BTH.DestQP)
	}
	return Entry{Name: name, Link: LinkEthernet, Data: b, Want: Want{
		Ethernet: &eth, IPVersion: v, Src: f.Src, Dst: f.Dst, DSCP: f.DSCP, ECN: f.ECN,
		TTL: ttl, FlowLabel: f.FlowLabel,
		SrcPort: sport, BTH: &bf, Ext: f.Ext, PayloadLen: len(f.Payload),
	}}
}

// payload returns n deterministic bytes that no Wireshark heuristic mistakes
// for a protocol header (a counting pattern offset by seed).
func payload(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i)*7
	}
	return p
}

// base returns the fields shared by the zoo's RoCEv2 frames: host A to host
// B over IPv4 or IPv6, data QoS (DSCP 26, ECT(0)), untagged.
func base(ipVersion int) bth.RoCEFields {
	f := bth.RoCEFields{
		Ethernet: wire.EthernetFields{Dst: HostB, Src: HostA},
		Src:      IPv4A, Dst: IPv4B,
		DSCP: DataDSCP, ECN: wire.ECNECT0,
		SrcQP: QPRequester,
	}
	if ipVersion == 6 {
		f.Src, f.Dst = IPv6A, IPv6B
	}
	return f
}

func family(ipVersion int) string { return fmt.Sprintf("RoCEv2/IPv%d", ipVersion) }

// opcodeWalk returns one frame per opcode of the bth table (RC, UC, UD; the
// CNP has its own entries), over IPv4 or IPv6.
func opcodeWalk(ipVersion int) []Entry {
	var z []Entry
	for op := 0; op < 256; op++ {
		o := bth.Opcode(op)
		info := o.Info()
		if !info.Valid() || info.Transport == bth.TransportCNP {
			continue
		}
		f := base(ipVersion)
		opcodeFields(&f, o, info)
		z = append(z, roceEntry(family(ipVersion)+" "+o.String(), &f))
	}
	return z
}

// opcodeFields fills in a plausible packet of opcode o: the QPs of its
// service, a PSN, the extension headers it carries and a payload whose
// length gives FIRST/MIDDLE packets whole words and LAST/ONLY packets every
// PadCnt.
func opcodeFields(f *bth.RoCEFields, o bth.Opcode, info *bth.OpInfo) {
	op := uint32(o)
	f.BTH = bth.BTHFields{
		OpCode: o,
		PKey:   bth.DefaultPKey,
		DestQP: QPResponder,
		PSN:    0x100000 + op, // distinct per opcode
		// Requesters ask for an ACK on the packet that ends a message.
		AckReq: info.Flags.Has(bth.Request) && info.Flags.Has(bth.Last) && info.Transport == bth.TransportRC,
		// Solicited event on the last packet of SENDs with immediate data.
		SE: info.Flags.Has(bth.Send|bth.Last) && info.Has(bth.ExtImmDt),
	}
	switch info.Transport {
	case bth.TransportUC:
		f.BTH.DestQP = QPResponder + 1
		f.SrcQP = QPRequester + 1
	case bth.TransportUD:
		f.BTH.DestQP = QPUD
		f.Ext.DETH = bth.DETHFields{QKey: UDQKey, SrcQP: QPRequester + 2}
		f.SrcQP = QPRequester + 2
	}
	if info.Flags.Has(bth.Response) || info.Flags.Has(bth.Ack) {
		// Responses travel from B to A.
		f.Ethernet.Dst, f.Ethernet.Src = f.Ethernet.Src, f.Ethernet.Dst
		f.Src, f.Dst = f.Dst, f.Src
		f.BTH.DestQP, f.SrcQP = QPRequester, QPResponder
	}
	f.Ext.RETH = bth.RETHFields{VA: 0x00007f3a_c0de0000 + uint64(op)<<12, RKey: 0x00a0_0000 | op, DMALen: 4096}
	if o == bth.RCReadRequest {
		f.Ext.RETH.DMALen = 8192
	}
	f.Ext.AETH = bth.AETHFields{Syndrome: bth.ACKSyndrome(bth.CreditCodeFor(16)), MSN: 0x000100 + op}
	f.Ext.AtomicETH = bth.AtomicETHFields{VA: 0x00007f3a_c0de8000, RKey: 0x00b0_0000 | op, SwapAdd: 1, Compare: 0}
	if o == bth.RCCompareSwap {
		f.Ext.AtomicETH.SwapAdd, f.Ext.AtomicETH.Compare = 0xfeedface_cafebeef, 0x0123456789abcdef
	}
	f.Ext.AtomicAckETH = 0x0123456789abcdef
	f.Ext.ImmDt = 0xdeadbe00 | op
	f.Ext.IETH = 0x00c0_0000 | op
	switch {
	case !info.Flags.Has(bth.Payload):
	case !info.Flags.Has(bth.Last):
		f.Payload = payload(64, byte(op)) // FIRST/MIDDLE: whole words
	default:
		// 61..64 bytes: PadCnt 3, 2, 1, 0 in turn over the opcodes.
		f.Payload = payload(61+int(op)%4, byte(op))
	}
}

// syndromes returns an RC ACKNOWLEDGE for every AETH syndrome (IBA
// 9.7.5.1): ACK credit codes 0x00-0x1F, RNR NAK timers 0x20-0x3F, NAK codes
// 0x60-0x64. IPv4 only: the syndrome does not depend on the IP version, and
// the opcode walk already carries an ACKNOWLEDGE over IPv6.
func syndromes() []Entry {
	var syn []bth.Syndrome
	for c := uint8(0); c <= 0x1F; c++ {
		syn = append(syn, bth.ACKSyndrome(c))
	}
	for t := uint8(0); t <= 0x1F; t++ {
		syn = append(syn, bth.RNRSyndrome(t))
	}
	for c := bth.NAKPSNSequenceError; c <= bth.NAKInvalidRDRequest; c++ {
		syn = append(syn, bth.NAKSyndrome(c))
	}
	z := make([]Entry, 0, len(syn))
	for i, s := range syn {
		f := base(4)
		opcodeFields(&f, bth.RCAcknowledge, bth.RCAcknowledge.Info())
		f.BTH.PSN = 0x200000 + uint32(i)
		f.Ext.AETH = bth.AETHFields{Syndrome: s, MSN: 0x000200 + uint32(i)}
		z = append(z, roceEntry(fmt.Sprintf("%s RC_ACKNOWLEDGE syndrome 0x%02x %s", family(4), uint8(s), s), &f))
	}
	return z
}

// specials returns the frames that show one feature each: CNPs, ECN CE,
// FECN, a VLAN tag, Ethernet padding.
func specials() []Entry {
	var z []Entry
	for _, v := range []int{4, 6} {
		// A CNP goes from the notification point (B, which saw CE) back to
		// the sender A, throttling A's QP; NVIDIA's default QoS for it.
		f := base(v)
		f.Ethernet = wire.EthernetFields{Dst: HostA, Src: HostB, Tagged: true, PCP: bth.CNPDefaultPriority, VID: DataVID}
		f.Src, f.Dst = f.Dst, f.Src
		f.DSCP, f.ECN = bth.CNPDefaultDSCP, wire.ECNNotECT
		f.BTH = bth.CNPFields(QPRequester, bth.DefaultPKey)
		f.SrcQP = QPResponder
		z = append(z, roceEntry(family(v)+" CNP (DSCP 48, PCP 6, BECN)", &f))
	}

	f := base(4)
	opcodeFields(&f, bth.RCSendOnly, bth.RCSendOnly.Info())
	f.ECN = wire.ECNCE
	z = append(z, roceEntry(family(4)+" RC_SEND_ONLY marked ECN CE", &f))

	f = base(6)
	opcodeFields(&f, bth.RCSendOnly, bth.RCSendOnly.Info())
	f.ECN = wire.ECNCE
	z = append(z, roceEntry(family(6)+" RC_SEND_ONLY marked ECN CE", &f))

	f = base(4)
	opcodeFields(&f, bth.RCWriteMiddle, bth.RCWriteMiddle.Info())
	f.BTH.FECN = true
	z = append(z, roceEntry(family(4)+" RC_RDMA_WRITE_MIDDLE with FECN", &f))

	f = base(4)
	opcodeFields(&f, bth.RCWriteOnly, bth.RCWriteOnly.Info())
	f.Ethernet.Tagged, f.Ethernet.PCP, f.Ethernet.VID = true, DataPCP, DataVID
	z = append(z, roceEntry(family(4)+" RC_RDMA_WRITE_ONLY VLAN 100 PCP 3 DSCP 26", &f))

	f = base(6)
	opcodeFields(&f, bth.UDSendOnly, bth.UDSendOnly.Info())
	f.Ethernet.Tagged, f.Ethernet.PCP, f.Ethernet.VID = true, DataPCP, DataVID
	f.FlowLabel = 0x12345 // also the UDP source-port entropy
	z = append(z, roceEntry(family(6)+" UD_SEND_ONLY VLAN 100 PCP 3 flow label 0x12345", &f))

	f = base(4)
	opcodeFields(&f, bth.RCSendOnly, bth.RCSendOnly.Info())
	f.Payload = nil
	f.BTH.MigReq = true
	z = append(z, roceEntry(family(4)+" RC_SEND_ONLY empty, MigReq, Ethernet padding", &f))
	return z
}

// macControl returns PFC and PAUSE frames (802.1Qbb, 802.3x).
func macControl() []Entry {
	type mc struct {
		name   string
		pfc    bool
		enable uint8
		times  [8]uint16
	}
	cases := []mc{
		{name: "PFC XOFF priority 3", pfc: true, enable: 1 << 3, times: [8]uint16{3: 0xFFFF}},
		{name: "PFC XON priority 3", pfc: true, enable: 1 << 3},
		{name: "PFC XOFF priorities 3 and 6, different quanta", pfc: true, enable: 1<<3 | 1<<6,
			times: [8]uint16{3: 0x1000, 6: 0x0200}},
		{name: "802.3x PAUSE", enable: 0xFF, times: [8]uint16{0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF}},
		{name: "802.3x PAUSE quanta 0 (resume)", enable: 0xFF},
	}
	z := make([]Entry, 0, len(cases))
	for _, c := range cases {
		b := make([]byte, wire.MACControlFrameSize)
		want := wire.MACControl{Opcode: wire.MACControlOpPause, Enable: c.enable, Time: c.times}
		if c.pfc {
			wire.EncodePFC(b, HostA, c.enable, &c.times)
			want.Opcode = wire.MACControlOpPFC
		} else {
			wire.EncodePause(b, HostA, c.times[0])
		}
		eth := wire.EthernetFields{Dst: wire.MACControlDst, Src: HostA, EtherType: wire.EtherTypeMACControl}
		z = append(z, Entry{Name: c.name, Link: LinkEthernet, Data: b, Want: Want{Ethernet: &eth, MACControl: &want}})
	}
	return z
}

// linkState returns a link-state advertisement of the emulated switches'
// routing (switchcore/linkstate.go), which Wireshark shows as the IEEE 802
// local experimental EtherType.
func linkState() []Entry {
	l := &wire.LinkState{Origin: "leaf1", Epoch: 1, Seq: 2, Down: []string{"p5"}}
	b := make([]byte, wire.LinkStateLen(l))
	wire.EncodeLinkState(b, HostA, l)
	eth := wire.EthernetFields{Dst: wire.LinkStateDst, Src: HostA, EtherType: wire.EtherTypeLinkState}
	return []Entry{{Name: "link-state advertisement: leaf1, port p5 down", Link: LinkEthernet, Data: b, Want: Want{Ethernet: &eth}}}
}
