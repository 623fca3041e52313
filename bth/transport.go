package bth

import "github.com/emufabric/emufabric/wire"

// DecodeFlags select optional work of the packet decoders. Without them a
// decoder locates and reads the CRCs but does not compute them, which keeps
// header decoding independent of the packet size.
type DecodeFlags uint8

const (
	// VerifyICRC computes the ICRC and fails the decode with a
	// ReasonChecksum error on a mismatch (Packet.ICRCOK, IBPacket.ICRCOK).
	VerifyICRC DecodeFlags = 1 << iota
	// VerifyVCRC checks the VCRC of a native IB packet (IBPacket.VCRCOK).
	VerifyVCRC
)

// Headers is the transport part of a packet, decoded: the BTH, a view of
// every extension header its opcode carries (nil when absent), the payload
// and the pad. It is the same for RoCEv2 and native IB; Packet and IBPacket
// embed it. All slices alias the decoded bytes.
type Headers struct {
	BTH          BTH
	Info         *OpInfo // table entry of BTH.OpCode()
	DETH         DETH
	RETH         RETH
	AtomicETH    AtomicETH
	AETH         AETH
	AtomicAckETH AtomicAckETH
	ImmDt        ImmDt
	IETH         IETH
	CNP          CNP
	Payload      []byte // the message bytes, pad excluded
	Pad          []byte // BTH.PadCount() pad bytes (counted in the ICRC)
}

// Ext returns the view of extension header e, nil when the opcode has none.
func (h *Headers) Ext(e Ext) []byte {
	switch e {
	case ExtDETH:
		return h.DETH
	case ExtRETH:
		return h.RETH
	case ExtAtomicETH:
		return h.AtomicETH
	case ExtAETH:
		return h.AETH
	case ExtAtomicAckETH:
		return h.AtomicAckETH
	case ExtImmDt:
		return h.ImmDt
	case ExtIETH:
		return h.IETH
	case ExtCNP:
		return h.CNP
	}
	return nil
}

func (h *Headers) setExt(e Ext, v []byte) {
	switch e {
	case ExtDETH:
		h.DETH = v
	case ExtRETH:
		h.RETH = v
	case ExtAtomicETH:
		h.AtomicETH = v
	case ExtAETH:
		h.AETH = v
	case ExtAtomicAckETH:
		h.AtomicAckETH = v
	case ExtImmDt:
		h.ImmDt = v
	case ExtIETH:
		h.IETH = v
	case ExtCNP:
		h.CNP = v
	}
}

// Decode decodes b, which runs from the first BTH byte through the last pad
// byte (the ICRC is not part of it: the caller finds it from the IP/UDP or
// LRH length). offset is the BTH's position in the frame, for errors.
//
// Besides each header's own checks it enforces the per-packet rules of
// IBA 9.2–9.4 that one packet can show: the headers fit; the transport part
// is a whole number of 4-byte words; PadCnt only on packets that end a
// message (LAST/ONLY, UD) and never on header-only opcodes, and not larger
// than what follows the headers; no payload on ACKNOWLEDGE, ATOMIC
// ACKNOWLEDGE, RDMA READ Request, the atomics or a CNP; a CNP has BECN set
// and AckReq clear. What needs connection state (PMTU, PSN order, a UD
// payload larger than the PMTU) is the transport engine's business.
func (h *Headers) Decode(b []byte, offset int) error {
	*h = Headers{}
	bth := BTH(b)
	if err := bth.Validate(offset); err != nil {
		return err
	}
	info := bth.Info()
	h.BTH, h.Info = bth[:BTHSize], info
	for e := Ext(0); e < NumExt; e++ {
		if !info.Has(e) {
			continue
		}
		off := int(info.Offset[e])
		end := off + extSize[e]
		if end > len(b) {
			return wire.Truncated(e.String(), "", offset+off, extSize[e], max(len(b)-off, 0))
		}
		v := b[off:end]
		if err := validateExt(e, v, offset+off); err != nil {
			return err
		}
		h.setExt(e, v)
	}
	if len(b)%4 != 0 {
		return wire.Errorf("BTH", "PadCnt", offset, wire.ReasonInconsistent,
			"transport headers, payload and pad are %d bytes, not a multiple of 4", len(b))
	}
	rest := b[info.HdrLen:]
	pad := bth.PadCount()
	switch {
	case !info.Flags.Has(Payload) && len(rest) > 0:
		return wire.Errorf("Payload", "Length", offset+info.HdrLen, wire.ReasonInconsistent,
			"%d bytes of payload on %s, which carries none", len(rest), info.Name)
	case pad != 0 && !info.Flags.Has(Payload):
		return wire.Errorf("BTH", "PadCnt", offset+bthFlags, wire.ReasonInconsistent,
			"PadCnt %d on header-only opcode %s", pad, info.Name)
	case pad != 0 && !info.Flags.Has(Last):
		return wire.Errorf("BTH", "PadCnt", offset+bthFlags, wire.ReasonInconsistent,
			"PadCnt %d on %s: FIRST and MIDDLE packets carry whole words", pad, info.Name)
	case pad > len(rest):
		return wire.Errorf("BTH", "PadCnt", offset+bthFlags, wire.ReasonInconsistent,
			"PadCnt %d, only %d bytes follow the headers", pad, len(rest))
	}
	if info.Transport == TransportCNP {
		if !bth.BECN() {
			return wire.Errorf("BTH", "BECN", offset+bthResv8a, wire.ReasonInconsistent, "CNP without BECN")
		}
		if bth.AckReq() {
			return wire.Errorf("BTH", "AckReq", offset+bthAckReq, wire.ReasonInvalid, "CNP with AckReq set")
		}
	}
	h.Payload = rest[:len(rest)-pad]
	h.Pad = rest[len(rest)-pad:]
	return nil
}

