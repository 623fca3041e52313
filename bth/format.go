package bth

import (
	"fmt"
	"strings"
)

// String summarises the decoded transport headers on one line, in the
// order they are on the wire, for logs and `decode`-style tools:
//
//	RC_RDMA_WRITE_FIRST qp=0x000012 psn=262 pkey=0xffff RETH{va=0x7f0000001000 rkey=0x1234abcd len=600} payload=256
//
// Flags (se, m, fecn, becn, ack) appear only when set; pad only when not 0.
// It allocates, so it is not for the per-frame path.
func (h *Headers) String() string {
	if h.BTH == nil || h.Info == nil {
		return "<no BTH>"
	}
	var s strings.Builder
	b := h.BTH
	fmt.Fprintf(&s, "%s qp=0x%06x psn=%d pkey=0x%04x", b.OpCode(), b.DestQP(), b.PSN(), b.PKey())
	for _, f := range []struct {
		on   bool
		name string
	}{{b.SE(), "se"}, {b.MigReq(), "m"}, {b.FECN(), "fecn"}, {b.BECN(), "becn"}, {b.AckReq(), "ack"}} {
		if f.on {
			s.WriteString(" " + f.name)
		}
	}
	if h.DETH != nil {
		fmt.Fprintf(&s, " DETH{qkey=0x%08x srcqp=0x%06x}", h.DETH.QKey(), h.DETH.SrcQP())
	}
	if h.RETH != nil {
		fmt.Fprintf(&s, " RETH{va=0x%x rkey=0x%08x len=%d}", h.RETH.VA(), h.RETH.RKey(), h.RETH.DMALen())
	}
	if h.AtomicETH != nil {
		a := h.AtomicETH
		fmt.Fprintf(&s, " AtomicETH{va=0x%x rkey=0x%08x swapadd=0x%x compare=0x%x}", a.VA(), a.RKey(), a.SwapAdd(), a.Compare())
	}
	if h.AETH != nil {
		fmt.Fprintf(&s, " AETH{%s msn=%d}", h.AETH.Syndrome(), h.AETH.MSN())
	}
	if h.AtomicAckETH != nil {
		fmt.Fprintf(&s, " AtomicAckETH{orig=0x%x}", h.AtomicAckETH.OrigData())
	}
	if h.ImmDt != nil {
		fmt.Fprintf(&s, " ImmDt{0x%08x}", h.ImmDt.Value())
	}
	if h.IETH != nil {
		fmt.Fprintf(&s, " IETH{rkey=0x%08x}", h.IETH.RKey())
	}
	if h.Info.Flags.Has(Payload) {
		fmt.Fprintf(&s, " payload=%d", len(h.Payload))
	}
	if len(h.Pad) > 0 {
		fmt.Fprintf(&s, " pad=%d", len(h.Pad))
	}
	return s.String()
}
