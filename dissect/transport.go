package dissect

import (
	"encoding/hex"
	"errors"
	"net/netip"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// roce decodes the RoCEv2 part of a datagram. dg runs from the first byte of
// the IP header (hl bytes long) through the ICRC, Ethernet padding excluded:
// the ICRC is found from the IP/UDP length, never from the end of the frame
// (wire-formats.md §1). off is the datagram's offset in the frame.
func roce(o Object, dg []byte, off, hl int) (Object, error) {
	bthOff := hl + wire.UDPSize
	if have := len(dg) - bthOff; have < bth.BTHSize+bth.ICRCSize {
		return o, wire.Truncated("BTH", "", off+bthOff, bth.BTHSize+bth.ICRCSize, have)
	}
	end := len(dg) - bth.ICRCSize
	o, err := transport(o, dg[bthOff:end], off+bthOff)
	if err != nil {
		return o, err
	}
	return o.Add("icrc", hex.EncodeToString(dg[end:])).Add("icrc_ok", bth.VerifyICRCRoCE(dg)), nil
}

// IB decodes a native InfiniBand data packet, LRH through VCRC, as it sits on
// an IB link or in an ERF type-21 record, and appends its headers to o.
func IB(o Object, pkt []byte) (Object, error) {
	vcrcOK := true
	if err := wire.ValidateIBPacket(pkt, 0); err != nil {
		var we *wire.Error
		if !errors.As(err, &we) || we.Reason != wire.ReasonChecksum || we.Header != "VCRC" {
			return o, err
		}
		vcrcOK = false // framing is sound, only the VCRC is wrong
	}
	l := wire.LRH(pkt)
	o = o.Add("lrh", Object{
		{"vl", l.VL()}, {"lver", l.LVer()}, {"sl", l.SL()}, {"lnh", l.LNH()},
		{"dlid", l.DLID()}, {"pktlen", l.PktLen()}, {"slid", l.SLID()},
	})
	end := int(l.PktLen()) * 4 // end of the ICRC; the VCRC follows
	bthOff := wire.LRHSize
	switch l.LNH() {
	case wire.LNHGlobal:
		g := wire.GRH(pkt[wire.LRHSize:end])
		o = o.Add("grh", Object{
			{"ipver", g.IPVer()}, {"tclass", g.TClass()}, {"flow_label", g.FlowLabel()},
			{"paylen", g.PayLen()}, {"nxthdr", g.NxtHdr()}, {"hoplmt", g.HopLmt()},
			{"sgid", netip.AddrFrom16(g.SGID()).String()}, {"dgid", netip.AddrFrom16(g.DGID()).String()},
		})
		bthOff += wire.GRHSize
	case wire.LNHLocal:
	default:
		// Raw packets (LNH 0, 1) carry no IBA transport and no ICRC.
		o = o.Add("payload_len", end-wire.LRHSize)
		return addVCRC(o, pkt, end, vcrcOK), nil
	}
	if have := end - bthOff; have < bth.BTHSize+bth.ICRCSize {
		return o, wire.Truncated("BTH", "", bthOff, bth.BTHSize+bth.ICRCSize, max(have, 0))
	}
	icrcAt := end - bth.ICRCSize
	o, err := transport(o, pkt[bthOff:icrcAt], bthOff)
	if err != nil {
		return o, err
	}
	o = o.Add("icrc", hex.EncodeToString(pkt[icrcAt:end]))
	o = o.Add("icrc_ok", bth.VerifyICRCIB(pkt[:end], l.LNH() == wire.LNHGlobal))
	return addVCRC(o, pkt, end, vcrcOK), nil
}

func addVCRC(o Object, pkt []byte, end int, ok bool) Object {
	return o.Add("vcrc", hex.EncodeToString(pkt[end:end+wire.VCRCSize])).Add("vcrc_ok", ok)
}

// IBLink decodes a 6-byte IB link (flow-control) packet, as in an ERF
// type-25 record, and appends it to o as "link".
func IBLink(o Object, pkt []byte) (Object, error) {
	l := wire.IBLink(pkt)
	lpcrcOK := true
	if err := l.Validate(0); err != nil {
		var we *wire.Error
		if !errors.As(err, &we) || we.Reason != wire.ReasonChecksum {
			return o, err
		}
		lpcrcOK = false
	}
	o = o.Add("link", Object{
		{"op", l.Op()}, {"fctbs", l.FCTBS()}, {"vl", l.VL()}, {"fccl", l.FCCL()},
		{"lpcrc", hex.EncodeToString(pkt[4:wire.IBLinkSize])},
	})
	return o.Add("lpcrc_ok", lpcrcOK), nil
}

// transport decodes BTH, extension headers, payload and pad (t, the ICRC
// excluded) with bth.Headers and names every field. off is the BTH's offset
// in the frame.
func transport(o Object, t []byte, off int) (Object, error) {
	var h bth.Headers
	if err := h.Decode(t, off); err != nil {
		return o, err
	}
	b := h.BTH
	op := b.OpCode()
	o = o.Add("bth", Object{
		{"opcode", uint8(op)}, {"opname", op.String()},
		{"se", bit(b.SE())}, {"m", bit(b.MigReq())}, {"padcnt", b.PadCount()}, {"tver", b.TVer()},
		{"pkey", b.PKey()}, {"fecn", bit(b.FECN())}, {"becn", bit(b.BECN())}, {"dqpn", b.DestQP()},
		{"ackreq", bit(b.AckReq())}, {"psn", b.PSN()},
	})
	// bth.Ext enumerates the extension headers in wire order.
	for e := bth.Ext(0); e < bth.NumExt; e++ {
		if v := h.Ext(e); v != nil {
			o = o.Add(extKey[e], extObject(e, v))
		}
	}
	return o.Add("payload_len", len(h.Payload)), nil
}

// extKey is the JSON name of each extension header.
var extKey = [bth.NumExt]string{
	bth.ExtDETH:         "deth",
	bth.ExtRETH:         "reth",
	bth.ExtAtomicETH:    "atomiceth",
	bth.ExtAETH:         "aeth",
	bth.ExtAtomicAckETH: "atomicacketh",
	bth.ExtImmDt:        "immdt",
	bth.ExtIETH:         "ieth",
	bth.ExtCNP:          "cnp",
}

func extObject(e bth.Ext, v []byte) Object {
	switch e {
	case bth.ExtDETH:
		d := bth.DETH(v)
		return Object{{"qkey", d.QKey()}, {"srcqp", d.SrcQP()}}
	case bth.ExtRETH:
		r := bth.RETH(v)
		return Object{{"va", r.VA()}, {"rkey", r.RKey()}, {"dmalen", r.DMALen()}}
	case bth.ExtAtomicETH:
		a := bth.AtomicETH(v)
		return Object{{"va", a.VA()}, {"rkey", a.RKey()}, {"swap_add", a.SwapAdd()}, {"compare", a.Compare()}}
	case bth.ExtAETH:
		return aeth(bth.AETH(v))
	case bth.ExtAtomicAckETH:
		return Object{{"orig", bth.AtomicAckETH(v).OrigData()}}
	case bth.ExtImmDt:
		return Object{{"data", bth.ImmDt(v).Value()}}
	case bth.ExtIETH:
		return Object{{"rkey", bth.IETH(v).RKey()}}
	}
	// CNP: bth.Headers.Decode has checked that the 16 bytes are zero.
	return Object{{"reserved_len", len(v)}}
}

// aeth names the syndrome as well as its raw value: its type, and the
// credit count, RNR delay or NAK code it encodes (IBA 9.7.5.1).
func aeth(a bth.AETH) Object {
	s := a.Syndrome()
	o := Object{{"syndrome", uint8(s)}, {"msn", a.MSN()}}
	switch {
	case s.IsACK():
		o = o.Add("type", "ack").Add("credit_code", s.CreditCode())
		if n, ok := s.Credits(); ok {
			o = o.Add("credits", n)
		} else {
			// Code 0x1F: "invalid", the responder keeps no credit count.
			o = o.Add("no_credit_count", true)
		}
	case s.IsRNR():
		d, _ := s.RNRDelay()
		o = o.Add("type", "rnr_nak").Add("rnr_timer", s.RNRTimer()).Add("rnr_delay_ns", int(d/clock.Nanosecond))
	case s.IsNAK():
		o = o.Add("type", "nak").Add("nak_code", uint8(s.NAKCode())).Add("nak", s.NAKCode().String())
	}
	return o
}
