package zoo_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
	"github.com/emufabric/emufabric/zoo"
)

func TestDeterministic(t *testing.T) {
	a, b := zoo.All(), zoo.All()
	if len(a) != len(b) {
		t.Fatalf("%d vs %d entries", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Errorf("entry %d (%s) differs between two builds", i, a[i].Name)
		}
	}
}

func TestNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range zoo.All() {
		if e.Name == "" || seen[e.Name] {
			t.Errorf("empty or duplicate name %q", e.Name)
		}
		seen[e.Name] = true
	}
}

// TestEveryOpcode walks the opcode table independently of the zoo: every
// RC, UC and UD opcode is there over IPv4 and over IPv6, and a CNP over both.
func TestEveryOpcode(t *testing.T) {
	have := map[[2]int]bool{} // (IP version, opcode)
	for _, e := range zoo.Ethernet() {
		if e.Want.BTH != nil {
			have[[2]int{int(e.Want.IPVersion), int(e.Want.BTH.OpCode)}] = true
		}
	}
	n := 0
	for op := 0; op < 256; op++ {
		if !bth.Opcode(op).Valid() || bth.Opcode(op) == bth.IBCNOpcode {
			continue // native IB's CN: RoCEv2 notifies with its CNP
		}
		for _, v := range []int{4, 6} {
			n++
			if !have[[2]int{v, op}] {
				t.Errorf("no RoCEv2/IPv%d frame with opcode %s", v, bth.Opcode(op))
			}
		}
	}
	if n < 2*(23+12+2+1) {
		t.Errorf("opcode table walk found %d (version, opcode) pairs, fewer than the 38 opcodes x 2", n)
	}
}

// TestEverySyndrome: every defined AETH syndrome has an ACKNOWLEDGE.
func TestEverySyndrome(t *testing.T) {
	have := map[bth.Syndrome]bool{}
	for _, e := range zoo.Ethernet() {
		if e.Want.BTH != nil && e.Want.BTH.OpCode == bth.RCAcknowledge {
			have[e.Want.Ext.AETH.Syndrome] = true
		}
	}
	n := 0
	for s := 0; s < 256; s++ {
		if !bth.Syndrome(s).Valid() {
			continue
		}
		n++
		if !have[bth.Syndrome(s)] {
			t.Errorf("no ACKNOWLEDGE with syndrome 0x%02x (%s)", s, bth.Syndrome(s))
		}
	}
	if n != 32+32+5 {
		t.Errorf("%d valid syndromes, want 69 (32 ACK, 32 RNR NAK, 5 NAK)", n)
	}
}