func validateExt(e Ext, v []byte, offset int) error {
	switch e {
	case ExtDETH:
		return DETH(v).Validate(offset)
	case ExtAETH:
		return AETH(v).Validate(offset)
	case ExtCNP:
		return CNP(v).Validate(offset)
	}
	// RETH, AtomicETH, AtomicAckETH, ImmDt and IETH have no reserved bits;
	// their length was checked by the caller.
	return nil
}

// ExtFields holds the extension headers to encode. The builder writes the
// ones the opcode carries and ignores the rest.
type ExtFields struct {
	DETH         DETHFields
	RETH         RETHFields
	AtomicETH    AtomicETHFields
	AETH         AETHFields
	AtomicAckETH uint64 // original data
	ImmDt        uint32 // immediate value
	IETH         uint32 // R_Key to invalidate
}

// PadFor returns the PadCnt that brings n payload bytes to a whole word.
func PadFor(n int) int { return -n & 3 }

// TransportLen returns the length of BTH, extension headers, payload and pad
// of an op packet with n payload bytes (the ICRC excluded), or -1 if op is
// not decodable.
func TransportLen(op Opcode, n int) int {
	info := op.Info()
	if !info.Valid() {
		return -1
	}
	return info.HdrLen + n + PadFor(n)
}

// EncodeTransport writes BTH, extension headers, payload and zero pad into b
// and returns the number of bytes written. PadCnt is computed from
// len(payload); f.PadCount is ignored. It returns a *wire.Error if the
// opcode is not decodable, carries no payload but one is given, is a FIRST or
// MIDDLE packet whose payload is not a whole number of words, or if b is too
// short.
func EncodeTransport(b []byte, f *BTHFields, ext *ExtFields, payload []byte) (int, error) {
	info := f.OpCode.Info()
	if !info.Valid() {
		r := wire.ReasonInvalid
		if f.OpCode.unsupported() {
			r = wire.ReasonUnsupported
		}
		return 0, wire.Errorf("BTH", "OpCode", -1, r, "cannot encode %s", f.OpCode)
	}
	if len(payload) > 0 && !info.Flags.Has(Payload) {
		return 0, wire.Errorf("Payload", "Length", -1, wire.ReasonInconsistent,
			"%d bytes of payload on %s, which carries none", len(payload), info.Name)
	}
	pad := PadFor(len(payload))
	if pad != 0 && !info.Flags.Has(Last) {
		return 0, wire.Errorf("BTH", "PadCnt", -1, wire.ReasonInconsistent,
			"%s payload of %d bytes is not a whole number of words", info.Name, len(payload))
	}
	n := info.HdrLen + len(payload) + pad
	if len(b) < n {
		return 0, wire.Truncated("BTH", "", -1, n, len(b))
	}
	bf := *f
	bf.PadCount = pad
	BTH(b).Encode(&bf)
	if info.Has(ExtDETH) {
		DETH(b[info.Offset[ExtDETH]:]).Encode(&ext.DETH)
	}
	if info.Has(ExtRETH) {
		RETH(b[info.Offset[ExtRETH]:]).Encode(&ext.RETH)
	}
	if info.Has(ExtAtomicETH) {
		AtomicETH(b[info.Offset[ExtAtomicETH]:]).Encode(&ext.AtomicETH)
	}
	if info.Has(ExtAETH) {
		AETH(b[info.Offset[ExtAETH]:]).Encode(&ext.AETH)
	}
	if info.Has(ExtAtomicAckETH) {
		AtomicAckETH(b[info.Offset[ExtAtomicAckETH]:]).Encode(ext.AtomicAckETH)
	}
	if info.Has(ExtImmDt) {
		ImmDt(b[info.Offset[ExtImmDt]:]).Encode(ext.ImmDt)
	}
	if info.Has(ExtIETH) {
		IETH(b[info.Offset[ExtIETH]:]).Encode(ext.IETH)
	}
	if info.Has(ExtCNP) {
		CNP(b[info.Offset[ExtCNP]:]).Encode()
	}
	copy(b[info.HdrLen:], payload)
	clear(b[info.HdrLen+len(payload) : n])
	return n, nil
}

// ExtFields returns the extension header fields present in h, for tests and
// for re-encoding a decoded packet.
func (h *Headers) ExtFields() ExtFields {
	var f ExtFields
	if h.DETH != nil {
		f.DETH = h.DETH.Fields()
	}
	if h.RETH != nil {
		f.RETH = h.RETH.Fields()
	}
	if h.AtomicETH != nil {
		f.AtomicETH = h.AtomicETH.Fields()
	}
	if h.AETH != nil {
		f.AETH = h.AETH.Fields()
	}
	if h.AtomicAckETH != nil {
		f.AtomicAckETH = h.AtomicAckETH.OrigData()
	}
	if h.ImmDt != nil {
		f.ImmDt = h.ImmDt.Value()
	}
	if h.IETH != nil {
		f.IETH = h.IETH.RKey()
	}
	return f
}
