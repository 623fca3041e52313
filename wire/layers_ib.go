package wire

import (
	"errors"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// gopacket adapters for the native InfiniBand link-level headers. The byte
// layouts live in lrh.go, grh.go and iblink.go; these types only translate
// between them and gopacket's Layer / DecodingLayer / SerializableLayer
// interfaces, following the recipe of gopacket's layers/vxlan.go.
//
// Decoding allocates nothing on success: fields are copied out of the
// input, Contents and Payload alias it (copy before mutating the frame).
var (
	LayerTypeLRH = gopacket.RegisterLayerType(LayerNumLRH, gopacket.LayerTypeMetadata{
		Name: "LRH", Decoder: gopacket.DecodeFunc(decodeLRH)})
	LayerTypeGRH = gopacket.RegisterLayerType(LayerNumGRH, gopacket.LayerTypeMetadata{
		Name: "GRH", Decoder: gopacket.DecodeFunc(decodeGRH)})
	LayerTypeIBLink = gopacket.RegisterLayerType(LayerNumIBLink, gopacket.LayerTypeMetadata{
		Name: "IBLink", Decoder: gopacket.DecodeFunc(decodeIBLink)})

	// layerTypeBTH names the layer after an IBA LRH or GRH. The bth package
	// registers the decoder behind this number; wire cannot import bth.
	layerTypeBTH = gopacket.LayerType(LayerNumBTH)
)

const linkTypeInfiniBand = 247 // LINKTYPE_INFINIBAND: raw IB packets from the LRH

func init() {
	// LINKTYPE_INFINIBAND files (pcap link type 247) start at the LRH. Do
	// not override a decoder someone else installed first.
	if layers.LinkTypeMetadata[linkTypeInfiniBand].DecodeWith == nil {
		layers.LinkTypeMetadata[linkTypeInfiniBand] = layers.EnumMetadata{
			DecodeWith: gopacket.DecodeFunc(decodeLRH), Name: "InfiniBand", LayerType: LayerTypeLRH}
	}
}

// setTruncated tells gopacket the packet is short when err says so.
func setTruncated(err error, df gopacket.DecodeFeedback) {
	var we *Error
	if errors.As(err, &we) && we.Reason == ReasonTruncated {
		df.SetTruncated()
	}
}

// LRHLayer is the gopacket layer for an LRH. It consumes the whole packet:
// Contents is the LRH, Payload the bytes after it through the ICRC, and the
// 2-byte VCRC trailer is held in VCRC, so the layers after it (GRH, BTH) see
// the same shape as in RoCE, ending at the ICRC.
type LRHLayer struct {
	layers.BaseLayer
	LRHFields
	VCRC uint16 // as stored on the wire

	covered []byte // LRH through ICRC, for VerifyChecksum
}

var (
	_ gopacket.DecodingLayer     = (*LRHLayer)(nil)
	_ gopacket.SerializableLayer = (*LRHLayer)(nil)
	_ gopacket.LayerWithChecksum = (*LRHLayer)(nil)
)

// LayerType returns LayerTypeLRH.
func (l *LRHLayer) LayerType() gopacket.LayerType { return LayerTypeLRH }

// CanDecode returns LayerTypeLRH.
func (l *LRHLayer) CanDecode() gopacket.LayerClass { return LayerTypeLRH }

// NextLayerType follows LNH: GRH for global, BTH for local, and the raw
// payload for the non-IBA transports.
func (l *LRHLayer) NextLayerType() gopacket.LayerType {
	switch l.LNH {
	case LNHGlobal:
		return LayerTypeGRH
	case LNHLocal:
		return layerTypeBTH
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes a whole IB data packet, LRH through VCRC. It
// checks the LRH (LVer, PktLen against len(data)) but not the VCRC; call
// VerifyChecksum for that.
func (l *LRHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := LRH(data).Validate(0); err != nil {
		setTruncated(err, df)
		return err
	}
	h := LRH(data)
	h.Fields(&l.LRHFields)
	end := int(l.PktLen) * 4
	l.Contents = data[:LRHSize]
	l.Payload = data[LRHSize:end]
	l.VCRC = getCRC16(data[end:])
	l.covered = data[:end]
	return nil
}

// VerifyChecksum checks the VCRC of the decoded packet.
func (l *LRHLayer) VerifyChecksum() (error, gopacket.ChecksumVerificationResult) {
	want := VCRC(l.covered)
	res := gopacket.ChecksumVerificationResult{Valid: want == l.VCRC, Correct: uint32(want), Actual: uint32(l.VCRC)}
	if !res.Valid {
		return Errorf("VCRC", "VCRC", len(l.covered), ReasonChecksum,
			"have 0x%04x, computed 0x%04x", l.VCRC, want), res
	}
	return nil, res
}

// SerializeTo prepends the LRH and appends the VCRC. The buffer must hold
// the rest of the packet through the ICRC. With FixLengths, PktLen is set
// from it; with ComputeChecksums, the VCRC is computed, otherwise l.VCRC is
// written.
func (l *LRHLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if opts.FixLengths {
		n := LRHSize + len(b.Bytes())
		if n%4 != 0 || n/4 > LRHMaxPktLen {
			return Errorf("LRH", "PktLen", 0, ReasonInvalid,
				"%d bytes from the LRH through the ICRC: not a multiple of 4 or over %d words", n, LRHMaxPktLen)
		}
		l.PktLen = uint16(n / 4)
	}
	hdr, err := b.PrependBytes(LRHSize)
	if err != nil {
		return err
	}
	LRH(hdr).Encode(&l.LRHFields) // writes every byte, reserved bits included
	covered := len(b.Bytes())
	tr, err := b.AppendBytes(VCRCSize)
	if err != nil {
		return err
	}
	if opts.ComputeChecksums {
		l.VCRC = VCRC(b.Bytes()[:covered])
	}
	putCRC16(tr, l.VCRC)
	return nil
}

func decodeLRH(data []byte, p gopacket.PacketBuilder) error {
	l := &LRHLayer{}
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	return p.NextDecoder(l.NextLayerType())
}

// GRHLayer is the gopacket layer for a GRH. Payload runs to PayLen (the
// ICRC's end), so a VCRC or Ethernet padding after it is not included.
type GRHLayer struct {
	layers.BaseLayer
	GRHFields
}

var (
	_ gopacket.DecodingLayer     = (*GRHLayer)(nil)
	_ gopacket.SerializableLayer = (*GRHLayer)(nil)
)

// LayerType returns LayerTypeGRH.
func (g *GRHLayer) LayerType() gopacket.LayerType { return LayerTypeGRH }

// CanDecode returns LayerTypeGRH.
func (g *GRHLayer) CanDecode() gopacket.LayerClass { return LayerTypeGRH }

// NextLayerType is the BTH (GRH.Validate rejects any other NxtHdr).
func (g *GRHLayer) NextLayerType() gopacket.LayerType {
	if g.NxtHdr == GRHNxtHdrIBA {
		return layerTypeBTH
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes and validates a GRH (GRH.Validate).
func (g *GRHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := GRH(data).Validate(0); err != nil {
		setTruncated(err, df)
		return err
	}
	h := GRH(data)
	h.Fields(&g.GRHFields)
	g.Contents = data[:GRHSize]
	g.Payload = data[GRHSize : GRHSize+int(g.PayLen)]
	return nil
}

// SerializeTo prepends the GRH; with FixLengths PayLen is set to the
// bytes already in the buffer (BTH through ICRC).
func (g *GRHLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if opts.FixLengths {
		n := len(b.Bytes())
		if n > 0xFFFF {
			return Errorf("GRH", "PayLen", 0, ReasonInvalid, "%d bytes after the GRH", n)
		}
		g.PayLen = uint16(n)
	}
	hdr, err := b.PrependBytes(GRHSize)
	if err != nil {
		return err
	}
	GRH(hdr).Encode(&g.GRHFields)
	return nil
}

func decodeGRH(data []byte, p gopacket.PacketBuilder) error {
	g := &GRHLayer{}
	if err := g.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(g)
	return p.NextDecoder(g.NextLayerType())
}

// IBLinkLayer is the gopacket layer for a 6-byte IB link packet. Anything
// after the 6 bytes is left as Payload.
type IBLinkLayer struct {
	layers.BaseLayer
	IBLinkFields
	LPCRC uint16 // as stored on the wire
}

var (
	_ gopacket.DecodingLayer     = (*IBLinkLayer)(nil)
	_ gopacket.SerializableLayer = (*IBLinkLayer)(nil)
	_ gopacket.LayerWithChecksum = (*IBLinkLayer)(nil)
)

// LayerType returns LayerTypeIBLink.
func (k *IBLinkLayer) LayerType() gopacket.LayerType { return LayerTypeIBLink }

// CanDecode returns LayerTypeIBLink.
func (k *IBLinkLayer) CanDecode() gopacket.LayerClass { return LayerTypeIBLink }

// NextLayerType is nothing, unless bytes follow the link packet.
func (k *IBLinkLayer) NextLayerType() gopacket.LayerType {
	if len(k.Payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// DecodeFromBytes decodes the first 6 bytes as a link packet. It rejects a
// reserved Op; the LPCRC is checked by VerifyChecksum.
func (k *IBLinkLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < IBLinkSize {
		df.SetTruncated()
		return Truncated("IBLink", "LPCRC", 0, IBLinkSize, len(data))
	}
	h := IBLink(data[:IBLinkSize])
	if op := h.Op(); op > IBLinkOpInit {
		return Errorf("IBLink", "Op", 0, ReasonInvalid, "Op %d is reserved (0 normal, 1 init)", op)
	}
	h.Fields(&k.IBLinkFields)
	k.LPCRC = h.LPCRC()
	k.Contents = data[:IBLinkSize]
	k.Payload = data[IBLinkSize:]
	return nil
}

// VerifyChecksum checks the LPCRC.
func (k *IBLinkLayer) VerifyChecksum() (error, gopacket.ChecksumVerificationResult) {
	want := IBLink(k.Contents).CalculateLPCRC()
	res := gopacket.ChecksumVerificationResult{Valid: want == k.LPCRC, Correct: uint32(want), Actual: uint32(k.LPCRC)}
	if !res.Valid {
		return Errorf("IBLink", "LPCRC", iblinkLPCRC, ReasonChecksum,
			"have 0x%04x, computed 0x%04x", k.LPCRC, want), res
	}
	return nil, res
}

// SerializeTo prepends the 6-byte link packet. With ComputeChecksums the
// LPCRC is computed, otherwise k.LPCRC is written.
func (k *IBLinkLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	hdr, err := b.PrependBytes(IBLinkSize)
	if err != nil {
		return err
	}
	h := IBLink(hdr)
	h.Encode(&k.IBLinkFields)
	if opts.ComputeChecksums {
		k.LPCRC = h.LPCRC()
	} else {
		putCRC16(hdr[iblinkLPCRC:], k.LPCRC)
	}
	return nil
}

func decodeIBLink(data []byte, p gopacket.PacketBuilder) error {
	k := &IBLinkLayer{}
	if err := k.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(k)
	if len(k.Payload) > 0 {
		return p.NextDecoder(gopacket.LayerTypePayload)
	}
	return nil
}