// TestRoCEEntries decodes every RoCEv2 entry with bth.Packet (ICRC verified)
// and compares with what the entry says it was built from.
func TestRoCEEntries(t *testing.T) {
	for _, e := range zoo.Ethernet() {
		if len(e.Data) < wire.MinFrameSize {
			t.Errorf("%s: %d bytes, under the Ethernet minimum", e.Name, len(e.Data))
		}
		w := e.Want
		if w.BTH == nil {
			continue
		}
		var p bth.Packet
		if err := p.Decode(e.Data, bth.VerifyICRC); err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		if got := p.BTH.Fields(); got != *w.BTH {
			t.Errorf("%s: BTH %+v, want %+v", e.Name, got, *w.BTH)
		}
		got := p.Headers.ExtFields()
		want := bth.ExtFields{}
		info := w.BTH.OpCode.Info()
		if info.Has(bth.ExtDETH) {
			want.DETH = w.Ext.DETH
		}
		if info.Has(bth.ExtRETH) {
			want.RETH = w.Ext.RETH
		}
		if info.Has(bth.ExtAtomicETH) {
			want.AtomicETH = w.Ext.AtomicETH
		}
		if info.Has(bth.ExtAETH) {
			want.AETH = w.Ext.AETH
		}
		if info.Has(bth.ExtAtomicAckETH) {
			want.AtomicAckETH = w.Ext.AtomicAckETH
		}
		if info.Has(bth.ExtImmDt) {
			want.ImmDt = w.Ext.ImmDt
		}
		if info.Has(bth.ExtIETH) {
			want.IETH = w.Ext.IETH
		}
		if got != want {
			t.Errorf("%s: extension headers %+v, want %+v", e.Name, got, want)
		}
		if len(p.Payload) != w.PayloadLen {
			t.Errorf("%s: payload %d bytes, want %d", e.Name, len(p.Payload), w.PayloadLen)
		}
		if p.IPVersion != w.IPVersion || wire.IPDSCP(p.L3()) != w.DSCP || wire.IPECN(p.L3()) != w.ECN {
			t.Errorf("%s: IPv%d DSCP %d ECN %d, want IPv%d DSCP %d ECN %d", e.Name, p.IPVersion,
				wire.IPDSCP(p.L3()), wire.IPECN(p.L3()), w.IPVersion, w.DSCP, w.ECN)
		}
		ttl, fl := uint8(0), uint32(0)
		if p.IPVersion == 6 {
			ttl, fl = p.IPv6.HopLimit(), p.IPv6.FlowLabel()
		} else {
			ttl = p.IPv4.TTL()
		}
		if ttl != w.TTL || fl != w.FlowLabel {
			t.Errorf("%s: TTL %d flow label 0x%x, want %d and 0x%x", e.Name, ttl, fl, w.TTL, w.FlowLabel)
		}
		if p.UDP.SrcPort() != w.SrcPort || p.UDP.SrcPort() < wire.RoCESourcePortMin {
			t.Errorf("%s: UDP source port 0x%04x, want 0x%04x (in 0xC000..0xFFFF)", e.Name, p.UDP.SrcPort(), w.SrcPort)
		}
		if p.L2.Tagged != w.Ethernet.Tagged || p.L2.PCP != w.Ethernet.PCP || p.L2.VID != w.Ethernet.VID ||
			p.L2.Dst != w.Ethernet.Dst || p.L2.Src != w.Ethernet.Src {
			t.Errorf("%s: Ethernet %+v, want %+v", e.Name, p.L2, *w.Ethernet)
		}
	}
}

// TestFeatures: the frames that show one feature each are there and show it.
func TestFeatures(t *testing.T) {
	var cnp, ce, fecn, vlan, padded, pfcXoff, pfcXon, pause int
	for _, e := range zoo.Ethernet() {
		w := e.Want
		switch {
		case w.BTH != nil && w.BTH.OpCode == bth.CNPOpcode:
			if w.DSCP == 48 && w.Ethernet.Tagged && w.Ethernet.PCP == 6 && w.BTH.BECN && !w.BTH.AckReq && w.ECN == wire.ECNNotECT {
				cnp++
			}
		case w.MACControl != nil && w.MACControl.Opcode == wire.MACControlOpPFC:
			if w.MACControl.Paused(3) {
				pfcXoff++
			}
			if w.MACControl.Resumed(3) {
				pfcXon++
			}
		case w.MACControl != nil:
			pause++
		}
		if w.ECN == wire.ECNCE && w.IPVersion != 0 {
			ce++
		}
		if w.BTH != nil && w.BTH.FECN {
			fecn++
		}
		if w.IPVersion == 4 && w.Ethernet.Tagged && w.Ethernet.PCP == 3 && w.DSCP == 26 {
			vlan++
		}
		if w.BTH != nil && w.BTH.OpCode.Info().Flags.Has(bth.Send) && w.PayloadLen == 0 {
			var p bth.Packet
			if err := p.Decode(e.Data, 0); err == nil && len(p.Trailer) > 0 && len(e.Data) == wire.MinFrameSize {
				padded++
			}
		}
	}
	for _, c := range []struct {
		what string
		n    int
	}{{"CNP (DSCP 48, PCP 6, BECN) over IPv4 and IPv6", cnp / 2}, {"ECN CE", ce}, {"FECN", fecn},
		{"VLAN PCP 3 DSCP 26", vlan}, {"empty SEND with Ethernet padding", padded},
		{"PFC XOFF", pfcXoff}, {"PFC XON", pfcXon}, {"PAUSE", pause}} {
		if c.n == 0 {
			t.Errorf("no %s frame", c.what)
		}
	}
}

