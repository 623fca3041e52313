package bth

import (
	"github.com/emufabric/emufabric/wire"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// gopacket adapters for the transport headers. The byte layouts live in
// bth.go and the extension-header files; these types only translate
// between them and gopacket's DecodingLayer / SerializableLayer interfaces,
// as wire does for the LRH and GRH.
//
// Layer chain. UDP port 4791 (RoCEv2) and the LRH/GRH (native IB) lead to
// the BTH. The BTH's opcode decides which extension headers follow, so the
// chain is BTH -> [DETH] -> [RETH|AtomicETH] -> [AETH] -> [AtomicAckETH] ->
// [ImmDt|IETH] (or the CNP body) -> IBPayload. The IBPayload layer holds the
// message payload, the pad and, as a trailer field, the ICRC: the bytes
// given to the BTH layer always end with the ICRC (wire's LRH layer keeps
// the VCRC for itself, and gopacket's UDP layer cuts Ethernet padding off
// at the UDP length).
//
// An extension header does not say what follows it (a RETH may be followed
// by ImmDt or by the payload), so each extension layer asks the BTH layer it
// belongs to: its BTH field must point to the BTHLayer of the same parser.
// NewDecodingLayers returns a set linked that way; gopacket.NewPacket links
// them itself.
//
// ICRC. The ICRC covers the IP header or LRH, which a transport layer does
// not see, so the layers neither check nor compute it. To check it, decode
// with Packet.Decode(frame, VerifyICRC) or call VerifyICRCRoCE on the IP
// datagram. gopacket serializes inside out, so after SerializeLayers call
// FinishRoCEFrame (or FinishIBPacket) on the buffer to write the ICRC.
var (
	LayerTypeBTH = gopacket.RegisterLayerType(wire.LayerNumBTH,
		gopacket.LayerTypeMetadata{Name: "BTH", Decoder: gopacket.DecodeFunc(decodeBTH)})
	LayerTypeDETH = gopacket.RegisterLayerType(wire.LayerNumDETH,
		gopacket.LayerTypeMetadata{Name: "DETH", Decoder: standalone(ExtDETH)})
	LayerTypeRETH = gopacket.RegisterLayerType(wire.LayerNumRETH,
		gopacket.LayerTypeMetadata{Name: "RETH", Decoder: standalone(ExtRETH)})
	LayerTypeAtomicETH = gopacket.RegisterLayerType(wire.LayerNumAtomicETH,
		gopacket.LayerTypeMetadata{Name: "AtomicETH", Decoder: standalone(ExtAtomicETH)})
	LayerTypeAETH = gopacket.RegisterLayerType(wire.LayerNumAETH,
		gopacket.LayerTypeMetadata{Name: "AETH", Decoder: standalone(ExtAETH)})
	LayerTypeAtomicAckETH = gopacket.RegisterLayerType(wire.LayerNumAtomicAckETH,
		gopacket.LayerTypeMetadata{Name: "AtomicAckETH", Decoder: standalone(ExtAtomicAckETH)})
	LayerTypeImmDt = gopacket.RegisterLayerType(wire.LayerNumImmDt,
		gopacket.LayerTypeMetadata{Name: "ImmDt", Decoder: standalone(ExtImmDt)})
	LayerTypeIETH = gopacket.RegisterLayerType(wire.LayerNumIETH,
		gopacket.LayerTypeMetadata{Name: "IETH", Decoder: standalone(ExtIETH)})
	LayerTypeCNP = gopacket.RegisterLayerType(wire.LayerNumCNP,
		gopacket.LayerTypeMetadata{Name: "CNP", Decoder: standalone(ExtCNP)})
	LayerTypeIBPayload = gopacket.RegisterLayerType(wire.LayerNumIBPayload,
		gopacket.LayerTypeMetadata{Name: "IBPayload", Decoder: gopacket.DecodeFunc(decodeIBPayloadAlone)})
)

// extLayerType maps an extension header to its layer type.
var extLayerType = [NumExt]gopacket.LayerType{
	ExtDETH:         LayerTypeDETH,
	ExtRETH:         LayerTypeRETH,
	ExtAtomicETH:    LayerTypeAtomicETH,
	ExtAETH:         LayerTypeAETH,
	ExtAtomicAckETH: LayerTypeAtomicAckETH,
	ExtImmDt:        LayerTypeImmDt,
	ExtIETH:         LayerTypeIETH,
	ExtCNP:          LayerTypeCNP,
}

func init() {
	layers.RegisterUDPPortLayerType(wire.RoCEv2Port, LayerTypeBTH)
}

// BTHLayer is the gopacket layer for the BTH. Contents is the 12-byte
// BTH, Payload everything after it through the ICRC. DecodeFromBytes runs
// the full transport checks of Headers.Decode (opcode, TVer, reserved bits,
// extension headers fit, PadCnt and payload rules), so the layers after it
// only copy fields.
type BTHLayer struct {
	layers.BaseLayer
	BTHFields

	h Headers // views of the decoded transport headers
}

var (
	_ gopacket.DecodingLayer     = (*BTHLayer)(nil)
	_ gopacket.SerializableLayer = (*BTHLayer)(nil)
)

func (l *BTHLayer) LayerType() gopacket.LayerType  { return LayerTypeBTH }
func (l *BTHLayer) CanDecode() gopacket.LayerClass { return LayerTypeBTH }

// Info returns the opcode table entry of the decoded BTH.
func (l *BTHLayer) Info() *OpInfo { return l.OpCode.Info() }

// Headers returns views of every transport header of the decoded packet;
// they alias the decoded bytes.
func (l *BTHLayer) Headers() *Headers { return &l.h }

// NextLayerType is the first extension header of the opcode, or IBPayload.
func (l *BTHLayer) NextLayerType() gopacket.LayerType { return l.nextAfter(-1) }

// nextAfter returns the layer that follows extension header e (-1: the BTH).
func (l *BTHLayer) nextAfter(e int) gopacket.LayerType {
	info := l.OpCode.Info()
	for x := Ext(e + 1); x < NumExt; x++ {
		if info.Has(x) {
			return extLayerType[x]
		}
	}
	return LayerTypeIBPayload
}

// DecodeFromBytes decodes data, the bytes from the BTH through the ICRC.
func (l *BTHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < BTHSize+ICRCSize {
		df.SetTruncated()
		return wire.Truncated("BTH", "", 0, BTHSize+ICRCSize, len(data))
	}
	if err := l.h.Decode(data[:len(data)-ICRCSize], 0); err != nil {
		setTruncated(err, df)
		return err
	}
	l.BTHFields = l.h.BTH.Fields()
	l.Contents = data[:BTHSize]
	l.Payload = data[BTHSize:]
	return nil
}

// SerializeTo prepends the BTH. PadCount is written as held; an IBPayload
// layer linked to this BTH sets it when serialized with FixLengths.
func (l *BTHLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	hdr, err := b.PrependBytes(BTHSize)
	if err != nil {
		return err
	}
	BTH(hdr).Encode(&l.BTHFields)
	return nil
}

// decodeBTH is the gopacket.NewPacket path: it adds the BTH, each
// extension header and the payload as layers, linked to this BTH.
func decodeBTH(data []byte, p gopacket.PacketBuilder) error {
	l := &BTHLayer{}
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	rest := l.Payload
	for e := Ext(0); e < NumExt; e++ {
		if !l.h.Info.Has(e) {
			continue
		}
		x := newExtLayer(e, l)
		if err := x.DecodeFromBytes(rest, p); err != nil {
			return err
		}
		p.AddLayer(x)
		rest = x.LayerPayload()
	}
	pl := &IBPayloadLayer{BTH: l}
	if err := pl.DecodeFromBytes(rest, p); err != nil {
		return err
	}
	p.AddLayer(pl)
	return nil
}

// extLayer is what every extension-header layer implements.
type extLayer interface {
	gopacket.DecodingLayer
	gopacket.Layer
}

func newExtLayer(e Ext, b *BTHLayer) extLayer {
	switch e {
	case ExtDETH:
		return &DETHLayer{BTH: b}
	case ExtRETH:
		return &RETHLayer{BTH: b}
	case ExtAtomicETH:
		return &AtomicETHLayer{BTH: b}
	case ExtAETH:
		return &AETHLayer{BTH: b}
	case ExtAtomicAckETH:
		return &AtomicAckETHLayer{BTH: b}
	case ExtImmDt:
		return &ImmDtLayer{BTH: b}
	case ExtIETH:
		return &IETHLayer{BTH: b}
	}
	return &CNPLayer{BTH: b}
}

// standalone decodes an extension header met without its BTH (a packet
// decoded starting at that layer type): the header alone, the rest as
// gopacket.Payload.
func standalone(e Ext) gopacket.Decoder {
	return gopacket.DecodeFunc(func(data []byte, p gopacket.PacketBuilder) error {
		x := newExtLayer(e, nil)
		if err := x.DecodeFromBytes(data, p); err != nil {
			return err
		}
		p.AddLayer(x)
		if len(x.LayerPayload()) > 0 {
			return p.NextDecoder(gopacket.LayerTypePayload)
		}
		return nil
	})
}

// extHeader decodes the common part of an extension layer: the length and
// the header's own validation.
func extHeader(base *layers.BaseLayer, e Ext, data []byte, df gopacket.DecodeFeedback) error {
	n := extSize[e]
	if len(data) < n {
		df.SetTruncated()
		return wire.Truncated(e.String(), "", 0, n, len(data))
	}
	if err := validateExt(e, data[:n], 0); err != nil {
		return err
	}
	base.Contents = data[:n]
	base.Payload = data[n:]
	return nil
}

// next is the layer after extension header e of b's opcode; without a BTH
// layer nothing is known, and decoding stops.
func next(b *BTHLayer, e Ext) gopacket.LayerType {
	if b == nil {
		return gopacket.LayerTypeZero
	}
	return b.nextAfter(int(e))
}

var (
	_ gopacket.DecodingLayer     = (*DETHLayer)(nil)
	_ gopacket.SerializableLayer = (*DETHLayer)(nil)
	_ gopacket.DecodingLayer     = (*RETHLayer)(nil)
	_ gopacket.SerializableLayer = (*RETHLayer)(nil)
	_ gopacket.DecodingLayer     = (*AtomicETHLayer)(nil)
	_ gopacket.SerializableLayer = (*AtomicETHLayer)(nil)
	_ gopacket.DecodingLayer     = (*AETHLayer)(nil)
	_ gopacket.SerializableLayer = (*AETHLayer)(nil)
	_ gopacket.DecodingLayer     = (*AtomicAckETHLayer)(nil)
	_ gopacket.SerializableLayer = (*AtomicAckETHLayer)(nil)
	_ gopacket.DecodingLayer     = (*ImmDtLayer)(nil)
	_ gopacket.SerializableLayer = (*ImmDtLayer)(nil)
	_ gopacket.DecodingLayer     = (*IETHLayer)(nil)
	_ gopacket.SerializableLayer = (*IETHLayer)(nil)
	_ gopacket.DecodingLayer     = (*CNPLayer)(nil)
	_ gopacket.SerializableLayer = (*CNPLayer)(nil)
)

// DETHLayer is the gopacket layer for the DETH.
type DETHLayer struct {
	layers.BaseLayer
	DETHFields
	BTH *BTHLayer // the BTH layer this header follows
}

func (l *DETHLayer) LayerType() gopacket.LayerType     { return LayerTypeDETH }
func (l *DETHLayer) CanDecode() gopacket.LayerClass    { return LayerTypeDETH }
func (l *DETHLayer) NextLayerType() gopacket.LayerType { return next(l.BTH, ExtDETH) }
func (l *DETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := extHeader(&l.BaseLayer, ExtDETH, data, df); err != nil {
		return err
	}
	l.DETHFields = DETH(data).Fields()
	return nil
}
func (l *DETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(DETHSize)
	if err == nil {
		DETH(h).Encode(&l.DETHFields)
	}
	return err
}

// RETHLayer is the gopacket layer for the RETH.
type RETHLayer struct {
	layers.BaseLayer
	RETHFields
	BTH *BTHLayer
}

func (l *RETHLayer) LayerType() gopacket.LayerType     { return LayerTypeRETH }
func (l *RETHLayer) CanDecode() gopacket.LayerClass    { return LayerTypeRETH }
func (l *RETHLayer) NextLayerType() gopacket.LayerType { return next(l.BTH, ExtRETH) }
func (l *RETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := extHeader(&l.BaseLayer, ExtRETH, data, df); err != nil {
		return err
	}
	l.RETHFields = RETH(data).Fields()
	return nil
}
func (l *RETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(RETHSize)
	if err == nil {
		RETH(h).Encode(&l.RETHFields)
	}
	return err
}

// AtomicETHLayer is the gopacket layer for the AtomicETH.
type AtomicETHLayer struct {
	layers.BaseLayer
	AtomicETHFields
	BTH *BTHLayer
}

func (l *AtomicETHLayer) LayerType() gopacket.LayerType     { return LayerTypeAtomicETH }
func (l *AtomicETHLayer) CanDecode() gopacket.LayerClass    { return LayerTypeAtomicETH }
func (l *AtomicETHLayer) NextLayerType() gopacket.LayerType { return next(l.BTH, ExtAtomicETH) }
func (l *AtomicETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := extHeader(&l.BaseLayer, ExtAtomicETH, data, df); err != nil {
		return err
	}
	l.AtomicETHFields = AtomicETH(data).Fields()
	return nil
}
func (l *AtomicETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(AtomicETHSize)
	if err == nil {
		AtomicETH(h).Encode(&l.AtomicETHFields)
	}
	return err
}

// AETHLayer is the gopacket layer for the AETH.
type AETHLayer struct {
	layers.BaseLayer
	AETHFields
	BTH *BTHLayer
}

func (l *AETHLayer) LayerType() gopacket.LayerType     { return LayerTypeAETH }
func (l *AETHLayer) CanDecode() gopacket.LayerClass    { return LayerTypeAETH }
func (l *AETHLayer) NextLayerType() gopacket.LayerType { return next(l.BTH, ExtAETH) }
func (l *AETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := extHeader(&l.BaseLayer, ExtAETH, data, df); err != nil {
		return err
	}
	l.AETHFields = AETH(data).Fields()
	return nil
}
func (l *AETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(AETHSize)
	if err == nil {
		AETH(h).Encode(&l.AETHFields)
	}
	return err
}

// AtomicAckETHLayer is the gopacket layer for the AtomicAckETH.
type AtomicAckETHLayer struct {
	layers.BaseLayer
	OrigData uint64
	BTH      *BTHLayer
}

func (l *AtomicAckETHLayer) LayerType() gopacket.LayerType     { return LayerTypeAtomicAckETH }
func (l *AtomicAckETHLayer) CanDecode() gopacket.LayerClass    { return LayerTypeAtomicAckETH }
func (l *AtomicAckETHLayer) NextLayerType() gopacket.LayerType { return next(l.BTH, ExtAtomicAckETH) }
func (l *AtomicAckETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := extHeader(&l.BaseLayer, ExtAtomicAckETH, data, df); err != nil {
		return err
	}
	l.OrigData = AtomicAckETH(data).OrigData()
	return nil
}
func (l *AtomicAckETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(AtomicAckETHSize)
	if err == nil {
		AtomicAckETH(h).Encode(l.OrigData)
	}
	return err
}

// ImmDtLayer is the gopacket layer for the ImmDt header.
type ImmDtLayer struct {
	layers.BaseLayer
	Value uint32
	BTH   *BTHLayer
}

func (l *ImmDtLayer) LayerType() gopacket.LayerType     { return LayerTypeImmDt }
func (l *ImmDtLayer) CanDecode() gopacket.LayerClass    { return LayerTypeImmDt }
func (l *ImmDtLayer) NextLayerType() gopacket.LayerType { return next(l.BTH, ExtImmDt) }
func (l *ImmDtLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := extHeader(&l.BaseLayer, ExtImmDt, data, df); err != nil {
		return err
	}
	l.Value = ImmDt(data).Value()
	return nil
}
func (l *ImmDtLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(ImmDtSize)
	if err == nil {
		ImmDt(h).Encode(l.Value)
	}
	return err
}

// IETHLayer is the gopacket layer for the IETH.
type IETHLayer struct {
	layers.BaseLayer
	RKey uint32
	BTH  *BTHLayer
}

func (l *IETHLayer) LayerType() gopacket.LayerType     { return LayerTypeIETH }
func (l *IETHLayer) CanDecode() gopacket.LayerClass    { return LayerTypeIETH }
func (l *IETHLayer) NextLayerType() gopacket.LayerType { return next(l.BTH, ExtIETH) }
func (l *IETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := extHeader(&l.BaseLayer, ExtIETH, data, df); err != nil {
		return err
	}
	l.RKey = IETH(data).RKey()
	return nil
}
func (l *IETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(IETHSize)
	if err == nil {
		IETH(h).Encode(l.RKey)
	}
	return err
}

// CNPLayer is the gopacket layer for the 16 reserved bytes of a CNP.
type CNPLayer struct {
	layers.BaseLayer
	BTH *BTHLayer
}

func (l *CNPLayer) LayerType() gopacket.LayerType     { return LayerTypeCNP }
func (l *CNPLayer) CanDecode() gopacket.LayerClass    { return LayerTypeCNP }
func (l *CNPLayer) NextLayerType() gopacket.LayerType { return next(l.BTH, ExtCNP) }
func (l *CNPLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	return extHeader(&l.BaseLayer, ExtCNP, data, df)
}
func (l *CNPLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(CNPSize)
	if err == nil {
		CNP(h).Encode()
	}
	return err
}

// IBPayloadLayer is the last transport layer: the message payload, the pad
// and the ICRC. Contents is all of it; Data excludes pad and ICRC.
type IBPayloadLayer struct {
	layers.BaseLayer
	Data []byte // message payload
	Pad  []byte // PadCnt bytes
	ICRC uint32 // as stored on the wire (least-significant byte first)
	BTH  *BTHLayer
}

var (
	_ gopacket.DecodingLayer     = (*IBPayloadLayer)(nil)
	_ gopacket.SerializableLayer = (*IBPayloadLayer)(nil)
)

func (l *IBPayloadLayer) LayerType() gopacket.LayerType     { return LayerTypeIBPayload }
func (l *IBPayloadLayer) CanDecode() gopacket.LayerClass    { return LayerTypeIBPayload }
func (l *IBPayloadLayer) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// DecodeFromBytes splits data (payload, pad, ICRC) using the PadCnt of the
// linked BTH layer.
func (l *IBPayloadLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if l.BTH == nil {
		return wire.Errorf("IBPayload", "", 0, wire.ReasonInconsistent, "no BTH layer to give PadCnt")
	}
	pad := l.BTH.PadCount
	if len(data) < ICRCSize+pad {
		df.SetTruncated()
		return wire.Truncated("ICRC", "", 0, ICRCSize+pad, len(data))
	}
	end := len(data) - ICRCSize
	l.Contents = data
	l.Payload = nil
	l.Data = data[:end-pad]
	l.Pad = data[end-pad : end]
	l.ICRC = WireICRC(data[end:])
	return nil
}

// SerializeTo prepends payload, zero pad and the ICRC field. With
// FixLengths the pad follows len(Data) and the linked BTH's PadCount is set
// to match. The ICRC is written as held (0 for a new packet); FinishRoCEFrame
// or FinishIBPacket computes it once the outer headers exist.
func (l *IBPayloadLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	pad := len(l.Pad)
	if opts.FixLengths {
		pad = PadFor(len(l.Data))
		if l.BTH != nil {
			l.BTH.PadCount = pad
		}
	}
	h, err := b.PrependBytes(len(l.Data) + pad + ICRCSize)
	if err != nil {
		return err
	}
	n := copy(h, l.Data)
	if opts.FixLengths {
		clear(h[n : n+pad])
	} else {
		copy(h[n:], l.Pad)
	}
	PutICRC(h[n+pad:], l.ICRC)
	return nil
}

func decodeIBPayloadAlone(data []byte, p gopacket.PacketBuilder) error {
	return wire.Errorf("IBPayload", "", 0, wire.ReasonInconsistent, "decoded without its BTH")
}

// setTruncated tells gopacket the packet is short when err says so.
func setTruncated(err error, df gopacket.DecodeFeedback) {
	if we, ok := err.(*wire.Error); ok && we.Reason == wire.ReasonTruncated {
		df.SetTruncated()
	}
}

// DecodingLayers is a set of transport layers linked together for one
// gopacket.DecodingLayerParser. Create it with NewDecodingLayers; it is
// not safe for concurrent use (one per parser).
type DecodingLayers struct {
	BTH          BTHLayer
	DETH         DETHLayer
	RETH         RETHLayer
	AtomicETH    AtomicETHLayer
	AETH         AETHLayer
	AtomicAckETH AtomicAckETHLayer
	ImmDt        ImmDtLayer
	IETH         IETHLayer
	CNP          CNPLayer
	Payload      IBPayloadLayer
}

// NewDecodingLayers returns the transport layers with every extension layer
// and the payload layer pointing at the set's BTH layer.
func NewDecodingLayers() *DecodingLayers {
	d := &DecodingLayers{}
	d.DETH.BTH = &d.BTH
	d.RETH.BTH = &d.BTH
	d.AtomicETH.BTH = &d.BTH
	d.AETH.BTH = &d.BTH
	d.AtomicAckETH.BTH = &d.BTH
	d.ImmDt.BTH = &d.BTH
	d.IETH.BTH = &d.BTH
	d.CNP.BTH = &d.BTH
	d.Payload.BTH = &d.BTH
	return d
}

// Layers returns the set as DecodingLayers, to append to a parser's list.
func (d *DecodingLayers) Layers() []gopacket.DecodingLayer {
	return []gopacket.DecodingLayer{&d.BTH, &d.DETH, &d.RETH, &d.AtomicETH, &d.AETH,
		&d.AtomicAckETH, &d.ImmDt, &d.IETH, &d.CNP, &d.Payload}
}

// FinishRoCEFrame writes the ICRC of a RoCEv2 frame built by
// gopacket.SerializeLayers (Ethernet [802.1Q] IP UDP BTH ... IBPayload). It
// finds the ICRC from the IP length, so Ethernet padding may follow. It also
// sets the UDP checksum to 0, as RoCEv2 senders do (a checksum gopacket
// computed before the ICRC was written would be wrong; the ICRC masks the
// field either way).
func FinishRoCEFrame(frame []byte) error {
	var l2 wire.L2
	if err := wire.DecodeEthernet(frame, &l2); err != nil {
		return err
	}
	l3 := frame[l2.HdrLen:]
	var end, ipHdr int
	switch l2.EtherType {
	case wire.EtherTypeIPv4:
		ip := wire.IPv4(l3)
		if err := ip.Validate(l2.HdrLen); err != nil {
			return err
		}
		end, ipHdr = int(ip.TotalLength()), ip.HeaderLen()
	case wire.EtherTypeIPv6:
		ip := wire.IPv6(l3)
		if err := ip.Validate(l2.HdrLen); err != nil {
			return err
		}
		end, ipHdr = ipv6Size+int(ip.PayloadLength()), ipv6Size
	default:
		return wire.Errorf("Ethernet", "EtherType", l2.HdrLen-2, wire.ReasonUnsupported, "not IPv4 or IPv6")
	}
	if end < ipHdr+udpSize+BTHSize+ICRCSize {
		return wire.Errorf("UDP", "Length", l2.HdrLen+ipHdr, wire.ReasonTruncated,
			"a %d-byte IP datagram has no room for UDP, BTH and ICRC", end)
	}
	l3[ipHdr+6], l3[ipHdr+7] = 0, 0 // UDP checksum
	crc, _ := ICRCRoCE(l3[:end-ICRCSize])
	PutICRC(l3[end-ICRCSize:], crc)
	return nil
}
