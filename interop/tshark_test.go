package interop_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
	"github.com/emufabric/emufabric/zoo"
)

// writeFile writes entries with one of the zoo writers into dir.
func writeFile(t *testing.T, dir, name string, write func(io.Writer, []zoo.Entry) error, entries []zoo.Entry) string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, entries); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTsharkZooPcap(t *testing.T) {
	entries := zoo.Ethernet()
	p := writeFile(t, t.TempDir(), "zoo.pcap", zoo.WritePcap, entries)
	checkTshark(t, entries, tshark(t, p), false)
}

func TestTsharkZooPcapNG(t *testing.T) {
	entries := zoo.Ethernet()
	p := writeFile(t, t.TempDir(), "zoo.pcapng", zoo.WritePcapNG, entries)
	pkts := tshark(t, p)
	checkTshark(t, entries, pkts, false)
	for i, e := range entries {
		if i < len(pkts) {
			if c, _ := pkts[i].first("frame.comment"); c != e.Name {
				t.Errorf("frame %d: Wireshark reads the comment %q, want %q", i+1, c, e.Name)
			}
		}
	}
}

// TestTsharkZooERF checks the native IB packets in an ERF capture.
//
// Wireshark 4.0's infiniband_link dissector reads 8 bytes of LRH-style
// column data from an IB link record before the link fields (48 if byte 1
// looks like LNH=3), so every correct 6-byte link packet comes out as
// "Malformed". The test therefore runs tshark twice: on the file as written,
// where it allows Malformed on link records and nothing else, and on a copy
// whose link records are zero-padded to 64 bytes, where nothing at all may be
// flagged and the link fields must be ours. The 6 real bytes (LPCRC
// included) are checked by our decoder and the zoo tests.
func TestTsharkZooERF(t *testing.T) {
	entries := zoo.IB()
	dir := t.TempDir()
	p := writeFile(t, dir, "zoo-ib.pcap", zoo.WriteERF, entries)
	checkTshark(t, entries, tshark(t, p), true)

	padded := filepath.Join(dir, "zoo-ib-padded.pcap")
	var b bytes.Buffer
	w, err := capture.NewPcapWriter(&b, capture.LinkTypeERF)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		typ, data := uint8(capture.ERFTypeInfiniBand), e.Data
		if e.Link == zoo.LinkIBFlowControl {
			typ = capture.ERFTypeInfiniBandLink
			data = append(append([]byte(nil), data...), make([]byte, 64-len(data))...)
		}
		if err := w.WriteERF(zoo.Timestamp(i), typ, 0, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(padded, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	checkTshark(t, entries, tshark(t, padded), false)
}

// checkTshark compares tshark's decode of entries with what they were built
// from. allowLinkMalformed excuses Malformed on IB link records only (see
// TestTsharkZooERF).
func checkTshark(t *testing.T, entries []zoo.Entry, pkts []packet, allowLinkMalformed bool) {
	t.Helper()
	if len(pkts) != len(entries) {
		t.Fatalf("tshark decoded %d frames, the file has %d", len(pkts), len(entries))
	}
	fields := 0
	for i, e := range entries {
		p := &pkts[i]
		where := fmt.Sprintf("frame %d (%s)", i+1, e.Name)
		excusedMalformed := allowLinkMalformed && e.Link == zoo.LinkIBFlowControl
		if p.protos["_ws.malformed"] && !excusedMalformed {
			t.Errorf("%s: Wireshark says Malformed", where)
		}
		for _, x := range p.experts {
			if x.severity < severityWarning {
				continue
			}
			if x.message == udp6ZeroChecksum && e.Want.IPVersion == 6 {
				continue
			}
			if excusedMalformed && strings.HasPrefix(x.message, "Malformed Packet") {
				continue
			}
			kind := "warning"
			if x.severity >= severityError {
				kind = "error"
			}
			t.Errorf("%s: Wireshark expert %s: %s", where, kind, x.message)
		}
		if excusedMalformed {
			// The exception leaves no infiniband_link tree, but the
			// protocol list names the dissector that ran.
			if fp, _ := p.first("frame.protocols"); !strings.HasSuffix(fp, ":infiniband_link") {
				t.Errorf("%s: Wireshark protocols %q, want the infiniband_link dissector", where, fp)
			}
			continue
		}
		proto := map[zoo.Link]string{zoo.LinkEthernet: "infiniband", zoo.LinkIB: "infiniband", zoo.LinkIBFlowControl: "infiniband_link"}[e.Link]
		switch {
		case e.Want.MACControl != nil:
			proto = "macc"
		case e.Want.Ethernet != nil && e.Want.Ethernet.EtherType == wire.EtherTypeLinkState:
			proto = "eth" // the local experimental EtherType: no dissector but Ethernet's
		}
		if !p.protos[proto] {
			t.Errorf("%s: Wireshark did not dissect it as %s", where, proto)
			continue
		}
		for field, want := range tsharkExpect(e) {
			got, ok := p.first(field)
			if !ok {
				t.Errorf("%s: Wireshark has no %s", where, field)
				continue
			}
			fields++
			if !same(got, want) {
				t.Errorf("%s: Wireshark %s = %s, want %v", where, field, got, want)
			}
		}
	}
	t.Logf("%d frames, %d fields compared with Wireshark's decode", len(entries), fields)
}

// same compares a tshark value with an expectation: numbers numerically,
// byte strings as hex without separators, other strings as they are.
func same(got string, want any) bool {
	switch w := want.(type) {
	case string:
		return strings.EqualFold(strings.ReplaceAll(got, ":", ""), strings.ReplaceAll(w, ":", ""))
	case bool:
		g, ok := number(got)
		return ok && (g == 1) == w
	}
	g, ok := number(got)
	return ok && fmt.Sprint(g) == fmt.Sprint(want)
}

// tsharkExpect maps Wireshark field names to the values the entry was built
// with. FECN and BECN: Wireshark 4.0 does not decode them and shows BTH byte
// 4 as the first "infiniband.reserved".
func tsharkExpect(e zoo.Entry) map[string]any {
	w := e.Want
	m := map[string]any{}
	if eth := w.Ethernet; eth != nil {
		m["eth.dst"], m["eth.src"] = eth.Dst.String(), eth.Src.String()
		if eth.Tagged {
			m["eth.type"] = wire.EtherTypeVLAN
			m["vlan.priority"], m["vlan.id"], m["vlan.dei"], m["vlan.etype"] = eth.PCP, eth.VID, eth.DEI, eth.EtherType
		} else {
			m["eth.type"] = eth.EtherType
		}
	}
	switch w.IPVersion {
	case 4:
		m["ip.dsfield.dscp"], m["ip.dsfield.ecn"], m["ip.src"], m["ip.dst"] = w.DSCP, w.ECN, w.Src.String(), w.Dst.String()
		m["ip.flags.df"], m["ip.proto"], m["ip.ttl"] = true, wire.IPProtoUDP, w.TTL
	case 6:
		m["ipv6.tclass.dscp"], m["ipv6.tclass.ecn"], m["ipv6.src"], m["ipv6.dst"] = w.DSCP, w.ECN, w.Src.String(), w.Dst.String()
		m["ipv6.nxt"], m["ipv6.hlim"], m["ipv6.flow"] = wire.IPProtoUDP, w.TTL, w.FlowLabel
	}
	if w.IPVersion != 0 {
		m["udp.srcport"], m["udp.dstport"], m["udp.checksum"] = w.SrcPort, wire.RoCEv2Port, 0
		// Where Wireshark puts the ICRC: the last 4 bytes of the UDP
		// datagram, shown as a big-endian number. It does not know the
		// CNP opcode 0x81 and shows no ICRC field for it.
		if w.BTH.OpCode != bth.CNPOpcode {
			m["infiniband.invariant.crc"] = binary.BigEndian.Uint32(icrcBytes(e))
		}
	}
	if b := w.BTH; b != nil {
		m["infiniband.bth.opcode"], m["infiniband.bth.se"], m["infiniband.bth.m"] = uint8(b.OpCode), b.SE, b.MigReq
		m["infiniband.bth.padcnt"], m["infiniband.bth.tver"], m["infiniband.bth.p_key"] = b.PadCount, b.TVer, b.PKey
		m["infiniband.bth.destqp"], m["infiniband.bth.a"], m["infiniband.bth.psn"] = b.DestQP, b.AckReq, b.PSN
		// Wireshark shows the payload with its pad bytes as "Data".
		if n := w.PayloadLen + b.PadCount; n > 0 {
			m["data.len"] = n
		}
		var resv8a byte
		if b.FECN {
			resv8a |= 0x80
		}
		if b.BECN {
			resv8a |= 0x40
		}
		m["infiniband.reserved"] = hex.EncodeToString([]byte{resv8a})
		x, info := w.Ext, b.OpCode.Info()
		if info.Has(bth.ExtDETH) {
			m["infiniband.deth.q_key"], m["infiniband.deth.srcqp"] = x.DETH.QKey, x.DETH.SrcQP
		}
		if info.Has(bth.ExtRETH) {
			m["infiniband.reth.va"], m["infiniband.reth.r_key"], m["infiniband.reth.dmalen"] = x.RETH.VA, x.RETH.RKey, x.RETH.DMALen
		}
		if info.Has(bth.ExtAtomicETH) {
			// Wireshark shows the AtomicETH's VA and R_Key under the RETH names.
			m["infiniband.reth.va"], m["infiniband.reth.r_key"] = x.AtomicETH.VA, x.AtomicETH.RKey
			m["infiniband.atomiceth.swapdt"], m["infiniband.atomiceth.cmpdt"] = x.AtomicETH.SwapAdd, x.AtomicETH.Compare
		}
		if info.Has(bth.ExtAETH) {
			m["infiniband.aeth.syndrome"], m["infiniband.aeth.msn"] = uint8(x.AETH.Syndrome), x.AETH.MSN
		}
		if info.Has(bth.ExtAtomicAckETH) {
			m["infiniband.atomicacketh.origremdt"] = x.AtomicAckETH
		}
		if info.Has(bth.ExtImmDt) {
			m["infiniband.immdt"] = fmt.Sprintf("%08x", x.ImmDt)
		}
		if info.Has(bth.ExtIETH) {
			m["infiniband.ieth"] = fmt.Sprintf("%08x", x.IETH)
		}
	}
	if mc := w.MACControl; mc != nil {
		m["macc.opcode"] = mc.Opcode
		if mc.Opcode == wire.MACControlOpPFC {
			m["macc.cbfc.enbv"] = mc.Enable
			for p, q := range mc.Time {
				m[fmt.Sprintf("macc.cbfc.pause_time.c%d", p)] = q
			}
		} else {
			m["macc.pause_time"] = mc.Time[0]
		}
	}
	if l := w.LRH; l != nil {
		m["infiniband.lrh.vl"], m["infiniband.lrh.lver"], m["infiniband.lrh.sl"], m["infiniband.lrh.lnh"] = l.VL, l.LVer, l.SL, l.LNH
		m["infiniband.lrh.dlid"], m["infiniband.lrh.slid"], m["infiniband.lrh.pktlen"] = l.DLID, l.SLID, l.PktLen
		m["infiniband.invariant.crc"] = binary.BigEndian.Uint32(icrcBytes(e))
	}
	if g := w.GRH; g != nil {
		m["infiniband.grh.ipver"], m["infiniband.grh.tclass"], m["infiniband.grh.flowlabel"] = 6, g.TClass, g.FlowLabel
		m["infiniband.grh.paylen"], m["infiniband.grh.nxthdr"], m["infiniband.grh.hoplmt"] = g.PayLen, g.NxtHdr, g.HopLmt
		m["infiniband.grh.sgid"] = ipv6String(g.SGID)
		m["infiniband.grh.dgid"] = ipv6String(g.DGID)
	}
	if l := w.IBLink; l != nil {
		m["infiniband_link.op"], m["infiniband_link.fctbs"], m["infiniband_link.vl"], m["infiniband_link.fccl"] = l.Op, l.FCTBS, l.VL, l.FCCL
		m["infiniband_link.lpcrc"] = binary.BigEndian.Uint16(e.Data[4:6])
	}
	return m
}

// icrcBytes returns the 4 ICRC bytes of a RoCEv2 or IB entry, found from the
// IP/UDP or LRH length as a receiver finds them.
func icrcBytes(e zoo.Entry) []byte {
	if e.Link == zoo.LinkIB {
		end := int(wire.LRH(e.Data).PktLen()) * 4
		return e.Data[end-4 : end]
	}
	var p bth.Packet
	if err := p.Decode(e.Data, 0); err != nil {
		panic(fmt.Sprintf("%s: %v", e.Name, err))
	}
	u := p.UDP
	return u[len(u)-4:]
}

func ipv6String(a [16]byte) string { return netip.AddrFrom16(a).String() }