// TestIBEntries: native IB packets frame correctly (LRH, GRH, VCRC), carry
// the ICRC of their masks, and link packets validate; both kinds and both
// LNH values are present.
func TestIBEntries(t *testing.T) {
	var local, global, normal, init int
	for _, e := range zoo.IB() {
		switch e.Link {
		case zoo.LinkIB:
			if err := wire.ValidateIBPacket(e.Data, 0); err != nil {
				t.Errorf("%s: %v", e.Name, err)
				continue
			}
			l := wire.LRH(e.Data)
			var lf wire.LRHFields
			l.Fields(&lf)
			if lf != *e.Want.LRH {
				t.Errorf("%s: LRH %+v, want %+v", e.Name, lf, *e.Want.LRH)
			}
			end := int(l.PktLen()) * 4
			g := l.LNH() == wire.LNHGlobal
			if !bth.VerifyICRCIB(e.Data[:end], g) {
				t.Errorf("%s: ICRC does not verify", e.Name)
			}
			off := wire.LRHSize
			if g {
				global++
				off += wire.GRHSize
				var gf wire.GRHFields
				wire.GRH(e.Data[wire.LRHSize:]).Fields(&gf)
				if gf != *e.Want.GRH {
					t.Errorf("%s: GRH %+v, want %+v", e.Name, gf, *e.Want.GRH)
				}
			} else {
				local++
			}
			var h bth.Headers
			if err := h.Decode(e.Data[off:end-bth.ICRCSize], off); err != nil {
				t.Errorf("%s: %v", e.Name, err)
			} else if h.BTH.Fields() != *e.Want.BTH || len(h.Payload) != e.Want.PayloadLen {
				t.Errorf("%s: BTH %+v payload %d, want %+v payload %d", e.Name, h.BTH.Fields(), len(h.Payload), *e.Want.BTH, e.Want.PayloadLen)
			}
			if l.VL() == 15 {
				t.Errorf("%s: VL15 is for subnet management", e.Name)
			}
		case zoo.LinkIBFlowControl:
			l := wire.IBLink(e.Data)
			if err := l.Validate(0); err != nil {
				t.Errorf("%s: %v", e.Name, err)
			}
			var f wire.IBLinkFields
			l.Fields(&f)
			if f != *e.Want.IBLink {
				t.Errorf("%s: %+v, want %+v", e.Name, f, *e.Want.IBLink)
			}
			if f.Op == wire.IBLinkOpInit {
				init++
			} else {
				normal++
			}
		default:
			t.Errorf("%s: link %s in the IB list", e.Name, e.Link)
		}
	}
	if local == 0 || global == 0 || normal == 0 || init == 0 {
		t.Errorf("IB packets: %d local, %d global, %d normal link, %d init link; want each > 0", local, global, normal, init)
	}
}

// TestCaptureFiles: each writer holds what it can and refuses what it
// cannot; what it writes reads back record for record.
func TestCaptureFiles(t *testing.T) {
	if err := zoo.WritePcap(io.Discard, zoo.IB()); err == nil {
		t.Error("WritePcap accepted an IB packet")
	}
	if err := zoo.WriteERF(io.Discard, zoo.Ethernet()); err == nil {
		t.Error("WriteERF accepted an Ethernet frame")
	}
	for _, c := range []struct {
		name  string
		write func(io.Writer, []zoo.Entry) error
		ents  []zoo.Entry
	}{
		{"pcap", zoo.WritePcap, zoo.Ethernet()},
		{"erf", zoo.WriteERF, zoo.IB()},
		{"pcapng", zoo.WritePcapNG, zoo.All()},
	} {
		var b bytes.Buffer
		if err := c.write(&b, c.ents); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r, err := capture.Open(&b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var rec capture.Record
		for i, e := range c.ents {
			if err := r.Next(&rec); err != nil {
				t.Fatalf("%s record %d: %v", c.name, i+1, err)
			}
			if !bytes.Equal(rec.Data, e.Data) || !rec.Timestamp.Equal(zoo.Timestamp(i)) {
				t.Errorf("%s record %d (%s) does not read back", c.name, i+1, e.Name)
			}
			if c.name == "pcapng" && rec.Comment != e.Name {
				t.Errorf("pcapng record %d: comment %q, want %q", i+1, rec.Comment, e.Name)
			}
			if wantERF := e.Link != zoo.LinkEthernet; wantERF != (rec.LinkType == capture.LinkTypeERF) {
				t.Errorf("%s record %d: link type %s for a %s entry", c.name, i+1, rec.LinkType, e.Link)
			}
		}
		if err := r.Next(&rec); !errors.Is(err, io.EOF) {
			t.Errorf("%s: after the last record: %v, want EOF", c.name, err)
		}
	}
}
